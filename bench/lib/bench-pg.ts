// node-postgres (a dependency of the server package, not of the repository root) and an embedded
// PostgreSQL with an empty `parley_bench` database, for the benches' seeds. Loads none of the server,
// so that a bench's measured child process (bench/lib/measured-child.ts) can import it cheaply.
import path from 'node:path';
import { createRequire } from 'node:module';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../packages/db/src/embedded.ts';

export interface PgQueryable {
  query<R = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
}
export interface PgPool extends PgQueryable {
  connect(): Promise<PgQueryable & { release(): void }>;
  end(): Promise<void>;
}
interface PgModule {
  Client: new (options: { connectionString: string }) => PgQueryable & { connect(): Promise<void>; end(): Promise<void> };
  Pool: new (options: { connectionString: string; max?: number }) => PgPool;
}
export const pg = createRequire(new URL('../../apps/server/package.json', import.meta.url))('pg') as PgModule;

/**
 * An embedded PostgreSQL (ephemeral, fsync off) in `dir`/pg with an empty database `parley_bench`.
 * `statementStats`: with pg_stat_statements loaded and created in that database (statementStatsReport).
 */
export async function startBenchPostgres(dir: string, options: { statementStats?: boolean } = {}): Promise<{ database: EmbeddedDatabase; databaseUrl: string; pgDataDir: string }> {
  const pgDataDir = path.resolve(dir, 'pg');
  const settings = options.statementStats ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=top'] : [];
  const database = await startEmbeddedPostgres({ dataDir: pgDataDir, ephemeral: true, settings });
  const admin = new pg.Client({ connectionString: database.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE parley_bench');
  await admin.end();
  if (options.statementStats) {
    const bench = new pg.Client({ connectionString: database.urlFor('parley_bench') });
    await bench.connect();
    await bench.query('CREATE EXTENSION pg_stat_statements');
    await bench.end();
  }
  return { database, databaseUrl: database.urlFor('parley_bench'), pgDataDir };
}

/**
 * pg_stat_statements of `databaseUrl` (started with statementStats) since the last call: the `limit`
 * statements that took the most time (execution, lock waits included), as markdown table rows, and the
 * totals; then the counters start again.
 */
export async function statementStatsReport(databaseUrl: string, limit: number): Promise<{ calls: number; ms: number; rows: string[][] }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ calls: string; ms: number; mean: number; rows: string; query: string }>(
      `SELECT calls::text, total_exec_time AS ms, mean_exec_time AS mean, rows::text, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC`,
    );
    await client.query('SELECT pg_stat_statements_reset()');
    return {
      calls: rows.reduce((sum, r) => sum + Number(r.calls), 0),
      ms: rows.reduce((sum, r) => sum + r.ms, 0),
      rows: rows.slice(0, limit).map((r) => [r.calls, r.ms.toFixed(0), r.mean.toFixed(2), r.rows, `\`${r.query.replace(/\|/g, '\\|').replace(/`/g, "'")}\``]),
    };
  } finally {
    await client.end();
  }
}
