export { createPrismaClient, shareSqlPool, sqlPoolOf } from './client.ts';
export type { PrismaClient, SqlPool } from './client.ts';
export { Prisma } from './generated/prisma/client.ts';
export type {
  RealmModel as Realm,
  UserModel as User,
  ApiKeyModel as ApiKey,
  UserSettingsModel as UserSettings,
  CustomProfileFieldModel as CustomProfileField,
  CustomProfileFieldValueModel as CustomProfileFieldValue,
  UserGroupModel as UserGroup,
  UserGroupMemberModel as UserGroupMember,
  UserGroupSubgroupModel as UserGroupSubgroup,
  ChannelFolderModel as ChannelFolder,
  ChannelModel as Channel,
  SubscriptionModel as Subscription,
  MessageModel as Message,
  UserMessageModel as UserMessage,
  ScheduledMessageModel as ScheduledMessage,
  DraftModel as Draft,
  InvitationModel as Invitation,
  PushDeviceModel as PushDevice,
  EventModel as Event,
  RealmEmojiModel as RealmEmoji,
} from './generated/prisma/models.ts';
