// GET /users, GET /users/{user_id}, GET /users/me, POST /users, POST /users/{user_id}/reactivate and
// DELETE /users/{user_id}: the user object of §13, the query parameters, spectator access, creation,
// deactivation and reactivation by administrators — each checked by reading the state back.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { PEOPLE, TEST_PASSWORD, type Person } from '../../helpers/fixtures.ts';
import { apiKeyOf, basicAuth } from '../../helpers/auth.ts';
import { createUser, readUser, uniqueEmail, type Role } from '../../helpers/people.ts';
import { zulipJs as zulipInit } from '../../helpers/zulip-js.ts';

const env = useTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

/** The keys of a human user object without custom profile fields (§13). */
const HUMAN_KEYS = [
  'avatar_url',
  'avatar_version',
  'date_joined',
  'delivery_email',
  'email',
  'full_name',
  'is_active',
  'is_admin',
  'is_bot',
  'is_guest',
  'is_owner',
  'role',
  'timezone',
  'user_id',
].sort();

/** Zulip's ISO 8601 form with an explicit UTC offset, e.g. 2019-10-20T07:50:53.728864+00:00. */
const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}:\d{2}$/;

/** A new user ("Fresh User" unless named), with the given role. */
const newUser = (options: { name?: string; role?: Role } = {}) => createUser(env, { label: 'users', fullName: options.name ?? 'Fresh User', role: options.role });

async function listMembers(as: Person = 'hamlet') {
  const { data, error } = await env.client(as).GET('/users', { params: { query: { client_gravatar: false } } });
  if (!data) throw new Error(`GET /users failed: ${JSON.stringify(error)}`);
  return data.members;
}

async function insertBot(options: { ownerId: number; botType?: number; role?: number }) {
  const email = uniqueEmail('bot');
  const bot = await env.running.deps.db.user.create({
    data: {
      realmId: env.realmId,
      email,
      deliveryEmail: email,
      fullName: `Bot ${randomBytes(2).toString('hex')}`,
      role: options.role ?? 400,
      isBot: true,
      botType: options.botType ?? 1,
      botOwnerId: options.ownerId,
      settings: { create: {} },
    },
  });
  await env.running.deps.listener.barrier(); // written behind Parley's back: let the cached user list follow
  return bot;
}

// ---------------------------------------------------------------------------------------------

