// Changing stored messages (PATCH /messages/{message_id}): the locked message, the messages of a topic
// that move with it, the content, topic, channel and edit history written in bulk, the per-recipient
// rows a change of channel adds or removes, and who could see a message (the candidates the access
// rules filter for the change's events).
import type { Db } from './db.ts';
import { Prisma } from './db.ts';
import { MESSAGE_COLUMNS } from './messages.repo.ts';
import type { MessageRow } from '../lib/message-format.ts';

/** The message being changed, locked until commit, with what changing it needs. */
export interface LockedMessage extends MessageRow {
  realm_id: number;
  deferred_recipient_ids: number[];
}

/** Locks the message's row (FOR UPDATE) and reads it; null when the organization has no such message. */
export async function lockMessage(tx: Db, realmId: number, messageId: number): Promise<LockedMessage | null> {
  const rows = await tx.$queryRaw<LockedMessage[]>`
    SELECT ${MESSAGE_COLUMNS}, m.realm_id, m.deferred_recipient_ids FROM message m
    WHERE m.id = ${messageId}::int AND m.realm_id = ${realmId}::int FOR UPDATE`;
  return rows[0] ?? null;
}

/**
 * The messages of the channel's topic (case-insensitive) from `fromId` on (all when null), ascending,
 * with when each was sent; with `onlyRowsOf`, only those the user has a row for (written or deferred).
 * Locked in id order, so that two moves of one topic wait for each other rather than deadlock.
 */
export async function topicMessages(
  tx: Db,
  q: { channelId: number; topic: string; fromId: number | null; onlyRowsOf: number | null },
): Promise<Array<{ id: number; date_sent: Date }>> {
  const from = q.fromId === null ? Prisma.empty : Prisma.sql`AND m.id >= ${q.fromId}::int`;
  const rows = q.onlyRowsOf === null
    ? Prisma.empty
    : Prisma.sql`AND (EXISTS (SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_id = ${q.onlyRowsOf}::int) OR m.deferred_recipient_ids @> ARRAY[${q.onlyRowsOf}::int])`;
  return tx.$queryRaw`
    SELECT m.id, m.date_sent FROM message m
    WHERE m.channel_id = ${q.channelId}::int AND lower(m.topic) = lower(${q.topic}) ${from} ${rows}
    ORDER BY m.id FOR UPDATE`;
}

/** Whether the channel's topic (case-insensitive) has a message other than `exceptIds`. */
export async function topicHasOtherMessages(tx: Db, channelId: number, topic: string, exceptIds: number[]): Promise<boolean> {
  const rows = await tx.$queryRaw<unknown[]>`
    SELECT 1 FROM message m WHERE m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic})
      AND m.id <> ALL(string_to_array(${exceptIds.join(',')}, ',')::int[]) LIMIT 1`;
  return rows.length > 0;
}

/** One entry of message.edit_history, in Zulip's stored shape. */
export interface EditHistoryEntry {
  user_id: number;
  timestamp: number;
  prev_content?: string;
  prev_rendered_content?: string;
  prev_topic?: string;
  topic?: string;
  prev_stream?: number;
  stream?: number;
}

/**
 * Writes a change: every message of `ids` gets `entry` at the head of its history (the target gets
 * `targetEntry`, which may add its content change), the new topic and channel when given, and its move
 * time when `moved`; the target gets the new content, rendering and content-edit time when given.
 */
