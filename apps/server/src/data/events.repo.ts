import type { Db } from './db.ts';
import { Prisma } from './db.ts';

export interface StoredEvent {
  userIds: number[];
  payload: Record<string, unknown>;
}

export async function insertEvents(db: Db, realmId: number, events: StoredEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.event.createMany({
    data: events.map((e) => ({ realmId, userIds: e.userIds, payload: e.payload as Prisma.InputJsonValue })),
  });
}

export async function notifyEventChannel(db: Db, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_notify('parley_events', ${String(realmId)})`;
}

export const listEventsForUser = (db: Db, userId: number, afterId: bigint = 0n) =>
  db.event.findMany({ where: { userIds: { has: userId }, id: { gt: afterId } }, orderBy: { id: 'asc' } });
