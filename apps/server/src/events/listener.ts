// One dedicated PostgreSQL connection per process for LISTEN/NOTIFY (node-postgres), outside the
// query pool, so that announcements never wait for a pooled connection and every process hears
// what any other committed. This is its listening half: LISTEN, the dispatch of notifications,
// reconnecting with backoff (while it is down, `listening` is false and subscribers are told to forget
// anything they derived from notifications: they may have missed some), and the barrier. Its sending
// half, events/notifier.ts, writes on the same connection (its `rounds`): the process's NOTIFYs and the
// statements of events/bus.ts, pipelined in rounds with the barrier.
import pg from 'pg';
import type { Logger } from '../http/logging.ts';
import { createStatementRounds, type ListenerConnection, type RoundBarrier, type StatementRounds } from './notifier.ts';

/** How the listener connection shows in pg_stat_activity. */
export const LISTENER_APPLICATION_NAME = 'parley-listener';

export interface DatabaseListener {
  /** True while LISTEN is established: notifications are being received. */
  readonly listening: boolean;
  /** Calls `handler` with each payload sent on `channel`. */
  on(channel: string, handler: (payload: string) => void): void;
  /**
   * Resolves once a LISTEN that `on` started for `channel` on the open connection has run (at once when
   * none is pending: channels known when connecting are listened to before `listening` turns true).
   */
  listened(channel: string): Promise<void>;
  /** Called whenever notifications may have been missed (connection lost or re-established). */
  onReset(handler: () => void): void;
  /**
   * Resolves once this process has received every notification committed before the call (a NOTIFY
   * of our own comes back after them: PostgreSQL delivers notifications in commit order). Calls made
   * in the same tick share one round trip.
   */
  barrier(timeoutMs?: number): Promise<void>;
  /**
   * The connection's writes (the barrier's, and the sending half's: events/notifier.ts
   * createDatabaseNotifier), in rounds: one socket write serves a round trip's callers.
   */
  readonly rounds: StatementRounds;
  /** Connects (once); until then nothing is received and nothing is sent on the connection. */
  start(): void;
  /** Resolves once LISTEN is established (or after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function createDatabaseListener(databaseUrl: string, logger: Logger): DatabaseListener {
  const handlers = new Map<string, Array<(payload: string) => void>>();
  const resetHandlers: Array<() => void> = [];
  const pendingListens = new Map<string, Promise<unknown>>();
  let client: pg.Client | null = null;
  let listening = false;
  let closed = false;
  let attempt = 0;
  let readyWaiters: Array<() => void> = [];

  /** One query at a time on the listener connection (node-postgres no longer queues for us). */
  let queue: Promise<unknown> = Promise.resolve();
  const enqueue = <T>(write: () => Promise<T>): Promise<T> => {
    const run = queue.then(write);
    queue = run.catch(() => {});
    return run;
  };
  const query = (c: pg.Client, text: string) => enqueue(() => c.query(text));

  // The barrier: a NOTIFY to ourselves, sent by the next round (after its statements), for every
  // caller waiting then; it comes back once everything committed before it has been received.
  const BARRIER_CHANNEL = 'parley_barrier';
  const barrierId = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  let barrierSeq = 0;
  /** Callers waiting for the next barrier to be sent. */
  let barrierWaiters: Array<() => void> = [];
  const sentBarriers = new Map<string, Array<() => void>>();
  const finishBarrier = (token: string) => {
    const waiters = sentBarriers.get(token);
    if (!waiters) return;
    sentBarriers.delete(token);
    for (const resolve of waiters) resolve();
  };
  handlers.set(BARRIER_CHANNEL, [(payload) => finishBarrier(payload)]);
  const roundBarrier: RoundBarrier = {
    channel: BARRIER_CHANNEL,
    get waiting() {
      return barrierWaiters.length > 0;
    },
    take() {
      if (barrierWaiters.length === 0) return null;
      const token = `${barrierId}:${++barrierSeq}`;
      sentBarriers.set(token, barrierWaiters);
      barrierWaiters = [];
      // One that does not come back in time (connection trouble) must not hold up its callers.
      setTimeout(() => finishBarrier(token), 2_000).unref();
      return token;
    },
    release() {
      const waiters = barrierWaiters;
      barrierWaiters = [];
      for (const resolve of waiters) resolve(); // nothing is cached while not listening
    },
    failed: finishBarrier,
  };
  const connection: ListenerConnection = {
    get client() {
      return listening ? client : null;
    },
    enqueue,
  };
  const rounds = createStatementRounds(connection, roundBarrier, logger);

