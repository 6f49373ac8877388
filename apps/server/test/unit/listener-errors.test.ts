// events/notifier.ts refusedByPostgres: which failures of a statement on the listener connection are
// the statement's own (the caller fails) and which are the connection's (the caller uses the pool).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ListenerUnavailable, refusedByPostgres } from '../../src/events/notifier.ts';

const answered = (code: string) => Object.assign(new pg.DatabaseError('from PostgreSQL', 0, 'error'), { code });
const socket = (code: string) => Object.assign(new Error(`write ${code}`), { code });

describe('refusedByPostgres', () => {
  it('is true for what PostgreSQL answered about the statement', () => {
    for (const code of ['23505', '42P01', '22P02', '40001']) expect(refusedByPostgres(answered(code)), code).toBe(true);
  });
  it('is false for a lock wait cut short, a lost or ended session, a prepared statement lost with an earlier one', () => {
    for (const code of ['55P03', '57P01', '57P03', '08006', '08003', '26000']) expect(refusedByPostgres(answered(code)), code).toBe(false);
  });
  it('is false for socket errors, whatever their code looks like, and for an unavailable connection', () => {
    for (const code of ['EPIPE', 'ECONNRESET', 'ETIMEDOUT']) expect(refusedByPostgres(socket(code)), code).toBe(false);
    expect(refusedByPostgres(new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(refusedByPostgres(new ListenerUnavailable())).toBe(false);
  });
});
