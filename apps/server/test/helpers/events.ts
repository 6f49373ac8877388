// The events the server stores (table `event`), read back by tests: take a mark before a request, then
// read what was stored after it.
import type { TestServer } from './test-server.ts';
import { activeUsers } from './people.ts';

/** A stored event: its payload and its recipients (user ids, ascending). */
export interface StoredEvent {
  userIds: number[];
  payload: any;
}

/** The id of the newest stored event (0 when there is none): the events after it are "since" the mark. */
export async function markEvents(env: TestServer): Promise<bigint> {
  const last = await env.running.deps.db.event.findFirst({ orderBy: { id: 'desc' } });
  return last?.id ?? 0n;
}

/**
 * The events stored after `mark`, oldest first, with their recipients. A realm-wide row stores no user
 * ids: it goes to every active user of the organization, so its recipients are those users (read now).
 */
export async function eventsSince(env: TestServer, mark: bigint): Promise<StoredEvent[]> {
  const rows = await env.running.deps.db.event.findMany({ where: { id: { gt: mark } }, orderBy: { id: 'asc' } });
  const everyone = new Map<number, number[]>();
  for (const realmId of new Set(rows.filter((r) => r.realmWide).map((r) => r.realmId))) {
    everyone.set(realmId, (await activeUsers(env, realmId)).map((u) => u.id));
  }
  return rows.map((r) => ({ userIds: r.realmWide ? everyone.get(r.realmId)! : [...r.userIds].sort((a, b) => a - b), payload: r.payload as any }));
}

/** The payloads of the events stored after `mark`, oldest first. */
export async function eventPayloadsSince(env: TestServer, mark: bigint): Promise<any[]> {
  const rows = await env.running.deps.db.event.findMany({ where: { id: { gt: mark } }, orderBy: { id: 'asc' } });
  return rows.map((r) => r.payload);
}
