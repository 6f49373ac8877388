// Who may send where (Zulip's access_stream_for_send_message and the direct-message permission
// settings), and who may read which messages. Channel rules answer from the organization role and
// group-setting values (access/group-settings.ts).
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { anyInGroup, groupName } from '../data/user-groups.repo.ts';
import { JsonableError } from '../errors.ts';
import type { FetchChannel } from '../data/message-fetch.repo.ts';
import { hasContentAccess } from './channels.ts';
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
  // Parley's system bots are Zulip's cross-realm bots (is_cross_realm_bot_email): they post to any
  // channel that is not archived (the e-mail gateway bot, whose mail was checked against its creator).
  if (subject.user.systemBot !== null) {
    if (channel.isArchived) throw new JsonableError(`Not authorized to send to channel '${channel.name}'`);
    return;
  }
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

// ---------------------------------------------------------------------------------------------
// Reading messages

/**
 * Whether content access to the channel may depend on the viewer's groups (a private channel they are
 * not subscribed to, for a non-guest): only then must their group memberships be read.
 */
export const channelAccessDependsOnGroups = (viewer: Pick<User, 'role'>, c: Pick<FetchChannel, 'inviteOnly' | 'isWebPublic' | 'subscribed'>) =>
  c.inviteOnly && !c.isWebPublic && !c.subscribed && !isGuest(viewer);

/**
 * Zulip's has_message_access: direct messages need the viewer's row; channel messages need content
 * access to the channel, plus the row when its history is protected (public channels are readable by
 * non-guests whatever their history setting). Spectators (null) read web-public channels only.
 */
export function hasMessageAccess(subject: PermissionSubject | null, found: { flags: number | null; channel: FetchChannel | null }): boolean {
  const c = found.channel;
  if (!subject) return c !== null && c.isWebPublic;
  if (!c) return found.flags !== null;
  if (!hasContentAccess(subject, c, c.subscribed)) return false;
  return c.historyPublicToSubscribers || found.flags !== null || (!c.inviteOnly && !isGuest(subject.user));
}

/**
 * Which channels' messages a viewer's reads must check one by one (the others are readable by role):
 * spectators (null) only web-public ones are readable; guests every channel that is not web-public;
 * everyone else private channels.
 */
export function channelsNeedingAccessCheck(viewer: Pick<User, 'role'> | null): 'not-web-public' | 'private' | null {
  if (viewer === null) return null;
  return isGuest(viewer) ? 'not-web-public' : 'private';
}

/** May the viewer read public channels they are not subscribed to (narrows, searches)? */
export const canReadPublicChannels = (viewer: Pick<User, 'role'> | null) => viewer !== null && !isGuest(viewer);

/** A channel whose rows the viewer has but may no longer read (removed from a private channel, say). */
export function isChannelContentHidden(subject: PermissionSubject, c: FetchChannel): boolean {
  return !c.isWebPublic && (isGuest(subject.user) || c.inviteOnly) && !hasContentAccess(subject, c, c.subscribed);
}

export type { Realm, User };
