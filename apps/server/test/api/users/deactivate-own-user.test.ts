// DELETE /users/me (seed op 20, notes §20): a user deactivates their own account, except the only
// owner and the only user, who get CANNOT_DEACTIVATE_LAST_USER with `entity` and `is_last_owner`.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { createAccount, uniqueEmail, type Role } from '../../helpers/people.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { zulipJs as zulipInit } from '../../helpers/zulip-js.ts';

const env = useTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

const leavingAccount = (role: Role = 400) => createAccount(env, { label: 'self', fullName: 'Leaving User', role });

async function isActive(userId: number): Promise<boolean> {
  const { data, error } = await env.client('iago').GET('/users/{user_id}', { params: { path: { user_id: userId } } });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return data.user.is_active;
}

/** Deactivates (directly in the database) the active accounts matching `where`; returns a function that restores them. */
async function deactivateDirectly(where: Record<string, unknown>): Promise<() => Promise<void>> {
  const { db, listener } = env.running.deps;
  const ids = (await db.user.findMany({ where: { realmId: env.realmId, isActive: true, ...where }, select: { id: true } })).map((u) => u.id);
  await db.user.updateMany({ where: { id: { in: ids } }, data: { isActive: false } });
  await listener.barrier(); // written behind Parley's back: let cached identities follow
  return async () => {
    await db.user.updateMany({ where: { id: { in: ids } }, data: { isActive: true } });
    await listener.barrier();
  };
}

/** Deactivates (directly in the database) every active account but `keep`; returns a function that restores them. */
const leaveOnly = (keep: number[]) => deactivateDirectly({ id: { notIn: keep } });

/** Demotes (through the API, as desdemona) every other active human owner; returns a function that restores them. */
async function makeDesdemonaOnlyOwner(): Promise<() => Promise<void>> {
  const { data } = await env.client('desdemona').GET('/users', { params: { query: { client_gravatar: false } } });
  const demoted: number[] = [];
  for (const m of data!.members) {
    if (m.is_active && !m.is_bot && m.role === 100 && m.user_id !== env.users.desdemona.id) {
      const res = await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: m.user_id } }, body: { role: 400 } });
      if (res.error) throw new Error(`setup: demotion failed: ${JSON.stringify(res.error)}`);
      demoted.push(m.user_id);
    }
  }
  return async () => {
    for (const id of demoted) {
      await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: id } }, body: { role: 100 } });
    }
  };
}

/** Deactivates (directly in the database) every other active human owner; returns a function that restores them. */
const leaveOnlyOwners = (keep: number[]) => deactivateDirectly({ isBot: false, role: 100, id: { notIn: keep } });

interface RawResult {
  status: number;
  contentType: string | null;
  body: any;
}

/** DELETE /users/me with `auth`, read as raw HTTP (status, Content-Type, parsed body). */
async function deleteMe(auth: string): Promise<RawResult> {
  const res = await fetch(`${env.url}/api/v1/users/me`, { method: 'DELETE', headers: { Authorization: auth } });
  return { status: res.status, contentType: res.headers.get('content-type'), body: await res.json() };
}

function expectLastUserError(res: { status: number; body: any }, expected: { msg: string; entity: string; is_last_owner: boolean }) {
  expect(res.status).toBe(400);
  expect(res.body).toEqual({
    result: 'error',
    code: 'CANNOT_DEACTIVATE_LAST_USER',
    msg: expected.msg,
    entity: expected.entity,
    is_last_owner: expected.is_last_owner,
  });
}

// ---------------------------------------------------------------------------------------------

