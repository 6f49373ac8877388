// Per-user message flags (user_message.flags): setting and clearing bits, in bounded batches for
// "mark everything read".
import type { Db } from './db.ts';
import { Prisma } from './db.ts';

/** Sets (or clears) `bit` on the user's rows among `messageIds`; returns the ids whose flag changed. */
export async function changeFlag(db: Db, userId: number, messageIds: number[], bit: number, set: boolean): Promise<number[]> {
  const rows = set
    ? await db.$queryRaw<{ id: number }[]>`
        UPDATE user_message SET flags = flags | ${bit}::bigint
        WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[]) AND (flags & ${bit}::bigint) = 0
        RETURNING message_id AS id`
    : await db.$queryRaw<{ id: number }[]>`
        UPDATE user_message SET flags = flags & ~${bit}::bigint
        WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[]) AND (flags & ${bit}::bigint) <> 0
        RETURNING message_id AS id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** How many of `messageIds` the user has a row for. */
export async function countOwnMessages(db: Db, userId: number, messageIds: number[]): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::int AS n FROM user_message WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[])`;
  return row?.n ?? 0;
}

/** The user's newest message id (0 when none): "mark all" stops there, so later messages stay unread. */
export async function newestOwnMessageId(db: Db, userId: number): Promise<number> {
  const [row] = await db.$queryRaw<{ id: number | null }[]>`SELECT max(message_id) AS id FROM user_message WHERE user_id = ${userId}::int`;
  return row?.id ?? 0;
}

const empty = Prisma.empty;
const joinMessage = Prisma.sql`JOIN message m ON m.id = um.message_id`;
function channelFilter(channelId: number, topic: string | undefined): Prisma.Sql {
  return topic === undefined
    ? Prisma.sql`AND m.channel_id = ${channelId}::int`
    : Prisma.sql`AND m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic})`;
}

/**
 * Marks read the newest `limit` unread messages of the user up to `upTo` (optionally of one channel,
 * and one topic), in one statement; returns their ids. Rows another transaction is marking are
 * skipped, not waited for (it marks them).
 */
export async function markReadBatch(
  db: Db,
  userId: number,
  upTo: number,
  limit: number,
  scope: { channelId?: number; topic?: string } = {},
): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    WITH batch AS (
      SELECT um.message_id FROM user_message um
      ${scope.channelId !== undefined ? joinMessage : empty}
      WHERE um.user_id = ${userId}::int AND (um.flags & 1) = 0 AND um.message_id <= ${upTo}::int
        ${scope.channelId !== undefined ? channelFilter(scope.channelId, scope.topic) : empty}
      ORDER BY um.message_id DESC LIMIT ${limit}::int
      FOR UPDATE OF um SKIP LOCKED
    )
    UPDATE user_message u SET flags = u.flags | 1 FROM batch
    WHERE u.user_id = ${userId}::int AND u.message_id = batch.message_id
    RETURNING u.message_id AS id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** Whether the user has any message in the channel's topic (case-insensitive). */
export async function userHasTopic(db: Db, userId: number, channelId: number, topic: string): Promise<boolean> {
  const rows = await db.$queryRaw<unknown[]>`
    SELECT 1 FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_id = ${userId}::int
    WHERE m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic}) LIMIT 1`;
  return rows.length > 0;
}

/** Where each message is, for `update_message_flags` removal events (message_details). */
export async function messageDetails(db: Db, userId: number, messageIds: number[]) {
  return db.$queryRaw<{ id: number; channel_id: number | null; topic: string; direct_user_ids: number[]; flags: number; muted: boolean | null }[]>`
    SELECT m.id, m.channel_id, m.topic, m.direct_user_ids, um.flags::int AS flags, s.is_muted AS muted
    FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_id = ${userId}::int
    LEFT JOIN subscription s ON s.channel_id = m.channel_id AND s.user_id = ${userId}::int
    WHERE m.id = ANY(${messageIds}::int[])`;
}
