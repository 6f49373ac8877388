// Deferred user_message rows: a channel message's recipients with no flag of their own get their row
// when they next read, not when the message is sent (message.deferred_recipient_ids lists them;
// user_message_caught_up says how far each user's rows are written). Every request that reads a user's
// rows or flags first writes what is due to them (writeDeferredRows), once, as an explicit step before
// the read: actions/deferred-rows.ts catchUpDeferredRows, which lists its callers.
import type { RawSql } from './db.ts';

/**
 * Writes the user's deferred rows (flags 0) for the messages of the organization after the user's
 * caught-up mark, and moves the mark to the organization's newest message, in one statement (one
 * snapshot). Message ids of an organization follow commit order (storeMessage takes the organization's
 * event-order lock before taking an id), so no message at or below the newest one seen can still be
 * committed later: none is missed. Only channels the user has a subscription row for (active or not)
 * are looked at, from the mark on. Concurrent calls for one user write each row once (ON CONFLICT)
 * and keep the higher mark. Rows that already exist (an explicit row, or an earlier catch-up) are kept.
 */
export async function writeDeferredRows(db: RawSql, realmId: number, userId: number): Promise<void> {
  await db.$executeRaw`
    WITH mark AS (
      SELECT COALESCE((SELECT message_id FROM user_message_caught_up WHERE user_id = ${userId}::int), 0) AS id
    ), newest AS (
      SELECT COALESCE((SELECT max(id) FROM message WHERE realm_id = ${realmId}::int), 0) AS id
    ), due AS (
      -- The bounds as scalar subqueries (values known before the scan), so that they bound the index
      -- scan itself rather than filter every message of the user's channels.
      SELECT m.id FROM message m
      WHERE m.channel_id IN (SELECT s.channel_id FROM subscription s WHERE s.user_id = ${userId}::int)
        AND m.id > (SELECT id FROM mark) AND m.id <= (SELECT id FROM newest)
        AND m.deferred_recipient_ids @> ARRAY[${userId}::int]
    ), written AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT ${userId}::int, due.id, 0 FROM due ORDER BY due.id
      ON CONFLICT DO NOTHING
    )
    INSERT INTO user_message_caught_up (user_id, message_id)
    SELECT ${userId}::int, newest.id FROM newest, mark WHERE newest.id > mark.id
    ON CONFLICT (user_id) DO UPDATE SET message_id = GREATEST(user_message_caught_up.message_id, EXCLUDED.message_id)`;
}

/**
 * A new user is caught up with every message so far: none of them lists the user (called in the
 * transaction that creates the user).
 */
export async function startCaughtUp(db: RawSql, realmId: number, userId: number): Promise<void> {
  await db.$executeRaw`
    INSERT INTO user_message_caught_up (user_id, message_id)
    SELECT ${userId}::int, COALESCE((SELECT max(id) FROM message WHERE realm_id = ${realmId}::int), 0)
    ON CONFLICT (user_id) DO NOTHING`;
}
