// Events are stored in the action's transaction (so an event exists exactly when its change
// committed) and announced with NOTIFY after commit, so that every server process sharing the
// database can wake its long-polling clients. Announcements go out on the process's listener
// connection (its sending half, events/notifier.ts), coalesced per organization, and never wait for a
// pooled connection: a burst of writes costs one NOTIFY per organization, and the writer's response
// does not wait for it.
import type { Db } from '../data/db.ts';
import type { Db as AnyDb } from '../data/db.ts';
import type { AfterCommit } from '../data/transactions.ts';
import { insertEvents, insertEventsSql, publishEphemeralEvents, type QueuedEvent } from '../data/events.repo.ts';
import type { Prisma } from '../data/db.ts';
import type { Logger } from '../http/logging.ts';
import { refusedByPostgres, type DatabaseNotifier } from './notifier.ts';
import { countEphemeralEvent, countStoredEvents } from '../metrics/metrics.ts';

export const EVENTS_CHANNEL = 'parley_events';
/** Ephemeral events (typing), whole in the NOTIFY payload. */
export const EPHEMERAL_CHANNEL = 'parley_ephemeral';

/** Room for ephemeral events in one NOTIFY payload (PostgreSQL's limit is 8,000 bytes). */
const NOTIFY_CHUNK_BYTES = 7_000;

interface PendingEphemeral {
  body: string;
  /** UTF-8 length of `body`. */
  bytes: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Registers work to run once the surrounding transaction committed (see data/transactions.ts inTransaction). */
export type { AfterCommit };

export interface EventBus {
  /**
   * THE publish path: stores `events` inside the transaction `tx` (they exist exactly when the change
   * commits, with ids in commit order) and announces them to every process after commit.
   */
  publish(tx: Db, afterCommit: AfterCommit, realmId: number, events: QueuedEvent[]): Promise<void>;
  /**
   * An event that is not stored (typing): delivered to the listed users' queues on every process that
   * is serving them a poll now; no transaction. Resolves once it was notified. Ephemeral events published
   * while a previous batch is being notified go out together, one statement per organization.
   */
  publishEphemeral(realmId: number, userIds: number[], payload: Record<string, unknown>): Promise<void>;
  /**
   * The publish path for a write that stores its events in its own statement (sending a message: one
   * round trip while the organization's event-order lock is held): `write` runs the statement with
   * the events' INSERT as a data-modifying CTE (`insert`, or null when there is nothing to store), and
   * the events are announced after commit as `publish` does. `stored`: whether the statement stored
   * any (its payloads may decide there is nothing to announce); nothing is announced when it says no.
   */
  publishAlong<T>(afterCommit: AfterCommit, realmId: number, events: QueuedEvent[], write: (insert: Prisma.Sql | null) => Promise<T>, stored?: (result: T) => boolean): Promise<T>;
  /** Stores events inside the transaction `tx`; call `announce` after commit (prefer `publish`). */
  enqueue(tx: Db, realmId: number, events: QueuedEvent[]): Promise<void>;
  /** Schedules the NOTIFY for an organization (coalesced); resolves at once. */
  announce(realmId: number): Promise<void>;
  /** Resolves once every scheduled announcement was sent (tests, shutdown). */
  flush(): Promise<void>;
}

/** A nested SQL fragment of a tagged template (Prisma.Sql: its `strings` around its `values`). */
interface SqlFragment {
  strings: readonly string[];
  values: readonly unknown[];
}
const isSqlFragment = (value: unknown): value is SqlFragment =>
  typeof value === 'object' &&
  value !== null &&
  Array.isArray((value as SqlFragment).strings) &&
  Array.isArray((value as SqlFragment).values) &&
  (value as SqlFragment).strings.length === (value as SqlFragment).values.length + 1;

/** Text ($1, $2, …) and values of a tagged SQL template, nested fragments inlined as Prisma.sql does. */
function flattenSql(strings: readonly string[], values: readonly unknown[]): { text: string; values: unknown[] } {
  const out: unknown[] = [];
  let text = '';
  const walk = (parts: readonly string[], items: readonly unknown[]) => {
    text += parts[0];
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (isSqlFragment(item)) walk(item.strings, item.values);
      else {
        // As the data layer sends arguments to node-postgres (data/pg-transactions.ts): dates as ISO-8601, BigInts as text.
        out.push(item instanceof Date ? item.toISOString() : typeof item === 'bigint' ? item.toString() : item);
        text += `$${out.length}`;
      }
      text += parts[i + 1];
    }
  };
  walk(strings, values);
  return { text, values: out };
}

/** How long a statement on the listener connection may wait for a lock (see notifier.ts ListenerStatement). */
const LISTENER_LOCK_TIMEOUT_MS = 50;

/**
 * The data layer's statements, sent on the listener connection (events/notifier.ts `run`): written in
 * the same socket write as the barrier of the callers waiting then, without a pooled connection or
 * Prisma's query machinery. Statements are prepared once per connection (one name per text), and
 * wait at most LISTENER_LOCK_TIMEOUT_MS for a lock. Rejects with ListenerUnavailable, without sending
 * anything, while that connection is down.
 */
