// The runtime Prisma client: Rust-free (prisma-client generator + @prisma/adapter-pg).
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from './generated/prisma/client.ts';

/**
 * Names for prepared statements: each distinct SQL text gets one, so that every connection parses a
 * statement once and PostgreSQL may keep a generic plan for it (an unnamed statement is parsed and
 * planned again on every execution, most of the database's CPU for the small statements of a request).
 * Bounded: statements with many parameters (lists expanded into placeholders, one text per length) and
 * texts past the first MAX_NAMED stay unnamed, so neither this map nor any connection grows without end.
 * One registry per pool: Prisma and the data layer's own statements (sqlPoolOf) share the connections,
 * so they must never give one name to two texts.
 */
const MAX_NAMED = 2000;
const MAX_NAMED_PARAMETERS = 64;
function statementNames(): (sql: string, parameters: number) => string | undefined {
  const names = new Map<string, string>();
  return (sql, parameters) => {
    let name = names.get(sql);
    if (name === undefined) {
      if (parameters > MAX_NAMED_PARAMETERS || names.size >= MAX_NAMED) return undefined; // unnamed
      name = `parley_${names.size.toString(36)}`;
      names.set(sql, name);
    }
    return name;
  };
}

/** The pg pool under a client, for statements the data layer sends itself (see apps/server data/db.ts). */
export interface SqlPool {
  pool: pg.Pool;
  /** The prepared-statement name of this text (shared with Prisma's), or undefined for an unnamed statement. */
  statementName(sql: string, parameters: number): string | undefined;
  /** The client reports statements as `query` events (tests count them): the data layer then leaves them all to Prisma. */
  emitsQueryEvents: boolean;
}
const sqlPools = new WeakMap<object, SqlPool>();
export const sqlPoolOf = (client: PrismaClient): SqlPool | undefined => sqlPools.get(client);
/** `alias` (a wrapper of `client` that sends some statements itself) uses the pool of `client`. */
export function shareSqlPool(alias: object, client: PrismaClient): void {
  const pool = sqlPools.get(client);
  if (pool) sqlPools.set(alias, pool);
}

export function createPrismaClient(
  connectionString: string,
  options: { max?: number; emitQueryEvents?: boolean; preparedStatements?: boolean } = {},
): PrismaClient {
  // The pool is ours (and ended by $disconnect), so that the data layer can use it too.
  const pool = new pg.Pool({ connectionString, max: options.max ?? 10 });
  const statementName = options.preparedStatements === false ? () => undefined : statementNames();
  const adapter = new PrismaPg(pool, {
    disposeExternalPool: true,
    statementNameGenerator: (query) => statementName(query.sql, query.args.length) as string, // undefined: unnamed
  });
  // emitQueryEvents: `client.$on('query', …)` sees every statement (tests count queries with it).
  const client = new PrismaClient({ adapter, ...(options.emitQueryEvents ? { log: [{ emit: 'event' as const, level: 'query' as const }] } : {}) }) as PrismaClient;
  sqlPools.set(client, { pool, statementName, emitsQueryEvents: options.emitQueryEvents ?? false });
  return client;
}
export type { PrismaClient };
