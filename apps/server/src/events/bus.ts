// Events are stored in the action's transaction (so an event exists exactly when its change
// committed) and announced with NOTIFY after commit, so that every server process sharing the
// database can wake its long-polling clients. Announcements go out on the process's listener
// connection, coalesced per organization, and never wait for a pooled connection: a burst of writes
// costs one NOTIFY per organization, and the writer's response does not wait for it.
import type { Db } from '../data/db.ts';
import { insertEvents, type QueuedEvent } from '../data/events.repo.ts';
import type { Logger } from '../http/logging.ts';
import type { DatabaseListener } from './listener.ts';

export const EVENTS_CHANNEL = 'parley_events';

export interface EventBus {
  /** Stores events inside the transaction `tx`; call `announce` after commit. */
  enqueue(tx: Db, realmId: number, events: QueuedEvent[]): Promise<void>;
  /** Schedules the NOTIFY for an organization (coalesced); resolves at once. */
  announce(realmId: number): Promise<void>;
  /** Resolves once every scheduled announcement was sent (tests, shutdown). */
  flush(): Promise<void>;
}

export function createEventBus(listener: DatabaseListener, logger: Logger): EventBus {
  const pending = new Set<number>();
  let sending: Promise<void> | null = null;

  async function send(): Promise<void> {
    while (pending.size > 0) {
      const realmIds = [...pending];
      pending.clear();
      await Promise.all(
        realmIds.map((id) => listener.notify(EVENTS_CHANNEL, String(id)).catch((error) => logger.error({ err: error, realm_id: id }, 'event announcement failed'))),
      );
    }
  }

  function schedule() {
    if (sending) return;
    sending = new Promise<void>((resolve) => setImmediate(resolve))
      .then(send)
      .finally(() => {
        sending = null;
        if (pending.size > 0) schedule();
      });
  }

  return {
    enqueue: (tx, realmId, events) => insertEvents(tx, realmId, events),
    announce(realmId) {
      pending.add(realmId);
      schedule();
      return Promise.resolve();
    },
    async flush() {
      while (sending) await sending;
    },
  };
}
