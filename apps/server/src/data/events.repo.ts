import type { Db } from './db.ts';
import { Prisma } from './db.ts';

/** An event for the listed users. */
export interface StoredEvent {
  userIds: number[];
  payload: Record<string, unknown>;
}
/** …or for every active user of the organization at delivery time (`realmWide`). */
export type QueuedEvent = StoredEvent | { realmWide: true; payload: Record<string, unknown> };

export async function insertEvents(db: Db, realmId: number, events: QueuedEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.event.createMany({
    data: events.map((e) => ({
      realmId,
      userIds: 'userIds' in e ? e.userIds : [],
      realmWide: 'realmWide' in e,
      payload: e.payload as Prisma.InputJsonValue,
    })),
  });
}

/** NOTIFY through a pooled connection (when the listener connection is down). */
export async function notifyThroughPool(db: Db, channel: string, payload: string): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${channel}, ${payload})`;
}
