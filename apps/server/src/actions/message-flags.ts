// Read state and personal flags: POST /messages/flags, /messages/flags/narrow, /mark_all_as_read,
// /mark_stream_as_read, /mark_topic_as_read. Each change stores an `update_message_flags` event for
// the user's clients.
import type { AppDeps } from '../deps.ts';
import { inOneStatement, inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { changeFlag, flagEventPayloadSql, markReadBatch, messageDetails, messagesOfUnsubscribedChannels, newestOwnMessageId, userHasTopic } from '../data/message-flags.repo.ts';
import { JsonableError } from '../errors.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { accessChannelById } from '../access/channels.ts';
import { MESSAGE_FLAG_BITS, type MessageFlagName } from '../lib/message-flags.ts';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { messagesInFlagRange, type FlagRange, type FlagRangeRequest } from '../queries/message-state.ts';
import type { AfterCommit } from '../events/bus.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { queuePushRemovals } from './push.ts';

/** Flags users may set and clear themselves. */
const EDITABLE_FLAGS = new Set<MessageFlagName>(['read', 'starred', 'collapsed']);
/** Names clients may send that exist but are the server's (Zulip lists these as not editable). */
const KNOWN_FLAGS = new Set<string>([...Object.keys(MESSAGE_FLAG_BITS), 'wildcard_mentioned']);

/**
 * Rows marked per transaction by the bulk operations (each batch is its own short transaction, of some
 * tens of milliseconds; the time budget, after which they answer complete: false, is the configuration's
 * markReadBudgetMs, Zulip's 50 s by default).
 */
export const MARK_READ_BATCH = 10_000;

const MENTION_BITS = MESSAGE_FLAG_BITS.mentioned | MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned;

interface FlagChange {
  op: string;
  flag: string;
  bit: number;
  set: boolean;
}

/** The bit to set or clear, after Zulip's checks of the flag and the operation (in its order of errors). */
function flagChange(op: string, flag: string): FlagChange {
  if (!KNOWN_FLAGS.has(flag)) throw new JsonableError(`Invalid flag: '${flag}'`);
  if (!EDITABLE_FLAGS.has(flag as MessageFlagName)) throw new JsonableError(`Flag not editable: '${flag}'`);
  if (op !== 'add' && op !== 'remove') throw new JsonableError(`Invalid message flag operation: '${op}'`);
  return { op, flag, bit: MESSAGE_FLAG_BITS[flag as MessageFlagName], set: op === 'add' };
}

/**
 * Zulip's do_update_message_flags, in the caller's transaction: sets or clears the flag on the user's
 * rows among `messageIds`, and tells the user's clients which messages changed. Unread messages must be
 * in channels the user is subscribed to, so marking unread skips the messages of other channels and
 * answers those channels. `requireRows`: every message (but those skipped) must be one the user has a
 * row for (`Invalid message(s)` otherwise). The caller has caught up the user's deferred rows for the
 * messages given.
 */
async function changeFlagOfMessages(
  tx: Db,
  afterCommit: AfterCommit,
  deps: AppDeps,
  realm: Realm,
  user: User,
  messageIds: number[],
  change: FlagChange,
  options: { requireRows: boolean },
): Promise<{ changed: number[]; ignoredChannelIds: number[] }> {
  const { op, flag, bit, set } = change;
  let ids = [...new Set(messageIds)];
  let ignoredChannelIds: number[] = [];
  if (flag === 'read' && !set && ids.length > 0) {
    const skipped = await messagesOfUnsubscribedChannels(tx, user.id, ids);
    if (skipped.length > 0) {
      const skippedIds = new Set(skipped.map((m) => m.id));
      ids = ids.filter((id) => !skippedIds.has(id));
      ignoredChannelIds = [...new Set(skipped.map((m) => m.channel_id))].sort((a, b) => a - b);
    }
  }
  // With requireRows, the check and the change are one statement (nothing changes when it fails).
  const { owned, changed } = ids.length > 0 ? await changeFlag(tx, user.id, ids, bit, set, { allOwn: options.requireRows }) : { owned: 0, changed: [] };
  if (options.requireRows && owned !== ids.length) throw new JsonableError('Invalid message(s)');
  if (changed.length === 0) return { changed, ignoredChannelIds };
  if (set && flag === 'read') await queuePushRemovals(tx, deps, realm, user, changed);
  const payload: Record<string, unknown> = { type: 'update_message_flags', op, operation: op, flag, messages: changed, all: false };
  if (!set && flag === 'read') payload['message_details'] = await detailsOf(tx, user.id, changed);
  await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  return { changed, ignoredChannelIds };
}

/** POST /messages/flags; returns the channels of messages left read (removing `read`, unsubscribed). */
export async function doUpdateMessageFlags(deps: AppDeps, realm: Realm, user: User, messageIds: number[], op: string, flag: string): Promise<{ ignoredChannelIds: number[] }> {
  const change = flagChange(op, flag);
  // The usual change (marking read, starring) in one statement after the catch-up: no transaction, no
  // connection held across round trips. Not for marking unread (it skips unsubscribed channels and
  // tells their details), nor for a user with a mobile device when marking read (the pushes' removal
  // is queued in the change's transaction): the statement then changes nothing and the transaction
  // below does it all.
  if (!(flag === 'read' && !change.set)) {
    const ids = [...new Set(messageIds)];
    await catchUpDeferredRows(deps.db, realm, user);
    const done = await inOneStatement((afterCommit) => changeFlagInOneStatement(deps, afterCommit, realm, user, ids, change));
    if (done) return { ignoredChannelIds: [] };
  }
  return inTransaction(deps.db, async (tx, afterCommit) => {
    // In the transaction: the rows the change checks and flags are those of its snapshot.
    await catchUpDeferredRows(tx, realm, user);
    const { ignoredChannelIds } = await changeFlagOfMessages(tx, afterCommit, deps, realm, user, messageIds, change, { requireRows: true });
    return { ignoredChannelIds };
  });
}

/**
 * POST /messages/flags's change of a flag (not the removal of `read`) on the user's messages `ids`
 * (distinct), checked (`Invalid message(s)` unless every one is the user's), changed and announced by
 * one statement (data/message-flags.repo.ts changeFlag, its event stored along). False, with nothing
 * changed, when the user has a mobile device and the change is marking read (see doUpdateMessageFlags).
 */
async function changeFlagInOneStatement(deps: AppDeps, afterCommit: AfterCommit, realm: Realm, user: User, ids: number[], change: FlagChange): Promise<boolean> {
  if (ids.length === 0) return true;
  const { op, flag, bit, set } = change;
  const payload = { type: 'update_message_flags', op, operation: op, flag, messages: [] as number[], all: false };
  const result = await deps.events.publishAlong(
    afterCommit,
    realm.id,
    [{ userIds: [user.id], payload, payloadSql: flagEventPayloadSql(payload) }],
    (insert) => changeFlag(deps.db, user.id, ids, bit, set, { allOwn: true, unlessPushDevices: flag === 'read', events: insert }),
    (answer) => answer.changed.length > 0,
  );
  if (result.devices) return false;
  if (result.owned !== ids.length) throw new JsonableError('Invalid message(s)');
  return true;
}

export interface FlagUpdateForNarrow extends FlagRange {
  /** How many of the range's messages had their flag changed. */
  updatedCount: number;
  /** Marking unread: the channels whose messages were skipped because the user is not subscribed. */
  ignoredChannelIds: number[];
}

/**
 * POST /messages/flags/narrow: the flag change of POST /messages/flags on the range of the user's
 * messages around an anchor in a narrow (queries/message-state.ts messagesInFlagRange).
 */
export async function doUpdateMessageFlagsForNarrow(deps: AppDeps, realm: Realm, user: User, request: FlagRangeRequest, op: string, flag: string): Promise<FlagUpdateForNarrow> {
  await catchUpDeferredRows(deps.db, realm, user);
  const range = await messagesInFlagRange(deps.db, realm, user, request);
  const change = flagChange(op, flag);
  // The range comes from the user's rows; a message deleted meanwhile is simply not flagged.
  // (the range was read from rows caught up just before: nothing more is due for its messages)
  const { changed, ignoredChannelIds } = await inTransaction(deps.db, (tx, afterCommit) =>
    changeFlagOfMessages(tx, afterCommit, deps, realm, user, range.ids, change, { requireRows: false }),
  );
  return { ...range, updatedCount: changed.length, ignoredChannelIds };
}

async function detailsOf(tx: Parameters<typeof messageDetails>[0], userId: number, ids: number[]) {
  const details: Record<string, Record<string, unknown>> = {};
  for (const m of await messageDetails(tx, userId, ids)) {
    const entry: Record<string, unknown> =
      m.channel_id !== null
        ? { type: 'stream', stream_id: m.channel_id, topic: m.topic, unmuted_stream_msg: m.muted !== true }
        : { type: 'private', user_ids: m.direct_user_ids.filter((id) => id !== userId) };
    if (m.flags & MENTION_BITS) entry['mentioned'] = true;
    details[String(m.id)] = entry;
  }
  return details;
}

/**
 * Marks the user's unread messages read (optionally of one channel, and one topic), newest first, in
 * batches that are each their own short transaction (so no lock is held long). Answers false when the
 * time budget ran out first; the remaining messages stay unread and another call finishes them.
 *
 * - One channel or topic (Zulip's do_mark_stream_messages_as_read): up to the newest message the user
 *   had when the call started (messages arriving meanwhile stay unread); each batch tells the user's
 *   clients which messages it marked.
 * - Everything (Zulip's do_mark_all_as_read): every unread message, those arriving meanwhile too; the
 *   clients are told once, when the last batch commits, with Zulip's `all: true` event (no message
 *   IDs: clients mark everything read), and not at all when the budget ran out (as Zulip does).
 *
 * The user's deferred rows: one channel or topic, the caller has caught them up; everything, each
 * batch catches them up in its own transaction (the first one included).
 */
async function markReadInBatches(
  deps: AppDeps,
  realm: Realm,
  user: User,
  scope: { channelId?: number; topic?: string } | 'everything',
  budgetMs: number,
): Promise<boolean> {
  const everything = scope === 'everything';
  const upTo = everything ? null : await newestOwnMessageId(deps.db, user.id);
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const marked = await inTransaction(deps.db, async (tx, afterCommit) => {
      // Everything: messages that arrived since the last batch are marked too.
      if (everything) await catchUpDeferredRows(tx, realm, user);
      const ids = await markReadBatch(tx, user.id, upTo, MARK_READ_BATCH, everything ? {} : scope);
      await queuePushRemovals(tx, deps, realm, user, ids);
      const last = ids.length < MARK_READ_BATCH;
      if (everything ? last : ids.length > 0) {
        const payload = { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: everything ? [] : ids, all: everything };
        await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
      }
      return ids.length;
    });
    if (marked < MARK_READ_BATCH) return true;
    if (Date.now() >= deadline) return false;
  }
}

