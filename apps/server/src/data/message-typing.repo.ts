// The read POST /messages/{message_id}/typing needs beyond POST /typing's (data/typing.repo.ts): which
// of a channel's typing audience the message reached.
import type { Db } from './db.ts';

/**
 * Each of `userIds` (ascending) with their role and whether the message reached them: they have its
 * user_message row, or one is deferred for them (they are in its deferred_recipient_ids).
 */
export async function messageReachedUsers(db: Db, messageId: number, userIds: number[]): Promise<Array<{ id: number; role: number; received: boolean }>> {
  if (userIds.length === 0) return [];
  return db.$queryRaw`
    SELECT u.id, u.role, (um.user_id IS NOT NULL OR u.id = ANY(m.deferred_recipient_ids)) AS received
    FROM "user" u JOIN message m ON m.id = ${messageId}::int
      LEFT JOIN user_message um ON um.message_id = m.id AND um.user_id = u.id
    WHERE u.id = ANY(${userIds}::int[])
    ORDER BY u.id`;
}
