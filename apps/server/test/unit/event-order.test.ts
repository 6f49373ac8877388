// Event ids follow commit order within an organization (a poll that has seen event n has seen every
// event up to n), yet a transaction that stored events holds nothing that makes the others wait until
// it commits: each event row gets its final id while its transaction commits (migration
// 20261129090000_event_ids_at_commit). Two transactions on one organization: the first stores an event
// and stays open; the second stores one and commits without waiting for any lock, and gets the smaller
// id; the first then commits with the larger one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPrismaClient, type PrismaClient } from '@parley/db';
import { eventsOfRealmAfter, newestEventId } from '../../src/data/event-queues.repo.ts';
import { insertEvents } from '../../src/data/events.repo.ts';
import { useTestServer } from '../helpers/test-server.ts';

const env = useTestServer();
let db: PrismaClient;

beforeAll(async () => {
  db = createPrismaClient(env.databaseUrl, { max: 3 });
});
afterAll(async () => {
  await db?.$disconnect();
});

const probe = (name: string, userId: number) => ({ userIds: [userId], payload: { type: 'order_probe', name } });

describe('event ids', () => {
  it('are drawn at commit: a transaction storing events makes no other wait, and ids follow commit order', async () => {
    const realmId = env.realmId;
    const [user] = await db.$queryRaw<{ id: number }[]>`SELECT id FROM "user" WHERE realm_id = ${realmId}::int AND is_active ORDER BY id LIMIT 1`;
    const before = await newestEventId(db, realmId);

    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let stored!: () => void;
    const firstStored = new Promise<void>((resolve) => (stored = resolve));
    const first = db.$transaction(
      async (tx) => {
        await insertEvents(tx, realmId, [probe('first', user!.id)]);
        stored();
        await released;
      },
      { timeout: 20_000 },
    );
    await firstStored;

    // A lock wait would fail this transaction at once instead of queueing it behind the open one.
    await db.$transaction(async (tx) => {
      await tx.$executeRaw`SET LOCAL lock_timeout = '1ms'`;
      await insertEvents(tx, realmId, [probe('second', user!.id), probe('third', user!.id)]);
    });
    const whileOpen = await eventsOfRealmAfter(db, realmId, before, 100);
    expect(whileOpen.filter((e) => e.type === 'order_probe').map((e) => e.payload['name'])).toEqual(['second', 'third']);

    release();
    await first;
    const after = (await eventsOfRealmAfter(db, realmId, before, 100)).filter((e) => e.type === 'order_probe');
    expect(after.map((e) => e.payload['name'])).toEqual(['second', 'third', 'first']);
    // The event committed last has the largest id: nothing below the ids a poll saw appears later.
    const ids = after.map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(ids[2]!).toBeGreaterThan(whileOpen.at(-1)!.id);
    await db.$executeRaw`DELETE FROM event WHERE type = 'order_probe'`;
  });
});