export async function doMarkAllAsRead(deps: AppDeps, realm: Realm, user: User): Promise<{ complete: boolean }> {
  return { complete: await markReadInBatches(deps, realm, user, 'everything', deps.config.markReadBudgetMs) };
}

/** The channel if the user may read its messages (Zulip's access_stream_by_id), else `Invalid channel ID`. */
async function readableChannel(deps: AppDeps, realm: Realm, user: User, channelId: number) {
  const subject = await loadPermissionSubject(deps.db, user);
  return (await accessChannelById(deps.db, realm, subject, channelId, { requireContentAccess: true, allowArchived: false })).channel;
}

export async function doMarkStreamAsRead(deps: AppDeps, realm: Realm, user: User, channelId: number): Promise<void> {
  const channel = await readableChannel(deps, realm, user, channelId);
  await catchUpDeferredRows(deps.db, realm, user);
  await markReadInBatches(deps, realm, user, { channelId: channel.id }, deps.config.markReadBudgetMs);
}

export async function doMarkTopicAsRead(deps: AppDeps, realm: Realm, user: User, channelId: number, topicName: string): Promise<void> {
  const channel = await readableChannel(deps, realm, user, channelId);
  const topic = topicName === EMPTY_TOPIC_DISPLAY_NAME ? '' : topicName;
  // Before the topic's existence is checked against the user's rows.
  await catchUpDeferredRows(deps.db, realm, user);
  // Zulip: the empty topic name skips the existence check and marks the whole channel read.
  if (topic === '') {
    await markReadInBatches(deps, realm, user, { channelId: channel.id }, deps.config.markReadBudgetMs);
    return;
  }
  if (!(await userHasTopic(deps.db, user.id, channel.id, topic))) throw new JsonableError(`No such topic '${topicName}'`);
  await markReadInBatches(deps, realm, user, { channelId: channel.id, topic }, deps.config.markReadBudgetMs);
}