describe('GET /users', () => {
  it('lists every seeded person with the role flags of §13', async () => {
    const { data, response } = await env.client('hamlet').GET('/users', { params: { query: { client_gravatar: false } } });
    expect(response.status).toBe(200);
    expect(data?.result).toBe('success');
    expect(data?.msg).toBe('');
    const members = data!.members;
    const expectations: Record<number, { is_owner: boolean; is_admin: boolean; is_guest: boolean }> = {
      100: { is_owner: true, is_admin: true, is_guest: false },
      200: { is_owner: false, is_admin: true, is_guest: false },
      300: { is_owner: false, is_admin: false, is_guest: false },
      400: { is_owner: false, is_admin: false, is_guest: false },
      600: { is_owner: false, is_admin: false, is_guest: true },
    };
    for (const [name, person] of Object.entries(PEOPLE)) {
      const user = members.find((m) => m.user_id === env.users[name as Person].id);
      expect(user, name).toBeDefined();
      expect(user).toMatchObject({
        email: person.email,
        delivery_email: person.email,
        full_name: person.fullName,
        role: person.role,
        is_bot: false,
        is_active: true,
        ...expectations[person.role],
      });
    }
    // The organization's bootstrap owner is listed too.
    expect(members.find((m) => m.delivery_email === 'owner@parley.test')).toMatchObject({ role: 100, is_owner: true, is_admin: true });
    // No particular order is promised, but every user appears exactly once.
    expect(new Set(members.map((m) => m.user_id)).size).toBe(members.length);
  });

  it('gives humans exactly the §13 fields: no bot_type, no bot_owner_id, no profile_data unless asked', async () => {
    const members = await listMembers();
    const hamlet = members.find((m) => m.user_id === env.users.hamlet.id)!;
    expect(Object.keys(hamlet).sort()).toEqual(HUMAN_KEYS);
    for (const member of members.filter((m) => !m.is_bot)) {
      expect(member).not.toHaveProperty('bot_type');
      expect(member).not.toHaveProperty('bot_owner_id');
      expect(member).not.toHaveProperty('profile_data');
    }
    expect(typeof hamlet.avatar_version).toBe('number');
    expect(hamlet.timezone).toBe('');
  });

  it('gives date_joined in ISO 8601 with an explicit offset', async () => {
    const members = await listMembers();
    for (const member of members) {
      expect(member.date_joined).toMatch(ISO_WITH_OFFSET);
      expect(Number.isNaN(Date.parse(member.date_joined))).toBe(false);
    }
  });

  it('lists bots with bot_type and bot_owner_id', async () => {
    const bot = await insertBot({ ownerId: env.users.hamlet.id, botType: 1 });
    const members = await listMembers();
    const listed = members.find((m) => m.user_id === bot.id);
    expect(listed).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: env.users.hamlet.id, delivery_email: bot.deliveryEmail });
  });

  it('client_gravatar defaults to true: avatar_url is null for gravatar users whose address the caller may see', async () => {
    const { data } = await env.client('hamlet').GET('/users');
    const othello = data!.members.find((m) => m.user_id === env.users.othello.id)!;
    expect(othello.avatar_url).toBeNull();

    const explicit = await env.client('hamlet').GET('/users', { params: { query: { client_gravatar: true } } });
    expect(explicit.data!.members.find((m) => m.user_id === env.users.othello.id)!.avatar_url).toBeNull();
  });

  it('client_gravatar=false spells out every avatar URL', async () => {
    const members = await listMembers();
    for (const member of members) {
      expect(typeof member.avatar_url).toBe('string');
      expect(member.avatar_url).toMatch(/^https?:\/\//);
    }
  });

  it('include_custom_profile_fields adds profile_data for humans (values of text fields rendered)', async () => {
    const field = await env.client('iago').POST('/realm/profile_fields', {
      body: { name: `Title ${randomBytes(3).toString('hex')}`, field_type: 1 },
    });
    expect(field.response.status).toBe(200);
    const fieldId = field.data!.id;
    const target = await newUser({ name: 'Profile Holder' });
    const set = await env.client('iago').PATCH('/users/{user_id}', {
      params: { path: { user_id: target.id } },
      body: { profile_data: [{ id: fieldId, value: 'Bartender' }] },
    });
    expect(set.response.status).toBe(200);

    const { data } = await env.client('hamlet').GET('/users', { params: { query: { include_custom_profile_fields: true } } });
    const listed = data!.members.find((m) => m.user_id === target.id)!;
    expect(listed.profile_data).toEqual({ [String(fieldId)]: { value: 'Bartender', rendered_value: '<p>Bartender</p>' } });
    // A human with no values still carries an (empty or partial) object; it never has this field's value.
    const othello = data!.members.find((m) => m.user_id === env.users.othello.id)!;
    expect(othello.profile_data).toBeTypeOf('object');
    expect(othello.profile_data).not.toHaveProperty(String(fieldId));

    const without = await env.client('hamlet').GET('/users', { params: { query: { include_custom_profile_fields: false } } });
    expect(without.data!.members.find((m) => m.user_id === target.id)).not.toHaveProperty('profile_data');
  });

  it('user_ids limits the list to those users', async () => {
    const ids = [env.users.othello.id, env.users.polonius.id];
    const { data, response } = await env.client('hamlet').GET('/users', { params: { query: { user_ids: ids } } });
    expect(response.status).toBe(200);
    expect(data!.members.map((m) => m.user_id).sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
  });

  it('user_ids leaves out IDs that match no user', async () => {
    const { data } = await env.client('hamlet').GET('/users', { params: { query: { user_ids: [env.users.cordelia.id, 987654] } } });
    expect(data!.members.map((m) => m.user_id)).toEqual([env.users.cordelia.id]);
  });

  it('accepts the query exactly as the Python zulip client sends it (JSON text with spaces)', async () => {
    const ids = `[${env.users.shiva.id}, ${env.users.iago.id}]`;
    const res = await env.raw(
      `/users?client_gravatar=true&include_custom_profile_fields=false&user_ids=${encodeURIComponent(ids)}`,
      { as: 'hamlet' },
    );
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('success');
    expect(res.body.members.map((m: any) => m.user_id).sort((a: number, b: number) => a - b)).toEqual(
      [env.users.shiva.id, env.users.iago.id].sort((a, b) => a - b),
    );
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  it('works through the real zulip-js client', async () => {
    const client = await zulipInit({ username: env.users.hamlet.email, apiKey: env.users.hamlet.apiKey, realm: env.url });
    const res = await client.users.retrieve({ client_gravatar: false });
    expect(res.result).toBe('success');
    expect(res.members.find((m: any) => m.user_id === env.users.desdemona.id)).toMatchObject({ role: 100, is_owner: true });
  });

  it('rejects a boolean that is not JSON true/false', async () => {
    const res = await env.raw('/users?client_gravatar=1', { as: 'hamlet' });
    expectJsonError(res, 400, 'client_gravatar is not a boolean', 'BAD_REQUEST');
    const notJson = await env.raw('/users?client_gravatar=True', { as: 'hamlet' });
    expectJsonError(notJson, 400, 'client_gravatar is not valid JSON', 'BAD_REQUEST');
  });

  it('rejects user_ids that are not a JSON list of integers', async () => {
    expectJsonError(await env.raw('/users?user_ids=5', { as: 'hamlet' }), 400, 'user_ids is not a list', 'BAD_REQUEST');
    expectJsonError(await env.raw(`/users?user_ids=${encodeURIComponent('["a"]')}`, { as: 'hamlet' }), 400, 'user_ids[0] is not an integer', 'BAD_REQUEST');
  });

  it('lists deactivated users with is_active false', async () => {
    const target = await newUser();
    const off = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expect(off.response.status).toBe(200);
    const members = await listMembers();
    expect(members.find((m) => m.user_id === target.id)).toMatchObject({ is_active: false });
  });

  it('lists users for guests too', async () => {
    const members = await listMembers('polonius');
    expect(members.map((m) => m.user_id)).toEqual(expect.arrayContaining(Object.values(env.users).map((u) => u.id)));
  });
});

describe('GET /users without credentials (spectators)', () => {
  it('is refused with 401 when the organization does not enable spectator access', async () => {
    const realm = await env.running.deps.db.realm.findFirstOrThrow();
    expect(realm.enableSpectatorAccess).toBe(false);
    const res = await env.raw('/users');
    expect(res.status).toBe(401);
    expect(res.body.result).toBe('error');
    expect(res.body.code).toBe('UNAUTHORIZED');
    // Zulip answers a missing login either way, depending on the code path.
    expect(['Not logged in: API authentication or user session required', 'Missing authorization header for basic auth']).toContain(res.body.msg);
    expect(res.body).not.toHaveProperty('members');
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });

  it('is served when spectator access is enabled: no real addresses, no timezone, no profile data', async () => {
    await env.running.deps.db.realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: true } });
    await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    try {
      const res = await env.raw('/users?include_custom_profile_fields=true&client_gravatar=false');
      expect(res.status).toBe(200);
      expect(res.body.result).toBe('success');
      const ids = res.body.members.map((m: any) => m.user_id);
      expect(ids).toEqual(expect.arrayContaining([env.users.hamlet.id, env.users.desdemona.id]));
      const members: any[] = res.body.members;
      const idsWhere = (predicate: (m: any) => boolean) => members.filter(predicate).map((m) => m.user_id);
      expect.soft(idsWhere((m) => m.delivery_email !== null), 'users whose delivery_email is shown to spectators').toEqual([]);
      expect.soft(idsWhere((m) => 'profile_data' in m), 'users with profile_data for spectators').toEqual([]);
      expect.soft(idsWhere((m) => 'timezone' in m), 'users with a timezone for spectators').toEqual([]);
    } finally {
      await env.running.deps.db.realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: false } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    }
    // And refused again once the option is off.
    expect((await env.raw('/users')).status).toBe(401);
  });
});

