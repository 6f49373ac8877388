// Who may send where (Zulip's access_stream_for_send_message and the direct-message permission
// settings), and who may read which messages. Channel rules answer from the organization role and
// group-setting values (access/group-settings.ts).
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { anyInGroup, groupName } from '../data/user-groups.repo.ts';
import { JsonableError } from '../errors.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { isGuest } from './roles.ts';

export type SendChannelFields = Pick<Channel, 'name' | 'isArchived' | 'isWebPublic' | 'inviteOnly' | 'canSendMessageGroupId'>;

/**
 * May `subject` post to the channel? `ownerSubject` is the bot owner's, for bots (a bot may post where
 * its owner may). `subscribed`: the sender (or, for a bot, its owner) is subscribed.
 */
export function checkCanSendToChannel(
  subject: PermissionSubject,
  channel: SendChannelFields,
  access: { subscribed: boolean; ownerSubject?: PermissionSubject | null; ownerSubscribed?: boolean },
): void {
  if (!holds(subject, channel.canSendMessageGroupId) && !(access.ownerSubject && holds(access.ownerSubject, channel.canSendMessageGroupId))) {
    throw new JsonableError('You do not have permission to post in this channel.');
  }
  const refused = new JsonableError(`Not authorized to send to channel '${channel.name}'`);
  if (channel.isArchived) throw refused;
  if (channel.isWebPublic) return;
  if (!(channel.inviteOnly || isGuest(subject.user))) return;
  if (access.subscribed || access.ownerSubscribed) return;
  throw refused;
}

/** Zulip's can_access_stream_history: may read the channel's past messages without a user_message row. */
export function canReadChannelHistory(
  subject: PermissionSubject,
  channel: Pick<Channel, 'isWebPublic' | 'inviteOnly' | 'historyPublicToSubscribers' | 'isArchived'>,
  subscribed: boolean,
): boolean {
  if (channel.isWebPublic) return true;
  if (!channel.inviteOnly && !isGuest(subject.user)) return true;
  return channel.historyPublicToSubscribers && subscribed;
}

/**
 * Zulip's direct-message permission: someone in the conversation (sender or recipient) must be in the
 * organization's direct_message_permission_group. Bots sending, and conversations of only bots and
 * the sender, are exempt.
 */
export async function checkDirectMessagePermission(db: Db, realm: Realm, subject: PermissionSubject, participants: { id: number; is_bot: boolean }[]): Promise<void> {
  const groupId = realm.directMessagePermissionGroupId;
  if (groupId === null || subject.user.isBot) return;
  if (participants.every((p) => p.is_bot || p.id === subject.user.id)) return;
  if (holds(subject, groupId)) return;
  const others = participants.filter((p) => p.id !== subject.user.id).map((p) => p.id);
  if (await anyInGroup(db, groupId, others)) return;
  if ((await groupName(db, groupId)) === 'role:nobody') throw new JsonableError('Direct messages are disabled in this organization.');
  throw new JsonableError('This conversation does not include any users who can authorize it.');
}

export type { Realm, User };
