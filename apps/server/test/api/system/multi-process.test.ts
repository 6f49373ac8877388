// Several server processes sharing one database behave as one server: a secondProcess.running app (its own Prisma
// client and connection pool, as a secondProcess.running process would have) on the same database sees the same
// state, the same rate-limit budget, and concurrent compare-and-swap updates across the two let
// exactly one win.
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { type RunningServer } from '../../../src/server.ts';
import { doRotateApiKey } from '../../../src/actions/users.ts';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { pollEvents, registerQueue, sendMessage, type RegisterBody } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';

const rateLimit = { points: 30, durationSeconds: 60 };
const env = useTestServer({ rateLimit });
const secondProcess = useSecondProcess(env, { rateLimit });

const clientOn = (server: { url: string }, person: 'desdemona' | 'iago' | 'hamlet' | 'othello' | 'cordelia'): ParleyClient =>
  createParleyClient({ site: server.url, email: env.users[person].email, apiKey: env.users[person].apiKey });

describe('two server processes on one database', () => {
  it('see each other’s writes at once', async () => {
    const created = await clientOn(env, 'iago').POST('/user_groups/create', { body: { name: 'shared', description: 'from the first', members: [] } });
    expect(created.response.status).toBe(200);
    const groups = await clientOn(secondProcess.running, 'iago').GET('/user_groups');
    expect(groups.data!.user_groups.find((g) => g.id === created.data!.group_id)).toMatchObject({ name: 'shared', description: 'from the first' });
  });

  it('let exactly one of concurrent compare-and-swap updates win, across processes', async () => {
    const group = (await clientOn(env, 'iago').POST('/user_groups/create', { body: { name: 'cas-across', description: '', members: [] } })).data!.group_id;
    const current = (await clientOn(env, 'iago').GET('/user_groups')).data!.user_groups.find((g) => g.id === group)!.can_mention_group;
    const candidates = [env.users.hamlet.id, env.users.othello.id, env.users.cordelia.id, env.users.iago.id];
    const results = await Promise.all(
      candidates.map((member, i) =>
        clientOn(i % 2 === 0 ? env : secondProcess.running, 'iago').PATCH('/user_groups/{user_group_id}', {
          params: { path: { user_group_id: group } },
          body: { can_mention_group: { new: { direct_members: [member], direct_subgroups: [] }, old: current } },
        }),
      ),
    );
    const statuses = results.map((r) => r.response.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    for (const r of results.filter((r) => r.response.status !== 200)) {
      expect(r.error).toMatchObject({ msg: "'old' value does not match the expected value." });
    }
  });

  it('share one rate-limit budget per user, within one request per process', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      statuses.push((await (i % 2 === 0 ? clientOn(env, 'othello') : clientOn(secondProcess.running, 'othello')).GET('/users/me')).response.status);
      // Sequential traffic whose writes behind have landed (on a loaded machine a write can still be
      // under way when the next request comes, and the process then knows less of the other's use).
      await Promise.all([env.running.deps.rateLimiter?.flush(), secondProcess.running.deps.rateLimiter?.flush()]);
    }
    const accepted = statuses.filter((s) => s === 200).length;
    // Each process decides from the shared count it last learned: for sequential traffic, the budget
    // of 30 is overshot by at most one request per process.
    expect(accepted).toBeGreaterThanOrEqual(30);
    expect(accepted).toBeLessThanOrEqual(32);
    expect(statuses.slice(32)).toEqual(Array(8).fill(429));
    // without the other process, one process alone would have accepted 30 of its own 20 requests
    expect(statuses.filter((s, i) => s === 429 && i % 2 === 0).length).toBeGreaterThan(0);
    expect(statuses.filter((s, i) => s === 429 && i % 2 === 1).length).toBeGreaterThan(0);
  });
});

