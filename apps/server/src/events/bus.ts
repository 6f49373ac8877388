// Events are stored in the action's transaction (so an event exists exactly when its change
// committed) and announced with NOTIFY after commit, so that every server process sharing the
// database can wake its long-polling clients.
import type { Db, PrismaClient } from '../data/db.ts';
import { insertEvents, notifyEventChannel, type QueuedEvent } from '../data/events.repo.ts';

export interface EventBus {
  /** Stores events inside the transaction `tx`; call `announce` after commit. */
  enqueue(tx: Db, realmId: number, events: QueuedEvent[]): Promise<void>;
  announce(realmId: number): Promise<void>;
}

export function createEventBus(db: PrismaClient): EventBus {
  return {
    enqueue: (tx, realmId, events) => insertEvents(tx, realmId, events),
    announce: (realmId) => notifyEventChannel(db, realmId),
  };
}
