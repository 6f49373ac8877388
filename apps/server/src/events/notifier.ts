// The sending half of the process's listener connection (events/listener.ts owns the connection and
// listens on it): the process's own NOTIFYs (event announcements) and the statements events/bus.ts
// runs there (typing), written in rounds together with the listener's barrier NOTIFY, one socket write
// a round. The connection is shared on purpose: a barrier written after a round's statements covers
// them, and one write serves every caller of a round trip.
import pg from 'pg';
import type { Logger } from '../http/logging.ts';

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

/** A statement for the listener connection (see DatabaseNotifier.run). */
export interface ListenerStatement {
  name?: string;
  text: string;
  values: unknown[];
  /**
   * The statement runs in a transaction of its own that waits at most this long for a lock (then it
   * fails with PostgreSQL's lock_not_available, 55P03), so that this connection, which every
   * notification of the process comes through, is never held up longer by another transaction's lock.
   */
  lockTimeoutMs?: number;
}

export interface StatementResult {
  rows: unknown[];
  rowCount: number;
}

interface RoundStatement extends ListenerStatement {
  resolve: (result: StatementResult) => void;
  reject: (error: unknown) => void;
  /** Given up by its caller (not answered in time): not sent, should its round not have gone yet. */
  givenUp?: boolean;
}

/** What the rounds need of the listener connection (events/listener.ts provides it). */
export interface ListenerConnection {
  /** The connection while LISTEN is established on it; null while down (nothing is sent then). */
  readonly client: pg.Client | null;
  /**
   * Runs `write` once every query queued on the connection before it was answered (node-postgres no
   * longer queues for us); what is queued after it waits until its promise settles.
   */
  enqueue<T>(write: () => Promise<T>): Promise<T>;
}

/** The listener's barrier, which a round sends after its statements (events/listener.ts `barrier`). */
export interface RoundBarrier {
  /** The channel the barrier is NOTIFYed on (and heard back on). */
  readonly channel: string;
  /** Callers are waiting for a barrier: a round is worth sending for them alone. */
  readonly waiting: boolean;
  /** For a round going out on the open connection: the payload to NOTIFY for the callers waiting (null: none wait). */
  take(): string | null;
  /** No round can go out (the connection is down): the callers waiting are let go (nothing is cached while not listening). */
  release(): void;
  /** The barrier NOTIFY with this payload failed: its callers are let go. */
  failed(token: string): void;
}

/** The listener connection's writes: statements and the barrier, in rounds. */
export interface StatementRounds {
  /** True while statements can be sent (the connection is up and listening). */
  readonly open: boolean;
  /**
   * A statement for the next round; rejects with ListenerUnavailable without sending anything while the
   * connection is down, or after STATEMENT_ANSWER_MS (its answer, should it come, is ignored).
   */
  send(statement: ListenerStatement): Promise<StatementResult>;
  /** Sends a round soon, if there is anything to send (a barrier the listener's callers wait for). */
  schedule(): void;
}

/**
 * Rounds: the statements given to `send` and the barrier of the callers waiting go out together,
 * pipelined in one socket write (each statement with its own Sync, so its own implicit transaction:
 * one failing fails alone), one round at a time. Callers arriving while a round is out join the next,
 * which is sent as soon as the one out is answered: under load, one write and one barrier NOTIFY serve
 * every caller of a round trip. A barrier is sent after its callers' calls, and after the round's other
 * statements (so it covers them too). Made by the listener (events/listener.ts), which owns the
 * connection and the barrier.
 */
export function createStatementRounds(connection: ListenerConnection, barrier: RoundBarrier, logger: Logger): StatementRounds {
  let roundStatements: RoundStatement[] = [];
  let roundOut = false;
  let roundScheduled = false;
  function scheduleRound() {
    if (roundScheduled || roundOut || (roundStatements.length === 0 && !barrier.waiting)) return;
    roundScheduled = true;
    setImmediate(sendRound);
  }
  function sendRound() {
    roundScheduled = false;
    if (roundOut) return;
    // (a statement given up is not sent late: its caller has done it through the pool)
    const statements = roundStatements.filter((statement) => !statement.givenUp);
    roundStatements = [];
    if (statements.length === 0 && !barrier.waiting) return;
    const c = connection.client;
    if (!c) {
      barrier.release();
      for (const statement of statements) statement.reject(new ListenerUnavailable());
      return;
    }
    const token = barrier.take();
    roundOut = true;
    const round = connection.enqueue(() => {
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
          answers.push(c.query('SELECT pg_notify($1, $2)', [barrier.channel, sent]).catch(() => barrier.failed(sent)));
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
    const answered = round.catch(() => {}).finally(() => clearTimeout(stuck));
    // The next round goes out no sooner than the loop iteration after the one that read this one's
    // answers: the requests read meanwhile join it (a busy process writes fewer, fuller rounds; an idle
    // one loses only an iteration of an otherwise empty loop).
    void answered.then(() =>
      setImmediate(() => {
        roundOut = false;
        scheduleRound();
      }),
    );
  }

  return {
    get open() {
      return connection.client !== null;
    },
    send(statement) {
      if (!connection.client) return Promise.reject(new ListenerUnavailable());
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
    },
    schedule: scheduleRound,
  };
}

/** What the process sends on its listener connection (events/bus.ts). */
export interface DatabaseNotifier {
  /** NOTIFY on the listener connection (coalescing is the caller's); falls back to `fallback` while it is down. */
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Runs one statement (its own implicit transaction) on the listener connection, written together with
   * the other statements and the barrier of the same round (see createStatementRounds). Rejects with
   * ListenerUnavailable, without sending anything, while the connection is down: the caller then uses a
   * pooled connection.
   */
  run(statement: ListenerStatement): Promise<StatementResult>;
}

/** The sending half on the listener's rounds (events/listener.ts DatabaseListener.rounds). */
export function createDatabaseNotifier(rounds: StatementRounds, fallbackNotify: (channel: string, payload: string) => Promise<void>): DatabaseNotifier {
  return {
    run: (statement) => rounds.send(statement),
    async notify(channel, payload) {
      if (rounds.open) {
        try {
          await rounds.send({ text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });
          return;
        } catch {
          // fall through: the pool still works
        }
      }
      await fallbackNotify(channel, payload);
    },
  };
}
