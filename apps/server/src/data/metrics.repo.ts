// What the Prometheus endpoint (src/metrics) reads from the database at each scrape: one statement for
// the installation-wide counts, and the figures of this process's connection pool (no statement).
import { sqlPoolOf } from '@parley/db';
import type { PrismaClient } from './db.ts';

export interface DatabaseCounts {
  /** Event queues registered (POST /register) and not yet deleted or expired, in the installation. */
  eventQueues: number;
  /** Per kind of job: jobs due and waiting for a worker (`due`), and waiting for a later start (`scheduled`). */
  jobs: Array<{ name: string; due: number; scheduled: number }>;
}

/**
 * One round trip: the event queues, and the jobs pg-boss has not handed to a worker yet (states
 * created and retry, read through pg-boss's own partial index on waiting jobs).
 */
export async function readDatabaseCounts(db: PrismaClient): Promise<DatabaseCounts> {
  const rows = await db.$queryRaw<Array<{ name: string | null; due: number; scheduled: number }>>`
    SELECT NULL::text AS name, count(*)::int AS due, 0 AS scheduled FROM event_queue
    UNION ALL
    SELECT name, (count(*) FILTER (WHERE start_after <= now()))::int, (count(*) FILTER (WHERE start_after > now()))::int
      FROM pgboss.job WHERE state < 'active' GROUP BY name`;
  let eventQueues = 0;
  const jobs: DatabaseCounts['jobs'] = [];
  for (const row of rows) {
    if (row.name === null) eventQueues = row.due;
    else jobs.push({ name: row.name, due: row.due, scheduled: row.scheduled });
  }
  return { eventQueues, jobs };
}

export interface PoolUsage {
  /** Connections checked out by a query or transaction. */
  inUse: number;
  /** Connections open and free. */
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
  /** The pool's size limit. */
  max: number;
}

/** This process's database pool (node-postgres's counters), or null for a client without one. */
export function poolUsage(db: PrismaClient): PoolUsage | null {
  const pool = sqlPoolOf(db)?.pool;
  if (!pool) return null;
  return { inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount, max: pool.options.max ?? 10 };
}
