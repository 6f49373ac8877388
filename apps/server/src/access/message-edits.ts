// Who may change a message, and who hears of the change (Zulip's message_edit rules): editing content
// (only the sender, when the organization allows editing, within its time limit), moving within a
// channel, resolving topics, moving to another channel, and the time limits of moves. Every answer is
// from the organization role and group-setting values (access/group-settings.ts).
import type { Channel, Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { isChannelAdministrator } from './channels.ts';
import { isAdmin, isGuest, isModeratorRole } from './roles.ts';

/** Zulip lets an edit arrive this long after its limit (the time the user spent typing it). */
export const EDIT_LIMIT_GRACE_SECONDS = 20;

const secondsSince = (date: Date, now: Date) => (now.getTime() - date.getTime()) / 1000;

/** Zulip's is_moderator: moderators, administrators and owners (exempt from the move time limits). */
const isModeratorOrAbove = (user: Pick<User, 'role'>) => isAdmin(user) || isModeratorRole(user);

type ChannelMoveFields = Channel;

/**
 * Content edits: the organization allows editing, the editor is the sender, and the message is younger
 * than the content-edit limit (plus `graceSeconds`; nobody is exempt, administrators included).
 */
export function checkCanEditContent(realm: Realm, user: User, message: { senderId: number; dateSent: Date }, now: Date, graceSeconds = EDIT_LIMIT_GRACE_SECONDS): void {
  if (!realm.allowMessageEditing) throw new JsonableError('Your organization has turned off message editing');
  if (message.senderId !== user.id) throw new JsonableError("You don't have permission to edit this message");
  const limit = realm.messageContentEditLimitSeconds;
  if (limit !== null && secondsSince(message.dateSent, now) > limit + graceSeconds) {
    throw new JsonableError('The time limit for editing this message has passed');
  }
}

/** Channel administrators, and the channel's own setting, may move messages within it. */
const canMoveWithinChannel = (subject: PermissionSubject, channel: ChannelMoveFields) =>
  isAdmin(subject.user) || isChannelAdministrator(subject, channel) || holds(subject, channel.canMoveMessagesWithinChannelGroupId);

/** Resolving or unresolving a topic (no time limit). */
export function checkCanResolveTopic(subject: PermissionSubject, realm: Realm, from: ChannelMoveFields, to: ChannelMoveFields | null): void {
  if (holds(subject, realm.canResolveTopicsGroupId) || holds(subject, from.canResolveTopicsGroupId) || (to !== null && holds(subject, to.canResolveTopicsGroupId))) return;
  throw new JsonableError("You don't have permission to resolve topics in this channel.");
}

/** Renaming the topic of messages (other than resolving), then its time limit. */
export function checkCanMoveWithinChannel(subject: PermissionSubject, realm: Realm, from: ChannelMoveFields, to: ChannelMoveFields | null, sent: Date, now: Date): void {
  const allowed = holds(subject, realm.canMoveMessagesBetweenTopicsGroupId) || canMoveWithinChannel(subject, from) || (to !== null && canMoveWithinChannel(subject, to));
  if (!allowed) throw new JsonableError("You don't have permission to edit this message");
  const limit = topicMoveLimitSeconds(subject.user, realm);
  if (limit !== null && secondsSince(sent, now) > limit + EDIT_LIMIT_GRACE_SECONDS) {
    throw new JsonableError("The time limit for editing this message's topic has passed.");
  }
}

/** Moving messages out of their channel. */
export function checkCanMoveOutOfChannel(subject: PermissionSubject, realm: Realm, from: ChannelMoveFields): void {
  if (isAdmin(subject.user) || holds(subject, realm.canMoveMessagesBetweenChannelsGroupId) || isChannelAdministrator(subject, from) || holds(subject, from.canMoveMessagesOutOfChannelGroupId)) return;
  throw new JsonableError("You don't have permission to move this message");
}

/** The channel-move time limit (after the destination's posting permission was checked). */
export function checkChannelMoveTimeLimit(user: User, realm: Realm, sent: Date, now: Date): void {
  const limit = channelMoveLimitSeconds(user, realm);
  if (limit !== null && secondsSince(sent, now) > limit + EDIT_LIMIT_GRACE_SECONDS) {
    throw new JsonableError("The time limit for editing this message's channel has passed");
  }
}

/** The topic-move limit that applies to the user (null: none; moderators and administrators are exempt). */
export const topicMoveLimitSeconds = (user: User, realm: Realm) => (isModeratorOrAbove(user) ? null : realm.moveMessagesWithinStreamLimitSeconds);
/** The channel-move limit that applies to the user. */
export const channelMoveLimitSeconds = (user: User, realm: Realm) => (isModeratorOrAbove(user) ? null : realm.moveMessagesBetweenStreamsLimitSeconds);

/**
 * The limit a `change_all` move must respect for every message of the topic (null: none): the
 * smaller of the applicable topic and channel limits, plus the grace. Resolving has none.
 */
export function changeAllLimitSeconds(user: User, realm: Realm, move: { topic: boolean; channel: boolean }): number | null {
  const limits = [move.topic ? topicMoveLimitSeconds(user, realm) : null, move.channel ? channelMoveLimitSeconds(user, realm) : null].filter((l): l is number => l !== null);
  return limits.length ? Math.min(...limits) + EDIT_LIMIT_GRACE_SECONDS : null;
}

/** What deciding whether someone sees a channel message after a change needs about them. */
export interface MessageAudienceCandidate {
  userId: number;
  role: number;
  /** Their row's flags; 0 for a deferred row (written when they next read); null without a row. */
  flags: number | null;
  /** Actively subscribed to the message's channel. */
  subscribed: boolean;
}

/**
 * Whether the candidate may see a message of `channel` (Zulip's has_message_access, as the event
 * audience of a change decides it): public channels are readable by non-guests, and by guests who are
 * subscribed; private ones by subscribers, who also need a row when the history is protected.
 */
export function seesChannelMessage(c: MessageAudienceCandidate, channel: Pick<Channel, 'inviteOnly' | 'isWebPublic' | 'historyPublicToSubscribers'>): boolean {
  const guest = isGuest({ role: c.role });
  if (!channel.inviteOnly) return !guest || c.subscribed || channel.isWebPublic;
  if (!c.subscribed) return false;
  return channel.historyPublicToSubscribers || c.flags !== null;
}

/**
 * Whether a user keeps a visibility policy for a topic moved into `channel`: they can see the channel
 * (public channels: non-guests; otherwise subscribers). The others' policy is only cleared.
 */
export function keepsTopicPolicy(h: { role: number; subscribed: boolean }, channel: Pick<Channel, 'inviteOnly' | 'isWebPublic'>): boolean {
  if (h.subscribed) return true;
  return !channel.inviteOnly && (channel.isWebPublic || !isGuest({ role: h.role }));
}
