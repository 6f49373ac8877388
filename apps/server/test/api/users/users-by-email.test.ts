// GET and PATCH /users/{user_id} with an address for the id (Zulip's get_user_by_email, feature level
// 302, and PATCH /users/{email}, feature level 313): a user named by the address every user sees (`user{id}@{host}` when hidden), or by their
// real address only where the requester's role may see it under the user's email_address_visibility,
// so that a hidden address can never be confirmed. And the routing that tells an address from
// `/users/me` and an id.
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createAccount, deactivateUser, uniqueEmail, type Account } from '../../helpers/people.ts';

const env = useTestServer();
const db = () => env.running.deps.db;
let host: string;

/** Targets by email_address_visibility: 1 everyone, 2 members, 3 admins, 4 nobody, 5 moderators. */
const VISIBILITIES = [1, 2, 3, 4, 5] as const;
const targets = new Map<number, Account>();
let bot: { id: number; email: string };

/** Who may name a target by its real address, by visibility (Zulip's ROLE_TO_ACCESSIBLE_EMAIL_ADDRESS_VISIBILITY_IDS). */
const MAY_NAME: Record<number, Person[]> = {
  1: ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'],
  2: ['desdemona', 'iago', 'shiva', 'hamlet'],
  3: ['desdemona', 'iago'],
  4: [],
  5: ['desdemona', 'iago', 'shiva'],
};
const ROLES: Person[] = ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'];

beforeAll(async () => {
  host = new URL(env.running.deps.config.publicUrl).hostname;
  for (const visibility of VISIBILITIES) {
    const account = await createAccount(env, { label: `by-email-${visibility}`, fullName: `Lookup Target ${visibility}` });
    const { error } = await account.client.PATCH('/settings', { body: { email_address_visibility: visibility } });
    if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
    targets.set(visibility, account);
  }
  const email = uniqueEmail('lookup-bot');
  const created = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Lookup Bot', isBot: true, botType: 1, botOwnerId: env.users.hamlet.id, settings: { create: { emailAddressVisibility: 4 } } },
  });
  bot = { id: created.id, email };
});

const lookup = (as: Person, email: string, query: { client_gravatar?: boolean; include_custom_profile_fields?: boolean } = {}) =>
  env.client(as).GET('/users/{user_id}', { params: { path: { user_id: email }, query } });

