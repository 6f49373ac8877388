import type { Db } from './db.ts';

export const createRealm = (db: Db, data: { name: string; url: string }) => db.realm.create({ data });

export type RealmGroupSettings = {
  canAddSubscribersGroupId?: number;
  canCreateGroupsId?: number;
  canCreatePublicChannelGroupId?: number;
  canCreatePrivateChannelGroupId?: number;
  canCreateWebPublicChannelGroupId?: number;
  canInviteUsersGroupId?: number;
  canManageAllGroupsId?: number;
  canMentionManyUsersGroupId?: number;
  canAccessAllUsersGroupId?: number;
  canSetTopicsPolicyGroupId?: number;
  directMessagePermissionGroupId?: number;
  createMultiuseInviteGroupId?: number;
  canMoveMessagesBetweenTopicsGroupId?: number;
  canMoveMessagesBetweenChannelsGroupId?: number;
  canResolveTopicsGroupId?: number;
  canDeleteAnyMessageGroupId?: number;
  canDeleteOwnMessageGroupId?: number;
  canAddCustomEmojiGroupId?: number;
  canCreateBotsGroupId?: number;
  canCreateWriteOnlyBotsGroupId?: number;
  canManageBillingGroupId?: number;
  canSetDeleteMessagePolicyGroupId?: number;
  canSummarizeTopicsGroupId?: number;
  directMessageInitiatorGroupId?: number;
};

export const setRealmGroupSettings = (db: Db, realmId: number, data: RealmGroupSettings) =>
  db.realm.update({ where: { id: realmId }, data });

export const updateRealm = (db: Db, realmId: number, data: Record<string, unknown>) => db.realm.update({ where: { id: realmId }, data });