describe('GET /users/{user_id}', () => {
  it('returns one user in the same shape as the listing', async () => {
    const { data, response } = await env.client('hamlet').GET('/users/{user_id}', {
      params: { path: { user_id: env.users.othello.id }, query: { client_gravatar: false } },
    });
    expect(response.status).toBe(200);
    expect(data?.result).toBe('success');
    const members = await listMembers('hamlet');
    expect(data!.user).toEqual(members.find((m) => m.user_id === env.users.othello.id));
    expect(Object.keys(data!.user).sort()).toEqual(HUMAN_KEYS);
    expect(data!.user).toMatchObject({ full_name: PEOPLE.othello.fullName, role: 400, email: PEOPLE.othello.email });
  });

  it('honours client_gravatar (default true) and include_custom_profile_fields', async () => {
    const byDefault = await env.client('hamlet').GET('/users/{user_id}', { params: { path: { user_id: env.users.cordelia.id } } });
    expect(byDefault.data!.user.avatar_url).toBeNull();
    expect(byDefault.data!.user).not.toHaveProperty('profile_data');
    const full = await env.client('hamlet').GET('/users/{user_id}', {
      params: { path: { user_id: env.users.cordelia.id }, query: { client_gravatar: false, include_custom_profile_fields: true } },
    });
    expect(full.data!.user.avatar_url).toMatch(/^https?:\/\//);
    expect(full.data!.user.profile_data).toBeTypeOf('object');
  });

  it('returns deactivated users and bots', async () => {
    const target = await newUser();
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ user_id: target.id, is_active: false });

    const bot = await insertBot({ ownerId: env.users.othello.id });
    expect(await readUser(env, bot.id, 'hamlet')).toMatchObject({ user_id: bot.id, is_bot: true, bot_type: 1, bot_owner_id: env.users.othello.id });
  });

  it('answers No such user for an unknown ID', async () => {
    const res = await env.client('hamlet').GET('/users/{user_id}', { params: { path: { user_id: 987654 } } });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
  });

  it('rejects a client_gravatar that is not a boolean', async () => {
    expectJsonError(await env.raw(`/users/${env.users.othello.id}?client_gravatar=1`, { as: 'hamlet' }), 400, 'client_gravatar is not a boolean', 'BAD_REQUEST');
  });

  it('takes a non-numeric ID for an e-mail address (an address naming nobody), as Zulip routes it', async () => {
    expectJsonError(await env.raw('/users/othello', { as: 'hamlet' }), 400, 'No such user', 'BAD_REQUEST');
  });
});

