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

/** An embedded PostgreSQL (ephemeral, fsync off) in `dir`/pg with an empty database `parley_bench`. */
export async function startBenchPostgres(dir: string): Promise<{ database: EmbeddedDatabase; databaseUrl: string; pgDataDir: string }> {
  const pgDataDir = path.resolve(dir, 'pg');
  const database = await startEmbeddedPostgres({ dataDir: pgDataDir, ephemeral: true });
  const admin = new pg.Client({ connectionString: database.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE parley_bench');
  await admin.end();
  return { database, databaseUrl: database.urlFor('parley_bench'), pgDataDir };
}