describe('DELETE /users/me', () => {
  it('deactivates a member; the key is then refused with 401 Account is deactivated', async () => {
    const member = await leavingAccount();
    const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: member.auth } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await isActive(member.id)).toBe(false);

    for (const path of ['/users/me', '/users']) {
      const after = await env.raw(path, { headers: { Authorization: member.auth } });
      expect(after.status, path).toBe(401);
      expect(after.body.result).toBe('error');
      expect(after.body.msg).toBe('Account is deactivated');
      expect(after.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
    }
    const again = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: member.auth } });
    expect(again.status).toBe(401);
    expect(again.body.msg).toBe('Account is deactivated');
  });

  it('works as the Python zulip client sends it: no body, no Content-Type', async () => {
    const member = await leavingAccount();
    const res = await fetch(`${env.url}/api/v1/users/me`, { method: 'DELETE', headers: { Authorization: member.auth } });
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'success', msg: '' });
    expect(await isActive(member.id)).toBe(false);
  });

  it('works through the real zulip-js client', async () => {
    const member = await leavingAccount();
    const client = await zulipInit({ username: member.email, apiKey: member.key, realm: env.url });
    const res = await client.callEndpoint('/users/me', 'DELETE');
    expect(res).toEqual({ result: 'success', msg: '' });
    expect(await isActive(member.id)).toBe(false);
  });

  it('lists parameters it was sent in ignored_parameters_unsupported', async () => {
    const member = await leavingAccount();
    const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: member.auth }, body: new URLSearchParams({ foo: 'bar' }) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['foo'] });
    expect(await isActive(member.id)).toBe(false);
  });

  it.each([
    ['an administrator', 200],
    ['a moderator', 300],
    ['a guest', 600],
    ['an owner while another owner remains', 100],
  ] as const)('deactivates %s', async (_label, role) => {
    const account = await leavingAccount(role);
    const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: account.auth } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await isActive(account.id)).toBe(false);
  });

  it('refuses the only organization owner with CANNOT_DEACTIVATE_LAST_USER (is_last_owner true)', async () => {
    const restore = await makeDesdemonaOnlyOwner();
    try {
      const res = await env.raw('/users/me', { method: 'DELETE', as: 'desdemona' });
      expectLastUserError(res, { msg: 'Cannot deactivate the only organization owner.', entity: 'organization owner', is_last_owner: true });
      expect(await isActive(env.users.desdemona.id)).toBe(true);
      expect((await env.raw('/users/me', { as: 'desdemona' })).status).toBe(200);
    } finally {
      await restore();
    }
  });

  it('counts only human owners: an owner-role bot does not save the last human owner', async () => {
    const restore = await makeDesdemonaOnlyOwner();
    const email = uniqueEmail('owner-bot');
    const bot = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Owner Bot', role: 100, isBot: true, botType: 1, botOwnerId: env.users.desdemona.id, settings: { create: {} } },
    });
    try {
      const res = await env.raw('/users/me', { method: 'DELETE', as: 'desdemona' });
      expectLastUserError(res, { msg: 'Cannot deactivate the only organization owner.', entity: 'organization owner', is_last_owner: true });
      expect(await isActive(env.users.desdemona.id)).toBe(true);
    } finally {
      await env.running.deps.db.user.update({ where: { id: bot.id }, data: { isActive: false } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
      await restore();
    }
  });

  it('refuses the only user with CANNOT_DEACTIVATE_LAST_USER (is_last_owner false), checked before the owner rule', async () => {
    // desdemona is an owner and, once everyone else is gone, also the only user: the only-user error wins.
    const restore = await leaveOnly([env.users.desdemona.id]);
    try {
      const res = await env.raw('/users/me', { method: 'DELETE', as: 'desdemona' });
      expectLastUserError(res, { msg: 'Cannot deactivate the only user.', entity: 'user', is_last_owner: false });
      expect((await env.raw('/users/me', { as: 'desdemona' })).status).toBe(200);
    } finally {
      await restore();
    }
    expect(await isActive(env.users.desdemona.id)).toBe(true);
  });

  it('refuses the only user who is a plain member', async () => {
    const restore = await leaveOnly([env.users.hamlet.id]);
    try {
      const res = await env.raw('/users/me', { method: 'DELETE', as: 'hamlet' });
      expectLastUserError(res, { msg: 'Cannot deactivate the only user.', entity: 'user', is_last_owner: false });
      expect((await env.raw('/users/me', { as: 'hamlet' })).status).toBe(200);
    } finally {
      await restore();
    }
    expect(await isActive(env.users.hamlet.id)).toBe(true);
  });

  it('counts bots towards the users: a member with an active bot beside them may leave', async () => {
    const member = await leavingAccount();
    const email = uniqueEmail('bot');
    const bot = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Companion Bot', role: 400, isBot: true, botType: 1, botOwnerId: env.users.desdemona.id, settings: { create: {} } },
    });
    const restore = await leaveOnly([member.id, bot.id]);
    try {
      const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: member.auth } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ result: 'success', msg: '' });
    } finally {
      await restore();
      await env.running.deps.db.user.update({ where: { id: bot.id }, data: { isActive: false } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    }
    expect(await isActive(member.id)).toBe(false);
  });

  it('deactivates the bots the user owns along with the account', async () => {
    const member = await leavingAccount();
    const email = uniqueEmail('owned-bot');
    const bot = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Owned Bot', role: 400, isBot: true, botType: 1, botOwnerId: member.id, settings: { create: {} } },
    });
    expect(await isActive(bot.id)).toBe(true);
    const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: member.auth } });
    expect(res.status).toBe(200);
    expect(await isActive(member.id)).toBe(false);
    expect(await isActive(bot.id)).toBe(false);
  });

  it('needs credentials', async () => {
    const res = await env.raw('/users/me', { method: 'DELETE' });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ result: 'error', msg: 'Missing authorization header for basic auth', code: 'UNAUTHORIZED' });
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });
});

