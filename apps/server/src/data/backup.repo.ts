// The SQL of `manage backup` and `manage restore` (src/backup/): the catalog read in the backup's
// snapshot, COPY out and in through pg-copy-streams, and the migrations applied (Prisma's
// _prisma_migrations, checked against the migration files this Parley ships).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import type { Readable, Writable } from 'node:stream';
import { migrationsDir } from '@parley/db/migrate';

export interface BackupTable {
  name: string;
  /** Stored columns in table order (generated columns are left out: COPY cannot write them). */
  columns: string[];
}

export interface BackupSequence {
  name: string;
  /** The sequence's last value, or null when nextval was never called. */
  lastValue: string | null;
}

export interface AppliedMigration {
  name: string;
  /** The migration's SQL, from this Parley's migration files. */
  sql: string;
}

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** Opens the backup's snapshot: everything read through `client` afterwards sees one instant (as pg_dump). */
export async function beginSnapshot(client: pg.Client): Promise<{ postgresVersion: string }> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  const row = (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!;
  return { postgresVersion: row.v };
}

/** The tables of schema public (the migrations' schema), _prisma_migrations first, then by name. */
export async function listTables(client: pg.Client): Promise<BackupTable[]> {
  const rows = (
    await client.query<{ table: string; columns: string[] }>(
      `SELECT c.relname AS table, array_agg(a.attname::text ORDER BY a.attnum) AS columns
         FROM pg_class c
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
        GROUP BY c.relname`,
    )
  ).rows;
  const rank = (name: string) => (name === '_prisma_migrations' ? 0 : 1);
  return rows.map((r) => ({ name: r.table, columns: r.columns })).sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Keeps migrations (DDL) away while the snapshot is read: ACCESS SHARE conflicts only with ACCESS EXCLUSIVE. */
export async function lockTables(client: pg.Client, tables: readonly BackupTable[]): Promise<void> {
  if (tables.length > 0) await client.query(`LOCK TABLE ${tables.map((t) => `public.${quoteIdent(t.name)}`).join(', ')} IN ACCESS SHARE MODE`);
}

export async function listSequences(client: pg.Client): Promise<BackupSequence[]> {
  const rows = (
    await client.query<{ name: string; last_value: string | null }>(
      `SELECT sequencename AS name, last_value::text FROM pg_sequences WHERE schemaname = 'public' ORDER BY sequencename`,
    )
  ).rows;
  return rows.map((r) => ({ name: r.name, lastValue: r.last_value }));
}

/**
 * The migrations the database has applied, in order, each with its SQL from this Parley's files.
 * Refused (with what to do) when the database has a migration these files do not have, a failed one,
 * or one whose file changed since it was applied: replaying the files would not give its schema.
 */
export async function appliedMigrations(client: pg.Client): Promise<AppliedMigration[]> {
  if (!(await client.query<{ t: string | null }>(`SELECT to_regclass('public._prisma_migrations')::text AS t`)).rows[0]?.t) {
    throw new Error('the database has no Parley schema (no _prisma_migrations table): start the server on it once first');
  }
  const rows = (
    await client.query<{ migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY migration_name, started_at',
    )
  ).rows;
  const applied: AppliedMigration[] = [];
  for (const row of rows) {
    if (row.rolled_back_at) continue;
    if (!row.finished_at) throw new Error(`migration ${row.migration_name} did not finish in this database; start the server once to finish it (or fix the failure it reports), then back up`);
    const file = path.join(migrationsDir, row.migration_name, 'migration.sql');
    if (!existsSync(file)) throw new Error(`the database has migration ${row.migration_name}, which this version of Parley does not have: back up with the version that runs on it`);
    const sql = readFileSync(file, 'utf8');
    if (createHash('sha256').update(sql).digest('hex') !== row.checksum) {
      throw new Error(`migration ${row.migration_name} changed since it was applied to this database (checksum differs): back up with the version that applied it`);
    }
    applied.push({ name: row.migration_name, sql });
  }
  return applied;
}

/** The names of the migrations this Parley ships (folders holding a migration.sql). */
export function shippedMigrations(): Set<string> {
  if (!existsSync(migrationsDir)) return new Set();
  return new Set(
    readdirSync(migrationsDir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(migrationsDir, d.name, 'migration.sql')))
      .map((d) => d.name),
  );
}

/** A table's rows in COPY's text format, one line per row. */
export function copyTableOut(client: pg.Client, table: BackupTable): Readable {
  return client.query(copyTo(`COPY public.${quoteIdent(table.name)} (${table.columns.map(quoteIdent).join(', ')}) TO STDOUT`));
}

export async function endSnapshot(client: pg.Client): Promise<void> {
  await client.query('COMMIT');
}

/** Relations outside PostgreSQL's own schemas: a database to restore into must have none. */
export async function countUserRelations(client: pg.Client): Promise<number> {
  const row = (
    await client.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'`,
    )
  ).rows[0]!;
  return Number(row.n);
}

export async function beginRestore(client: pg.Client): Promise<void> {
  await client.query('BEGIN');
}

/** Runs script text (several statements, PL/pgSQL bodies and all) as one simple query. */
export async function runScript(client: pg.Client, sql: string): Promise<void> {
  await client.query(sql);
}

/** Starts `COPY … FROM stdin` (the statement as the backup wrote it); the rows are written to the stream. */
export function copyTableIn(client: pg.Client, statement: string): Writable {
  return client.query(copyFrom(statement.replace(/;\s*$/, '')));
}

export async function commitRestore(client: pg.Client): Promise<void> {
  await client.query('COMMIT');
}

export async function rollbackRestore(client: pg.Client): Promise<void> {
  await client.query('ROLLBACK');
}

/** Planner statistics for the restored tables (a restore writes them all at once). */
export async function analyzeDatabase(client: pg.Client): Promise<void> {
  await client.query('ANALYZE');
}
