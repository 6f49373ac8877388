// data/pg-transactions.ts inSqlTransaction hands its work a connection of its own and sends the
// statements itself: what PostgreSQL sees must still be one transaction, whatever order the work starts
// them in, and nothing may reach the connection once the transaction is over (it goes back to the pool,
// where a late statement would run outside any transaction, or in someone else's).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient, Prisma, type PrismaClient } from '@parley/db';
import { inSqlTransaction, type SqlTransaction } from '../../src/data/pg-transactions.ts';
import { useTestServer } from '../helpers/test-server.ts';

const env = useTestServer();
let db: PrismaClient;

beforeAll(async () => {
  db = createPrismaClient(env.databaseUrl, { max: 2 });
  await db.$executeRawUnsafe('CREATE TABLE pg_tx_probe (n int NOT NULL)');
});
afterAll(async () => {
  await db?.$disconnect();
});

const rows = async () => (await db.$queryRaw<{ n: number }[]>`SELECT n FROM pg_tx_probe ORDER BY n`).map((r) => r.n);

describe('inSqlTransaction', () => {
  it('runs statements started together one after another, in one transaction, without node-postgres queueing them', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const txids = await inSqlTransaction(db, async (tx) => {
        const first = await tx.$queryRaw<{ id: string }[]>`SELECT txid_current()::text AS id`;
        const together = await Promise.all([
          tx.$queryRaw<{ id: string }[]>`SELECT txid_current()::text AS id, pg_sleep(0.02)`,
          tx.$queryRaw<{ id: string }[]>`SELECT txid_current()::text AS id`,
          tx.$executeRaw`INSERT INTO pg_tx_probe (n) VALUES (1)`,
        ]);
        return [first[0]!.id, together[0][0]!.id, together[1][0]!.id];
      });
      expect(new Set(txids).size).toBe(1);
      expect(await rows()).toEqual([1]);
      // node-postgres warns (DeprecationWarning) when handed a query while another runs.
      expect(warnings.filter((m) => /already executing a query/i.test(m))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await db.$executeRaw`DELETE FROM pg_tx_probe`;
    }
  });

  it('refuses a statement sent after the transaction ended', async () => {
    let leaked: SqlTransaction | undefined;
    await inSqlTransaction(db, async (tx) => {
      leaked = tx;
      await tx.$queryRaw`SELECT 1`;
    });
    await expect(leaked!.$executeRaw`INSERT INTO pg_tx_probe (n) VALUES (2)`).rejects.toThrow('statement sent after its transaction ended');
    expect(await rows()).toEqual([]);
  });

  it('rolls back a statement the work started without waiting for it, when the work fails', async () => {
    let late: Promise<unknown> | undefined;
    await expect(
      inSqlTransaction(db, async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        void Promise.resolve(tx.$queryRaw`SELECT pg_sleep(0.05)`).catch(() => {});
        late = Promise.resolve(tx.$executeRaw`INSERT INTO pg_tx_probe (n) VALUES (3)`);
        late.catch(() => {});
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    await late?.catch(() => {});
    expect(await rows()).toEqual([]);
  });

  it('commits a statement the work started without waiting for it inside the transaction', async () => {
    try {
      await inSqlTransaction(db, async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        void tx.$queryRaw`SELECT pg_sleep(0.05)`;
        void tx.$executeRaw(Prisma.sql`INSERT INTO pg_tx_probe (n) SELECT 4 WHERE txid_current() IS NOT NULL`);
      });
      expect(await rows()).toEqual([4]);
    } finally {
      await db.$executeRaw`DELETE FROM pg_tx_probe`;
    }
  });

  it('does not pass for committed when a statement failed, even one whose failure the work caught', async () => {
    // PostgreSQL answers COMMIT after a failed statement by rolling back, without an error.
    await expect(
      inSqlTransaction(db, async (tx) => {
        await tx.$executeRaw`INSERT INTO pg_tx_probe (n) VALUES (5)`;
        await Promise.resolve(tx.$queryRaw`SELECT 1 / 0`).catch(() => {});
        return 'done';
      }),
    ).rejects.toThrow('division by zero');
    expect(await rows()).toEqual([]);
  });

  it('lets no statement of a branch still running slip in after ROLLBACK', async () => {
    // One branch sends a statement, then another once the first is answered; its sibling fails at once.
    let branch: Promise<unknown> | undefined;
    await expect(
      inSqlTransaction(db, async (tx) => {
        await tx.$queryRaw`SELECT 1`;
        branch = (async () => {
          await tx.$queryRaw`SELECT pg_sleep(0.05)`;
          await tx.$executeRaw`INSERT INTO pg_tx_probe (n) VALUES (6)`;
        })();
        branch.catch(() => {});
        await Promise.all([branch, Promise.reject(new Error('the sibling failed'))]);
      }),
    ).rejects.toThrow('the sibling failed');
    await branch?.catch(() => {});
    expect(await rows()).toEqual([]);
  });
});
