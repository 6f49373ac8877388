// The test organization's row, read and changed directly in the database (setup only).
import type { TestServer } from './test-server.ts';

/** The id of the test organization (every test database holds one). */
export async function realmIdOf(env: TestServer): Promise<number> {
  return (await env.running.deps.db.realm.findFirstOrThrow()).id;
}

/** Runs `body` with the organization's row changed by `data`, restoring the changed columns afterwards. */
export async function withRealm<T>(env: TestServer, realmId: number, data: Record<string, unknown>, body: () => Promise<T>): Promise<T> {
  const db = env.running.deps.db;
  const before = await db.realm.findUniqueOrThrow({ where: { id: realmId } });
  await db.realm.update({ where: { id: realmId }, data });
  await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
  try {
    return await body();
  } finally {
    const restore = Object.fromEntries(Object.keys(data).map((k) => [k, (before as Record<string, unknown>)[k]]));
    await db.realm.update({ where: { id: realmId }, data: restore });
    await env.running.deps.listener.barrier();
  }
}
