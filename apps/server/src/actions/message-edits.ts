// PATCH /messages/{message_id}: editing content, moving messages to another topic or channel, resolving
// and unresolving topics (Zulip's rules and order of checks). One transaction: the message is locked,
// every check runs on it as committed, the messages that move are locked in id order, the change and
// its history are written, rows of those who leave a channel go, and the events (update_message for
// those who see the result, delete_message for those who lose the messages), the notification bot's
// notices and the visibility policies that follow a whole topic are all part of it.
import { createHash } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { findChannelById } from '../data/channels.repo.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { channelRecipientIds, messagePeople } from '../data/messages.repo.ts';
import {
  channelMessageCandidates,
  deleteRowsLeavingChannel,
  directMessageCandidates,
  lastMessageOfTopic,
  lockMessage,
  idsWithRowsOf,
  mentionedUserIds,
  policyHolders,
  readersOfResolveNotice,
  rewriteMentionFlags,
  settleRowsInProtectedChannel,
  topicHasOtherMessages,
  topicMessages,
  topicPolicies,
  writeMessageChange,
  type EditHistoryEntry,
  type LockedMessage,
} from '../data/message-edits.repo.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import { VisibilityPolicy } from '../data/user-topics.repo.ts';
import { JsonableError } from '../errors.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { hasContentAccess } from '../access/channels.ts';
import { canReadChannelHistory, checkCanSendToChannel } from '../access/messages.ts';
import {
  changeAllLimitSeconds,
  checkCanEditContent,
  checkCanMoveOutOfChannel,
  checkCanMoveWithinChannel,
  checkCanResolveTopic,
  checkChannelMoveTimeLimit,
  keepsTopicPolicy,
  seesChannelMessage,
} from '../access/message-edits.ts';
import { changeableMessage } from '../queries/messages.ts';
import { isMeMessage } from '../lib/message-format.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import { defaultNarrowUrl } from '../lib/markdown.ts';
import { EMPTY_TOPIC_DISPLAY_NAME, topicFromClient } from '../lib/message-limits.ts';
import type { AfterCommit } from '../events/bus.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { deleteMessages } from './message-deletion.ts';
import { checkEditedContent, checkInternalChannelMessage, checkTopicsPolicy, normalizeTopic, storeCheckedMessage, truncateTopic } from './messages.ts';
import { notificationBot } from './system-bots.ts';
import { pushTargetsForMessage, queuePushesForMessage } from './push.ts';
import { writePolicy } from './user-topics.ts';
import { updateAttachmentLinks } from './attachments.ts';
import type { Schema } from '@parley/api-types';
import { recomputeAlertWordFlags } from './personal-flags.ts';
import { realmLinkifiers } from '../queries/linkifiers.ts';

export type PropagateMode = 'change_one' | 'change_later' | 'change_all';

export interface UpdateMessageRequest {
  messageId: number;
  topic: string | undefined;
  propagateMode: PropagateMode;
  notifyOldThread: boolean;
  notifyNewThread: boolean;
  content: string | undefined;
  prevContentSha256: string | undefined;
  streamId: number | undefined;
}

/** Zulip's prefix of a resolved topic's name (U+2714 and a space). */
export const RESOLVED_TOPIC_PREFIX = '✔ ';

