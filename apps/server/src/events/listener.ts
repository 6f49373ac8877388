// One dedicated PostgreSQL connection per process for LISTEN/NOTIFY (node-postgres), outside the
// query pool, so that announcements never wait for a pooled connection and every process hears
// what any other committed. It reconnects with backoff; while it is down, `listening` is false and
// subscribers are told to forget anything they derived from notifications (they may have missed some).
// It also runs the process's own NOTIFYs: barriers, event announcements and the ephemeral (typing)
// statements of events/bus.ts, pipelined in rounds (one socket write each, see `run`).
import pg from 'pg';
import type { Logger } from '../http/logging.ts';

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
  /** NOTIFY on this connection (coalescing is the caller's); falls back to `fallback` while down. */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Runs one statement (its own implicit transaction) on this connection, written together with the
   * other statements and the barrier of the same round (see below). Rejects with ListenerUnavailable,
   * without sending anything, while the connection is down: the caller then uses a pooled connection.
   */
  run(statement: { name?: string; text: string; values: unknown[]; lockTimeoutMs?: number }): Promise<{ rows: unknown[]; rowCount: number }>;
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

/**
 * `run` could not use the listener connection: it was down (nothing was sent), or it did not answer
 * in time (a statement already written may still run; one not yet written is not sent later).
 */
export class ListenerUnavailable extends Error {
  constructor(message = 'the listener connection is down') {
    super(message);
  }
}

/** PostgreSQL's lock_not_available (a lock_timeout expired). */
const LOCK_NOT_AVAILABLE = '55P03';
/** PostgreSQL's invalid_sql_statement_name: a prepared statement whose Parse failed earlier in the round. */
const INVALID_STATEMENT_NAME = '26000';

/**
 * PostgreSQL refused a statement given to `run` itself (an error PostgreSQL answered), other than: a
 * lock wait cut short (55P03), a connection failure (class 08), the session ended by an operator or a
 * shutdown (class 57, e.g. pg_terminate_backend), or a prepared statement missing because an earlier
 * one of the round failed (26000). Anything else (ListenerUnavailable, a socket error such as EPIPE,
 * the connection ended) is the connection's: the caller may do the same through a pooled connection.
 */
export function refusedByPostgres(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return false;
  const code = error.code ?? '';
  return code !== LOCK_NOT_AVAILABLE && code !== INVALID_STATEMENT_NAME && !code.startsWith('08') && !code.startsWith('57');
}

/** A statement given to `run` (or a NOTIFY) not answered this long is given up (ListenerUnavailable). */
const STATEMENT_ANSWER_MS = 2_000;
/**
 * A round not answered this long means the connection is stuck (its statements wait at most a short
 * lock timeout): it is dropped, and a new one made, as when PostgreSQL ends it.
 */
const ROUND_STUCK_MS = 10_000;

interface RoundStatement {
  name?: string;
  text: string;
  values: unknown[];
  /**
   * The statement runs in a transaction of its own that waits at most this long for a lock (then it
   * fails with PostgreSQL's lock_not_available, 55P03), so that this connection, which every
   * notification of the process comes through, is never held up longer by another transaction's lock.
   */
  lockTimeoutMs?: number;
  resolve: (result: { rows: unknown[]; rowCount: number }) => void;
  reject: (error: unknown) => void;
  /** Given up by its caller (not answered in time): not sent, should its round not have gone yet. */
  givenUp?: boolean;
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

  /** One query at a time on the listener connection (node-postgres no longer queues for us). */
  let queue: Promise<unknown> = Promise.resolve();
  const query = (c: pg.Client, text: string, values?: unknown[]) => {
    const run = queue.then(() => c.query(text, values));
    queue = run.catch(() => {});
    return run;
  };

