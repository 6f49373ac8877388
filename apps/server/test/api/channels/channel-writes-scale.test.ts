// Scale: channel writes whose audience is "everyone who can see a public channel" cost the same
// statements, and send the same parameters to PostgreSQL, whatever the size of the organization. We
// count SQL statements per request (never time) before and after the organization grows by 3,000
// users: PATCH /streams/{id} (description) and subscribing one user to one public channel. Events for
// a public channel's whole audience are resolved in SQL, and stored realm-wide when that audience is
// every active user (no unsubscribed guest), with the recipients the rules give.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, nonGuestIds } from '../../helpers/people.ts';
import { withRealm } from '../../helpers/realm.ts';
import { systemGroupIds } from '../../helpers/groups.ts';

const BULK_USERS = 3000;
/**
 * Upper bounds of the statements Prisma reports per request (COMMIT included, BEGIN not reported):
 * PATCH reads the caller's groups, locks and reads the channel, then writes the row and its events in
 * one statement; subscribing share-locks and reads the channel, writes the subscription (reading what
 * the events show), then stores the events.
 */
const MAX_PATCH_STATEMENTS = 4;
const MAX_SUBSCRIBE_STATEMENTS = 4;

const env = useTestServer({ emitQueryEvents: true });
let statements: Array<{ query: string; params: string }> | null = null;

interface Measured {
  status: number;
  count: number;
  /** Characters of parameters sent: grows with any id list built in Node. */
  paramChars: number;
  queries: string[];
}

const uid = (person: Person) => env.users[person].id;
let patchChannel: { id: number; name: string };
/** Channels created by iago that cordelia subscribes to, one per measurement. */
const subscribeChannels: Array<{ id: number; name: string }> = [];
const small: Record<string, Measured> = {};
const big: Record<string, Measured> = {};

beforeAll(async () => {
  env.running.deps.db.$on('query' as never, ((e: { query: string; params: string }) => statements?.push({ query: e.query, params: e.params })) as never);
  patchChannel = await createChannel(env, 'iago', { name: 'scale patch' });
  for (let i = 0; i < 4; i++) subscribeChannels.push(await createChannel(env, 'iago', { name: 'scale subscribe' }));
  await measureAll(small, 0);
  await insertBulkUsers();
  await measureAll(big, 2);
}, 120_000);

async function measure(request: () => Promise<{ response: Response }>): Promise<Measured> {
  // Every caller's credentials cached first (unmeasured), once every invalidation committed before has
  // reached this process (the barrier): one arriving after the warm-up would empty the cache again.
  await env.running.deps.listener.barrier();
  for (const person of ['iago', 'cordelia'] as const) await env.client(person).GET('/users/me');
  statements = [];
  const { response } = await request();
  await env.running.deps.events.flush();
  const seen = statements;
  statements = null;
  return { status: response.status, count: seen.length, paramChars: seen.reduce((n, s) => n + s.params.length, 0), queries: seen.map((s) => s.query) };
}

let edits = 0;
async function measureAll(into: Record<string, Measured>, firstChannel: number): Promise<void> {
  // Two of each: the second shows the steady state (nothing cached by the first changes the count).
  for (let i = 0; i < 2; i++) {
    into[`patch${i}`] = await measure(() =>
      env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: patchChannel.id } }, body: { description: `scale ${++edits} ${'x'.repeat(edits % 2)}` } }),
    );
    into[`subscribe${i}`] = await measure(() =>
      env.client('cordelia').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: subscribeChannels[firstChannel + i]!.name }] } }),
    );
  }
}

/** Members (role 400, in role:members and role:fullmembers), inserted directly in the database. */
async function insertBulkUsers(): Promise<void> {
  const db = env.running.deps.db;
  const sys = await systemGroupIds(env);
  const tag = randomBytes(4).toString('hex');
  await db.user.createMany({
    data: Array.from({ length: BULK_USERS }, (_, i) => {
      const email = `bulk-${tag}-${i}@parley.test`;
      return { realmId: env.realmId, email, deliveryEmail: email, fullName: `Bulk User ${i}`, role: 400 };
    }),
  });
  const users = (await db.user.findMany({ where: { deliveryEmail: { startsWith: `bulk-${tag}-` } }, select: { id: true } })).map((u) => u.id);
  await db.userGroupMember.createMany({ data: users.map((userId) => ({ groupId: sys['role:fullmembers'], userId })) });
}

