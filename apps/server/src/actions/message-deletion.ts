// Deleting messages: DELETE /messages/{message_id} (Zulip's delete_message_backend) and POST
// /streams/{stream_id}/delete_topic (delete_in_topic). Both end in deleteMessages, in the deleting
// transaction: the `delete_message` events for those who could see the messages, removal pushes for
// notifications still showing, the reminders about them cancelled (with their owners' `reminders`
// events), the channel's `first_message_id` when it changes, and the rows. Deleted messages are gone
// (Zulip moves them to an archive; Parley keeps none): reads, searches, unread counts and topic lists no
// longer find them. Drafts are not touched.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import { findChannelById } from '../data/channels.repo.ts';
import { findUserById } from '../data/users.repo.ts';
import {
  clearTopicPolicies,
  deleteMessageRows,
  deleteRemindersAbout,
  deletionRecipients,
  fenceDeferredRecipients,
  firstMessageIdOf,
  lockMessageForDeletion,
  lockTopicBatch,
  mutedTopicsOfUsers,
  pushedMessagesOf,
  type DeletableMessage,
} from '../data/message-deletion.repo.ts';
import { JsonableError } from '../errors.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { accessChannelById, channelAudience } from '../access/channels.ts';
import { checkCanDeleteMessage, checkCanDeleteTopic, deletionAudience } from '../access/message-deletion.ts';
import { topicFromClient } from '../lib/message-limits.ts';
import { changeableMessage, isPossibleMessageId } from '../queries/messages.ts';
import type { AfterCommit } from '../events/bus.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { queuePushRemovals } from './push.ts';

/** Messages deleted per transaction by delete_topic (Zulip's batch size). */
export const DELETE_TOPIC_BATCH = 100;

interface InTransaction {
  tx: Db;
  afterCommit: AfterCommit;
  deps: Pick<AppDeps, 'events' | 'jobs' | 'config'>;
  realm: Realm;
}

/**
 * Deletes `messages` (locked by the caller; all direct messages, or all of `channel`), which `actor`
 * was allowed to delete, inside the caller's transaction.
 */
export async function deleteMessages(t: InTransaction, actor: User, channel: Channel | null, messages: DeletableMessage[]): Promise<void> {
  if (messages.length === 0) return;
  const { tx, realm } = t;
  const ids = messages.map((m) => m.id).sort((a, b) => a - b);
  // Before anything reads rows: concurrent catch-ups of the deferred recipients have finished, or will
  // find the messages gone (data/message-deletion.repo.ts).
  if (channel !== null) await fenceDeferredRecipients(tx, ids);

  const events: QueuedEvent[] = [];
  const audience = deletionAudience(channel);
  // One event per conversation (Zulip: per channel and lower-cased topic), and per set of messages a
  // recipient may see.
  const conversations = new Map<string, { topic: string; ids: number[] }>();
  for (const m of [...messages].sort((a, b) => a.id - b.id)) {
    const key = channel === null ? '' : m.topic.toLowerCase();
    const group = conversations.get(key) ?? { topic: key, ids: [] };
    group.ids.push(m.id);
    conversations.set(key, group);
  }
  for (const group of conversations.values()) {
    const recipients = await deletionRecipients(tx, { realmId: realm.id, messageIds: group.ids, channelId: channel?.id ?? null, ...audience });
    // The acting user could access every message.
    const bySet = new Map<string, { ids: number[]; userIds: number[] }>([[group.ids.join(','), { ids: group.ids, userIds: [...new Set([...recipients.all, actor.id])] }]]);
    for (const { userId, ids: seen } of recipients.some) {
      if (userId === actor.id) continue;
      const key = seen.join(',');
      const entry = bySet.get(key) ?? { ids: seen, userIds: [] };
      entry.userIds.push(userId);
      bySet.set(key, entry);
    }
    for (const { ids: seen, userIds } of bySet.values()) {
      const payload: Record<string, unknown> =
        channel === null
          ? { type: 'delete_message', message_type: 'private', message_ids: seen }
          : { type: 'delete_message', message_type: 'stream', message_ids: seen, stream_id: channel.id, topic: group.topic };
      events.push({ userIds: userIds.sort((a, b) => a - b), payload });
    }
  }

  // Notifications of the messages still showing on devices are withdrawn; pushes not sent yet find
  // their row gone and are skipped (actions/push.ts deliverPush).
  for (const pushed of await pushedMessagesOf(tx, ids)) await queuePushRemovals(tx, t.deps, realm, { id: pushed.userId }, pushed.ids);
  for (const reminder of await deleteRemindersAbout(tx, ids)) {
    events.push({ userIds: [reminder.ownerId], payload: { type: 'reminders', op: 'remove', reminder_id: reminder.id } });
  }

  const firstBefore = channel !== null ? await firstMessageIdOf(tx, channel.id) : null;
  await deleteMessageRows(tx, ids);
  if (channel !== null && firstBefore !== null && ids.includes(firstBefore)) {
    const payload = { type: 'stream', op: 'update', property: 'first_message_id', value: await firstMessageIdOf(tx, channel.id), stream_id: channel.id, name: channel.name };
    events.push({ audience: channelAudience(channel), payload });
  }
  await t.deps.events.publish(tx, t.afterCommit, realm.id, events);
}

