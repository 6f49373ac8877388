// Outgoing webhooks' rows (migration 20261128010000_outgoing_webhooks): which users of a message's
// audience are active outgoing-webhook bots, and the delivery rows that key their jobs.
import type { RawSql } from './db.ts';

/** Zulip's UserProfile.DEFAULT_BOT and OUTGOING_WEBHOOK_BOT. */
const DEFAULT_BOT = 1;
const OUTGOING_WEBHOOK_BOT = 3;

/** The active outgoing-webhook bots among `userIds`, ascending. */
export async function activeOutgoingWebhookBots(db: RawSql, realmId: number, userIds: number[]): Promise<number[]> {
  if (userIds.length === 0) return [];
  const rows = await db.$queryRaw<Array<{ id: number }>>`
    SELECT id FROM "user"
    WHERE realm_id = ${realmId}::int AND id = ANY(${userIds}::int[]) AND is_bot AND is_active AND bot_type = ${OUTGOING_WEBHOOK_BOT}::int
    ORDER BY id`;
  return rows.map((r) => r.id);
}

/** The active generic bots among `userIds`, with their roles, ascending. */
export async function activeGenericBots(db: RawSql, realmId: number, userIds: number[]): Promise<Array<{ id: number; role: number }>> {
  if (userIds.length === 0) return [];
  return db.$queryRaw<Array<{ id: number; role: number }>>`
    SELECT id, role::int AS role FROM "user"
    WHERE realm_id = ${realmId}::int AND id = ANY(${userIds}::int[]) AND is_bot AND is_active AND bot_type = ${DEFAULT_BOT}::int AND system_bot IS NULL
    ORDER BY id`;
}

export interface DeliveryRow {
  messageId: number;
  botId: number;
  trigger: string;
  attempt: number;
  finished: boolean;
}

/** Records the deliveries a message triggered (a delivery that exists already stays as it is); those recorded now. */
export async function insertDeliveries(db: RawSql, messageId: number, deliveries: Array<{ botId: number; trigger: string }>): Promise<number[]> {
  if (deliveries.length === 0) return [];
  const rows = await db.$queryRaw<Array<{ bot_id: number }>>`
    INSERT INTO outgoing_webhook_delivery (message_id, bot_id, trigger)
    SELECT ${messageId}::int, d.bot_id, d.trigger
    FROM unnest(${deliveries.map((d) => d.botId)}::int[], ${deliveries.map((d) => d.trigger)}::text[]) AS d(bot_id, trigger)
    ON CONFLICT DO NOTHING
    RETURNING bot_id`;
  return rows.map((r) => r.bot_id);
}

/** A delivery, read without a lock (a job's first look). */
export async function findDelivery(db: RawSql, messageId: number, botId: number): Promise<DeliveryRow | null> {
  const rows = await db.$queryRaw<Array<{ trigger: string; attempt: number; finished: boolean }>>`
    SELECT trigger, attempt, finished_at IS NOT NULL AS finished FROM outgoing_webhook_delivery
    WHERE message_id = ${messageId}::int AND bot_id = ${botId}::int`;
  const row = rows[0];
  return row ? { messageId, botId, ...row } : null;
}

/** Locks a delivery's row (in a transaction) and reads it. */
export async function lockDelivery(db: RawSql, messageId: number, botId: number): Promise<DeliveryRow | null> {
  const rows = await db.$queryRaw<Array<{ trigger: string; attempt: number; finished: boolean }>>`
    SELECT trigger, attempt, finished_at IS NOT NULL AS finished FROM outgoing_webhook_delivery
    WHERE message_id = ${messageId}::int AND bot_id = ${botId}::int
    FOR UPDATE`;
  const row = rows[0];
  return row ? { messageId, botId, ...row } : null;
}

/** The next attempt of a delivery is `attempt`. */
export async function setDeliveryAttempt(db: RawSql, messageId: number, botId: number, attempt: number): Promise<void> {
  await db.$executeRaw`UPDATE outgoing_webhook_delivery SET attempt = ${attempt}::int WHERE message_id = ${messageId}::int AND bot_id = ${botId}::int`;
}

/** The delivery is over: its reply or notices (if any) were posted in this transaction. */
export async function finishDelivery(db: RawSql, messageId: number, botId: number): Promise<void> {
  await db.$executeRaw`UPDATE outgoing_webhook_delivery SET finished_at = now() WHERE message_id = ${messageId}::int AND bot_id = ${botId}::int`;
}