describe('channel writes at scale (statement counts, not times)', () => {
  it('the measured requests succeeded', () => {
    if (process.env.SHOW_SQL) console.log(JSON.stringify({ patch: big.patch1!.queries, subscribe: big.subscribe1!.queries }, null, 1));
    for (const m of [small, big]) for (const [name, r] of Object.entries(m)) expect(r.status, name).toBe(200);
  });

  it('PATCH /streams/{id} costs the same few statements in a small and a large organization', () => {
    expect(big.patch1!.count, big.patch1!.queries.join('\n')).toBe(small.patch1!.count);
    expect(small.patch1!.count, small.patch1!.queries.join('\n')).toBeLessThanOrEqual(MAX_PATCH_STATEMENTS);
  });

  it('subscribing one user to one public channel costs the same few statements in a small and a large organization', () => {
    expect(big.subscribe1!.count, big.subscribe1!.queries.join('\n')).toBe(small.subscribe1!.count);
    expect(small.subscribe1!.count, small.subscribe1!.queries.join('\n')).toBeLessThanOrEqual(MAX_SUBSCRIBE_STATEMENTS);
  });

  it('no list of the organization’s users travels from Node to PostgreSQL', () => {
    // 3,000 more users would add at least 12,000 characters to a listed audience.
    expect(big.patch1!.paramChars).toBeLessThan(small.patch1!.paramChars + 200);
    expect(big.subscribe1!.paramChars).toBeLessThan(small.subscribe1!.paramChars + 200);
  });

  it('the audience of the events is still everyone who can see the channel', async () => {
    const roles = await activeUsers(env, env.realmId);
    expect(roles.length).toBeGreaterThan(BULK_USERS);
    const mark = await markEvents(env);
    await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: patchChannel.id } }, body: { description: 'audience' } });
    const [update] = await eventsSince(env, mark);
    expect(update!.payload).toMatchObject({ type: 'stream', op: 'update', property: 'description', value: 'audience' });
    // Guests (not subscribed) excluded: listed, not realm-wide.
    expect(update!.userIds).toEqual(nonGuestIds(roles));
  });
});

describe('realm-wide events for public channels', () => {
  const rowsSince = (mark: bigint) => env.running.deps.db.event.findMany({ where: { id: { gt: mark } }, orderBy: { id: 'asc' } });

  it('stores a public channel’s event realm-wide when every guest is subscribed, listed otherwise', async () => {
    const roles = await activeUsers(env, env.realmId);
    const guests = roles.filter((u) => u.role === 600).map((u) => u.id);
    expect(guests.length).toBeGreaterThan(0);
    const c = await createChannel(env, 'iago', { name: 'all guests' });
    for (const id of guests.slice(1)) await subscribeDirectly(env, id, c.id);

    // One guest left out: a list of everyone else.
    let mark = await markEvents(env);
    await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: c.id } }, body: { description: 'one guest out' } });
    let rows = await rowsSince(mark);
    expect(rows.map((r) => r.realmWide)).toEqual([false]);
    expect([...rows[0]!.userIds].sort((a, b) => a - b)).toEqual(roles.map((u) => u.id).filter((id) => id !== guests[0]));

    // Every guest subscribed: the audience is every active user, stored realm-wide.
    await subscribeDirectly(env, guests[0]!, c.id);
    mark = await markEvents(env);
    await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: c.id } }, body: { description: 'everyone' } });
    rows = await rowsSince(mark);
    expect(rows.map((r) => [r.realmWide, r.userIds])).toEqual([[true, []]]);
    expect((await eventsSince(env, mark))[0]!.userIds).toEqual(roles.map((u) => u.id));
  });

  it('stores a web-public channel’s events realm-wide', async () => {
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      const c = await createChannel(env, 'desdemona', { name: 'web public', is_web_public: true });
      const mark = await markEvents(env);
      await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: c.id } }, body: { description: 'for the web' } });
      const rows = await rowsSince(mark);
      expect(rows.map((r) => [r.realmWide, r.userIds, (r.payload as { property?: string }).property])).toEqual([[true, [], 'description']]);
    });
  });

  it('lists a peer_add’s recipients (everyone who can see the channel but the new subscriber)', async () => {
    const roles = await activeUsers(env, env.realmId);
    const c = await createChannel(env, 'iago', { name: 'peer add' });
    const mark = await markEvents(env);
    await env.client('cordelia').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: c.name }] } });
    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}`)).toEqual(['subscription/add', 'subscription/peer_add']);
    expect(events[1]!.userIds).toEqual(nonGuestIds(roles).filter((id) => id !== uid('cordelia')));
  });
});
