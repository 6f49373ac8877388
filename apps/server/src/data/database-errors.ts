// What a database error means, whichever driver reported it: Prisma (its P codes), or node-postgres
// (PostgreSQL's SQLSTATE), directly or as the `cause` of Prisma's adapter error.

interface DriverError {
  code?: string;
  message?: string;
  cause?: { code?: string };
}

/**
 * A serialization failure or a deadlock (Prisma P2034, PostgreSQL 40001 / 40P01): the transaction
 * rolled back and running it again may succeed (data/transactions.ts retries these, never showing them).
 */
export function isRetryableConflict(error: unknown): boolean {
  const e = error as DriverError;
  const text = `${e?.code ?? ''} ${e?.cause?.code ?? ''} ${e?.message ?? ''}`;
  return /P2034|40001|40P01|deadlock|could not serialize/i.test(text);
}

/** A unique constraint refused the write (Prisma P2002, or PostgreSQL 23505 through the adapter). */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as DriverError;
  return e?.code === 'P2002' || e?.cause?.code === '23505' || /unique constraint|23505/i.test(e?.message ?? '');
}