/** Whether renaming `from` to `to` resolves (true), unresolves (false) the topic, or neither (null). */
export function resolveToggle(from: string, to: string): boolean | null {
  if (to.startsWith(RESOLVED_TOPIC_PREFIX) && !from.startsWith(RESOLVED_TOPIC_PREFIX) && to.slice(RESOLVED_TOPIC_PREFIX.length) === from) return true;
  if (from.startsWith(RESOLVED_TOPIC_PREFIX) && !to.startsWith(RESOLVED_TOPIC_PREFIX) && from.replace(/^[✔ ]+/u, '') === to) return false;
  return null;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

export async function doUpdateMessage(deps: AppDeps, realm: Realm, user: User, request: UpdateMessageRequest): Promise<{ detached_uploads: Schema<'Attachment'>[] }> {
  // Access to a protected history, and the flags, come from the user's rows.
  await catchUpDeferredRows(deps.db, realm, user);
  const detached = await inTransaction(deps.db, async (tx, afterCommit) => {
    const locked = await lockMessage(tx, realm.id, request.messageId);
    if (!locked) throw new JsonableError('Invalid message(s)');
    const found = await changeableMessage(tx, realm, user, request.messageId);
    return changeMessage({ tx, afterCommit, deps, realm, user }, locked, found.channel !== null ? await findChannelById(tx, realm.id, locked.channel_id!) : null, request);
  });
  return { detached_uploads: detached };
}

interface Context {
  tx: Db;
  afterCommit: AfterCommit;
  deps: AppDeps;
  realm: Realm;
  user: User;
}

/** Changes the message; answers the editor's uploads the edit left without any message linking to them. */
async function changeMessage(t: Context, message: LockedMessage, channel: Channel | null, request: UpdateMessageRequest): Promise<Schema<'Attachment'>[]> {
  const { tx, realm, user } = t;
  const now = new Date();
  const subject = await loadPermissionSubject(tx, user);
  if (request.content !== undefined) checkCanEditContent(realm, user, { senderId: message.sender_id, dateSent: message.date_sent }, now);

  // The topic as given, or none when it is exactly the current one.
  let newTopic: string | undefined = request.topic === undefined ? undefined : topicFromClient(request.topic.trim());
  if (newTopic === message.topic) newTopic = undefined;
  if (newTopic === undefined && request.content === undefined && request.streamId === undefined) throw new JsonableError('Nothing to change');
  if (channel === null) {
    if (request.streamId !== undefined) throw new JsonableError('Direct messages cannot be moved to channels.');
    if (newTopic !== undefined) throw new JsonableError('Direct messages cannot have topics.');
  }
  if (request.propagateMode !== 'change_one' && newTopic === undefined && request.streamId === undefined) throw new JsonableError('Invalid propagate_mode without topic edit');
  if (newTopic !== undefined) {
    if (newTopic === '✔' || newTopic === `${RESOLVED_TOPIC_PREFIX}${EMPTY_TOPIC_DISPLAY_NAME}`) throw new JsonableError('General chat cannot be marked as resolved');
    newTopic = normalizeTopic(newTopic);
  }
  if (request.streamId !== undefined && request.content !== undefined) throw new JsonableError('Cannot change message content while changing channel');
  if (request.prevContentSha256 !== undefined && request.prevContentSha256 !== sha256(message.content)) {
    throw new JsonableError("'prev_content_sha256' value does not match the expected value.", { code: 'EXPECTATION_MISMATCH', data: { field_name: 'prev_content_sha256' } });
  }

  // The destination channel (a move), refused like a channel the user cannot see.
  let target: Channel | null = null;
  let subscribedToTarget = false;
  if (request.streamId !== undefined) {
    target = await findChannelById(tx, realm.id, request.streamId);
    subscribedToTarget = target ? (await subscribedChannelIds(tx, user.id, [target.id])).has(target.id) : false;
    if (!target || target.isArchived || !hasContentAccess(subject, target, subscribedToTarget)) throw new JsonableError('Invalid channel ID');
  }
  const finalChannel = target ?? channel;
  const untruncatedTopic = newTopic;
  if (newTopic !== undefined) newTopic = truncateTopic(newTopic);
  const finalTopic = newTopic ?? message.topic;
  if (finalChannel && (newTopic !== undefined || target !== null)) checkTopicsPolicy(realm, finalChannel, finalTopic);

  const toggle = channel && untruncatedTopic !== undefined ? resolveToggle(message.topic, untruncatedTopic) : null;
  if (channel && newTopic !== undefined) {
    if (toggle !== null) checkCanResolveTopic(subject, realm, channel, target);
    else checkCanMoveWithinChannel(subject, realm, channel, target, message.date_sent, now);
  }

  const edited = request.content === undefined
    ? null
    : await checkEditedContent(tx, realm, user, { channel, topic: message.topic, recipientCount: channel ? (await channelRecipientIds(tx, channel.id)).length : 0 }, request.content);

  if (channel && target) {
    checkCanMoveOutOfChannel(subject, realm, channel);
    checkCanSendToChannel(subject, target, { subscribed: subscribedToTarget });
    checkChannelMoveTimeLimit(user, realm, message.date_sent, now);
  }

  // Which messages change: this one, or with it the later ones or the whole topic. A move to another
  // channel takes only the messages the user may read (no access is gained by moving).
  let ids = [message.id];
  const moving = channel !== null && (newTopic !== undefined || target !== null);
  if (moving && request.propagateMode !== 'change_one') {
    const readsHistory = canReadChannelHistory(subject, channel, (await subscribedChannelIds(tx, user.id, [channel.id])).has(channel.id));
    const candidates = await topicMessages(tx, {
      channelId: channel.id,
      topic: message.topic,
      fromId: request.propagateMode === 'change_later' ? message.id : null,
      onlyRowsOf: target !== null && !readsHistory ? user.id : null,
    });
    if (request.propagateMode === 'change_all' && toggle === null) checkChangeAllLimit(user, realm, candidates, { topic: newTopic !== undefined, channel: target !== null }, now);
    ids = [...new Set([message.id, ...candidates.map((c) => c.id)])].sort((a, b) => a - b);
  }

  // Before writing: who could see the message in its old place (those who lose it hear of it).
  const before = channel && target ? (await channelMessageCandidates(tx, message.id, channel.id)).filter((c) => seesChannelMessage(c, channel)) : null;
  // In a channel whose history is protected, each reader is told only of the messages they have.
  const protectedHistory = (c: Channel | null) => c !== null && c.inviteOnly && !c.historyPublicToSubscribers;
  const seenBefore = before && protectedHistory(channel) && ids.length > 1 ? await idsWithRowsOf(tx, ids, before.map((b) => b.userId)) : null;
  const targetHadMessages = moving && finalChannel ? await topicHasOtherMessages(tx, finalChannel.id, finalTopic, ids) : false;

  const at = new Date(seconds(now) * 1000);
  const entry: EditHistoryEntry = { user_id: user.id, timestamp: seconds(at) };
  if (newTopic !== undefined) Object.assign(entry, { prev_topic: message.topic, topic: newTopic });
  if (target) Object.assign(entry, { prev_stream: channel!.id, stream: target.id });
  const targetEntry: EditHistoryEntry = edited ? { ...entry, prev_content: message.content, prev_rendered_content: message.rendered_content } : entry;
  const moved = target !== null || (newTopic !== undefined && toggle === null);
  let detachedUploads: Schema<'Attachment'>[] = [];
  await writeMessageChange(tx, {
    ids,
    targetId: message.id,
    entry,
    targetEntry,
    topic: newTopic ?? null,
    channelId: target?.id ?? null,
    moved,
    content: edited ? { content: edited.content, rendered: edited.renderedContent } : null,
    at,
  });
  if (edited) {
    const mentionedBefore = await mentionedUserIds(tx, message.id);
    await rewriteMentionFlags(tx, message.id, { mentioned: edited.mentioned, streamWildcard: edited.streamWildcard, topicWildcardUsers: edited.topicWildcardUsers });
    await recomputeAlertWordFlags(tx, message.id, edited.content);
    await pushNewMentions(t, message, channel, edited, mentionedBefore);
    // The uploaded files it links to follow the new content (actions/attachments.ts).
    detachedUploads = await updateAttachmentLinks(t, user, { id: message.id, renderedContent: edited.renderedContent });
  }
  if (channel && target) {
    await deleteRowsLeavingChannel(tx, ids, channel.id, target.id);
    if (target.inviteOnly && !target.historyPublicToSubscribers) await settleRowsInProtectedChannel(tx, ids, target.id);
  }

  // Events: update_message to whoever sees the message now, delete_message to those who lost it.
  // Who sees it after: by their rows and subscriptions in its channel now, and, for a move, those who
  // saw it before and still may (a non-guest reads a public channel without a row or subscription).
  let after: Array<{ userId: number; flags: number }>;
  const lost: number[] = [];
  if (finalChannel) {
    const candidates = await channelMessageCandidates(tx, message.id, finalChannel.id);
    const seen = new Map(candidates.map((c) => [c.userId, c]));
    after = candidates.filter((c) => seesChannelMessage(c, finalChannel)).map((c) => ({ userId: c.userId, flags: c.flags ?? MESSAGE_FLAG_BITS.read }));
    for (const b of before ?? []) {
      if (seen.has(b.userId)) {
        if (!seesChannelMessage(seen.get(b.userId)!, finalChannel)) lost.push(b.userId);
      } else if (seesChannelMessage({ userId: b.userId, role: b.role, flags: null, subscribed: false }, finalChannel)) {
        after.push({ userId: b.userId, flags: MESSAGE_FLAG_BITS.read });
      } else {
        lost.push(b.userId);
      }
    }
    after.sort((x, y) => x.userId - y.userId);
  } else {
    after = await directAudience(tx, message.id);
  }
  const payload: Record<string, unknown> = {
    type: 'update_message',
    user_id: user.id,
    edit_timestamp: seconds(at),
    message_id: message.id,
    message_ids: ids,
    rendering_only: false,
  };
  if (channel) Object.assign(payload, { stream_id: channel.id, stream_name: channel.name });
  if (edited) {
    Object.assign(payload, {
      orig_content: message.content,
      orig_rendered_content: message.rendered_content,
      content: edited.content,
      rendered_content: edited.renderedContent,
      is_me_message: isMeMessage(edited.content),
    });
  }
  if (moving) {
    payload['orig_subject'] = message.topic;
    payload['propagate_mode'] = request.propagateMode;
    // Zulip's topic_links of the new topic: the organization's linkifiers and raw URLs in it.
    if (newTopic !== undefined) Object.assign(payload, { subject: newTopic, topic_links: (await realmLinkifiers(tx, realm)).topicLinks(newTopic) });
    if (target) payload['new_stream_id'] = target.id;
  }
  const seenAfter = finalChannel && protectedHistory(finalChannel) && ids.length > 1 ? await idsWithRowsOf(tx, ids, after.map((x) => x.userId)) : null;
  const events: StoredEvent[] = [];
  if (channel && lost.length) {
    for (const [seen, userIds] of groupBySeen(lost.sort((x, y) => x - y), seenBefore, ids)) {
      events.push({ userIds, payload: { type: 'delete_message', message_ids: seen, message_type: 'stream', stream_id: channel.id, topic: message.topic } });
    }
  }
  const flagsOf = new Map(after.map((x) => [x.userId, x.flags]));
  for (const [seen, userIds] of groupBySeen(after.map((x) => x.userId), seenAfter, ids)) {
    events.push({ userIds, flags: userIds.map((id) => flagsOf.get(id)!), payload: { ...payload, message_ids: [...new Set([message.id, ...seen])].sort((x, y) => x - y) } });
  }
  await t.deps.events.publish(tx, t.afterCommit, realm.id, events);

  if (channel && finalChannel && moving) {
    const allMoved = request.propagateMode === 'change_all' || !(await topicHasOtherMessages(tx, channel.id, message.topic, ids));
    // Policies first: a resolve notice is read or not by the policies of the topic it lands in.
    if (allMoved && (target !== null || newTopic !== undefined)) {
      await moveTopicPolicies(t, { from: channel, fromTopic: message.topic, to: finalChannel, toTopic: finalTopic, targetHadMessages });
    }
    await sendMoveNotices(t, { from: channel, fromTopic: message.topic, to: finalChannel, toTopic: finalTopic, ids, toggle, allMoved, targetHadMessages, request });
  }
  return detachedUploads;
}

/**
 * Those the edit mentions for the first time are notified as at sending (push notifications, Zulip's
 * rules for a mention); the others' notifications are left as they are.
 */
async function pushNewMentions(t: Context, message: LockedMessage, channel: Channel | null, edited: { mentioned: number[]; content: string; renderedContent: string }, before: ReadonlySet<number>): Promise<void> {
  const recipients = new Set((await mentionedUserIds(t.tx, message.id)).values());
  const fresh = edited.mentioned.filter((id) => !before.has(id) && recipients.has(id) && id !== message.sender_id).sort((a, b) => a - b);
  if (fresh.length === 0) return;
  const people = await messagePeople(t.tx, t.realm.id, [message.sender_id, ...message.direct_user_ids]);
  const toPush = {
    channel: channel ? { id: channel.id, name: channel.name } : null,
    topic: message.topic,
    recipientIds: fresh,
    flags: fresh.map(() => MESSAGE_FLAG_BITS.mentioned | (channel ? 0 : MESSAGE_FLAG_BITS.is_private)),
    directUserIds: message.direct_user_ids,
    people: new Map(people.map((p) => [p.id, p])),
  };
  const targets = await pushTargetsForMessage(t.tx, t.deps, toPush, message.sender_id);
  await queuePushesForMessage(t.tx, t.deps, t.realm, toPush, { ...message, content: edited.content, rendered_content: edited.renderedContent }, targets);
}

/** Users grouped by the messages of `ids` they are told of: all of them, or (`seen`) those they have rows for. */
function groupBySeen(userIds: number[], seen: Map<number, number[]> | null, ids: number[]): Array<[number[], number[]]> {
  if (seen === null) return userIds.length ? [[ids, userIds]] : [];
  const groups = new Map<string, [number[], number[]]>();
  for (const userId of userIds) {
    const theirs = seen.get(userId) ?? [];
    const key = theirs.join(',');
    const group = groups.get(key) ?? [theirs, []];
    group[1].push(userId);
    groups.set(key, group);
  }
  return [...groups.values()].filter(([messages]) => messages.length > 0 || seen === null);
}

/** change_all: every message of the topic the user may move must be within the limit that applies. */
function checkChangeAllLimit(user: User, realm: Realm, messages: Array<{ id: number; date_sent: Date }>, move: { topic: boolean; channel: boolean }, now: Date): void {
  const limit = changeAllLimitSeconds(user, realm, move);
  if (limit === null) return;
  const allowed = messages.filter((m) => (now.getTime() - m.date_sent.getTime()) / 1000 <= limit);
  if (allowed.length === messages.length) return;
  throw new JsonableError(`You only have permission to move the ${allowed.length}/${messages.length} most recent messages in this topic.`, {
    code: 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
    data: {
      first_message_id_allowed_to_move: allowed.length ? Math.min(...allowed.map((m) => m.id)) : null,
      total_messages_in_topic: messages.length,
      total_messages_allowed_to_move: allowed.length,
    },
  });
}

const directAudience = (tx: Db, messageId: number) => directMessageCandidates(tx, messageId);

// ---------------------------------------------------------------------------------------------------
// The notification bot's notices

/** `#**channel>topic**`, or a link when the names hold characters that syntax cannot carry. */
function locationOf(realm: Realm, channel: Channel, topic: string): string {
  if (/[`>*&[\]]|\$\$/.test(channel.name + topic)) {
    const escape = (s: string) => s.replace(/[`>*&[\]$]/g, (c) => `&#${c.codePointAt(0)};`);
    return `[#${escape(channel.name)} > ${escape(topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : topic)}](${realm.url}${defaultNarrowUrl(channel, topic)})`;
  }
  return `#**${channel.name}>${topic}**`;
}

