// The SQL of organization imports (src/import/zulip-import.ts): one long transaction, fresh ids drawn
// from the tables' sequences in blocks, and rows written either in batches as one multi-row INSERT …
// SELECT FROM unnest(arrays) per batch and table (the small tables), or streamed with COPY … FROM
// STDIN on the transaction's own connection (messages and their per-user rows: pg-copy-streams).
import { finished } from 'node:stream/promises';
import type { PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Prisma, type Db, type PrismaClient } from './db.ts';
import { sqlPoolOf } from '@parley/db';

export type ImportTx = Prisma.TransactionClient;

/**
 * COPY … FROM STDIN into the import's transaction. Only one COPY runs at a time, and no other
 * statement of the transaction may be sent until `end()` has resolved.
 */
export interface CopyIn {
  start(table: string, columns: readonly BulkColumn[]): CopyStream;
}

export interface CopyStream {
  /** Adds a row (values in the order of the columns); resolves at once unless the stream is full. */
  row(values: readonly unknown[]): Promise<void> | undefined;
  /** Sends what is left and waits for PostgreSQL's answer (its error, if the rows were refused). */
  end(): Promise<void>;
  /** Abandons the COPY (CopyFail: PostgreSQL refuses it and the connection takes statements again). */
  abort(): Promise<void>;
  readonly rows: number;
}

/**
 * Runs the whole import in one transaction (no retry: an import is not repeated behind the caller's
 * back). Long organizations take minutes, hence the generous time limit. `copy` writes into the same
 * transaction: Prisma's interactive transaction holds one connection of the client's pool (PrismaPg
 * checks it out with pool.connect()), which is found by its backend process id.
 */
export async function inImportTransaction<T>(db: PrismaClient, work: (tx: ImportTx, copy: CopyIn) => Promise<T>, diagnose: ImportDiagnostics = {}): Promise<T> {
  const pool = sqlPoolOf(db)?.pool;
  if (!pool) throw new Error('the import needs the pg pool of its Prisma client');
  const acquired: PoolClient[] = [];
  const onAcquire = (client: PoolClient) => acquired.push(client);
  pool.on('acquire', onAcquire);
  try {
    return await db.$transaction(
      async (tx) => {
        pool.off('acquire', onAcquire);
        const [me] = await tx.$queryRaw<Array<{ pid: number }>>`SELECT pg_backend_pid() AS pid`;
        const connection = acquired.find((c) => (c as unknown as { processID: number | null }).processID === me?.pid);
        acquired.length = 0;
        if (!connection) throw new Error("the import could not find its transaction's connection");
        const quiet = diagnose.explainMinMs !== undefined && diagnose.onNotice ? await explainSlowStatements(connection, diagnose.explainMinMs, diagnose.onNotice) : () => {};
        try {
          return await work(tx, { start: (table, columns) => startCopy(connection, table, columns) });
        } finally {
          quiet();
        }
      },
      { maxWait: 60_000, timeout: 24 * 3600_000 },
    );
  } finally {
    pool.off('acquire', onAcquire);
  }
}

/** Diagnostics of a slow import (never on by default). */
export interface ImportDiagnostics {
  /** PostgreSQL's auto_explain on the import's connection: plans (with ANALYZE and BUFFERS, nested statements such as triggers' included) of statements slower than this. */
  explainMinMs?: number;
  /** Where the plans go (they come back as notices). */
  onNotice?(text: string): void;
}

/** Settings local to the transaction; returns what stops the notices. */
async function explainSlowStatements(connection: PoolClient, minMs: number, onNotice: (text: string) => void): Promise<() => void> {
  const listener = (notice: { message?: string }) => onNotice(notice.message ?? '');
  connection.on('notice', listener);
  await connection.query("LOAD 'auto_explain'");
  for (const setting of [`auto_explain.log_min_duration = ${Math.max(0, Math.floor(minMs))}`, 'auto_explain.log_analyze = on', 'auto_explain.log_buffers = on', 'auto_explain.log_nested_statements = on', 'auto_explain.log_level = notice', 'auto_explain.log_parameter_max_length = 0']) {
    await connection.query(`SET LOCAL ${setting}`);
  }
  return () => connection.off('notice', listener);
}

