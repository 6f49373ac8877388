// The read GET /messages/{message_id}/read_receipts needs: who has read a message.
import type { Db } from './db.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';

/**
 * The users whose row of the message has the `read` flag (ascending), leaving out `exceptUserId` (the
 * sender), deactivated users, users who turned `send_read_receipts` off, and, as Zulip does, users who
 * muted `viewerId` (muting would show: they read everything the viewer sends at once) and users the
 * viewer muted. A recipient whose row is still deferred has not read the message: having no row, they
 * are not listed.
 */
export async function readReceiptUserIds(db: Db, messageId: number, exceptUserId: number, viewerId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT um.user_id AS id
    FROM user_message um JOIN "user" u ON u.id = um.user_id LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE um.message_id = ${messageId}::int AND (um.flags & ${MESSAGE_FLAG_BITS.read}::int) <> 0
      AND um.user_id <> ${exceptUserId}::int AND u.is_active AND COALESCE(s.send_read_receipts, TRUE)
      AND NOT EXISTS (SELECT 1 FROM muted_user mu
        WHERE (mu.user_id = um.user_id AND mu.muted_user_id = ${viewerId}::int) OR (mu.user_id = ${viewerId}::int AND mu.muted_user_id = um.user_id))
    ORDER BY um.user_id`;
  return rows.map((r) => r.id);
}