function listenerSql(notifier: DatabaseNotifier): AnyDb {
  const names = new Map<string, string>();
  const send = (query: TemplateStringsArray | SqlFragment, values: unknown[]) => {
    const statement = isSqlFragment(query) && !Array.isArray(query) ? flattenSql(query.strings, query.values) : flattenSql(query as TemplateStringsArray, values);
    let name = names.get(statement.text);
    if (name === undefined) {
      name = `parley_listener_${names.size + 1}`;
      names.set(statement.text, name);
    }
    return notifier.run({ name, ...statement, lockTimeoutMs: LISTENER_LOCK_TIMEOUT_MS });
  };
  const sql = {
    $executeRaw: (query: TemplateStringsArray | SqlFragment, ...values: unknown[]) => send(query, values).then((r) => r.rowCount),
    $queryRaw: (query: TemplateStringsArray | SqlFragment, ...values: unknown[]) => send(query, values).then((r) => r.rows),
  };
  return sql as unknown as AnyDb;
}

export function createEventBus(db: AnyDb, notifier: DatabaseNotifier, logger: Logger): EventBus {
  const viaListener = listenerSql(notifier);
  const pending = new Set<number>();
  let sending: Promise<void> | null = null;

  async function send(): Promise<void> {
    while (pending.size > 0) {
      const realmIds = [...pending];
      pending.clear();
      await Promise.all(
        realmIds.map((id) => notifier.notify(EVENTS_CHANNEL, String(id)).catch((error) => logger.error({ err: error, realm_id: id }, 'event announcement failed'))),
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

  // Ephemeral events: one statement per organization for everything published since the last one was
  // sent (while one is in flight, the next batch gathers).
  const ephemeralWaiting = new Map<number, PendingEphemeral[]>();
  let ephemeralSending = false;

  async function sendEphemeral(): Promise<void> {
    while (ephemeralWaiting.size > 0) {
      const batches = [...ephemeralWaiting];
      ephemeralWaiting.clear();
      await Promise.all(batches.map(([realmId, items]) => sendEphemeralBatch(realmId, items)));
    }
    ephemeralSending = false;
  }

  async function sendEphemeralBatch(realmId: number, items: PendingEphemeral[]): Promise<void> {
    // An event too large to share a notification goes alone, so that its failure is its own.
    const alone = items.filter((i) => i.bytes > NOTIFY_CHUNK_BYTES);
    const shared = items.filter((i) => i.bytes <= NOTIFY_CHUNK_BYTES);
    const groups = [...alone.map((i) => [i]), ...(shared.length ? [shared] : [])];
    await Promise.all(
      groups.map(async (group) => {
        const chunks: number[] = [];
        let chunk = 0;
        let size = 0;
        for (const item of group) {
          const bytes = item.bytes + 32; // the id and separators
          if (size > 0 && size + bytes > NOTIFY_CHUNK_BYTES) {
            chunk++;
            size = 0;
          }
          size += bytes;
          chunks.push(chunk);
        }
        const bodies = group.map((i) => i.body);
        try {
          // On the listener connection, with the next barrier; through the pool while it is down.
          await publishEphemeralEvents(viaListener, EPHEMERAL_CHANNEL, realmId, bodies, chunks).catch((error: unknown) => {
            if (refusedByPostgres(error)) throw error;
            // Not sent (the connection is down), lost with the connection, or the event-order lock is
            // held by a longer write: a pooled connection does it (and waits for the lock). Lost with
            // the connection after it ran, it is announced twice: harmless for what is ephemeral.
            return publishEphemeralEvents(db, EPHEMERAL_CHANNEL, realmId, bodies, chunks);
          });
          for (const item of group) item.resolve();
        } catch (error) {
          for (const item of group) item.reject(error);
        }
      }),
    );
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
      afterCommit(() => {
        countStoredEvents(events.length);
        return announce(realmId);
      });
    },
    async publishAlong(afterCommit, realmId, events, write, stored) {
      const result = await write(insertEventsSql(realmId, events));
      if (events.length > 0 && (stored === undefined || stored(result)))
        afterCommit(() => {
          countStoredEvents(events.length);
          return announce(realmId);
        });
      return result;
    },
    publishEphemeral(realmId, userIds, payload) {
      if (userIds.length === 0) return Promise.resolve();
      countEphemeralEvent();
      return new Promise<void>((resolve, reject) => {
        // {"user_ids": […], "payload": {…}} without its opening brace: the statement splices the id in.
        const body = JSON.stringify({ user_ids: userIds, payload }).slice(1);
        const item = { body, bytes: Buffer.byteLength(body), resolve, reject };
        const list = ephemeralWaiting.get(realmId);
        if (list) list.push(item);
        else ephemeralWaiting.set(realmId, [item]);
        if (!ephemeralSending) {
          ephemeralSending = true;
          setImmediate(() => void sendEphemeral());
        }
      });
    },
    enqueue: (tx, realmId, events) => {
      countStoredEvents(events.length);
      return insertEvents(tx, realmId, events);
    },
    announce,
    async flush() {
      while (sending) await sending;
    },
  };
}