describe('DELETE /users/me under concurrency', () => {
  // Each round is a fresh account; several rounds make it likely that some requests were authenticated
  // before the winner committed (the race the action must answer cleanly).
  it.each([1, 2, 3])('eight concurrent requests with one key (round %i): exactly one 200, the others a JSON error with a code', async () => {
    const member = await leavingAccount();
    // Warm the path (authentication, validation) so that the eight requests overlap.
    expect((await env.raw('/users/me', { headers: { Authorization: member.auth } })).status).toBe(200);
    const mark = await markEvents(env);
    const results = await Promise.all(Array.from({ length: 8 }, () => deleteMe(member.auth)));

    for (const r of results) expect(r.contentType).toMatch(/^application\/json/);
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.body).toEqual({ result: 'success', msg: '' });
    // The others were authenticated before or after the winner committed; either way they get what any
    // later request with the key gets: 401 Account is deactivated.
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ result: 'error', msg: 'Account is deactivated', code: 'UNAUTHORIZED' });
    }
    expect(await isActive(member.id)).toBe(false);
    // Deactivated once: one is_active event for the account.
    const deactivations = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'realm_user' && e.payload.person?.user_id === member.id);
    expect(deactivations.map((e) => e.payload.person)).toEqual([{ user_id: member.id, is_active: false }]);
  });

  it('keeps an owner when the only two owners leave at once: one succeeds, the other is the last owner', async () => {
    const first = await leavingAccount(100);
    const second = await leavingAccount(100);
    const restore = await leaveOnlyOwners([first.id, second.id]);
    try {
      const requests = Array.from({ length: 8 }, (_, i) => deleteMe((i % 2 === 0 ? first : second).auth));
      const results = await Promise.all(requests);
      for (const r of results) {
        expect(r.contentType).toMatch(/^application\/json/);
        if (r.status !== 200) expect(typeof r.body.code).toBe('string');
      }
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      const [firstActive, secondActive] = [await isActive(first.id), await isActive(second.id)];
      expect([firstActive, secondActive].filter(Boolean)).toHaveLength(1);

      // The leaver's other requests: 401; the remaining owner's: refused as the only owner.
      const leaver = firstActive ? second : first;
      results.forEach((r, i) => {
        if (r.status === 200) return;
        if ((i % 2 === 0 ? first : second) === leaver) {
          expect(r.status).toBe(401);
          expect(r.body.msg).toBe('Account is deactivated');
        } else {
          expectLastUserError(r, { msg: 'Cannot deactivate the only organization owner.', entity: 'organization owner', is_last_owner: true });
        }
      });
      const owners = await env.running.deps.db.user.count({ where: { realmId: env.realmId, isActive: true, isBot: false, role: 100 } });
      expect(owners).toBe(1);
    } finally {
      await restore();
    }
  });
});