/** COPY's text format: NULL as \N, backslash and the separators escaped. */
function copyText(value: unknown, type: BulkColumn['type']): string {
  if (value === null || value === undefined) return '\\N';
  switch (type) {
    case 'int':
    case 'smallint':
    case 'bigint':
      return String(value);
    case 'bool':
      return value ? 't' : 'f';
    case 'timestamp':
      return (value as Date).toISOString();
    case 'int[]':
      return `{${(value as number[]).join(',')}}`;
    default: {
      const text = typeof value === 'string' ? value : JSON.stringify(value);
      return /[\\\n\r\t]/.test(text) ? text.replace(/[\\\n\r\t]/g, (c) => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : c === '\r' ? '\\r' : '\\t')) : text;
    }
  }
}

const COPY_CHUNK = 256 * 1024;

function startCopy(connection: PoolClient, table: string, columns: readonly BulkColumn[]): CopyStream {
  for (const c of [table, ...columns.map((c) => c.name)]) if (!IDENTIFIER.test(c)) throw new Error(`bad identifier ${c}`);
  const stream = connection.query(copyFrom(`COPY "${table}" (${columns.map((c) => `"${c.name}"`).join(', ')}) FROM STDIN`));
  let failure: Error | null = null;
  const done = new Promise<void>((resolve, reject) => {
    stream.on('finish', resolve);
    stream.on('error', (error: Error) => {
      failure = error;
      reject(error);
    });
  });
  done.catch(() => {}); // surfaced by row() and end()
  let buffer = '';
  let rows = 0;
  const flush = (): Promise<void> | undefined => {
    if (failure) return Promise.reject(failure);
    const full = !stream.write(buffer);
    buffer = '';
    if (!full) return undefined;
    return new Promise<void>((resolve, reject) => {
      stream.once('drain', resolve);
      done.catch(reject);
    });
  };
  return {
    row(values) {
      let line = '';
      for (let i = 0; i < columns.length; i++) line += (i ? '\t' : '') + copyText(values[i], columns[i]!.type);
      buffer += line + '\n';
      rows++;
      return buffer.length >= COPY_CHUNK ? flush() : undefined;
    },
    async end() {
      if (buffer) await flush();
      if (failure) throw failure;
      stream.end();
      await done;
    },
    async abort() {
      if (failure) return;
      stream.destroy(new Error('import abandoned'));
      await finished(stream).catch(() => {});
    },
    get rows() {
      return rows;
    },
  };
}

/** A column of a bulk insert: its name and the PostgreSQL type of its array parameter's elements. */
export interface BulkColumn {
  name: string;
  type: 'int' | 'bigint' | 'text' | 'bool' | 'timestamp' | 'jsonb' | 'int[]' | 'smallint';
}

/** Tables and columns come from the importer's constants, never from the archive. */
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * INSERT INTO table (columns) SELECT FROM unnest(one array per column): `rows` are tuples in the
 * order of `columns`. Dates go as ISO-8601 UTC text; `int[]` values as arrays (sent as literals).
 */
export async function bulkInsert(tx: Db, table: string, columns: readonly BulkColumn[], rows: readonly unknown[][]): Promise<void> {
  if (rows.length === 0) return;
  for (const c of [table, ...columns.map((c) => c.name)]) if (!IDENTIFIER.test(c)) throw new Error(`bad identifier ${c}`);
  const arrays = columns.map((column, i) =>
    rows.map((row) => {
      const value = row[i];
      if (value === null || value === undefined) return null;
      if (column.type === 'timestamp') return (value as Date).toISOString();
      if (column.type === 'int[]') return `{${(value as number[]).join(',')}}`;
      if (column.type === 'bigint') return String(value);
      return value;
    }),
  );
  const params = columns.map((column, i) => {
    const arrayType = column.type === 'int[]' ? 'text' : column.type === 'timestamp' ? 'timestamp(3)' : column.type;
    return Prisma.sql`${arrays[i]}::${Prisma.raw(arrayType)}[]`;
  });
  const select = columns.map((column, i) => Prisma.raw(column.type === 'int[]' ? `c${i}::int[]` : `c${i}`));
  const names = columns.map((c) => Prisma.raw(`"${c.name}"`));
  const aliases = columns.map((_c, i) => Prisma.raw(`c${i}`));
  await tx.$executeRaw`
    INSERT INTO ${Prisma.raw(`"${table}"`)} (${Prisma.join(names, ', ')})
    SELECT ${Prisma.join(select, ', ')} FROM unnest(${Prisma.join(params, ', ')}) AS t(${Prisma.join(aliases, ', ')})`;
}

