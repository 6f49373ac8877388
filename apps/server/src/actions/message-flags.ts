// Read state and personal flags: POST /messages/flags, /mark_all_as_read, /mark_stream_as_read,
// /mark_topic_as_read. Each change stores an `update_message_flags` event for the user's clients.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { changeFlag, countOwnMessages, markReadBatch, messageDetails, newestOwnMessageId, userHasTopic } from '../data/message-flags.repo.ts';
import { findChannelById } from '../data/channels.repo.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { JsonableError } from '../errors.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { hasContentAccess } from '../access/channels.ts';
import { MESSAGE_FLAG_BITS, type MessageFlagName } from '../lib/message-flags.ts';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { queuePushRemovals } from './push.ts';

/** Flags users may set and clear themselves. */
const EDITABLE_FLAGS = new Set<MessageFlagName>(['read', 'starred', 'collapsed']);
/** Names clients may send that exist but are the server's (Zulip lists these as not editable). */
const KNOWN_FLAGS = new Set<string>([...Object.keys(MESSAGE_FLAG_BITS), 'wildcard_mentioned']);

/** Rows marked per transaction by the bulk operations (each batch is its own short transaction). */
export const MARK_READ_BATCH = 5_000;
/** The bulk operations stop and answer complete: false after this long (Zulip: about 50 s). */
export const MARK_READ_TIME_BUDGET_MS = 50_000;

const MENTION_BITS = MESSAGE_FLAG_BITS.mentioned | MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned;

export async function doUpdateMessageFlags(deps: AppDeps, realm: Realm, user: User, messageIds: number[], op: string, flag: string): Promise<void> {
  if (op !== 'add' && op !== 'remove') throw new JsonableError(`Invalid message flag operation: '${op}'`);
  if (!KNOWN_FLAGS.has(flag)) throw new JsonableError(`Invalid flag: '${flag}'`);
  if (!EDITABLE_FLAGS.has(flag as MessageFlagName)) throw new JsonableError(`Flag not editable: '${flag}'`);
  const ids = [...new Set(messageIds)];
  const bit = MESSAGE_FLAG_BITS[flag as MessageFlagName];
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if ((await countOwnMessages(tx, user.id, ids)) !== ids.length) throw new JsonableError('Invalid message(s)');
    const changed = await changeFlag(tx, user.id, ids, bit, op === 'add');
    if (changed.length === 0) return;
    if (op === 'add' && flag === 'read') await queuePushRemovals(tx, deps, realm, user, changed);
    const payload: Record<string, unknown> = { type: 'update_message_flags', op, operation: op, flag, messages: changed, all: false };
    if (op === 'remove' && flag === 'read') payload['message_details'] = await detailsOf(tx, user.id, changed);
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
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
 * Marks the user's unread messages read, newest first, in batches that are each their own short
 * transaction (so no lock is held long), up to the newest message the user had when the call started:
 * messages arriving meanwhile stay unread. Answers false when the time budget ran out first; the
 * remaining messages stay unread and another call finishes them.
 */
async function markReadInBatches(
  deps: AppDeps,
  realm: Realm,
  user: User,
  scope: { channelId?: number; topic?: string },
  budgetMs = MARK_READ_TIME_BUDGET_MS,
): Promise<boolean> {
  const upTo = await newestOwnMessageId(deps.db, user.id);
  const deadline = Date.now() + budgetMs;
  for (;;) {
    const marked = await inTransaction(deps.db, async (tx, afterCommit) => {
      const ids = await markReadBatch(tx, user.id, upTo, MARK_READ_BATCH, scope);
      await queuePushRemovals(tx, deps, realm, user, ids);
      if (ids.length) {
        await deps.events.publish(tx, afterCommit, realm.id, [
          { userIds: [user.id], payload: { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: ids, all: false } },
        ]);
      }
      return ids.length;
    });
    if (marked < MARK_READ_BATCH) return true;
    if (Date.now() >= deadline) return false;
  }
}

export async function doMarkAllAsRead(deps: AppDeps, realm: Realm, user: User): Promise<{ complete: boolean }> {
  return { complete: await markReadInBatches(deps, realm, user, {}, deps.config.markReadBudgetMs) };
}

/** The channel if the user may read it (Zulip's access_stream_by_id), else `Invalid channel ID`. */
async function readableChannel(deps: AppDeps, realm: Realm, user: User, channelId: number) {
  const channel = await findChannelById(deps.db, realm.id, channelId);
  const subject = await loadPermissionSubject(deps.db, user);
  const subscribed = channel ? (await subscribedChannelIds(deps.db, user.id, [channel.id])).has(channel.id) : false;
  if (!channel || channel.isArchived || !hasContentAccess(subject, channel, subscribed)) throw new JsonableError('Invalid channel ID');
  return channel;
}

export async function doMarkStreamAsRead(deps: AppDeps, realm: Realm, user: User, channelId: number): Promise<void> {
  const channel = await readableChannel(deps, realm, user, channelId);
  await markReadInBatches(deps, realm, user, { channelId: channel.id }, deps.config.markReadBudgetMs);
}

export async function doMarkTopicAsRead(deps: AppDeps, realm: Realm, user: User, channelId: number, topicName: string): Promise<void> {
  const channel = await readableChannel(deps, realm, user, channelId);
  const topic = topicName === EMPTY_TOPIC_DISPLAY_NAME ? '' : topicName;
  // Zulip: the empty topic name skips the existence check and marks the whole channel read.
  if (topic === '') {
    await markReadInBatches(deps, realm, user, { channelId: channel.id }, deps.config.markReadBudgetMs);
    return;
  }
  if (!(await userHasTopic(deps.db, user.id, channel.id, topic))) throw new JsonableError(`No such topic '${topicName}'`);
  await markReadInBatches(deps, realm, user, { channelId: channel.id, topic }, deps.config.markReadBudgetMs);
}