/** Zulip's RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS. */
const RESOLVE_UNDO_GRACE_SECONDS = 60;
const RESOLVE_NOTICE = /^@_\*\*[^\n]*\*\* has marked this topic as (un)?resolved\.$/;

const silentMention = (user: User) => `@_**${user.fullName}|${user.id}**`;

/** A notice from the notification bot, read for the acting user and for `alsoReadFor`. */
async function postNotice(t: Context, channel: Channel, topic: string, content: string, alsoReadFor: number[] = []): Promise<void> {
  const bot = await notificationBot(t.tx, t.deps, t.realm);
  const checked = await checkInternalChannelMessage(t.tx, t.realm, bot, channel, topic, content, [t.user.id, ...alsoReadFor]);
  await storeCheckedMessage(t.tx, t.afterCommit, t.deps, t.realm, bot, checked, { client: 'Internal' });
}

async function sendMoveNotices(
  t: Context,
  m: { from: Channel; fromTopic: string; to: Channel; toTopic: string; ids: number[]; toggle: boolean | null; allMoved: boolean; targetHadMessages: boolean; request: UpdateMessageRequest },
): Promise<void> {
  const who = silentMention(t.user);
  const count = m.ids.length;
  if (m.toggle !== null && m.from.id === m.to.id) {
    // Undone within the grace period: the notice of the first change is taken back instead.
    const last = await lastMessageOfTopic(t.tx, m.to.id, m.toTopic);
    const bot = await notificationBot(t.tx, t.deps, t.realm);
    if (last && last.senderId === bot.id && Date.now() - last.dateSent.getTime() < RESOLVE_UNDO_GRACE_SECONDS * 1000 && RESOLVE_NOTICE.test(last.content)) {
      await deleteMessages(t, t.user, m.to, [last]);
    } else {
      const readers = await readersOfResolveNotice(t.tx, m.to.id, m.toTopic);
      await postNotice(t, m.to, m.toTopic, `${who} has marked this topic as ${m.toggle ? 'resolved' : 'unresolved'}.`, readers);
    }
  } else if (m.request.notifyNewThread) {
    const from = locationOf(t.realm, m.from, m.fromTopic);
    const link = `${t.realm.url}${defaultNarrowUrl(m.to, m.toTopic)}/near/${m.request.messageId}`;
    const text = !m.targetHadMessages && m.allMoved
      ? `This topic was moved here from ${from} by ${who}.`
      : count === 1
        ? `[A message](${link}) was moved here from ${from} by ${who}.`
        : `${count} messages were moved here from ${from} by ${who}.`;
    await postNotice(t, m.to, m.toTopic, text);
  }
  if (m.request.notifyOldThread) {
    const to = locationOf(t.realm, m.to, m.toTopic);
    const text = m.allMoved
      ? `This topic was moved to ${to} by ${who}.`
      : count === 1
        ? `A message was moved from this topic to ${to} by ${who}.`
        : `${count} messages were moved from this topic to ${to} by ${who}.`;
    await postNotice(t, m.from, m.fromTopic, text);
  }
}

