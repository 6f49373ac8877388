// Channels for a test: fresh names, channels created through the API, and subscriptions read or written
// directly in the database (setup and read-back only).
import type { Person } from './fixtures.ts';
import { beforeAll } from 'vitest';
import { useTestServer, type TestServer } from './test-server.ts';
import { systemGroupIds, type SystemGroupIds } from './groups.ts';
import { activeUsers, type UserRole } from './people.ts';

let counter = 0;
/** A channel name no other test of the file uses: `<label> <counter>`. */
export const fresh = (label: string): string => `${label} ${++counter}`;

/**
 * Creates a channel named fresh(`extra.name` or 'chan') as `creator` through POST /users/me/subscriptions
 * (with the other `extra` parameters), then subscribes `subscribers` directly in the database.
 */
export async function createChannel(env: TestServer, creator: Person, extra: Record<string, unknown> = {}, subscribers: Person[] = []): Promise<{ id: number; name: string }> {
  const { name: label = 'chan', ...rest } = extra;
  const name = fresh(label as string);
  const { error } = await env.client(creator).POST('/users/me/subscriptions', { body: { subscriptions: [{ name }], ...rest } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
  const row = await env.running.deps.db.channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
  for (const p of subscribers) await subscribeDirectly(env, env.users[p].id, row.id);
  return { id: row.id, name };
}

/** A channel of the file (see createChannel), created by a beforeAll hook: read its id and name in hooks and tests. */
export function useChannel(env: TestServer, creator: Person, extra: Record<string, unknown> = {}, subscribers: Person[] = []): { id: number; name: string } {
  const channel = { id: 0, name: '' };
  beforeAll(async () => {
    Object.assign(channel, await createChannel(env, creator, extra, subscribers));
  });
  return channel;
}

/** Makes (or keeps) the user subscribed to the channel, active or not, in the database. */
export async function subscribeDirectly(env: TestServer, userId: number, channelId: number, active = true): Promise<void> {
  await env.running.deps.db.subscription.upsert({ where: { userId_channelId: { userId, channelId } }, create: { userId, channelId, active }, update: { active } });
}

/** The ids of the channel's active subscribers, ascending. */
export async function activeSubscribers(env: TestServer, channelId: number): Promise<number[]> {
  const rows = await env.running.deps.db.subscription.findMany({ where: { channelId, active: true }, orderBy: { userId: 'asc' } });
  return rows.map((r) => r.userId);
}

export interface ChannelTestContext {
  env: TestServer;
  /** System-group ids by name (filled in before the tests run). */
  sys: SystemGroupIds;
  /** Active users of the organization (the bootstrap owner included), as of the start of the file (filled in before the tests run). */
  roles: UserRole[];
}

/** The server and lookups every channel test file starts from (see useTestServer: read them in hooks and tests). */
export function useChannelTestServer(): ChannelTestContext {
  const env = useTestServer();
  const context: ChannelTestContext = { env, sys: {} as SystemGroupIds, roles: [] };
  beforeAll(async () => {
    Object.assign(context.sys, await systemGroupIds(env));
    context.roles.push(...(await activeUsers(env, env.realmId)));
  });
  return context;
}
