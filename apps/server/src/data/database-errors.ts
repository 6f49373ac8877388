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

/**
 * The database lacks a resource to carry out the statement (SQLSTATE class 53, insufficient resources):
 * `disk` for 53100 disk_full (or "No space left on device" in the text), `resources` for 53200
 * out_of_memory and 53400 configuration_limit_exceeded; null otherwise. The statement failed and its
 * transaction rolled back, so nothing of the request was written; the same request may succeed once
 * the resource returns. (53300 too_many_connections is overload, which the error handler maps itself.)
 */
export function outOfResources(error: unknown): 'disk' | 'resources' | null {
  const e = error as DriverError & { cause?: { originalCode?: string; message?: string } };
  const text = `${e?.code ?? ''} ${e?.cause?.code ?? ''} ${e?.cause?.originalCode ?? ''} ${e?.message ?? ''} ${e?.cause?.message ?? ''}`;
  if (/\b53100\b|No space left on device/i.test(text)) return 'disk';
  if (/\b53200\b|\b53400\b/.test(text)) return 'resources';
  return null;
}
