// Rows of a read kept in this process and reused while PostgreSQL says they are unchanged: a statement
// answers one digest of what the read would answer (md5 over the text of every row), and only when it
// differs from the digest the kept rows were read at is the read itself sent and its rows parsed again.
// For POST /register's organization-wide reads (every channel, their facts, the groups' member arrays),
// whose rows are many and rarely change: parsing them was most of a registration's Node CPU.
//
// Exact by construction: the digest is of the very rows the read answers, in the caller's snapshot, so
// nothing is invalidated and a change committed by any process is seen by the next read everywhere.
// The caller's transaction must read one snapshot across its statements (repeatable read, as
// /register's): the digest and, on a miss, the rows then describe the same moment.
import type { RawSql } from './db.ts';
import { Prisma } from './db.ts';
import { databaseCache } from '../lib/process-caches.ts';

interface KeptRows {
  /** The statement (text and values) the rows answer. */
  statement: string;
  digest: string;
  rows: readonly object[];
}

/** Kept reads by slot (the caller's name for what the read is, or the statement itself). */
const kept = databaseCache<string, KeptRows>();
/** Reads kept at most (each an organization's channels, facts or groups). */
const MAX_READS = 256;

/**
 * The rows of `sql` (a SELECT), reused from an earlier read of the same statement when its digest in
 * this snapshot is unchanged. The array and its rows are frozen: callers share them (the same array
 * while unchanged, which callers may key derived values by) and must not change them.
 */
export async function queryKeptByDigest<T extends object>(db: RawSql, sql: Prisma.Sql, slot?: string): Promise<readonly T[]> {
  // `slot` names what the read is (e.g. an organization's channels) when its values change with what it
  // reads (ids listed in the statement): one entry per slot, replaced, instead of one per statement ever
  // seen, kept until pushed out.
  const statement = `${sql.text}\u0000${JSON.stringify(sql.values)}`;
  const key = slot ?? statement;
  // Every row's text, sorted: the same set of rows gives the same digest whatever order the plan
  // produced them in (the read's own ORDER BY then puts them in the same order); the count guards
  // against the empty and NULL rows' text.
  const [answer] = await db.$queryRaw<Array<{ digest: string }>>`
    SELECT count(*)::text || ':' || COALESCE(md5(string_agg(q::text, E'\n' ORDER BY q::text)), '') AS digest FROM (${sql}) q`;
  const digest = answer!.digest;
  const found = kept.get(key);
  if (found?.digest === digest && found.statement === statement) {
    // Used: to the back of the line (the first entries are pushed out first).
    kept.delete(key);
    kept.set(key, found);
    return found.rows as readonly T[];
  }
  const rows = Object.freeze((await db.$queryRaw<T[]>(sql)).map(freeze));
  kept.delete(key);
  if (kept.size >= MAX_READS) kept.delete(kept.keys().next().value!);
  kept.set(key, { statement, digest, rows });
  return rows;
}

/** The row and the arrays it holds, frozen (a change by a caller would reach every later reader). */
function freeze<T extends object>(row: T): T {
  for (const value of Object.values(row)) if (Array.isArray(value)) Object.freeze(value);
  return Object.freeze(row);
}

/** Values kept by their caller's key, with the digest of their sources they were made at. */
const values = databaseCache<string, { digest: string; value: unknown }>();

/**
 * The value `make` makes from reads, reused while `digestSql` (one row, one `digest` column, computed
 * from every row those reads depend on, or a superset of them) answers the digest it was made at. `key`
 * names everything else the value depends on (organization, options). For one-snapshot transactions
 * only, as queryKeptByDigest; the value is shared by every caller, who must not change it.
 */
export async function keptWhileDigestUnchanged<T>(db: RawSql, key: string, digestSql: Prisma.Sql, make: () => Promise<T>): Promise<T> {
  const [answer] = await db.$queryRaw<Array<{ digest: string | null }>>(digestSql);
  const digest = answer?.digest ?? '';
  const found = values.get(key);
  if (found?.digest === digest) {
    values.delete(key);
    values.set(key, found);
    return found.value as T;
  }
  const value = await make();
  values.delete(key);
  if (values.size >= MAX_READS) values.delete(values.keys().next().value!);
  values.set(key, { digest, value });
  return value;
}