  // Rounds: the statements given to `run` and `notify` and the barrier of the callers waiting go out
  // together, pipelined in one socket write (each statement with its own Sync, so its own implicit
  // transaction: one failing fails alone), one round at a time. Callers arriving while a round is out
  // join the next, which is sent as soon as the one out is answered: under load, one write and one
  // barrier NOTIFY serve every caller of a round trip. A barrier is sent after its callers' calls, and
  // after the round's other statements (so it covers them too).
  let roundStatements: RoundStatement[] = [];
  let roundOut = false;
  let roundScheduled = false;
  function scheduleRound() {
    if (roundScheduled || roundOut || (roundStatements.length === 0 && barrierWaiters.length === 0)) return;
    roundScheduled = true;
    setImmediate(sendRound);
  }
  function sendRound() {
    roundScheduled = false;
    if (roundOut) return;
    // (a statement given up is not sent late: its caller has done it through the pool)
    const statements = roundStatements.filter((statement) => !statement.givenUp);
    const waiters = barrierWaiters;
    roundStatements = [];
    barrierWaiters = [];
    if (statements.length === 0 && waiters.length === 0) return;
    const c = client;
    if (!c || !listening) {
      for (const resolve of waiters) resolve(); // nothing is cached while not listening
      for (const statement of statements) statement.reject(new ListenerUnavailable());
      return;
    }
    let token: string | null = null;
    if (waiters.length > 0) {
      const sent = (token = `${barrierId}:${++barrierSeq}`);
      sentBarriers.set(sent, waiters);
      // One that does not come back in time (connection trouble) must not hold up its callers.
      setTimeout(() => finishBarrier(sent), 2_000).unref();
    }
    roundOut = true;
    const round = queue.then(() => {
      const answers: Array<Promise<unknown>> = [];
      const stream = (c as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
      stream?.cork?.();
      try {
        for (const statement of statements) {
          const config = statement.name ? { name: statement.name, text: statement.text, values: statement.values } : { text: statement.text, values: statement.values };
          if (statement.lockTimeoutMs === undefined) {
            answers.push(c.query(config).then((result) => statement.resolve({ rows: result.rows, rowCount: result.rowCount ?? 0 }), statement.reject));
            continue;
          }
          // BEGIN … COMMIT are written with it, whatever happens to it (a failed statement makes
          // COMMIT a ROLLBACK), so that nothing after it runs inside its transaction.
          answers.push(c.query('BEGIN').catch(() => {}));
          answers.push(c.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(statement.lockTimeoutMs))}`).catch(() => {}));
          const result = c.query(config);
          const commit = c.query('COMMIT');
          answers.push(
            Promise.all([result, commit]).then(([r, committed]) => {
              if (committed.command !== 'COMMIT') throw new Error(`the statement's transaction ended with ${committed.command}`);
              statement.resolve({ rows: r.rows, rowCount: r.rowCount ?? 0 });
            }).catch(statement.reject),
          );
        }
        if (token !== null) {
          const sent = token;
          answers.push(c.query('SELECT pg_notify($1, $2)', [BARRIER_CHANNEL, sent]).catch(() => finishBarrier(sent)));
        }
      } finally {
        stream?.uncork?.();
      }
      return Promise.all(answers);
    });
    const stuck = setTimeout(() => {
      logger.warn({ ms: ROUND_STUCK_MS }, 'the listener connection answered nothing in time; reconnecting');
      (c as unknown as { connection?: { stream?: { destroy?(): void } } }).connection?.stream?.destroy?.();
    }, ROUND_STUCK_MS);
    stuck.unref();
    queue = round.catch(() => {}).finally(() => clearTimeout(stuck));
    // The next round goes out no sooner than the loop iteration after the one that read this one's
    // answers: the requests read meanwhile join it (a busy process writes fewer, fuller rounds; an idle
    // one loses only an iteration of an otherwise empty loop).
    void queue.then(() =>
      setImmediate(() => {
        roundOut = false;
        scheduleRound();
      }),
    );
  }

  /** A statement for the next round; given up after STATEMENT_ANSWER_MS (its answer, should it come, is ignored). */
  function runInRound(statement: Omit<RoundStatement, 'resolve' | 'reject'>): Promise<{ rows: unknown[]; rowCount: number }> {
    if (!listening || !client) return Promise.reject(new ListenerUnavailable());
    return new Promise((resolve, reject) => {
      const queued: RoundStatement = {
        ...statement,
        resolve: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        queued.givenUp = true;
        reject(new ListenerUnavailable('the listener connection did not answer in time'));
      }, STATEMENT_ANSWER_MS);
      timer.unref();
      roundStatements.push(queued);
      scheduleRound();
    });
  }

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
        scheduleRound();
      });
    },
    run(statement) {
      return runInRound(statement);
    },
    onReset(handler) {
      resetHandlers.push(handler);
    },
    async notify(channel, payload) {
      if (client && listening) {
        try {
          await runInRound({ text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });
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
