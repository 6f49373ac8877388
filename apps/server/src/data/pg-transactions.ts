// Plain transactions on node-postgres: BEGIN … COMMIT on a connection of the pool Prisma uses, for work
// that only sends its own SQL. Its callers are the two hot paths where it was measured to matter:
// POST /register (actions/event-queues.ts: ~30 statements, each ~1 ms of Node CPU cheaper here than
// through Prisma's client) and the subscribe action's common request (the caller joining existing
// channels: actions/subscriptions.ts subscribeOnce) (bench/README.md, issue 7, "Plain transactions"):
// - Prisma's interactive transaction cost ~1.2 ms of Node CPU for three trivial statements (1.5 against
//   0.27 ms with node-postgres directly);
// - BEGIN written with the first statement, and the last write with COMMIT (node-postgres's
//   pipelining): 1.85 + 2.03 against 2.16 + 2.36 ms of Parley + PostgreSQL CPU per subscribe;
// - `genericPlans` (plans made once per connection): 2.51 against 3.56 ms of PostgreSQL per subscribe.
// With the prepared statements of packages/db, they took subscribe at 51 users from 0.27x of its floor
// to the goal (>= 0.5x), which it meets without much to spare: replacing this by inTransaction would
// be a measurable loss on that path.
// Same guarantees as data/transactions.ts inTransaction (retries, after-commit work, time limits).
// The client's statements outside transactions take the same way (withPlainStatements, server.ts).
import pg from 'pg';
import { Prisma, shareSqlPool, sqlPoolOf, type PrismaClient } from '@parley/db';
import type { RawSql } from './db.ts';
import { inTransaction, retryOnSerializationFailure, runAfterCommit, type AfterCommit } from './transactions.ts';

/**
 * Results as Prisma's $queryRaw gives them, for the types where node-postgres differs: timestamps
 * without time zone are UTC (not local time), int8 is a BigInt, numeric a Decimal.
 */
export function utcTimestamp(text: string): Date {
  // The usual 'YYYY-MM-DD HH:MM:SS[.ffffff]' read by position (parsing the text with new Date() was
  // ~0.7 % of a busy server's time); anything else (years before 1000, BC, infinity) as Date reads it.
  const n = text.length;
  if (n >= 19 && n <= 26 && n !== 20 && text.charCodeAt(4) === 45 && text.charCodeAt(10) === 32 && text.charCodeAt(13) === 58 && (n === 19 || text.charCodeAt(19) === 46)) {
    const year = Number(text.slice(0, 4));
    const ms = n > 20 ? Number(text.slice(20, 23).padEnd(3, '0')) : 0;
    const t = Date.UTC(year, Number(text.slice(5, 7)) - 1, Number(text.slice(8, 10)), Number(text.slice(11, 13)), Number(text.slice(14, 16)), Number(text.slice(17, 19)), ms);
    if (year >= 1000 && !Number.isNaN(t)) return new Date(t);
  }
  return new Date(`${text.replace(' ', 'T')}Z`);
}
const typeParsers: Record<number, (text: string) => unknown> = {
  1114: utcTimestamp,
  1115: (text) => parseArray(text, utcTimestamp),
  20: (text) => BigInt(text),
  1016: (text) => parseArray(text, (t) => BigInt(t)),
  1700: (text) => new Prisma.Decimal(text),
};
function parseArray(text: string, element: (text: string) => unknown): unknown[] {
  // Arrays of these types hold no quotes or commas inside elements: split the one-dimensional literal.
  const inner = text.slice(1, -1);
  return inner === '' ? [] : inner.split(',').map((t) => (t === 'NULL' ? null : element(t.replace(/^"|"$/g, ''))));
}
const queryTypes = {
  getTypeParser: (oid: number, format?: string) => (format !== 'binary' && typeParsers[oid]) || pg.types.getTypeParser(oid, format as 'text'),
};
/** Arguments as Prisma sends them: dates as ISO-8601 UTC, BigInts as text. */
const argument = (value: unknown) =>
  value instanceof Date ? value.toISOString() : typeof value === 'bigint' || value instanceof Prisma.Decimal ? value.toString() : value;