describe('GET /users/me', () => {
  it("returns the caller's own account with a spelled-out avatar URL and profile data", async () => {
    const { data, response } = await env.client('hamlet').GET('/users/me');
    expect(response.status).toBe(200);
    expect(data).toMatchObject({
      result: 'success',
      msg: '',
      user_id: env.users.hamlet.id,
      email: PEOPLE.hamlet.email,
      delivery_email: PEOPLE.hamlet.email,
      full_name: PEOPLE.hamlet.fullName,
      role: 400,
      is_admin: false,
      is_owner: false,
      is_guest: false,
      is_bot: false,
      is_active: true,
      timezone: '',
    });
    expect(data!.avatar_url).toMatch(/^https?:\/\//);
    expect(data!.profile_data).toBeTypeOf('object');
    expect(data!.date_joined).toMatch(ISO_WITH_OFFSET);
    expect(data).not.toHaveProperty('bot_type');
    expect(data).not.toHaveProperty('bot_owner_id');
  });

  it('reports the role of owners and guests', async () => {
    const owner = await env.client('desdemona').GET('/users/me');
    expect(owner.data).toMatchObject({ user_id: env.users.desdemona.id, role: 100, is_owner: true, is_admin: true, is_guest: false });
    const guest = await env.client('polonius').GET('/users/me');
    expect(guest.data).toMatchObject({ user_id: env.users.polonius.id, role: 600, is_owner: false, is_admin: false, is_guest: true });
  });

  it('needs credentials', async () => {
    const res = await env.raw('/users/me');
    expectJsonError(res, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });
});

describe('POST /users', () => {
  it('lets an administrator create a member who can then use the API', async () => {
    const email = uniqueEmail('created');
    const { data, response } = await env.client('iago').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: 'New Person' } });
    expect(response.status).toBe(200);
    expect(data).toMatchObject({ result: 'success', msg: '' });
    expect(Number.isInteger(data!.user_id)).toBe(true);

    const user = await readUser(env, data!.user_id, 'hamlet');
    expect(user).toMatchObject({
      user_id: data!.user_id,
      email,
      delivery_email: email,
      full_name: 'New Person',
      role: 400,
      is_admin: false,
      is_owner: false,
      is_guest: false,
      is_bot: false,
      is_active: true,
    });
    expect(user.date_joined).toMatch(ISO_WITH_OFFSET);

    // The password works for fetching the API key, and the key for the API.
    const login = await env.raw('/fetch_api_key', { method: 'POST', body: new URLSearchParams({ username: email, password: TEST_PASSWORD }) });
    expect(login.status).toBe(200);
    const me = await env.raw('/users/me', { headers: { Authorization: basicAuth(email, login.body.api_key) } });
    expect(me.status).toBe(200);
    expect(me.body.user_id).toBe(data!.user_id);
  });

  it('lets an owner create users too', async () => {
    const email = uniqueEmail('by-owner');
    const { data, response } = await env.client('desdemona').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: 'Owner Made' } });
    expect(response.status).toBe(200);
    expect(await readUser(env, data!.user_id, 'iago')).toMatchObject({ email, full_name: 'Owner Made', role: 400 });
  });

  it('strips whitespace around the full name', async () => {
    const email = uniqueEmail('spaced');
    const { data } = await env.client('iago').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: '   Spaced Name  ' } });
    expect((await readUser(env, data!.user_id, 'iago')).full_name).toBe('Spaced Name');
  });

  it('refuses an address already in use, compared case-insensitively', async () => {
    const before = (await listMembers()).length;
    const taken = 'HAMLET@parley.test';
    const res = await env.client('iago').POST('/users', { body: { email: taken, password: TEST_PASSWORD, full_name: 'Second Hamlet' } });
    expectJsonError(res, 400, `Email '${taken}' already in use`, 'BAD_REQUEST');
    expect((await listMembers()).length).toBe(before);
  });

  it("refuses the address of a deactivated account", async () => {
    const target = await newUser();
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    const res = await env.client('iago').POST('/users', { body: { email: target.email, password: TEST_PASSWORD, full_name: 'Again' } });
    expectJsonError(res, 400, `Email '${target.email}' already in use`, 'BAD_REQUEST');
  });

  it('refuses an address that is not an e-mail address with Bad name or username', async () => {
    const res = await env.client('iago').POST('/users', { body: { email: 'not-an-email', password: TEST_PASSWORD, full_name: 'Nobody' } });
    expectJsonError(res, 400, 'Bad name or username', 'BAD_REQUEST');
    expect((await listMembers()).some((m) => m.delivery_email === 'not-an-email')).toBe(false);
  });

  it('checks the full name', async () => {
    const tooLong = await env.client('iago').POST('/users', { body: { email: uniqueEmail('long'), password: TEST_PASSWORD, full_name: 'x'.repeat(101) } });
    expectJsonError(tooLong, 400, 'Name too long!', 'BAD_REQUEST');
    const tooShort = await env.client('iago').POST('/users', { body: { email: uniqueEmail('short'), password: TEST_PASSWORD, full_name: 'x' } });
    expectJsonError(tooShort, 400, 'Name too short!', 'BAD_REQUEST');
    const badChars = await env.client('iago').POST('/users', { body: { email: uniqueEmail('chars'), password: TEST_PASSWORD, full_name: 'Bad*Name' } });
    expectJsonError(badChars, 400, 'Invalid characters in name!', 'BAD_REQUEST');
  });

  it('refuses a password that is too weak', async () => {
    const email = uniqueEmail('weak');
    const res = await env.client('iago').POST('/users', { body: { email, password: 'a', full_name: 'Weak Password' } });
    expectJsonError(res, 400, 'The password is too weak.', 'BAD_REQUEST');
    expect((await listMembers()).some((m) => m.delivery_email === email)).toBe(false);
  });

  it('reports a missing parameter', async () => {
    const res = await env.raw('/users', {
      method: 'POST',
      as: 'iago',
      body: new URLSearchParams({ email: uniqueEmail('missing'), password: TEST_PASSWORD }),
    });
    expectJsonError(res, 400, "Missing 'full_name' argument", 'REQUEST_VARIABLE_MISSING');
    expect(res.body.var_name).toBe('full_name');
  });

  it('is refused to non-administrators, and nothing is created', async () => {
    const email = uniqueEmail('refused');
    const res = await env.client('shiva').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: 'Refused' } });
    expectJsonError(res, 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    expect((await listMembers()).some((m) => m.delivery_email === email)).toBe(false);
  });
});