export async function writeMessageChange(
  tx: Db,
  change: {
    ids: number[];
    targetId: number;
    entry: EditHistoryEntry;
    targetEntry: EditHistoryEntry;
    topic: string | null;
    channelId: number | null;
    moved: boolean;
    content: { content: string; rendered: string } | null;
    at: Date;
  },
): Promise<void> {
  // Only the columns that change are set: setting one (even to itself) makes PostgreSQL recompute the
  // stored search vector and look up the channel's key for every row of a large move.
  const sets: Prisma.Sql[] = [];
  if (change.topic !== null) sets.push(Prisma.sql`topic = ${change.topic}`);
  if (change.channelId !== null) sets.push(Prisma.sql`channel_id = ${change.channelId}::int`);
  if (change.moved) sets.push(Prisma.sql`last_moved_time = ${change.at}::timestamp`);
  const others = change.ids.filter((id) => id !== change.targetId);
  // A large move: the statement-level triggers of message (the channel check) keep every new row in a
  // transition table, which spills to a temporary file beyond work_mem (4 MB: ~6,000 rows of ~700
  // bytes); it stays in memory for the rest of this transaction.
  if (others.length > LARGE_CHANGE_ROWS) await tx.$executeRaw`SELECT set_config('work_mem', '64MB', true)`;
  if (others.length > 0) {
    await tx.$executeRaw`
      UPDATE message m SET ${Prisma.join([...sets, Prisma.sql`edit_history = jsonb_build_array(${JSON.stringify(change.entry)}::jsonb) || COALESCE(m.edit_history, '[]'::jsonb)`], ', ')}
      WHERE m.id = ANY(string_to_array(${others.join(',')}, ',')::int[])`;
  }
  const content = change.content;
  const targetSets = content
    ? [...sets, Prisma.sql`content = ${content.content}`, Prisma.sql`rendered_content = ${content.rendered}`, Prisma.sql`last_edit_time = ${change.at}::timestamp`]
    : sets;
  await tx.$executeRaw`
    UPDATE message m SET ${Prisma.join([...targetSets, Prisma.sql`edit_history = jsonb_build_array(${JSON.stringify(change.targetEntry)}::jsonb) || COALESCE(m.edit_history, '[]'::jsonb)`], ', ')}
    WHERE m.id = ${change.targetId}::int`;
}

/** Messages changed at once beyond which writeMessageChange gives the statement more memory. */
const LARGE_CHANGE_ROWS = 2_000;

/** Mention flag bits an edit recomputes (mentioned, stream- and topic-wildcard mentioned). */
export const MENTION_BITS = 8 | 16 | 32;

/**
 * After a content edit: each recipient's mention bits as the new content gives them (`bitsOf`), on
 * their written row; deferred recipients the new content flags get their row now (as at sending) and
 * leave the deferred list.
 */
export async function rewriteMentionFlags(tx: Db, messageId: number, q: { mentioned: number[]; streamWildcard: boolean; topicWildcardUsers: number[] }): Promise<void> {
  const bits = (col: Prisma.Sql) => Prisma.sql`(
    CASE WHEN ${col} = ANY(string_to_array(${q.mentioned.join(',')}, ',')::int[]) THEN 8 ELSE 0 END
    | CASE WHEN ${q.streamWildcard}::boolean THEN 16 ELSE 0 END
    | CASE WHEN ${col} = ANY(string_to_array(${q.topicWildcardUsers.join(',')}, ',')::int[]) THEN 32 ELSE 0 END)`;
  await tx.$executeRaw`
    UPDATE user_message um SET flags = (um.flags & ~${MENTION_BITS}::int) | ${bits(Prisma.sql`um.user_id`)}
    WHERE um.message_id = ${messageId}::int AND (um.flags & ${MENTION_BITS}::int) <> ${bits(Prisma.sql`um.user_id`)}`;
  await tx.$executeRaw`
    WITH flagged AS (
      SELECT d AS user_id, ${bits(Prisma.sql`d`)} AS flags FROM message m, unnest(m.deferred_recipient_ids) d WHERE m.id = ${messageId}::int
    ), written AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT user_id, ${messageId}::int, flags FROM flagged WHERE flags <> 0
      ON CONFLICT DO NOTHING
    )
    UPDATE message SET deferred_recipient_ids = ARRAY(SELECT user_id FROM flagged WHERE flags = 0 ORDER BY user_id)
    WHERE id = ${messageId}::int AND EXISTS (SELECT 1 FROM flagged WHERE flags <> 0)`;
}

/**
 * Everyone who might see a channel message, with what the access rules need: its written rows
 * (flags), its deferred recipients (flags 0), and the active subscribers of `channelId`; active users
 * only. A message of `channelId` as stored now (call after writing a move for the destination).
 */