describe('GET /users/{user_id} with an e-mail address', () => {
  it('names every user by the address everyone sees (the fake one when hidden), for every role', async () => {
    for (const visibility of VISIBILITIES) {
      const target = targets.get(visibility)!;
      const shown = visibility === 1 ? target.email : `user${target.id}@${host}`;
      for (const as of ROLES) {
        const { data, error } = await lookup(as, shown);
        expect(error, `${as} → ${shown}`).toBeUndefined();
        expect(data!.user).toMatchObject({ user_id: target.id, email: shown, full_name: target.fullName });
      }
    }
  });

  it("names a user by their real address only where the requester's role may see it, never leaking it otherwise", async () => {
    for (const visibility of VISIBILITIES) {
      const target = targets.get(visibility)!;
      for (const as of ROLES) {
        const res = await lookup(as, target.email);
        if (MAY_NAME[visibility]!.includes(as)) {
          expect(res.error, `${as} → visibility ${visibility}`).toBeUndefined();
          expect(res.data!.user).toMatchObject({ user_id: target.id, delivery_email: target.email });
        } else {
          expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
          expect(JSON.stringify(res.error)).not.toContain(target.email);
          // The same answer, word for word, as for an address nobody has.
          expect(res.error).toEqual((await lookup(as, `unknown-${visibility}@parley.test`)).error);
        }
      }
    }
  });

  it('compares real addresses case-insensitively and stripped; the owner of a hidden address cannot use it either', async () => {
    const everyone = targets.get(1)!;
    const upper = ` ${everyone.email.toUpperCase()} `;
    const { data } = await env.client('polonius').GET('/users/{user_id}', { params: { path: { user_id: upper } } });
    expect(data!.user.user_id).toBe(everyone.id);

    const nobody = targets.get(4)!;
    expectJsonError(await nobody.client.GET('/users/{user_id}', { params: { path: { user_id: nobody.email } } }), 400, 'No such user', 'BAD_REQUEST');
    const own = await nobody.client.GET('/users/{user_id}', { params: { path: { user_id: `user${nobody.id}@${host}` } } });
    expect(own.data!.user).toMatchObject({ user_id: nobody.id, delivery_email: nobody.email });
  });

  it('finds bots by their address (public) and deactivated users; unknown and malformed fake addresses are no such user', async () => {
    for (const as of ROLES) {
      const { data } = await lookup(as, bot.email);
      expect(data!.user).toMatchObject({ user_id: bot.id, is_bot: true, bot_owner_id: env.users.hamlet.id });
    }
    const gone = await createAccount(env, { label: 'by-email-gone', fullName: 'Gone Lookup' });
    await deactivateUser(env, gone.id);
    expect((await lookup('hamlet', gone.email)).data!.user).toMatchObject({ user_id: gone.id, is_active: false });

    // LIKE wildcards are plain characters (no address can be found by pattern).
    const everyone = targets.get(1)!.email;
    for (const pattern of [`_${everyone.slice(1)}`, `%${everyone.slice(everyone.indexOf('@'))}`, '%']) {
      expectJsonError(await lookup('iago', pattern), 400, 'No such user', 'BAD_REQUEST');
    }
    for (const address of ['nobody@parley.test', `user999999@${host}`, `user99999999999@${host}`, `user${env.users.hamlet.id}@elsewhere.test`, `User${env.users.hamlet.id}@${host}`, 'not-an-address']) {
      expectJsonError(await lookup('iago', address), 400, 'No such user', 'BAD_REQUEST');
    }
  });

  it('takes client_gravatar and include_custom_profile_fields as GET /users/{user_id} does, and checks their types', async () => {
    const target = targets.get(1)!;
    expect((await lookup('hamlet', target.email)).data!.user.avatar_url).toBeNull();
    expect((await lookup('hamlet', target.email, { client_gravatar: false })).data!.user.avatar_url).toMatch(/^https:\/\/secure\.gravatar\.com\/avatar\//);
    expect((await lookup('hamlet', target.email, { include_custom_profile_fields: true })).data!.user.profile_data).toEqual({});
    const res = await env.raw(`/users/${encodeURIComponent(target.email)}?client_gravatar=1`, { as: 'hamlet' });
    expectJsonError(res, 400, 'client_gravatar is not a boolean', 'BAD_REQUEST');
  });

  it('is routed apart from /users/me and /users/{user_id}: raw or escaped @, the Python double slash, 405 for other methods', async () => {
    const target = targets.get(1)!;
    for (const path of [`/users/${target.email}`, `/users/${encodeURIComponent(target.email)}`, `//users/${target.email}`]) {
      const res = await env.raw(path, { as: 'hamlet' });
      expect(res.status, path).toBe(200);
      expect(res.body.user.user_id).toBe(target.id);
    }
    expect((await env.raw('/users/me', { as: 'hamlet' })).body.user_id).toBe(env.users.hamlet.id);
    expect((await env.raw(`/users/${env.users.othello.id}`, { as: 'hamlet' })).body.user.user_id).toBe(env.users.othello.id);
    // Digits are ids: an id that does not exist is not looked up as an address.
    expectJsonError(await env.raw('/users/999999', { as: 'hamlet' }), 400, 'No such user', 'BAD_REQUEST');

    const deleted = await env.raw(`/users/${target.email}`, { method: 'DELETE', as: 'iago' });
    expect(deleted.status).toBe(405);
    expect(deleted.body).toMatchObject({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'PATCH'] });
    expect((await db().user.findUniqueOrThrow({ where: { id: target.id } })).isActive).toBe(true);
    expectJsonError(await env.raw('/users/%E0%A4%A', { as: 'hamlet' }), 404, 'Not Found');
    // Unauthenticated: 401 before anything is looked up.
    const anonymous = await env.raw(`/users/${target.email}`, { headers: { Authorization: basicAuth(target.email, 'x'.repeat(32)) } });
    expect(anonymous.status).toBe(401);
  });
});

describe('PATCH /users/{user_id} with an e-mail address', () => {
  it('changes the user an address names, with the checks and events of PATCH /users/{user_id}', async () => {
    const target = targets.get(2)!;
    const rename = (as: Person, email: string, full_name: string) => env.client(as).PATCH('/users/{user_id}', { params: { path: { user_id: email } }, body: { full_name } });
    const mark = await env.running.deps.db.event.findFirst({ orderBy: { id: 'desc' } });
    expect((await rename('iago', target.email, 'Renamed By Address')).error).toBeUndefined();
    expect((await db().user.findUniqueOrThrow({ where: { id: target.id } })).fullName).toBe('Renamed By Address');
    const events = await db().event.findMany({ where: { id: { gt: mark?.id ?? 0n } }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.payload)).toContainEqual({ type: 'realm_user', op: 'update', person: { user_id: target.id, full_name: 'Renamed By Address' } });
    // The fake address works for everyone; a member may name the user but not change them.
    expect((await rename('iago', `user${target.id}@${host}`, 'Renamed Again')).error).toBeUndefined();
    expectJsonError(await rename('hamlet', target.email, 'Hijacked'), 400, 'Insufficient permission', 'BAD_REQUEST');
    // An address hidden from the requester names nobody, even for an administrator.
    const nobody = targets.get(4)!;
    expectJsonError(await rename('iago', nobody.email, 'Found You'), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await rename('iago', 'nobody@parley.test', 'No One'), 400, 'No such user', 'BAD_REQUEST');
    expect((await db().user.findUniqueOrThrow({ where: { id: nobody.id } })).fullName).toBe(nobody.fullName);
    // Role changes keep their own rules.
    const promote = await env.client('iago').PATCH('/users/{user_id}', { params: { path: { user_id: target.email } }, body: { role: 100 } });
    expectJsonError(promote, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  });
});
