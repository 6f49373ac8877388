// Transactions of the actions: Prisma's interactive transaction, run again on serialization failures
// and deadlocks, with work that runs only once it committed (announcements). The plain node-postgres
// transaction of data/pg-transactions.ts gives the same guarantees with the helpers below.
import type { Prisma, PrismaClient } from '@parley/db';
import { isRetryableConflict } from './database-errors.ts';

/** Registers work to run once the surrounding transaction committed. */
export type AfterCommit = (fn: () => void | Promise<void>) => void;

/** Runs `work` in one transaction; `afterCommit` callbacks run only once it committed. */
export async function inTransaction<T>(
  db: PrismaClient,
  work: (tx: Prisma.TransactionClient, afterCommit: AfterCommit) => Promise<T>,
  options: { isolationLevel?: Prisma.TransactionIsolationLevel } = {},
): Promise<T> {
  let callbacks: Array<() => void | Promise<void>> = [];
  const result = await retryOnSerializationFailure(() => {
    callbacks = []; // only the attempt that commits may run its callbacks
    return db.$transaction((tx) => work(tx, (fn) => callbacks.push(fn)), { maxWait: 10_000, timeout: 30_000, ...options });
  });
  await runAfterCommit(callbacks);
  return result;
}

/**
 * Work whose only write is one statement, sent on the client outside any transaction (PostgreSQL
 * commits it as it ends): retried as inTransaction's work is on serialization failures and deadlocks,
 * and its `afterCommit` callbacks run once it returned. The work may read before its write, never
 * write twice (two writes would not be one change).
 */
export async function inOneStatement<T>(work: (afterCommit: AfterCommit) => Promise<T>): Promise<T> {
  let callbacks: Array<() => void | Promise<void>> = [];
  const result = await retryOnSerializationFailure(() => {
    callbacks = [];
    return work((fn) => callbacks.push(fn));
  });
  await runAfterCommit(callbacks);
  return result;
}

/** The change is committed: a failing after-commit step (a NOTIFY) must not turn it into an error. */
export async function runAfterCommit(callbacks: Array<() => void | Promise<void>>): Promise<void> {
  for (const fn of callbacks) {
    try {
      await fn();
    } catch (error) {
      console.error('[parley] after-commit step failed:', error);
    }
  }
}

/** Postgres serialization failures and deadlocks are retried, never shown to clients. */
export async function retryOnSerializationFailure<T>(run: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= attempts || !isRetryableConflict(error)) throw error;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}