export async function channelMessageCandidates(
  db: Db,
  messageId: number,
  channelId: number,
): Promise<Array<{ userId: number; role: number; flags: number | null; subscribed: boolean }>> {
  return db.$queryRaw`
    WITH rows AS (
      SELECT user_id, max(flags) AS flags FROM (
        SELECT um.user_id, um.flags::int AS flags FROM user_message um WHERE um.message_id = ${messageId}::int
        UNION ALL
        SELECT d, 0 FROM message m, unnest(m.deferred_recipient_ids) d WHERE m.id = ${messageId}::int
      ) r GROUP BY user_id
    ), subs AS (
      SELECT s.user_id FROM subscription s WHERE s.channel_id = ${channelId}::int AND s.active
    )
    SELECT u.id AS "userId", u.role, rows.flags, subs.user_id IS NOT NULL AS subscribed
    FROM rows FULL JOIN subs USING (user_id) JOIN "user" u ON u.id = user_id AND u.is_active
    ORDER BY u.id`;
}

/** The participants of a direct message with their flags (every participant has a written row). */
export async function directMessageCandidates(db: Db, messageId: number): Promise<Array<{ userId: number; flags: number }>> {
  return db.$queryRaw`
    SELECT um.user_id AS "userId", um.flags::int AS flags FROM user_message um JOIN "user" u ON u.id = um.user_id AND u.is_active
    WHERE um.message_id = ${messageId}::int ORDER BY um.user_id`;
}

/**
 * A move to another channel: the rows of the moved messages of those who were subscribed to `fromId`
 * (actively or not) and are not active subscribers of `toId` are deleted (Zulip's rule).
 */
export async function deleteRowsLeavingChannel(tx: Db, ids: number[], fromId: number, toId: number): Promise<void> {
  // Those users first (a few subscription rows): when there are none, as when both channels have the
  // same subscribers, the moved messages' rows are not looked at (one probe per message otherwise).
  const leaving = await tx.$queryRaw<Array<{ user_id: number }>>`
    SELECT s.user_id FROM subscription s WHERE s.channel_id = ${fromId}::int
    EXCEPT
    SELECT s.user_id FROM subscription s WHERE s.channel_id = ${toId}::int AND s.active`;
  if (leaving.length === 0) return;
  await tx.$executeRaw`
    DELETE FROM user_message um
    WHERE um.message_id = ANY(string_to_array(${ids.join(',')}, ',')::int[])
      AND um.user_id = ANY(string_to_array(${leaving.map((r) => r.user_id).join(',')}, ',')::int[])`;
}

/**
 * A move into a channel with protected history: its active subscribers get a row (read) for each moved
 * message they had none of, and deferred recipients who are not among them leave the lists (a later
 * subscription must not write them a row to a message sent before it).
 */
export async function settleRowsInProtectedChannel(tx: Db, ids: number[], toId: number): Promise<void> {
  // Deferred recipients who stay get their (unread) row now; the other subscribers a read one.
  await tx.$executeRaw`
    WITH subs AS (SELECT s.user_id FROM subscription s JOIN "user" u ON u.id = s.user_id AND u.is_active WHERE s.channel_id = ${toId}::int AND s.active),
    deferred AS (
      SELECT m.id, d AS user_id FROM message m, unnest(m.deferred_recipient_ids) d
      WHERE m.id = ANY(string_to_array(${ids.join(',')}, ',')::int[])
    ), kept AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT deferred.user_id, deferred.id, 0 FROM deferred WHERE deferred.user_id IN (SELECT user_id FROM subs)
      ON CONFLICT DO NOTHING
    )
    UPDATE message m SET deferred_recipient_ids = '{}'
    WHERE m.id = ANY(string_to_array(${ids.join(',')}, ',')::int[]) AND cardinality(m.deferred_recipient_ids) > 0`;
  await tx.$executeRaw`
    WITH subs AS (SELECT s.user_id FROM subscription s JOIN "user" u ON u.id = s.user_id AND u.is_active WHERE s.channel_id = ${toId}::int AND s.active),
    moved AS (SELECT unnest(string_to_array(${ids.join(',')}, ',')::int[]) AS id)
    INSERT INTO user_message (user_id, message_id, flags)
    SELECT subs.user_id, moved.id, 1 FROM subs, moved
    ON CONFLICT DO NOTHING`;
}

