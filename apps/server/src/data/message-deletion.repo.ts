// Deleting messages (DELETE /messages/{id}, POST /streams/{id}/delete_topic): the rows a deletion locks,
// reads and removes, in the deleting transaction. Deleting a message row deletes its user_message rows
// (a statement trigger, migration 20261123190000) and its reactions (a foreign key); what else refers
// to a message by id (reminders, pushes, deferred rows) is handled here.
import type { Db } from './db.ts';
import { Prisma } from './db.ts';
import { DeliveryType } from './scheduled-messages.repo.ts';
import { VisibilityPolicy } from './user-topics.repo.ts';

/** Bit 4096 of user_message.flags: a push of the message is showing on the user's devices (push-outbox.repo.ts). */
const ACTIVE_PUSH_BIT = 4096;

/** A message as a deletion needs it. */
export interface DeletableMessage {
  id: number;
  senderId: number;
  channelId: number | null;
  topic: string;
  dateSent: Date;
}

const DELETABLE_COLUMNS = Prisma.sql`m.id, m.sender_id AS "senderId", m.channel_id AS "channelId", m.topic, m.date_sent AS "dateSent"`;

/** The message, locked until the transaction ends (null when it does not exist, any more). */
export async function lockMessageForDeletion(db: Db, realmId: number, messageId: number): Promise<DeletableMessage | null> {
  const [row] = await db.$queryRaw<DeletableMessage[]>`
    SELECT ${DELETABLE_COLUMNS} FROM message m WHERE m.id = ${messageId}::int AND m.realm_id = ${realmId}::int FOR UPDATE`;
  return row ?? null;
}

/**
 * The newest `limit` messages of the channel's topic (case-insensitive), newest first, locked until the
 * transaction ends; with `rowsOf`, only those that user has a user_message row for (protected history);
 * with `below`, only those with a smaller id. Walks the (channel_id, lower(topic), id) index from its
 * newest end, or from `below` (so that successive batches do not step over the entries of the messages
 * the previous ones deleted).
 */
export async function lockTopicBatch(db: Db, q: { channelId: number; topic: string; limit: number; rowsOf: number | null; below: number | null }): Promise<DeletableMessage[]> {
  const rows = q.rowsOf === null ? Prisma.empty : Prisma.sql`AND EXISTS (SELECT 1 FROM user_message um WHERE um.user_id = ${q.rowsOf}::int AND um.message_id = m.id)`;
  const below = q.below === null ? Prisma.empty : Prisma.sql`AND m.id < ${q.below}::int`;
  return db.$queryRaw<DeletableMessage[]>`
    SELECT ${DELETABLE_COLUMNS} FROM message m
    WHERE m.channel_id = ${q.channelId}::int AND lower(m.topic) = lower(${q.topic}::text) ${below} ${rows}
    ORDER BY m.id DESC LIMIT ${q.limit}::int
    FOR UPDATE`;
}

/**
 * Keeps deferred rows exact across the deletion: every deferred recipient of the messages whose
 * caught-up mark is not yet past them gets that mark row updated (unchanged value; created at 0, which
 * means the same as no row). A concurrent catch-up of such a user (data/deferred-rows.repo.ts
 * writeDeferredRows, which upserts the same row in the statement that writes the rows) then either
 * committed before this update (its rows exist, and the deletion deletes them), or waits for the
 * deletion's commit, and its rows of the deleted messages are dropped by the reference check (migration
 * 20261127120000); in a snapshot transaction (`/register`) it fails as a serialization conflict and is
 * run again. Users in ascending order, so that concurrent deletions take the rows in one order.
 */
export async function fenceDeferredRecipients(db: Db, messageIds: number[]): Promise<void> {
  await db.$executeRaw`
    INSERT INTO user_message_caught_up (user_id, message_id)
    SELECT d.user_id, 0 FROM (
      SELECT DISTINCT r.user_id FROM message m, unnest(m.deferred_recipient_ids) AS r(user_id)
      WHERE m.id = ANY(${messageIds}::int[])
        AND NOT EXISTS (SELECT 1 FROM user_message_caught_up c WHERE c.user_id = r.user_id AND c.message_id >= m.id)
    ) d
    ORDER BY d.user_id
    ON CONFLICT (user_id) DO UPDATE SET message_id = user_message_caught_up.message_id`;
}

