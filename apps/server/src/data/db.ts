// The data layer is the only place that imports @parley/db (Prisma). Repositories take a `Db`, which
// is either the client or the transaction client of an action.
import type { Prisma, PrismaClient } from '@parley/db';

export type Db = PrismaClient | Prisma.TransactionClient;
export type { PrismaClient };
export { Prisma } from '@parley/db';

/** One round trip to the database (health checks). */
export async function pingDatabase(db: PrismaClient): Promise<void> {
  await db.$queryRaw`SELECT 1`;
}

/** Runs `work` in one transaction; `afterCommit` callbacks run only once it committed. */
export async function inTransaction<T>(
  db: PrismaClient,
  work: (tx: Prisma.TransactionClient, afterCommit: (fn: () => void | Promise<void>) => void) => Promise<T>,
  options: { isolationLevel?: Prisma.TransactionIsolationLevel } = {},
): Promise<T> {
  let callbacks: Array<() => void | Promise<void>> = [];
  const result = await retryOnSerializationFailure(() => {
    callbacks = []; // only the attempt that commits may run its callbacks
    return db.$transaction((tx) => work(tx, (fn) => callbacks.push(fn)), { maxWait: 10_000, timeout: 30_000, ...options });
  });
  // The change is committed: a failing after-commit step (a NOTIFY) must not turn it into an error.
  for (const fn of callbacks) {
    try {
      await fn();
    } catch (error) {
      console.error('[parley] after-commit step failed:', error);
    }
  }
  return result;
}

/** Postgres serialization failures and deadlocks are retried, never shown to clients. */
async function retryOnSerializationFailure<T>(run: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= attempts || !isRetryable(error)) throw error;
      await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
    }
  }
}

function isRetryable(error: unknown): boolean {
  const e = error as { code?: string; message?: string; cause?: { code?: string } };
  const text = `${e?.code ?? ''} ${e?.cause?.code ?? ''} ${e?.message ?? ''}`;
  return /P2034|40001|40P01|deadlock|could not serialize/i.test(text);
}

/** A unique constraint refused the write (Prisma P2002, or PostgreSQL 23505 through the adapter). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string; message?: string; cause?: { code?: string } };
  return e?.code === 'P2002' || e?.cause?.code === '23505' || /unique constraint|23505/i.test(e?.message ?? '');
}