describe('credentials cached in each process take every change at once', () => {
  /** A fresh member whose key both processes have cached. */
  async function cachedEverywhere() {
    const email = `cached-${Date.now()}-${Math.random().toString(36).slice(2)}@parley.test`;
    const created = await clientOn(env, 'iago').POST('/users', { body: { email, password: 'a-Long-enough-passw0rd!', full_name: 'Cached' } });
    const userId = created.data!.user_id;
    const key = (await env.raw('/fetch_api_key', {
      method: 'POST',
      body: new URLSearchParams({ username: email, password: 'a-Long-enough-passw0rd!' }).toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    })).body.api_key as string;
    const on = (server: { url: string }) => createParleyClient({ site: server.url, email, apiKey: key });
    for (const server of [env, secondProcess.running]) expect((await on(server).GET('/users/me')).response.status).toBe(200);
    return { userId, email, key, on };
  }

  it('a deactivation on one process refuses the key on the other at once', async () => {
    const user = await cachedEverywhere();
    expect((await user.on(env).DELETE('/users/me')).response.status).toBe(200);
    const res = await user.on(secondProcess.running).GET('/users/me');
    expect(res.response.status).toBe(401);
    expect(res.error).toMatchObject({ msg: 'Account is deactivated' });
  });

  it('a role change on one process is what the other sees next', async () => {
    const user = await cachedEverywhere();
    expect((await clientOn(secondProcess.running, 'desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: user.userId } }, body: { role: 600 } })).response.status).toBe(200);
    expect((await user.on(env).GET('/users/me')).data?.role).toBe(600);
    expect((await user.on(secondProcess.running).GET('/users/me')).data?.role).toBe(600);
  });

  it('a key rotated in the database (any writer) stops working everywhere, and the new key works', async () => {
    const user = await cachedEverywhere();
    const newKey = await doRotateApiKey(secondProcess.running.deps, (await secondProcess.running.deps.db.user.findUniqueOrThrow({ where: { id: user.userId } })));
    await Promise.all([env.running.deps.listener.barrier(), secondProcess.running.deps.listener.barrier()]);
    for (const server of [env, secondProcess.running]) {
      expect((await user.on(server).GET('/users/me')).response.status).toBe(401);
      const fresh = createParleyClient({ site: server.url, email: user.email, apiKey: newKey });
      expect((await fresh.GET('/users/me')).response.status).toBe(200);
    }
  });

  it('an organization deactivated by plain SQL is refused by both processes', async () => {
    const user = await cachedEverywhere();
    // Written behind Parley's back: each process follows once the database's notification arrives.
    await env.running.deps.db.$executeRawUnsafe('UPDATE realm SET deactivated = true');
    await Promise.all([env.running.deps.listener.barrier(), secondProcess.running.deps.listener.barrier()]);
    try {
      for (const server of [env, secondProcess.running]) {
        const res = await user.on(server).GET('/users/me');
        expect(res.response.status).toBe(401);
        expect(res.error).toMatchObject({ msg: 'This organization has been deactivated' });
      }
    } finally {
      await env.running.deps.db.$executeRawUnsafe('UPDATE realm SET deactivated = false');
      await Promise.all([env.running.deps.listener.barrier(), secondProcess.running.deps.listener.barrier()]);
    }
  });
});

describe('the user list cached in each process follows every change', () => {
  const listOn = async (server: { url: string }, options: { include_custom_profile_fields?: boolean } = {}) =>
    (await clientOn(server, 'hamlet').GET('/users', { params: { query: { client_gravatar: false, ...options } } })).data!.members;

  it('names, new users, e-mail visibility and profile values changed on one process show on the other', async () => {
    // Both processes have built their copy.
    await listOn(env);
    await listOn(secondProcess.running);
    await listOn(secondProcess.running, { include_custom_profile_fields: true });

    const renamed = `Cordelia ${Date.now()}`;
    expect((await clientOn(env, 'iago').PATCH('/users/{user_id}', { params: { path: { user_id: env.users.cordelia.id } }, body: { full_name: renamed } })).response.status).toBe(200);
    expect((await listOn(secondProcess.running)).find((m) => m.user_id === env.users.cordelia.id)?.full_name).toBe(renamed);

    const email = `listed-${Date.now()}@parley.test`;
    const created = await clientOn(env, 'iago').POST('/users', { body: { email, password: 'a-Long-enough-passw0rd!', full_name: 'Listed' } });
    expect((await listOn(secondProcess.running)).some((m) => m.user_id === created.data!.user_id)).toBe(true);

    // Settings and profile values written behind Parley's back (any writer) are followed too.
    const { db } = env.running.deps;
    await db.userSettings.update({ where: { userId: env.users.othello.id }, data: { emailAddressVisibility: 4 } });
    const field = await db.customProfileField.create({ data: { realmId: (await db.realm.findFirstOrThrow()).id, name: `f${Date.now()}`, hint: '', fieldType: 1, order: 99 } });
    await db.customProfileFieldValue.create({ data: { userId: env.users.othello.id, fieldId: field.id, value: 'Sailor', renderedValue: '<p>Sailor</p>' } });
    await Promise.all([env.running.deps.listener.barrier(), secondProcess.running.deps.listener.barrier()]);
    const othello = (await listOn(secondProcess.running, { include_custom_profile_fields: true })).find((m) => m.user_id === env.users.othello.id)!;
    expect(othello.delivery_email).toBeNull();
    expect(othello.profile_data?.[String(field.id)]).toEqual({ value: 'Sailor', rendered_value: '<p>Sailor</p>' });
  });
});

describe('events across two server processes', () => {
  const registerOn = (server: { url: string }, person: 'hamlet' | 'cordelia', body: RegisterBody) => registerQueue(clientOn(server, person), body);
  /** Waits until `server` holds one more parked long-poll than `before`. */
  const parkedOn = (server: RunningServer, before: number) => waitFor(async () => server.deps.delivery.parked > before, { what: 'the parked poll' });

  it('a long-poll parked on one process receives a message sent through the other, promptly', async () => {
    const general = (await clientOn(env, 'iago').GET('/streams', {})).data!.streams[0]!;
    await clientOn(env, 'iago').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: general.name }], principals: [env.users.hamlet.id] } });
    const q = await registerOn(env, 'hamlet', { event_types: ['message'] });
    const before = env.running.deps.delivery.parked;
    const parked = pollEvents(clientOn(env, 'hamlet'), q, { dontBlock: false });
    await parkedOn(env.running, before);
    const sent = await sendMessage(clientOn(secondProcess.running, 'iago'), { type: 'stream', to: general.name, topic: 'across', content: 'from B' });
    // Woken by the other process's notification: a poll nothing woke would answer a heartbeat (after 45 s).
    const events = await parked;
    expect(events.map((e) => e.type)).toEqual(['message']);
    expect(events[0].message.id).toBe(sent);
  });

  it('a queue registered on one process is polled on the other, with typing in between', async () => {
    const q = await registerOn(env, 'cordelia', { event_types: ['typing'] });
    // Poll once on B so that B follows the organization, then type through A.
    expect(await pollEvents(clientOn(secondProcess.running, 'cordelia'), q)).toEqual([]);
    const before = secondProcess.running.deps.delivery.parked;
    const parked = pollEvents(clientOn(secondProcess.running, 'cordelia'), q, { dontBlock: false });
    await parkedOn(secondProcess.running, before);
    await clientOn(env, 'hamlet').POST('/typing', { body: { op: 'start', to: [env.users.cordelia.id] } });
    expect((await parked)[0]).toMatchObject({ type: 'typing', op: 'start', sender: { user_id: env.users.hamlet.id } });
  });
});