/**
 * Who is told of the deletion of `messageIds` (all of one conversation), as access/message-deletion.ts
 * describes it, among active users: `all`, those told of every message (ascending); `some`, those told
 * only of the messages they have a row for (a user_message row or a deferred one), with those ids
 * (ascending). A public channel's 1,000 subscribers thus cost one id each, not a list each.
 */
export async function deletionRecipients(
  db: Db,
  q: {
    realmId: number;
    messageIds: number[];
    channelId: number | null;
    /** Active subscribers of the channel are told (of every message, unless `subscribersNeedRows`). */
    subscribers: boolean;
    subscribersNeedRows: boolean;
    /** Users with a row are told of the messages they have a row for (direct messages, protected history). */
    rowHolders: boolean;
    /** …and of every message of the conversation, if their role is not one of these (public channels). */
    rowHoldersSeeAllUnlessRoleIn: number[] | null;
  },
): Promise<{ all: number[]; some: Array<{ userId: number; ids: number[] }> }> {
  const holders = Prisma.sql`
    SELECT um.user_id, um.message_id FROM user_message um WHERE um.message_id = ANY(${q.messageIds}::int[])
    UNION
    SELECT r.user_id, m.id FROM message m, unnest(m.deferred_recipient_ids) AS r(user_id) WHERE m.id = ANY(${q.messageIds}::int[])`;
  const subscribed = q.channelId === null
    ? Prisma.sql`FALSE`
    : Prisma.sql`EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = u.id AND s.channel_id = ${q.channelId}::int AND s.active)`;
  const seeAll: Prisma.Sql[] = [];
  if (q.subscribers && !q.subscribersNeedRows) seeAll.push(subscribed);
  if (q.rowHolders && q.rowHoldersSeeAllUnlessRoleIn !== null) {
    seeAll.push(Prisma.sql`(u.role <> ALL(${q.rowHoldersSeeAllUnlessRoleIn}::int[]) AND u.id IN (SELECT h.user_id FROM (${holders}) h))`);
  }
  const seeSome: Prisma.Sql[] = [];
  if (q.subscribers && q.subscribersNeedRows) seeSome.push(subscribed);
  if (q.rowHolders && q.rowHoldersSeeAllUnlessRoleIn === null) seeSome.push(Prisma.sql`TRUE`);
  const parts: Prisma.Sql[] = [];
  if (seeAll.length > 0) {
    parts.push(Prisma.sql`
      SELECT u.id AS user_id, NULL::int[] AS ids FROM "user" u
      WHERE u.realm_id = ${q.realmId}::int AND u.is_active AND (${Prisma.join(seeAll, ' OR ')})`);
  }
  if (seeSome.length > 0) {
    parts.push(Prisma.sql`
      SELECT h.user_id, array_agg(DISTINCT h.message_id ORDER BY h.message_id) AS ids
      FROM (${holders}) h JOIN "user" u ON u.id = h.user_id
      WHERE u.realm_id = ${q.realmId}::int AND u.is_active AND (${Prisma.join(seeSome, ' OR ')})
      GROUP BY h.user_id`);
  }
  if (parts.length === 0) return { all: [], some: [] };
  const rows = await db.$queryRaw<Array<{ user_id: number; ids: number[] | null }>>`${Prisma.join(parts, ' UNION ALL ')} ORDER BY user_id`;
  const all = new Set(rows.filter((r) => r.ids === null).map((r) => r.user_id));
  return {
    all: [...all].sort((a, b) => a - b),
    some: rows.filter((r): r is { user_id: number; ids: number[] } => r.ids !== null && !all.has(r.user_id)).map((r) => ({ userId: r.user_id, ids: r.ids })),
  };
}

