// The push outbox (table `push_outbox`): one row per push notification and device, with the exact
// payload, written in the transaction of the change that causes it; the `send-push` job locks its row,
// sends it at most once, and records the outcome. Also the `active_mobile_push_notification` flag of
// user_message, which says a message push went out (so that reading the message sends a removal).
import type { Db } from './db.ts';
import { Prisma } from './db.ts';

export type PushOutboxRow = Prisma.PushOutboxModel;
export type PushStatus = 'pending' | 'sent' | 'recorded' | 'rejected' | 'skipped' | 'dropped' | 'failed';

export interface NewPush {
  realmId: number;
  userId: number;
  deviceId: number;
  kind: string;
  token: string;
  appId: string | null;
  event: 'message' | 'remove' | 'test';
  messageId: number | null;
  payload: Record<string, unknown>;
  apnsId: string;
}

/** Stores the pushes (pending); returns their ids in the order given. */
export async function insertPushes(db: Db, pushes: NewPush[]): Promise<number[]> {
  if (pushes.length === 0) return [];
  const rows = await db.pushOutbox.createManyAndReturn({
    data: pushes.map((p) => ({ ...p, payload: p.payload as Prisma.InputJsonValue })),
    select: { id: true },
  });
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/** The push, locked until the transaction ends (the job holds it while sending). */
export async function lockPush(db: Db, id: number): Promise<PushOutboxRow | null> {
  const [row] = await db.$queryRaw<{ id: number }[]>`SELECT id FROM push_outbox WHERE id = ${id}::int FOR UPDATE`;
  return row ? db.pushOutbox.findUnique({ where: { id } }) : null;
}

/** Records an attempt: its outcome, the error if any; a final status also sets finished_at. */
export async function recordPushAttempt(db: Db, id: number, update: { status: PushStatus; attempted: boolean; error?: string | null }): Promise<void> {
  await db.pushOutbox.update({
    where: { id },
    data: {
      status: update.status,
      ...(update.attempted ? { attempts: { increment: 1 } } : {}),
      ...(update.error !== undefined ? { lastError: update.error } : {}),
      ...(update.status !== 'pending' ? { finishedAt: new Date() } : {}),
    },
  });
}

/** An organization's pushes, newest first (of one user, or with one status, when given). */
export function listPushes(db: Db, options: { realmId: number; limit: number; userId?: number; status?: string }): Promise<PushOutboxRow[]> {
  return db.pushOutbox.findMany({
    where: { realmId: options.realmId, ...(options.userId !== undefined ? { userId: options.userId } : {}), ...(options.status ? { status: options.status } : {}) },
    orderBy: { id: 'desc' },
    take: options.limit,
  });
}

// ---------------------------------------------------------------------------------------------------
// user_message state for pushes (bit 4096: active_mobile_push_notification)

const ACTIVE_PUSH_BIT = 4096;
const READ_BIT = 1;

/** The user's flags on the message, or null when the user has no such message (any more). */
export async function messageFlagsForPush(db: Db, userId: number, messageId: number): Promise<number | null> {
  const [row] = await db.$queryRaw<{ flags: number }[]>`
    SELECT flags::int AS flags FROM user_message WHERE user_id = ${userId}::int AND message_id = ${messageId}::int`;
  return row ? row.flags : null;
}

export const isRead = (flags: number) => (flags & READ_BIT) !== 0;

/** Marks that a push for the message went to the user's devices (a short statement of its own). */
export async function setActivePushNotification(db: Db, userId: number, messageId: number): Promise<void> {
  await db.$executeRaw`
    UPDATE user_message SET flags = flags | ${ACTIVE_PUSH_BIT}::bigint
    WHERE user_id = ${userId}::int AND message_id = ${messageId}::int AND (flags & ${ACTIVE_PUSH_BIT}::bigint) = 0`;
}

/** Clears the flag on those of `messageIds` that have it; returns their ids (ascending). */
export async function clearActivePushNotifications(db: Db, userId: number, messageIds: number[]): Promise<number[]> {
  if (messageIds.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`
    UPDATE user_message SET flags = flags & ~${ACTIVE_PUSH_BIT}::bigint
    WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[]) AND (flags & ${ACTIVE_PUSH_BIT}::bigint) <> 0
    RETURNING message_id AS id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}
