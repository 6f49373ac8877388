// One dedicated PostgreSQL connection per process for LISTEN/NOTIFY (node-postgres), outside the
// query pool, so that announcements never wait for a pooled connection and every process hears
// what any other committed. It reconnects with backoff; while it is down, `listening` is false and
// subscribers are told to forget anything they derived from notifications (they may have missed some).
import pg from 'pg';
import type { Logger } from '../http/logging.ts';

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
  /** NOTIFY on this connection (coalescing is the caller's); falls back to `fallback` while down. */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Resolves once this process has received every notification committed before the call (a NOTIFY
   * of our own comes back after them: PostgreSQL delivers notifications in commit order). Calls made
   * in the same tick share one round trip.
   */
  barrier(timeoutMs?: number): Promise<void>;
  /** Connects (once); until then nothing is received and `notify` uses the fallback. */
  start(): void;
  /** Resolves once LISTEN is established (or after `timeoutMs`). */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function createDatabaseListener(
  databaseUrl: string,
  logger: Logger,
  fallbackNotify: (channel: string, payload: string) => Promise<void>,
): DatabaseListener {
  const handlers = new Map<string, Array<(payload: string) => void>>();
  const resetHandlers: Array<() => void> = [];
  const pendingListens = new Map<string, Promise<unknown>>();
  let client: pg.Client | null = null;
  let listening = false;
  let closed = false;
  let attempt = 0;
  let readyWaiters: Array<() => void> = [];

  const BARRIER_CHANNEL = 'parley_barrier';
  const barrierId = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  let barrierSeq = 0;
  /** Callers waiting for the next barrier to be sent; at most one barrier is out at a time. */
  let barrierWaiters: Array<() => void> = [];
  let barrierOut: string | null = null;
  let barrierScheduled = false;
  const sentBarriers = new Map<string, Array<() => void>>();
  const finishBarrier = (token: string) => {
    const waiters = sentBarriers.get(token);
    if (!waiters) return;
    sentBarriers.delete(token);
    if (barrierOut === token) barrierOut = null;
    for (const resolve of waiters) resolve();
    scheduleBarrier();
  };
  handlers.set(BARRIER_CHANNEL, [(payload) => finishBarrier(payload)]);

  // Barriers go out one at a time: callers arriving while one is out wait for the next, which is sent
  // after their call (so it covers them) as soon as the one out comes back. Under load, one NOTIFY
  // serves every caller of a round trip.
  function scheduleBarrier() {
    if (barrierScheduled || barrierOut !== null || barrierWaiters.length === 0) return;
    barrierScheduled = true;
    setImmediate(sendBarrier);
  }
  function sendBarrier() {
    barrierScheduled = false;
    if (barrierOut !== null || barrierWaiters.length === 0) return;
    const waiters = barrierWaiters;
    barrierWaiters = [];
    const c = client;
    if (!c || !listening) {
      for (const resolve of waiters) resolve();
      return;
    }
    const token = `${barrierId}:${++barrierSeq}`;
    barrierOut = token;
    sentBarriers.set(token, waiters);
    // One that does not come back in time (connection trouble) must not hold up the next.
    setTimeout(() => finishBarrier(token), 2_000).unref();
    query(c, 'SELECT pg_notify($1, $2)', [BARRIER_CHANNEL, token]).catch(() => finishBarrier(token));
  }

  /** One query at a time on the listener connection (node-postgres no longer queues for us). */
  let queue: Promise<unknown> = Promise.resolve();
  const query = (c: pg.Client, text: string, values?: unknown[]) => {
    const run = queue.then(() => c.query(text, values));
    queue = run.catch(() => {});
    return run;
  };

  const reset = () => {
    for (const handler of resetHandlers) handler();
  };

  async function connect(): Promise<void> {
    if (closed) return;
    const c = new pg.Client({ connectionString: databaseUrl, keepAlive: true });
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
    await c.end().catch(() => {});
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
        scheduleBarrier();
      });
    },
    onReset(handler) {
      resetHandlers.push(handler);
    },
    async notify(channel, payload) {
      if (client && listening) {
        try {
          await query(client, 'SELECT pg_notify($1, $2)', [channel, payload]);
          return;
        } catch {
          // fall through: the pool still works
        }
      }
      await fallbackNotify(channel, payload);
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