// ---------------------------------------------------------------------------------------------------
// Visibility policies follow a topic that moved whole

/** Zulip's order of visibility: followed, unmuted, inherit, muted. */
const VISIBILITY_RANK: Record<number, number> = { [VisibilityPolicy.FOLLOWED]: 3, [VisibilityPolicy.UNMUTED]: 2, [VisibilityPolicy.INHERIT]: 1, [VisibilityPolicy.MUTED]: 0 };

async function moveTopicPolicies(
  t: Context,
  m: { from: Channel; fromTopic: string; to: Channel; toTopic: string; targetHadMessages: boolean },
): Promise<void> {
  const old = await topicPolicies(t.tx, m.from.id, m.fromTopic);
  if (old.size === 0) return;
  // Those who cannot see the destination channel only lose their policy (nothing may name its topic to them).
  const keeps = new Set((await policyHolders(t.tx, [...old.keys()], m.to.id)).filter((h) => keepsTopicPolicy(h, m.to)).map((h) => h.userId));
  const existing = await topicPolicies(t.tx, m.to.id, m.toTopic);
  const w = { tx: t.tx, afterCommit: t.afterCommit, deps: t.deps, realm: t.realm };
  for (const [userId, policy] of old) {
    await writePolicy(w, userId, m.from, m.fromTopic, VisibilityPolicy.INHERIT);
    if (!keeps.has(userId)) continue;
    const there = existing.get(userId) ?? VisibilityPolicy.INHERIT;
    const merged = !m.targetHadMessages ? policy : VISIBILITY_RANK[policy]! >= VISIBILITY_RANK[there]! ? policy : there;
    if (merged !== there) await writePolicy(w, userId, m.to, m.toTopic, merged);
  }
}

