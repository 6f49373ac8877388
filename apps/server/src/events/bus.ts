// Events are stored in the action's transaction (so an event exists exactly when its change
// committed) and announced with NOTIFY after commit, so that every server process sharing the
// database can wake its long-polling clients. Announcements go out on the process's listener
// connection, coalesced per organization, and never wait for a pooled connection: a burst of writes
// costs one NOTIFY per organization, and the writer's response does not wait for it.
import type { Db } from '../data/db.ts';
import type { Db as AnyDb } from '../data/db.ts';
import { insertEvents, type QueuedEvent } from '../data/events.repo.ts';
import { publishEphemeralEvent } from '../data/event-queues.repo.ts';
import type { Logger } from '../http/logging.ts';
import type { DatabaseListener } from './listener.ts';

export const EVENTS_CHANNEL = 'parley_events';
/** Ephemeral events (typing), whole in the NOTIFY payload. */
export const EPHEMERAL_CHANNEL = 'parley_ephemeral';

/** Registers work to run once the surrounding transaction committed (see data/db.ts inTransaction). */
export type AfterCommit = (fn: () => void | Promise<void>) => void;

export interface EventBus {
  /**
   * THE publish path: stores `events` inside the transaction `tx` (they exist exactly when the change
   * commits, with ids in commit order) and announces them to every process after commit.
   */
  publish(tx: Db, afterCommit: AfterCommit, realmId: number, events: QueuedEvent[]): Promise<void>;
  /**
   * An event that is not stored (typing): delivered to the listed users' queues on every process that
   * is serving them a poll now; one statement, no transaction.
   */
  publishEphemeral(realmId: number, userIds: number[], payload: Record<string, unknown>): Promise<void>;
  /** Stores events inside the transaction `tx`; call `announce` after commit (prefer `publish`). */
  enqueue(tx: Db, realmId: number, events: QueuedEvent[]): Promise<void>;
  /** Schedules the NOTIFY for an organization (coalesced); resolves at once. */
  announce(realmId: number): Promise<void>;
  /** Resolves once every scheduled announcement was sent (tests, shutdown). */
  flush(): Promise<void>;
}

export function createEventBus(db: AnyDb, listener: DatabaseListener, logger: Logger): EventBus {
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

  const announce = (realmId: number) => {
    pending.add(realmId);
    schedule();
    return Promise.resolve();
  };

  return {
    async publish(tx, afterCommit, realmId, events) {
      if (events.length === 0) return;
      await insertEvents(tx, realmId, events);
      afterCommit(() => announce(realmId));
    },
    publishEphemeral: (realmId, userIds, payload) =>
      userIds.length ? publishEphemeralEvent(db, EPHEMERAL_CHANNEL, realmId, userIds, payload) : Promise.resolve(),
    enqueue: (tx, realmId, events) => insertEvents(tx, realmId, events),
    announce,
    async flush() {
      while (sending) await sending;
    },
  };
}