/** Users with a push of some of the messages showing on their devices, with those messages (ascending). */
export async function pushedMessagesOf(db: Db, messageIds: number[]): Promise<Array<{ userId: number; ids: number[] }>> {
  const rows = await db.$queryRaw<Array<{ user_id: number; ids: number[] }>>`
    SELECT um.user_id, array_agg(um.message_id ORDER BY um.message_id) AS ids FROM user_message um
    WHERE um.message_id = ANY(${messageIds}::int[]) AND (um.flags & ${ACTIVE_PUSH_BIT}::bigint) <> 0
    GROUP BY um.user_id ORDER BY um.user_id`;
  return rows.map((r) => ({ userId: r.user_id, ids: r.ids }));
}

/** Deletes the reminders (not yet delivered) about the messages; answers them with their owners. */
export async function deleteRemindersAbout(db: Db, messageIds: number[]): Promise<Array<{ id: number; ownerId: number }>> {
  return db.$queryRaw<Array<{ id: number; ownerId: number }>>`
    DELETE FROM scheduled_message
    WHERE reminder_target_message_id = ANY(${messageIds}::int[]) AND delivery_type = ${DeliveryType.REMIND}::int AND NOT delivered
    RETURNING id, sender_id AS "ownerId"`;
}

/** The id of the channel's oldest message, or null when it has none. */
export async function firstMessageIdOf(db: Db, channelId: number): Promise<number | null> {
  const [row] = await db.$queryRaw<{ id: number | null }[]>`SELECT min(id) AS id FROM message WHERE channel_id = ${channelId}::int`;
  return row?.id ?? null;
}

/** Deletes the messages; their user_message rows and reactions go with them. */
export async function deleteMessageRows(db: Db, messageIds: number[]): Promise<number> {
  return db.$executeRaw`DELETE FROM message WHERE id = ANY(${messageIds}::int[])`;
}

/**
 * Removes the users' visibility policies for the channel's topic (case-insensitive), and answers them
 * (user, the topic as the user spelled it), by user. With `keepReaders`, users who still have a row (or
 * a deferred one) for a message left in the topic keep theirs (protected history).
 */
export async function clearTopicPolicies(db: Db, q: { channelId: number; topic: string; keepReaders: boolean }): Promise<Array<{ userId: number; topicName: string }>> {
  const keep = q.keepReaders
    ? Prisma.sql`AND NOT EXISTS (
        SELECT 1 FROM message m
        WHERE m.channel_id = ${q.channelId}::int AND lower(m.topic) = t.topic_key
          AND (m.deferred_recipient_ids @> ARRAY[t.user_id] OR EXISTS (SELECT 1 FROM user_message um WHERE um.user_id = t.user_id AND um.message_id = m.id)))`
    : Prisma.empty;
  return db.$queryRaw<Array<{ userId: number; topicName: string }>>`
    DELETE FROM user_topic t
    WHERE t.channel_id = ${q.channelId}::int AND t.topic_key = lower(${q.topic}::text) ${keep}
    RETURNING t.user_id AS "userId", t.topic_name AS "topicName"`;
}

/**
 * The muted topics of each of the users in channels that are not archived, as the older `muted_topics`
 * lists them (user-topics.repo.ts mutedTopicsOfUser, for many users in one statement).
 */
export async function mutedTopicsOfUsers(db: Db, userIds: number[]): Promise<Map<number, [string, string, number][]>> {
  const rows = await db.$queryRaw<{ user_id: number; name: string; topic: string; at: Date }[]>`
    SELECT t.user_id, c.name, t.topic_name AS topic, t.last_updated AS at
    FROM user_topic t JOIN channel c ON c.id = t.channel_id AND NOT c.is_archived
    WHERE t.user_id = ANY(${userIds}::int[]) AND t.visibility_policy = ${VisibilityPolicy.MUTED}::int
    ORDER BY t.user_id, t.last_updated, t.id`;
  const byUser = new Map<number, [string, string, number][]>(userIds.map((id) => [id, []]));
  for (const r of rows) byUser.get(r.user_id)?.push([r.name, r.topic, Math.floor(r.at.getTime() / 1000)]);
  return byUser;
}