  const reset = () => {
    for (const handler of resetHandlers) handler();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    // Pipelined: a round's statements are written at once (`query` above still sends one at a time).
    const c = new pg.Client({ connectionString: databaseUrl, keepAlive: true, pipeline: true, application_name: LISTENER_APPLICATION_NAME });
    c.on('notification', (message) => {
      for (const handler of handlers.get(message.channel) ?? []) {
        try {
          handler(message.payload ?? '');
        } catch (error) {
          logger.error({ err: error, channel: message.channel }, 'notification handler failed');
        }
      }
    });
    c.on('error', (error) => {
      logger.warn({ err: error }, 'listener connection failed');
      void lost(c);
    });
    c.on('end', () => void lost(c));
    // A fresh line for the new connection: writes stuck on a lost one must not hold it up.
    queue = Promise.resolve();
    try {
      await c.connect();
      for (const channel of handlers.keys()) await query(c, `LISTEN ${pg.escapeIdentifier(channel)}`);
      if (closed) {
        await c.end().catch(() => {});
        return;
      }
      client = c;
      attempt = 0;
      // Anything cached before this point may be stale: notifications sent while down were lost.
      reset();
      listening = true;
      for (const resolve of readyWaiters) resolve();
      readyWaiters = [];
    } catch (error) {
      logger.warn({ err: error }, 'listener could not connect; retrying');
      await c.end().catch(() => {});
      scheduleReconnect();
    }
  }

  async function lost(c: pg.Client): Promise<void> {
    if (client !== c) return;
    client = null;
    listening = false;
    reset();
    // Barriers out on the lost connection will not come back: nothing is cached while not listening.
    for (const token of [...sentBarriers.keys()]) finishBarrier(token);
    // Not awaited: with pipelined statements still out, end() waits for answers that a connection
    // the server ended never gives, and the reconnection would never be scheduled.
    void c.end().catch(() => {});
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (closed) return;
    attempt++;
    const delay = Math.min(5_000, 50 * 2 ** Math.min(attempt, 7));
    setTimeout(() => void connect(), delay).unref();
  }

  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    void connect();
  };

  return {
    get listening() {
      return listening;
    },
    on(channel, handler) {
      const list = handlers.get(channel) ?? [];
      list.push(handler);
      handlers.set(channel, list);
      if (client && list.length === 1) {
        const done = query(client, `LISTEN ${pg.escapeIdentifier(channel)}`).catch(() => {});
        pendingListens.set(channel, done);
        void done.finally(() => {
          if (pendingListens.get(channel) === done) pendingListens.delete(channel);
        });
      }
    },
    async listened(channel) {
      await pendingListens.get(channel);
    },
    start,
    barrier(timeoutMs = 2_000) {
      if (!listening || !client) return Promise.resolve(); // nothing is cached while not listening
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        const done = () => {
          clearTimeout(timer);
          resolve();
        };
        barrierWaiters.push(done);
        rounds.schedule();
      });
    },
    rounds,
    onReset(handler) {
      resetHandlers.push(handler);
    },
    ready(timeoutMs = 5_000) {
      if (listening) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        readyWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    async close() {
      closed = true;
      listening = false;
      const c = client;
      client = null;
      if (c) await c.end().catch(() => {});
    },
  };
}