/** What node-postgres (8.23) offers for writing queries without waiting for the answer of the one before. */
interface PipeliningClient {
  pipeline: boolean;
  connection?: { stream?: { cork(): void; uncork(): void } };
}

/** The plain transaction's RawSql, and a write that goes out with COMMIT. */
export interface SqlTransaction extends RawSql {
  /**
   * Sends `sql` together with COMMIT (one socket write): for the transaction's last write, whose result
   * nobody reads. Should it fail, the transaction rolls back and inSqlTransaction throws its error.
   * Nothing may be sent after it.
   */
  atCommit(sql: Prisma.Sql): void;
}

/**
 * A plain transaction on one pooled connection (prepared statements named as Prisma's are). BEGIN is
 * written together with the first statement, and the `atCommit` writes with COMMIT: PostgreSQL runs
 * them in order, and each write of a socket here costs about as much as a small statement. Every other
 * statement waits for the answers before it (so none runs outside the transaction, and the connection
 * is back to one query at a time in between).
 */
function plainTransaction(client: pg.PoolClient, statementName: (sql: string, parameters: number) => string | undefined, begin: string) {
  const pipelining = client as unknown as PipeliningClient;
  const stream = pipelining.connection?.stream;
  const canPipeline = typeof pipelining.pipeline === 'boolean' && typeof stream?.cork === 'function';
  let corked = false;
  const startBatch = () => {
    if (!canPipeline) return;
    pipelining.pipeline = true;
    stream!.cork();
    corked = true;
  };
  const flush = () => {
    if (corked) {
      corked = false;
      stream!.uncork();
    }
  };
  const endBatch = () => {
    flush();
    if (canPipeline) pipelining.pipeline = false;
  };
  /** Set once the transaction has ended: a statement still waiting its turn then fails instead of running on a released connection. */
  let ended = false;
  /**
   * The first statement that failed. PostgreSQL then answers COMMIT by rolling back, without an error:
   * a failure the work caught (or never awaited) must not let the transaction pass for committed.
   */
  let statementFailure: { error: unknown } | undefined;
  const send = (sql: Prisma.Sql) => {
    if (ended) return Promise.reject(new Error('statement sent after its transaction ended'));
    const name = statementName(sql.text, sql.values.length);
    const query = client.query({ ...(name ? { name } : {}), text: sql.text, values: sql.values.map(argument), types: queryTypes });
    query.catch((error: unknown) => void (statementFailure ??= { error }));
    return query;
  };

  startBatch();
  const begun = client.query(begin);
  begun.catch(() => {}); // awaited before anything else is sent
  /** Settles once BEGIN and the first statement are answered (null: no statement sent yet). */
  let opened: Promise<unknown> | null = null;
  /** Settles once the statement sent last is answered: statements started together (Promise.all) go one after another. */
  let previous: Promise<unknown> = Promise.resolve();
  /** Set once COMMIT or ROLLBACK is next: the work may start no statement any more (its atCommit writes go out with COMMIT). */
  let closing = false;
  const deferred: Prisma.Sql[] = [];
  const run = (query: TemplateStringsArray | Prisma.Sql, values: unknown[]) => {
    if (deferred.length) throw new Error('no statement may follow an atCommit write');
    if (closing) return Promise.reject(new Error('statement sent after its transaction ended'));
    const sql = query instanceof Prisma.Sql ? query : Prisma.sql(query, ...values);
    if (opened) {
      // node-postgres queues a query given while another runs, but that use is deprecated (pg 9 drops it).
      const result = Promise.all([opened, previous]).then(() => begun).then(() => send(sql));
      previous = result.catch(() => {});
      return result;
    }
    const first = send(sql);
    opened = first.then(endBatch, endBatch); // off before anything else can be sent (runs before the caller's reaction)
    flush();
    return first;
  };
  const tx: SqlTransaction = {
    $queryRaw: <T,>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => run(query, values).then((r) => r.rows as T),
    $executeRaw: (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => run(query, values).then((r) => r.rowCount ?? 0),
    atCommit: (sql) => void deferred.push(sql),
  };
  /**
   * BEGIN and every statement started so far answered (those the work started without waiting for them
   * too: COMMIT or ROLLBACK must not overtake them), one query at a time again; throws if BEGIN failed.
   */
  const settle = async () => {
    flush();
    await (opened ?? begun).catch(() => {});
    if (!opened) endBatch();
    await begun;
    // Until no statement is waiting (one may start another as it ends); from then on none may start.
    let last: Promise<unknown>;
    do {
      last = previous;
      await last;
    } while (last !== previous);
    closing = true;
  };
  return {
    tx,
    /** Nothing more is sent (the transaction is over, its connection about to be released). */
    end: () => void (ended = true),
    /** Writes BEGIN when the work did not send a statement at once. */
    flush,
    settle,
    /** The atCommit writes and COMMIT, in one write; throws the first failure (the transaction then rolled back). */
    async commit() {
      await settle();
      if (statementFailure) throw statementFailure.error;
      if (deferred.length === 0) return void (await client.query('COMMIT'));
      startBatch();
      const writes = deferred.map((sql) => send(sql));
      const commit = client.query('COMMIT');
      endBatchWhenDone([...writes, commit]);
      flush();
      const outcomes = await Promise.allSettled([...writes, commit]);
      endBatch();
      const failed = outcomes.find((o) => o.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
    },
  };
  function endBatchWhenDone(queries: Array<Promise<unknown>>) {
    void Promise.allSettled(queries).then(endBatch);
  }
}

/**
 * Like inTransaction, for work that only sends its own SQL: a plain BEGIN … COMMIT on a pooled
 * connection, without Prisma's transaction machinery (which costs more CPU than the statements of a
 * small write). Same guarantees: retried on serialization failures and deadlocks, `afterCommit` runs
 * only once committed, at most 10 s waiting for a connection and 30 s for the transaction (then the
 * connection is closed, which rolls it back). When the client reports its statements as events (tests
 * counting them), the work runs in Prisma's transaction instead, so that every statement is reported.
 *
 * `genericPlans`: PostgreSQL plans the transaction's statements once per connection (generic plans of
 * the prepared statements) instead of for every execution, when planning costs more than running them.
 * Only for statements whose best plan does not depend on the values given: rows found by their keys,
 * arrays of ids to look up one by one (a generic plan cannot know an array has one element, so without
 * this PostgreSQL keeps planning such statements afresh every time).
 *
 * `repeatableRead`: every statement reads the snapshot of the first (POST /register's state and the
 * queue's starting event).
 */
export async function inSqlTransaction<T>(
  db: PrismaClient,
  work: (tx: SqlTransaction, afterCommit: AfterCommit) => Promise<T>,
  options: { genericPlans?: boolean; repeatableRead?: boolean } = {},
): Promise<T> {
  const sqlPool = sqlPoolOf(db);
  if (!sqlPool || sqlPool.emitsQueryEvents) {
    const isolation = options.repeatableRead ? { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead } : {};
    return inTransaction(db, async (prismaTx, afterCommit) => {
      const deferred: Prisma.Sql[] = [];
      const tx: SqlTransaction = {
        $queryRaw: (query, ...values) => prismaTx.$queryRaw(query, ...values),
        $executeRaw: (query, ...values) => prismaTx.$executeRaw(query, ...values),
        atCommit: (sql) => void deferred.push(sql),
      };
      const value = await work(tx, afterCommit);
      for (const sql of deferred) await prismaTx.$executeRaw(sql);
      return value;
    }, isolation);
  }
  let callbacks: Array<() => void | Promise<void>> = [];
  const result = await retryOnSerializationFailure(async () => {
    callbacks = [];
    const client = await connectWithin(sqlPool.pool, 10_000);
    let broken: Error | undefined;
    // A connection that fails while checked out reports it here (an unheard 'error' would end the
    // process); the statement under way fails too, and the connection is discarded.
    const onError = (error: Error) => void (broken ??= error);
    client.on('error', onError);
    const expiry = setTimeout(() => {
      broken = new Error('Transaction timed out after 30000 ms');
      client.release(broken); // closes the connection: PostgreSQL rolls back, the statement under way fails
    }, 30_000);
    let plain: ReturnType<typeof plainTransaction> | undefined;
    try {
      // One simple-protocol query; the setting lasts until the transaction ends.
      const begin = options.repeatableRead ? 'BEGIN ISOLATION LEVEL REPEATABLE READ' : 'BEGIN';
      plain = plainTransaction(client, sqlPool.statementName, options.genericPlans ? `${begin}; SET LOCAL plan_cache_mode = force_generic_plan` : begin);
      const working = work(plain.tx, (fn) => callbacks.push(fn));
      plain.flush();
      const value = await working;
      await plain.commit();
      return value;
    } catch (error) {
      await plain?.settle().catch(() => {});
      if (!broken) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw broken ?? error;
    } finally {
      plain?.end();
      clearTimeout(expiry);
      client.removeListener('error', onError);
      if (!broken || !broken.message.startsWith('Transaction timed out')) client.release(broken);
    }
  });
  await runAfterCommit(callbacks);
  return result;
}

/**
 * The client, with its own `$queryRaw` and `$executeRaw` (statements outside any transaction: each one
 * is its own) sent through node-postgres on the pool Prisma uses, with Prisma's results (see
 * queryTypes) and the same prepared-statement names. Prisma's client costs ~0.3 ms of Node CPU per
 * statement over node-postgres's (bench/README.md, issue 28): most of a request's statements are of
 * this kind. Everything else (models, `$transaction`, whose transaction clients keep Prisma's own raw
 * statements) is the client's. At most 10 s waiting for a connection, as inSqlTransaction. When the
 * client reports its statements as events (tests counting them), it is returned unchanged.
 */
export function withPlainStatements(db: PrismaClient): PrismaClient {
  const sqlPool = sqlPoolOf(db);
  if (!sqlPool || sqlPool.emitsQueryEvents) return db;
  const run = async (query: TemplateStringsArray | Prisma.Sql, values: unknown[]) => {
    const sql = query instanceof Prisma.Sql ? query : Prisma.sql(query, ...values);
    const client = await connectWithin(sqlPool.pool, 10_000);
    let broken: Error | undefined;
    // A connection that fails under the statement reports it here (an unheard 'error' would end the process).
    const onError = (error: Error) => void (broken ??= error);
    client.on('error', onError);
    try {
      const name = sqlPool.statementName(sql.text, sql.values.length);
      return await client.query({ ...(name ? { name } : {}), text: sql.text, values: sql.values.map(argument), types: queryTypes });
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  };
  const own = new Map<string | symbol, unknown>([
    ['$queryRaw', (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => run(query, values).then((r) => r.rows)],
    ['$executeRaw', (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => run(query, values).then((r) => r.rowCount ?? 0)],
  ]);
  const bound = new Map<string | symbol, unknown>();
  const wrapped = new Proxy(db, {
    get(target, key) {
      if (own.has(key)) return own.get(key);
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(key);
      if (fn === undefined) bound.set(key, (fn = (value as (...args: unknown[]) => unknown).bind(target)));
      return fn;
    },
  });
  shareSqlPool(wrapped, db);
  return wrapped;
}

/**
 * A pooled connection, or an error after `ms` (a connection that arrives later goes back to the pool).
 * http/error-handler.ts answers that error 503 SERVER_OVERLOADED by its text, as Prisma's P2028.
 */
function connectWithin(pool: pg.Pool, ms: number): Promise<pg.PoolClient> {
  return new Promise((resolve, reject) => {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      reject(new Error(`Timed out after ${ms} ms waiting for a database connection`));
    }, ms);
    pool.connect().then(
      (client) => {
        clearTimeout(timer);
        if (late) client.release();
        else resolve(client);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