describe('DELETE /users/{user_id}', () => {
  it('deactivates a user: listed as inactive, and the API key stops working', async () => {
    const target = await newUser();
    const key = await apiKeyOf(env, target.id);
    expect((await env.raw('/users/me', { headers: { Authorization: basicAuth(target.email, key) } })).status).toBe(200);

    const { data, response } = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(false);

    const after = await env.raw('/users/me', { headers: { Authorization: basicAuth(target.email, key) } });
    expect(after.status).toBe(401);
    expect(after.body.msg).toBe('Account is deactivated');
    expect(after.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });

  it('with deactivation_notification_comment, tells the user by e-mail with the comment; without it, sends none', async () => {
    const outboxTo = (to: string) => env.running.deps.db.emailOutbox.findMany({ where: { to }, orderBy: { id: 'asc' } });
    const told = await newUser();
    const comment = await env.client('iago').DELETE('/users/{user_id}', {
      params: { path: { user_id: told.id } },
      body: { deactivation_notification_comment: '  Thanks for <everything>!\nSee you.  ' },
    });
    expect(comment.response.status).toBe(200);
    const [notice, ...more] = await outboxTo(told.email);
    expect(more).toEqual([]);
    expect(notice!.subject).toBe('Your account in Parley has been deactivated');
    expect(notice!.text).toContain('has been deactivated');
    expect(notice!.text).toContain('\n\nThanks for <everything>!\nSee you.\n'); // stripped, kept verbatim in the text part
    expect(notice!.html).toContain('Thanks for &lt;everything&gt;!'); // escaped in the HTML part

    const emptyComment = await newUser();
    const empty = await env.raw(`/users/${emptyComment.id}?deactivation_notification_comment=`, { method: 'DELETE', as: 'iago' });
    expect(empty.status).toBe(200);
    const [plain] = await outboxTo(emptyComment.email);
    expect(plain!.text).not.toContain('comment');

    const silent = await newUser();
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: silent.id } } })).response.status).toBe(200);
    expect(await outboxTo(silent.email)).toEqual([]);

    const tooLong = await newUser();
    const refused = await env.raw(`/users/${tooLong.id}?deactivation_notification_comment=${'x'.repeat(2001)}`, { method: 'DELETE', as: 'iago' });
    expect(refused.status).toBe(400);
    expect((await readUser(env, tooLong.id, 'iago')).is_active).toBe(true);
    expect(await outboxTo(tooLong.email)).toEqual([]);
  });

  it('works as the Python zulip client sends it (no body, no Content-Type)', async () => {
    const target = await newUser();
    const res = await env.raw(`/users/${target.id}`, { method: 'DELETE', as: 'desdemona' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(false);
  });

  it('answers User is deactivated for an account already deactivated', async () => {
    const target = await newUser();
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    const again = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expectJsonError(again, 400, 'User is deactivated', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(false);
  });

  it('answers No such user for an unknown ID', async () => {
    const res = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: 987654 } } });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
  });

  it("answers No such user for a bot's ID (bots have their own endpoint)", async () => {
    const bot = await insertBot({ ownerId: env.users.hamlet.id });
    const res = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: bot.id } } });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
    expect((await readUser(env, bot.id, 'iago')).is_active).toBe(true);
  });

  it('needs an owner to deactivate an owner', async () => {
    const owner = await newUser({ role: 100 });
    const res = await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: owner.id } } });
    expectJsonError(res, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect((await readUser(env, owner.id, 'iago')).is_active).toBe(true);

    const byOwner = await env.client('desdemona').DELETE('/users/{user_id}', { params: { path: { user_id: owner.id } } });
    expect(byOwner.response.status).toBe(200);
    expect((await readUser(env, owner.id, 'iago')).is_active).toBe(false);
  });

  it('refuses to deactivate the only organization owner', async () => {
    // Make desdemona the only active human owner for the duration of the test.
    const demoted: number[] = [];
    for (const m of await listMembers('desdemona')) {
      if (m.is_active && !m.is_bot && m.role === 100 && m.user_id !== env.users.desdemona.id) {
        const res = await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: m.user_id } }, body: { role: 400 } });
        expect(res.response.status).toBe(200);
        demoted.push(m.user_id);
      }
    }
    try {
      const res = await env.client('desdemona').DELETE('/users/{user_id}', { params: { path: { user_id: env.users.desdemona.id } } });
      expectJsonError(res, 400, 'Cannot deactivate the only organization owner', 'BAD_REQUEST');
      expect((await readUser(env, env.users.desdemona.id, 'iago')).is_active).toBe(true);
    } finally {
      for (const id of demoted) {
        await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: id } }, body: { role: 100 } });
      }
    }
  });

  it('is refused to non-administrators', async () => {
    const target = await newUser();
    const res = await env.client('hamlet').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expectJsonError(res, 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(true);
  });
});

