// data/pg-transactions.ts withPlainStatements: the server's client sends its own statements outside
// transactions through node-postgres. They must answer what Prisma's would, and a transaction's client
// must keep running its statements in its transaction (never on the pool beside it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient, sqlPoolOf, type PrismaClient } from '@parley/db';
import { useTestServer } from '../helpers/test-server.ts';

const env = useTestServer();
let prisma: PrismaClient;

beforeAll(async () => {
  prisma = createPrismaClient(env.databaseUrl, { max: 2 });
});
afterAll(async () => {
  await prisma?.$disconnect();
});

describe('withPlainStatements', () => {
  it('is what the server uses, on the pool of its Prisma client', () => {
    const db = env.running.deps.db;
    expect(sqlPoolOf(db)).toBeDefined();
    expect(db.$queryRaw).not.toBe(prisma.$queryRaw);
  });

  it("answers Prisma's values for every kind of column the data layer reads", async () => {
    const db = env.running.deps.db;
    const read = (client: PrismaClient) => client.$queryRaw<Record<string, unknown>[]>`
      SELECT TIMESTAMP '2026-11-27 12:34:56.789' AS ts, TIMESTAMPTZ '2026-11-27 12:34:56+02' AS tstz,
        ARRAY[TIMESTAMP '2026-01-02 03:04:05']::timestamp[] AS stamps, ${42}::int AS n, 9007199254740993::int8 AS big,
        ARRAY[1, 2]::int8[] AS bigs, 12.50::numeric AS dec, ${1.25}::float8 AS f, '{"a": [1, "x"]}'::jsonb AS j,
        ARRAY[3, 1]::int[] AS ints, ${true}::boolean AS b, NULL::text AS nothing, ${'é ü'}::text AS t,
        ${new Date('2026-05-06T07:08:09.010Z')}::timestamp AS given`;
    const [plain] = await read(db);
    const [viaPrisma] = await read(prisma);
    expect(plain).toEqual(viaPrisma);
    expect(plain!['big']).toBe(9007199254740993n);
    expect((plain!['ts'] as Date).toISOString()).toBe('2026-11-27T12:34:56.789Z');
    expect((plain!['given'] as Date).toISOString()).toBe('2026-05-06T07:08:09.010Z');
    expect(await db.$executeRaw`SELECT 1 WHERE ${1}::int = 1`).toBe(await prisma.$executeRaw`SELECT 1 WHERE ${1}::int = 1`);
  });

  it("leaves a transaction's statements in the transaction", async () => {
    const db = env.running.deps.db;
    await db.$executeRaw`CREATE TABLE IF NOT EXISTS plain_probe (n int NOT NULL)`;
    await db.$transaction(async (tx) => {
      await tx.$executeRaw`INSERT INTO plain_probe (n) VALUES (1)`;
      // Inside: the transaction's own row; outside (the client itself, on the pool): nothing yet.
      expect(await tx.$queryRaw<{ c: number }[]>`SELECT count(*)::int AS c FROM plain_probe`).toEqual([{ c: 1 }]);
      expect(await db.$queryRaw<{ c: number }[]>`SELECT count(*)::int AS c FROM plain_probe`).toEqual([{ c: 0 }]);
    });
    expect(await db.$queryRaw<{ c: number }[]>`SELECT count(*)::int AS c FROM plain_probe`).toEqual([{ c: 1 }]);
    await db.$executeRaw`DROP TABLE plain_probe`;
  });

  it("fails a statement as PostgreSQL refuses it, and the connection serves the next one", async () => {
    const db = env.running.deps.db;
    await expect(db.$queryRaw`SELECT 1 / ${0}::int`).rejects.toMatchObject({ code: '22012' });
    expect(await db.$queryRaw`SELECT ${7}::int AS n`).toEqual([{ n: 7 }]);
  });
});