/** Users' visibility policies for a topic of a channel (case-insensitive). */
export async function topicPolicies(db: Db, channelId: number, topic: string): Promise<Map<number, number>> {
  const rows = await db.$queryRaw<Array<{ user_id: number; visibility_policy: number }>>`
    SELECT user_id, visibility_policy FROM user_topic WHERE channel_id = ${channelId}::int AND topic_key = lower(${topic})`;
  return new Map(rows.map((r) => [r.user_id, r.visibility_policy]));
}

/** The newest message of the channel's topic (case-insensitive), locked; null when the topic is empty. */
export async function lastMessageOfTopic(
  tx: Db,
  channelId: number,
  topic: string,
): Promise<{ id: number; senderId: number; channelId: number; topic: string; dateSent: Date; content: string } | null> {
  const rows = await tx.$queryRaw<Array<{ id: number; senderId: number; channelId: number; topic: string; dateSent: Date; content: string }>>`
    SELECT m.id, m.sender_id AS "senderId", m.channel_id AS "channelId", m.topic, m.date_sent AS "dateSent", m.content
    FROM message m WHERE m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic})
    ORDER BY m.id DESC LIMIT 1 FOR UPDATE`;
  return rows[0] ?? null;
}

/** Who has a personal mention (the mentioned bit) on the message now. */
export async function mentionedUserIds(tx: Db, messageId: number): Promise<Set<number>> {
  const rows = await tx.$queryRaw<Array<{ user_id: number }>>`
    SELECT um.user_id FROM user_message um WHERE um.message_id = ${messageId}::int AND (um.flags & 8) <> 0`;
  return new Set(rows.map((r) => r.user_id));
}

/**
 * Who finds a resolve notice already read (Zulip's resolved_topic_notice_auto_read_policy): the
 * channel's active subscribers whose policy is `always`, or `except_followed` while they do not
 * follow the topic.
 */
export async function readersOfResolveNotice(db: Db, channelId: number, topic: string): Promise<number[]> {
  const rows = await db.$queryRaw<Array<{ user_id: number }>>`
    SELECT s.user_id FROM subscription s JOIN user_settings us ON us.user_id = s.user_id
    WHERE s.channel_id = ${channelId}::int AND s.active
      AND (us.resolved_topic_notice_auto_read_policy = 'always'
        OR (us.resolved_topic_notice_auto_read_policy = 'except_followed' AND NOT EXISTS (
          SELECT 1 FROM user_topic ut WHERE ut.user_id = s.user_id AND ut.channel_id = ${channelId}::int AND ut.topic_key = lower(${topic}) AND ut.visibility_policy = 3)))`;
  return rows.map((r) => r.user_id);
}

/** Active users among `userIds`, with their role and whether they are actively subscribed to the channel. */
export async function policyHolders(db: Db, userIds: number[], channelId: number): Promise<Array<{ userId: number; role: number; subscribed: boolean }>> {
  return db.$queryRaw`
    SELECT u.id AS "userId", u.role,
      EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = u.id AND s.channel_id = ${channelId}::int AND s.active) AS subscribed
    FROM "user" u WHERE u.id = ANY(string_to_array(${userIds.join(',')}, ',')::int[]) AND u.is_active`;
}

/** Which of `ids` each of `userIds` has a row for (written or deferred), ascending. */
export async function idsWithRowsOf(db: Db, ids: number[], userIds: number[]): Promise<Map<number, number[]>> {
  const rows = await db.$queryRaw<Array<{ user_id: number; ids: number[] }>>`
    WITH moved AS (SELECT unnest(string_to_array(${ids.join(',')}, ',')::int[]) AS id),
    users AS (SELECT unnest(string_to_array(${userIds.join(',')}, ',')::int[]) AS id)
    SELECT user_id, array_agg(message_id ORDER BY message_id) AS ids FROM (
      SELECT um.user_id, um.message_id FROM user_message um
      WHERE um.message_id IN (SELECT id FROM moved) AND um.user_id IN (SELECT id FROM users)
      UNION
      SELECT d, m.id FROM message m, unnest(m.deferred_recipient_ids) d
      WHERE m.id IN (SELECT id FROM moved) AND d IN (SELECT id FROM users)
    ) x GROUP BY user_id`;
  return new Map(rows.map((r) => [r.user_id, r.ids]));
}
