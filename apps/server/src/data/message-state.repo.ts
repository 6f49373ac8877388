// Per-user message state read by /register: unread messages and recent direct conversations.
import type { RawSql } from './db.ts';

/** Unread messages of the user with the same channel and topic (exact spelling), or the same participants. */
export interface UnreadGroup {
  channel_id: number | null;
  topic: string;
  /** Direct messages: the participants, ascending (the user included); empty for channels. */
  direct_user_ids: number[];
  /** The oldest of `ids`. */
  first_id: number;
  /** The unread messages, in no particular order. */
  ids: number[];
  /** Those of them with one of `mentionBits` set, in no particular order. */
  mention_ids: number[];
  /** Whether the user has more than `limit` unread messages (the same on every row). */
  missing: boolean;
}

/**
 * The user's newest `limit` unread messages, but those of channels they have left, grouped in
 * PostgreSQL by channel and topic (as spelled)
 * or by participants: a row per group, not per message. The lists are aggregated in no particular
 * order: ordering 50,000 ids inside the aggregates costs PostgreSQL more than sorting them in Node.
 */
export async function unreadGroupsOfUser(db: RawSql, userId: number, limit: number, mentionBits: number): Promise<UnreadGroup[]> {
  return db.$queryRaw<UnreadGroup[]>`
    WITH newest AS (
      SELECT message_id AS id, flags FROM user_message
      WHERE user_id = ${userId}::int AND (flags & 1) = 0
      ORDER BY message_id DESC LIMIT ${limit + 1}::int
    ), kept AS (
      SELECT n.id, n.flags, m.channel_id, m.topic, m.direct_user_ids
      FROM (SELECT id, flags FROM newest ORDER BY id DESC LIMIT ${limit}::int) n JOIN message m ON m.id = n.id
      -- Channels the user has left are not theirs to be told about (Zulip's inactive recipients).
      WHERE m.channel_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM subscription s WHERE s.user_id = ${userId}::int AND s.channel_id = m.channel_id AND NOT s.active)
    )
    SELECT channel_id, topic, direct_user_ids, min(id) AS first_id, array_agg(id) AS ids,
           coalesce(array_agg(id) FILTER (WHERE (flags & ${mentionBits}::bigint) <> 0), '{}') AS mention_ids,
           (SELECT count(*) FROM newest) > ${limit}::int AS missing
    FROM kept GROUP BY channel_id, topic, direct_user_ids`;
}

/** The user's direct-message conversations (participants incl. the user) with their newest message id, newest first. */
export async function recentDirectConversationsOfUser(db: RawSql, userId: number, limit: number): Promise<{ direct_user_ids: number[]; max_id: number }[]> {
  return db.$queryRaw`
    SELECT m.direct_user_ids, max(m.id) AS max_id
    FROM (SELECT message_id FROM user_message WHERE user_id = ${userId}::int AND (flags & 2048) <> 0 ORDER BY message_id DESC LIMIT 10000) um
    JOIN message m ON m.id = um.message_id
    GROUP BY m.direct_user_ids ORDER BY max_id DESC LIMIT ${limit}::int`;
}