/** DELETE /messages/{message_id}. */
export async function doDeleteMessage(deps: AppDeps, realm: Realm, user: User, messageId: number): Promise<void> {
  if (isPossibleMessageId(messageId)) await catchUpDeferredRows(deps.db, realm, user);
  // `Invalid message(s)` for a message the user cannot access (or that is in an archived channel).
  await changeableMessage(deps.db, realm, user, messageId);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const message = await lockMessageForDeletion(tx, realm.id, messageId);
    if (!message) throw new JsonableError('Message already deleted');
    // Under the lock: the message as it is now (a move may have changed its channel meanwhile).
    const found = await changeableMessage(tx, realm, user, messageId);
    const channel = found.channel ? await findChannelById(tx, realm.id, found.channel.id) : null;
    const subject = await loadPermissionSubject(tx, user);
    const sender = message.senderId === user.id ? null : await findUserById(tx, realm.id, message.senderId);
    checkCanDeleteMessage(subject, realm, channel, message, sender);
    await deleteMessages({ tx, afterCommit, deps, realm }, user, channel, [message]);
  });
}

/**
 * POST /streams/{stream_id}/delete_topic: the topic's messages the administrator can access, newest
 * first, DELETE_TOPIC_BATCH per transaction, until none is left (complete) or the time budget
 * (configuration deleteTopicBudgetMs, Zulip's 50 s) ran out after a batch (not complete: the client
 * calls again). Once complete, the users' visibility policies for the topic are cleared.
 */
export async function doDeleteTopic(deps: AppDeps, realm: Realm, user: User, channelId: number, topicName: string): Promise<{ complete: boolean }> {
  checkCanDeleteTopic(user);
  const subject = await loadPermissionSubject(deps.db, user);
  const { channel } = await accessChannelById(deps.db, realm, subject, channelId, { requireContentAccess: true, allowArchived: false });
  const topic = topicFromClient(topicName);
  // Protected history: only the messages the administrator received (their rows, caught up first).
  const rowsOf = channel.historyPublicToSubscribers ? null : user.id;
  if (rowsOf !== null) await catchUpDeferredRows(deps.db, realm, user);
  const deadline = Date.now() + deps.config.deleteTopicBudgetMs;
  // Each batch continues below the last one; once the topic seems empty, one more batch from the top
  // takes what arrived meanwhile.
  let below: number | null = null;
  for (;;) {
    const started = performance.now();
    const batch = await inTransaction(deps.db, async (tx, afterCommit) => {
      const found = await lockTopicBatch(tx, { channelId: channel.id, topic, limit: DELETE_TOPIC_BATCH, rowsOf, below });
      // The channel as it is now: who is told depends on its privacy and history settings.
      const current = found.length > 0 ? await findChannelById(tx, realm.id, channel.id) : null;
      await deleteMessages({ tx, afterCommit, deps, realm }, user, current ?? channel, found);
      return found;
    });
    // Each batch's transaction time (bench/delete-topic.bench.ts reads these lines).
    deps.logger.debug({ channel_id: channel.id, deleted: batch.length, ms: Math.round((performance.now() - started) * 10) / 10 }, 'delete_topic batch');
    if (batch.length < DELETE_TOPIC_BATCH) {
      if (below === null) break;
      below = null;
    } else {
      below = Math.min(...batch.map((m) => m.id));
    }
    if (Date.now() >= deadline) return { complete: false };
  }
  const started = performance.now();
  const cleared = await clearTopicVisibilityPolicies(deps, realm, channel, topic);
  deps.logger.debug({ channel_id: channel.id, cleared, ms: Math.round((performance.now() - started) * 10) / 10 }, 'delete_topic policies cleared');
  return { complete: true };
}

/**
 * The users' visibility policies for a deleted topic go (under protected history, only those of users
 * left with no message of it they received), each user's clients told as when they remove one.
 */
async function clearTopicVisibilityPolicies(deps: AppDeps, realm: Realm, channel: Channel, topic: string): Promise<number> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const cleared = await clearTopicPolicies(tx, { channelId: channel.id, topic, keepReaders: !channel.historyPublicToSubscribers });
    if (cleared.length === 0) return 0;
    const lastUpdated = Math.floor(Date.now() / 1000);
    const events: QueuedEvent[] = [];
    const muted = await mutedTopicsOfUsers(tx, cleared.map((c) => c.userId));
    for (const { userId, topicName } of cleared) {
      events.push({ userIds: [userId], payload: { type: 'muted_topics', muted_topics: muted.get(userId) ?? [] } });
      events.push({ userIds: [userId], payload: { type: 'user_topic', stream_id: channel.id, topic_name: topicName, last_updated: lastUpdated, visibility_policy: 0 } });
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);
    return cleared.length;
  });
}
