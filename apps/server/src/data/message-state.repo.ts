// Per-user message state read by /register: unread messages and recent direct conversations.
import type { Db } from './db.ts';

export interface UnreadRow {
  id: number;
  channel_id: number | null;
  topic: string;
  sender_id: number;
  direct_user_ids: number[];
  flags: number;
}

/** The user's unread messages, newest first, at most `limit`. */
export async function unreadMessagesOfUser(db: Db, userId: number, limit: number): Promise<UnreadRow[]> {
  return db.$queryRaw<UnreadRow[]>`
    SELECT m.id, m.channel_id, m.topic, m.sender_id, m.direct_user_ids, um.flags::int AS flags
    FROM user_message um JOIN message m ON m.id = um.message_id
    WHERE um.user_id = ${userId}::int AND (um.flags & 1) = 0
    ORDER BY um.message_id DESC LIMIT ${limit}::int`;
}

/** The user's direct-message conversations (participants incl. the user) with their newest message id, newest first. */
export async function recentDirectConversationsOfUser(db: Db, userId: number, limit: number): Promise<{ direct_user_ids: number[]; max_id: number }[]> {
  return db.$queryRaw`
    SELECT m.direct_user_ids, max(m.id) AS max_id
    FROM (SELECT message_id FROM user_message WHERE user_id = ${userId}::int AND (flags & 2048) <> 0 ORDER BY message_id DESC LIMIT 10000) um
    JOIN message m ON m.id = um.message_id
    GROUP BY m.direct_user_ids ORDER BY max_id DESC LIMIT ${limit}::int`;
}
