// Muted users (table `muted_user`, Zulip's MutedUser): who muted whom, since when; and the reads and
// writes muting and sending need.
import type { Db, RawSql } from './db.ts';

/** The users `userId` muted, with when (UNIX seconds), in the order they were muted. */
export async function mutedUsersOf(db: RawSql, userId: number): Promise<Array<{ id: number; timestamp: number }>> {
  return db.$queryRaw<Array<{ id: number; timestamp: number }>>`
    SELECT muted_user_id AS id, floor(extract(epoch FROM date_muted))::int AS timestamp
    FROM muted_user WHERE user_id = ${userId}::int ORDER BY date_muted, muted_user_id`;
}

/** Records the mute; false when `userId` had muted `mutedUserId` already. */
export async function insertMute(db: Db, userId: number, mutedUserId: number, at: Date): Promise<boolean> {
  const inserted = await db.$executeRaw`
    INSERT INTO muted_user (user_id, muted_user_id, date_muted) VALUES (${userId}::int, ${mutedUserId}::int, ${at})
    ON CONFLICT DO NOTHING`;
  return inserted > 0;
}

/** Removes the mute; false when there was none. */
export async function deleteMute(db: Db, userId: number, mutedUserId: number): Promise<boolean> {
  return (await db.$executeRaw`DELETE FROM muted_user WHERE user_id = ${userId}::int AND muted_user_id = ${mutedUserId}::int`) > 0;
}

/** Who muted `senderId` (any of them may be deactivated). */
export async function mutersOf(db: RawSql, senderId: number): Promise<number[]> {
  const rows = await db.$queryRaw<Array<{ user_id: number }>>`SELECT user_id FROM muted_user WHERE muted_user_id = ${senderId}::int`;
  return rows.map((r) => r.user_id);
}

/**
 * Marks read every unread row of `userId` for a message `senderId` sent (the caller has caught up the
 * user's deferred rows); returns the messages marked, ascending. Walks the user's unread rows (the
 * partial index of unread rows, whose predicate needs the read bit written as the literal 1) and looks
 * up each message's sender.
 */
export async function markUnreadFromSenderRead(db: RawSql, userId: number, senderId: number): Promise<number[]> {
  const rows = await db.$queryRaw<Array<{ message_id: number }>>`
    UPDATE user_message um SET flags = um.flags | 1
    FROM message m
    WHERE um.user_id = ${userId}::int AND (um.flags & 1) = 0 AND m.id = um.message_id AND m.sender_id = ${senderId}::int
    RETURNING um.message_id`;
  return rows.map((r) => r.message_id).sort((a, b) => a - b);
}