describe('POST /users/{user_id}/reactivate', () => {
  it('reactivates a deactivated user, whose role is kept and whose API key works again', async () => {
    const target = await newUser({ role: 300 });
    const key = await apiKeyOf(env, target.id);
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(false);

    const { data, response } = await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: target.id } } });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await readUser(env, target.id, 'iago')).toMatchObject({ is_active: true, role: 300 });
    const me = await env.raw('/users/me', { headers: { Authorization: basicAuth(target.email, key) } });
    expect(me.status).toBe(200);
    expect(me.body.user_id).toBe(target.id);
  });

  it('reactivates a bot', async () => {
    const bot = await insertBot({ ownerId: env.users.hamlet.id });
    await env.running.deps.db.user.update({ where: { id: bot.id }, data: { isActive: false } });
    await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    const res = await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: bot.id } } });
    expect(res.response.status).toBe(200);
    expect((await readUser(env, bot.id, 'iago')).is_active).toBe(true);
  });

  it('succeeds and changes nothing for an account that is already active', async () => {
    const target = await newUser();
    const res = await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: target.id } } });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ result: 'success', msg: '' });
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(true);
  });

  it('answers No such user for an unknown ID', async () => {
    const res = await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: 987654 } } });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
  });

  it('is refused to non-administrators', async () => {
    const target = await newUser();
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } });
    const res = await env.client('shiva').POST('/users/{user_id}/reactivate', { params: { path: { user_id: target.id } } });
    expectJsonError(res, 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'iago')).is_active).toBe(false);
  });
});
