// The data layer is the only place that imports @parley/db (Prisma). Repositories take a `Db`, which
// is either the client or the transaction client of an action. The rest of the data layer's plumbing,
// one job a file:
//   transactions.ts     Prisma transactions (inTransaction): retries, after-commit work
//   pg-transactions.ts  plain node-postgres transactions (inSqlTransaction), for the hot paths, and the
//                       client's own statements outside transactions (withPlainStatements)
//   cached-tables.ts    the tables per-process caches follow, and how a change says it wrote none of them
//   database-errors.ts  what a database error means (retryable conflict, unique violation)
import { Prisma, type PrismaClient } from '@parley/db';

export type Db = PrismaClient | Prisma.TransactionClient;
export type { PrismaClient };
export { Prisma } from '@parley/db';

/** One round trip to the database (health checks). */
export async function pingDatabase(db: PrismaClient): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}

/**
 * What a repository needs of a connection to run its own SQL: the client, Prisma's transaction client,
 * or the plain transaction of `inSqlTransaction` (data/pg-transactions.ts). Functions that only send SQL
 * take this type, so that they run in either kind of transaction.
 */
export interface RawSql {
  $queryRaw<T = unknown>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): PromiseLike<T>;
  $executeRaw(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): PromiseLike<number>;
}

/** A model field's column: the schema maps every field to its name in snake_case. */
export const columnOf = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * `alias.column AS "field"` for each field: raw statements return rows of the model's shape, as the
 * client's queries do. `fields` is a model's scalar field list (Prisma.<Model>ScalarFieldEnum) or a
 * selection of its fields.
 */
export function modelColumns(fields: Readonly<Record<string, string>> | readonly string[], alias: string): Prisma.Sql {
  // Made once per field list and alias (statements on the hot paths name the same lists every time).
  let byAlias = columnLists.get(fields);
  if (!byAlias) columnLists.set(fields, (byAlias = new Map()));
  let sql = byAlias.get(alias);
  if (!sql) {
    const names = Array.isArray(fields) ? fields : Object.values(fields);
    sql = Prisma.raw(names.map((f) => `${alias}.${columnOf(f)} AS "${f}"`).join(', '));
    byAlias.set(alias, sql);
  }
  return sql;
}
const columnLists = new WeakMap<object, Map<string, Prisma.Sql>>();
