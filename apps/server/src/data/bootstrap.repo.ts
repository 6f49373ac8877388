import type { Db } from './db.ts';

const BOOTSTRAP_LOCK = 7_265_001;

/** Transaction-scoped advisory lock serialising first-start set-up across server processes. */
export async function takeBootstrapLock(db: Db): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(${BOOTSTRAP_LOCK})`;
}