/** `count` fresh ids of a table's id sequence, ascending. */
export async function allocateIds(tx: Db, table: string, count: number): Promise<number[]> {
  if (count === 0) return [];
  if (!IDENTIFIER.test(table)) throw new Error(`bad identifier ${table}`);
  // The sequence is looked up once (a materialized CTE is evaluated once), not once per id.
  const rows = await tx.$queryRaw<Array<{ id: number }>>`
    WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence(${`"${table}"`}, 'id')::regclass AS seq)
    SELECT nextval(s.seq)::int AS id FROM s CROSS JOIN generate_series(1, ${count}::int)`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/**
 * Makes the connection's cached plans be made again, from the tables' sizes now. PL/pgSQL keeps the
 * plan of each trigger statement for the life of the connection, and nothing else invalidates it
 * during an import: its rows are uncommitted, so autovacuum never ANALYZEs the tables under it. The
 * reference check of user_message (migration 20261124120100) planned on the first message file, when
 * message held a thousand rows, hashes all of message for every later file (a sequential scan that grows
 * with the import); planned on the table as it is, it probes message's primary key per new message.
 * Only this connection's plans go; no lock is taken.
 */
export async function replanStatements(tx: Db): Promise<void> {
  await tx.$executeRaw`DISCARD PLANS`;
}

/** Column names of a table (the user settings a Zulip user row may carry). */
export async function tableColumns(tx: Db, table: string): Promise<Map<string, string>> {
  const rows = await tx.$queryRaw<Array<{ column_name: string; data_type: string }>>`
    SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ${table}`;
  return new Map(rows.map((r) => [r.column_name, r.data_type]));
}

/** Whether an organization already has this URL (its id, or null). */
export async function realmIdByUrl(db: Db, url: string): Promise<number | null> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM realm WHERE lower(url) = lower(${url}) ORDER BY id LIMIT 1`;
  return rows[0]?.id ?? null;
}

/** Sets columns of one row (column names from the importer's constants, values as parameters). */
export async function updateRow(tx: Db, table: string, id: number, values: Record<string, unknown>, idColumn = 'id'): Promise<void> {
  const entries = Object.entries(values).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return;
  for (const c of [table, idColumn, ...entries.map(([k]) => k)]) if (!IDENTIFIER.test(c)) throw new Error(`bad identifier ${c}`);
  const sets = entries.map(([k, v]) => Prisma.sql`${Prisma.raw(`"${k}"`)} = ${v instanceof Date ? v : v}`);
  await tx.$executeRaw`UPDATE ${Prisma.raw(`"${table}"`)} SET ${Prisma.join(sets, ', ')} WHERE ${Prisma.raw(`"${idColumn}"`)} = ${id}::int`;
}

/** Group settings (realm, channel or group columns) set from a map of column → group id. */
export async function setGroupColumns(tx: Db, table: 'realm' | 'channel' | 'user_group', id: number, columns: Record<string, number>): Promise<void> {
  await updateRow(tx, table, id, columns);
}

/** Every user is caught up to the organization's newest message (imported rows are never deferred). */
export async function markUsersCaughtUp(tx: Db, realmId: number): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO user_message_caught_up (user_id, message_id)
    SELECT u.id, COALESCE((SELECT max(id) FROM message WHERE realm_id = ${realmId}::int), 0) FROM "user" u WHERE u.realm_id = ${realmId}::int
    ON CONFLICT (user_id) DO UPDATE SET message_id = EXCLUDED.message_id`;
}

/** Rows per table of an organization (progress summaries and tests). */
export async function countRealmRows(db: Db, realmId: number): Promise<Record<string, number>> {
  const rows = await db.$queryRaw<Array<Record<string, bigint>>>`
    SELECT
      (SELECT count(*) FROM "user" WHERE realm_id = ${realmId}::int) AS users,
      (SELECT count(*) FROM channel WHERE realm_id = ${realmId}::int) AS channels,
      (SELECT count(*) FROM message WHERE realm_id = ${realmId}::int) AS messages`;
  return Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)]));
}

/** Serialises imports to one URL (two at once: the second sees the first's organization and refuses). */
export async function lockImportUrl(tx: Db, url: string): Promise<void> {
  await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtext(${`parley-import:${url.toLowerCase()}`}))::text`;
}
