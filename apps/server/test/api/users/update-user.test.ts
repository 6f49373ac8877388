// PATCH /users/{user_id} (Zulip's update-user): full_name, role, profile_data and new_email, with the
// permission rules of the seed (§12) and of the spec file; every change is read back through the API.
import type { RequestParams } from '@parley/api-types';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { apiKeyOf, basicAuth } from '../../helpers/auth.ts';
import { createUser, readUser, setRole, uniqueEmail, type Role } from '../../helpers/people.ts';
import { zulipJs as zulipInit } from '../../helpers/zulip-js.ts';

const env = useTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

/** A new user ("Target User" unless named), with the given role. */
const newUser = (options: { name?: string; role?: Role } = {}) => createUser(env, { label: 'upd', fullName: options.name ?? 'Target User', role: options.role });

function patch(as: Person, userId: number, body: RequestParams<'update-user'>) {
  return env.client(as).PATCH('/users/{user_id}', { params: { path: { user_id: userId } }, body });
}

/** PATCH as the Python zulip client sends it: form-encoded, JSON values from json.dumps (with spaces). */
function rawPatch(as: Person, userId: number, form: Record<string, string>) {
  return env.raw(`/users/${userId}`, { method: 'PATCH', as, body: new URLSearchParams(form) });
}

type CreateFieldBody = paths['/realm/profile_fields']['post']['requestBody']['content']['application/x-www-form-urlencoded'];

async function createField(body: Pick<CreateFieldBody, 'field_type' | 'field_data' | 'hint'> & { name?: string }): Promise<{ id: number; name: string }> {
  const name = body.name ?? `Field ${randomBytes(3).toString('hex')}`;
  const { data, error } = await env.client('iago').POST('/realm/profile_fields', { body: { ...body, name } });
  if (!data) throw new Error(`setup: create field failed: ${JSON.stringify(error)}`);
  return { id: data.id, name };
}

const SUCCESS = { result: 'success', msg: '' };

// ---------------------------------------------------------------------------------------------

describe('PATCH /users/{user_id}: full_name', () => {
  it('renames the user', async () => {
    const target = await newUser();
    const res = await patch('iago', target.id, { full_name: 'Prince Hamlet' });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(SUCCESS);
    expect((await readUser(env, target.id, 'hamlet')).full_name).toBe('Prince Hamlet');
  });

  it('strips surrounding whitespace', async () => {
    const target = await newUser();
    expect((await patch('iago', target.id, { full_name: '  Padded Name   ' })).response.status).toBe(200);
    expect((await readUser(env, target.id, 'hamlet')).full_name).toBe('Padded Name');
  });

  it('silently ignores a blank name', async () => {
    const target = await newUser({ name: 'Keeps Name' });
    const res = await patch('iago', target.id, { full_name: '   ' });
    expect(res.response.status).toBe(200);
    expect((await readUser(env, target.id, 'hamlet')).full_name).toBe('Keeps Name');
  });

  it('checks the name like any name, leaving it unchanged on error', async () => {
    const target = await newUser({ name: 'Checked Name' });
    expectJsonError(await patch('iago', target.id, { full_name: 'y'.repeat(101) }), 400, 'Name too long!', 'BAD_REQUEST');
    expectJsonError(await patch('iago', target.id, { full_name: 'y' }), 400, 'Name too short!', 'BAD_REQUEST');
    expectJsonError(await patch('iago', target.id, { full_name: 'Bad@Name' }), 400, 'Invalid characters in name!', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'hamlet')).full_name).toBe('Checked Name');
  });

  it('lets an owner edit a user with the form body of the Python zulip client', async () => {
    const target = await newUser();
    const res = await rawPatch('desdemona', target.id, { full_name: 'Form Encoded Name', role: '300' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ full_name: 'Form Encoded Name', role: 300 });
  });

  it('lets an owner edit a user through the real zulip-js client (parameters in the query string)', async () => {
    const target = await newUser();
    const client = await zulipInit({ username: env.users.desdemona.email, apiKey: env.users.desdemona.apiKey, realm: env.url });
    const res = await client.callEndpoint(`/users/${target.id}`, 'PATCH', { full_name: 'Edited By JS', role: 200 });
    expect(res).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ full_name: 'Edited By JS', role: 200, is_admin: true });
  });
});

describe('PATCH /users/{user_id}: role', () => {
  it('lets an administrator move a member through the non-owner roles', async () => {
    const target = await newUser();
    const steps: Array<[Role, { is_admin: boolean; is_owner: boolean; is_guest: boolean }]> = [
      [300, { is_admin: false, is_owner: false, is_guest: false }],
      [200, { is_admin: true, is_owner: false, is_guest: false }],
      [600, { is_admin: false, is_owner: false, is_guest: true }],
      [400, { is_admin: false, is_owner: false, is_guest: false }],
    ];
    for (const [role, flags] of steps) {
      const res = await patch('iago', target.id, { role });
      expect(res.data, `role ${role}`).toEqual(SUCCESS);
      expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role, ...flags });
    }
  });

  it('promotes a guest straight to administrator (a role is a single value, so no guest-admin mix can arise)', async () => {
    const target = await newUser({ role: 600 });
    const res = await patch('iago', target.id, { role: 200 });
    expect(res.data).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role: 200, is_admin: true, is_guest: false });
  });

  it('needs an owner to grant the owner role', async () => {
    const target = await newUser();
    expectJsonError(await patch('iago', target.id, { role: 100 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role: 400, is_owner: false });

    expect((await patch('desdemona', target.id, { role: 100 })).data).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role: 100, is_owner: true, is_admin: true });
  });

  it('needs an owner to remove the owner role', async () => {
    const target = await newUser({ role: 100 });
    expectJsonError(await patch('iago', target.id, { role: 200 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role: 100, is_owner: true });

    expect((await patch('desdemona', target.id, { role: 400 })).data).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ role: 400, is_owner: false, is_admin: false });
  });

  it("checks the role only when it changes: an administrator may resend an owner's current role", async () => {
    const target = await newUser({ role: 100 });
    const res = await patch('iago', target.id, { role: 100 });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(SUCCESS);
    expect((await readUser(env, target.id, 'hamlet')).role).toBe(100);
  });

  it('never removes the owner role from the only organization owner', async () => {
    // Make desdemona the only active human owner for the duration of the test.
    const demoted: number[] = [];
    const { data } = await env.client('desdemona').GET('/users', { params: { query: { client_gravatar: false } } });
    for (const m of data!.members) {
      if (m.is_active && !m.is_bot && m.role === 100 && m.user_id !== env.users.desdemona.id) {
        await setRole(env, m.user_id, 400);
        demoted.push(m.user_id);
      }
    }
    try {
      const res = await patch('desdemona', env.users.desdemona.id, { role: 200 });
      expectJsonError(res, 400, 'The owner permission cannot be removed from the only organization owner.', 'BAD_REQUEST');
      expect(await readUser(env, env.users.desdemona.id, 'hamlet')).toMatchObject({ role: 100, is_owner: true });
    } finally {
      for (const id of demoted) await setRole(env, id, 100);
    }
  });

  it('lets an owner give up the owner role while another owner remains', async () => {
    const second = await newUser({ role: 100 });
    const key = await apiKeyOf(env, second.id);
    const res = await env.raw(`/users/${second.id}`, {
      method: 'PATCH',
      headers: { Authorization: basicAuth(second.email, key) },
      body: new URLSearchParams({ role: '400' }),
    });
    expect(res.status).toBe(200);
    expect((await readUser(env, second.id, 'hamlet')).role).toBe(400);
  });

  it('rejects a role that does not exist, or is not a JSON integer', async () => {
    const target = await newUser();
    expectJsonError(await rawPatch('iago', target.id, { role: '250' }), 400, 'Invalid role: Value error, Not in the list of possible values', 'BAD_REQUEST');
    expectJsonError(await rawPatch('iago', target.id, { role: 'admin' }), 400, 'role is not valid JSON', 'BAD_REQUEST');
    expectJsonError(await rawPatch('iago', target.id, { role: '"200"' }), 400, 'role is not an integer', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'hamlet')).role).toBe(400);
  });
});

describe('PATCH /users/{user_id}: profile_data', () => {
  const fields = {} as Record<'short' | 'long' | 'select' | 'date' | 'url' | 'users' | 'pronouns' | 'github', { id: number; name: string }>;
  beforeAll(async () => {
    fields.short = await createField({ field_type: 1, name: 'Job title' });
    fields.long = await createField({ field_type: 2, name: 'Biography' });
    fields.select = await createField({
      field_type: 3,
      name: 'Favorite editor',
      field_data: { '0': { text: 'Vim', order: '1' }, '1': { text: 'Emacs', order: '2' } },
    });
    fields.date = await createField({ field_type: 4, name: 'Birthday' });
    fields.url = await createField({ field_type: 5, name: 'Homepage' });
    fields.users = await createField({ field_type: 6, name: 'Mentor' });
    fields.pronouns = await createField({ field_type: 8, name: 'Pronouns' });
    fields.github = await createField({ field_type: 7, name: 'GitHub account', field_data: { subtype: 'github' } });
  });

  const profileOf = async (userId: number) => (await readUser(env, userId, 'hamlet')).profile_data ?? {};

  it('sets a short-text value, stored with its rendering', async () => {
    const target = await newUser();
    const res = await patch('iago', target.id, { profile_data: [{ id: fields.short.id, value: 'Bartender' }] });
    expect(res.data).toEqual(SUCCESS);
    expect((await profileOf(target.id))[String(fields.short.id)]).toEqual({ value: 'Bartender', rendered_value: '<p>Bartender</p>' });
  });

  it('sets a long-text value with a rendering', async () => {
    const target = await newUser();
    await patch('iago', target.id, { profile_data: [{ id: fields.long.id, value: 'Born in Elsinore.' }] });
    expect((await profileOf(target.id))[String(fields.long.id)]).toEqual({ value: 'Born in Elsinore.', rendered_value: '<p>Born in Elsinore.</p>' });
  });

  it('sets several fields at once, as the Python client sends them', async () => {
    const target = await newUser();
    const profile = `[{"id": ${fields.date.id}, "value": "2000-01-31"}, {"id": ${fields.url.id}, "value": "https://example.com/hamlet"}, {"id": ${fields.github.id}, "value": "hamlet"}]`;
    const res = await rawPatch('iago', target.id, { profile_data: profile });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(SUCCESS);
    const data = await profileOf(target.id);
    expect(data[String(fields.date.id)]).toEqual({ value: '2000-01-31' });
    expect(data[String(fields.url.id)]).toEqual({ value: 'https://example.com/hamlet' });
    expect(data[String(fields.github.id)]).toEqual({ value: 'hamlet' });
  });

  it('stores a pronouns value without a rendering (only text fields are rendered)', async () => {
    const target = await newUser();
    await patch('iago', target.id, { profile_data: [{ id: fields.pronouns.id, value: 'he/him' }] });
    expect((await profileOf(target.id))[String(fields.pronouns.id)]).toEqual({ value: 'he/him' });
  });

  it('accepts a valid option of a list-of-options field and refuses others', async () => {
    const target = await newUser();
    expect((await patch('iago', target.id, { profile_data: [{ id: fields.select.id, value: '1' }] })).data).toEqual(SUCCESS);
    expect((await profileOf(target.id))[String(fields.select.id)]).toEqual({ value: '1' });

    const bad = await patch('iago', target.id, { profile_data: [{ id: fields.select.id, value: '7' }] });
    expectJsonError(bad, 400, `'7' is not a valid choice for '${fields.select.name}'.`, 'BAD_REQUEST');
    expect((await profileOf(target.id))[String(fields.select.id)]).toEqual({ value: '1' });
  });

  it('validates dates and links', async () => {
    const target = await newUser();
    expectJsonError(await patch('iago', target.id, { profile_data: [{ id: fields.date.id, value: '31/01/2000' }] }), 400, `${fields.date.name} is not a date`, 'BAD_REQUEST');
    expectJsonError(await patch('iago', target.id, { profile_data: [{ id: fields.url.id, value: 'not a link' }] }), 400, `${fields.url.name} is not a URL`, 'BAD_REQUEST');
    const data = await profileOf(target.id);
    expect(data).not.toHaveProperty(String(fields.date.id));
    expect(data).not.toHaveProperty(String(fields.url.id));
  });

  it('stores a users field as the JSON text of the user IDs, and refuses unknown users', async () => {
    const target = await newUser();
    const ids = [env.users.othello.id, env.users.cordelia.id];
    expect((await patch('iago', target.id, { profile_data: [{ id: fields.users.id, value: ids }] })).data).toEqual(SUCCESS);
    const stored = (await profileOf(target.id))[String(fields.users.id)];
    expect(stored).toBeDefined();
    expect(stored).not.toHaveProperty('rendered_value');
    expect(JSON.parse(stored!.value)).toEqual(ids);

    const bad = await patch('iago', target.id, { profile_data: [{ id: fields.users.id, value: [987654] }] });
    expectJsonError(bad, 400, 'Invalid user IDs: 987654', 'BAD_REQUEST');
    expect(JSON.parse((await profileOf(target.id))[String(fields.users.id)]!.value)).toEqual(ids);
  });

  it('refuses a list for a text field and an over-long short text', async () => {
    const target = await newUser();
    expectJsonError(await patch('iago', target.id, { profile_data: [{ id: fields.short.id, value: [1, 2] }] }), 400, `${fields.short.name} is not a string`, 'BAD_REQUEST');
    expectJsonError(
      await patch('iago', target.id, { profile_data: [{ id: fields.short.id, value: 'z'.repeat(51) }] }),
      400,
      `${fields.short.name} is too long (limit: 50 characters)`,
      'BAD_REQUEST',
    );
    expect(await profileOf(target.id)).not.toHaveProperty(String(fields.short.id));
  });

  it('refuses an unknown field ID', async () => {
    const target = await newUser();
    expectJsonError(await patch('iago', target.id, { profile_data: [{ id: 987654, value: 'x' }] }), 400, 'Field id 987654 not found.', 'BAD_REQUEST');
    expectJsonError(await patch('iago', target.id, { profile_data: [{ id: 987654, value: null }] }), 400, 'Field id 987654 not found.', 'BAD_REQUEST');
  });

  it('removes a value when sent an empty string, null or an empty list', async () => {
    const target = await newUser();
    await patch('iago', target.id, {
      profile_data: [
        { id: fields.short.id, value: 'Gravedigger' },
        { id: fields.long.id, value: 'Alas.' },
        { id: fields.users.id, value: [env.users.hamlet.id] },
      ],
    });
    const before = await profileOf(target.id);
    expect(Object.keys(before).sort()).toEqual([fields.short.id, fields.long.id, fields.users.id].map(String).sort());

    const res = await patch('iago', target.id, {
      profile_data: [
        { id: fields.short.id, value: '' },
        { id: fields.long.id, value: null },
        { id: fields.users.id, value: [] },
      ],
    });
    expect(res.data).toEqual(SUCCESS);
    expect(await profileOf(target.id)).toEqual({});
  });

  it('removes a value as the Python client sends it (JSON null inside the list)', async () => {
    const target = await newUser();
    await patch('iago', target.id, { profile_data: [{ id: fields.short.id, value: 'Jester' }] });
    const res = await rawPatch('iago', target.id, { profile_data: `[{"id": ${fields.short.id}, "value": null}]` });
    expect(res.status).toBe(200);
    expect(await profileOf(target.id)).not.toHaveProperty(String(fields.short.id));
  });

  it('accepts removing a value that was never set', async () => {
    const target = await newUser();
    const res = await patch('iago', target.id, { profile_data: [{ id: fields.date.id, value: '' }] });
    expect(res.data).toEqual(SUCCESS);
    expect(await profileOf(target.id)).toEqual({});
  });

  it('rejects profile_data that is not a JSON list of {id, value}', async () => {
    const target = await newUser();
    expectJsonError(await rawPatch('iago', target.id, { profile_data: 'nope' }), 400, 'profile_data is not valid JSON', 'BAD_REQUEST');
    expectJsonError(await rawPatch('iago', target.id, { profile_data: '{"id": 1}' }), 400, 'profile_data is not a list', 'BAD_REQUEST');
  });

  it('is refused to non-administrators', async () => {
    const target = await newUser();
    await patch('iago', target.id, { profile_data: [{ id: fields.short.id, value: 'Original' }] });
    expectJsonError(await patch('hamlet', target.id, { profile_data: [{ id: fields.short.id, value: 'Hacked' }] }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await profileOf(target.id))[String(fields.short.id)]?.value).toBe('Original');
  });
});

describe('PATCH /users/{user_id}: new_email', () => {
  it('is refused to administrators who are not owners', async () => {
    const target = await newUser();
    const res = await patch('iago', target.id, { new_email: uniqueEmail('by-admin') });
    expectJsonError(res, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect((await readUser(env, target.id, 'iago')).delivery_email).toBe(target.email);
  });

  it('is refused to owners without the can_change_user_emails permission', async () => {
    const desdemona = await env.running.deps.db.user.findUniqueOrThrow({ where: { id: env.users.desdemona.id } });
    expect(desdemona.canChangeUserEmails).toBe(false);
    const target = await newUser();
    const res = await patch('desdemona', target.id, { new_email: uniqueEmail('no-permission') });
    expectJsonError(res, 400, 'User not authorized to change user emails', 'BAD_REQUEST');
    expect((await readUser(env, target.id, 'iago')).delivery_email).toBe(target.email);
  });

  describe('with an owner holding can_change_user_emails', () => {
    beforeAll(async () => {
      await env.running.deps.db.user.update({ where: { id: env.users.desdemona.id }, data: { canChangeUserEmails: true } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    });
    afterAll(async () => {
      await env.running.deps.db.user.update({ where: { id: env.users.desdemona.id }, data: { canChangeUserEmails: false } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    });

    it('changes the address at once; the key then goes with the new address only', async () => {
      const target = await newUser();
      const key = await apiKeyOf(env, target.id);
      const newEmail = uniqueEmail('renamed');
      const res = await patch('desdemona', target.id, { new_email: newEmail });
      expect(res.data).toEqual(SUCCESS);
      expect(await readUser(env, target.id, 'iago')).toMatchObject({ email: newEmail, delivery_email: newEmail });

      const withNew = await env.raw('/users/me', { headers: { Authorization: basicAuth(newEmail, key) } });
      expect(withNew.status).toBe(200);
      expect(withNew.body.delivery_email).toBe(newEmail);
      const withOld = await env.raw('/users/me', { headers: { Authorization: basicAuth(target.email, key) } });
      expectJsonError(withOld, 401, 'Invalid API key', 'UNAUTHORIZED');
    });

    it('refuses an address used by another account', async () => {
      const target = await newUser();
      const res = await patch('desdemona', target.id, { new_email: env.users.othello.email });
      expect(res.response.status).toBe(400);
      expect(res.error).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
      expect((await readUser(env, target.id, 'iago')).delivery_email).toBe(target.email);
      expect((await readUser(env, env.users.othello.id, 'iago')).delivery_email).toBe(env.users.othello.email);
    });

    it('refuses something that is not an e-mail address', async () => {
      const target = await newUser();
      const res = await patch('desdemona', target.id, { new_email: 'not an address' });
      expect(res.response.status).toBe(400);
      expect(res.error).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
      expect((await readUser(env, target.id, 'iago')).delivery_email).toBe(target.email);
    });
  });
});

describe('PATCH /users/{user_id}: access', () => {
  it('answers No such user for an unknown ID', async () => {
    expectJsonError(await patch('iago', 987654, { full_name: 'Nobody Here' }), 400, 'No such user', 'BAD_REQUEST');
  });

  it('is refused with Insufficient permission to moderators, members and guests', async () => {
    const target = await newUser({ name: 'Untouched Name' });
    for (const caller of ['shiva', 'hamlet', 'polonius'] as const) {
      expectJsonError(await patch(caller, target.id, { full_name: 'Changed Name' }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expectJsonError(await patch(caller, target.id, { role: 300 }), 400, 'Insufficient permission', 'BAD_REQUEST');
    }
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ full_name: 'Untouched Name', role: 400 });
  });

  it("lets an administrator edit an owner's name (only owner-role changes need an owner)", async () => {
    const owner = await newUser({ role: 100, name: 'Owner Name' });
    const res = await patch('iago', owner.id, { full_name: 'Owner Renamed' });
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual(SUCCESS);
    expect((await readUser(env, owner.id, 'hamlet')).full_name).toBe('Owner Renamed');
  });

  it('edits deactivated accounts too', async () => {
    const target = await newUser();
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } })).response.status).toBe(200);
    expect((await patch('iago', target.id, { full_name: 'Renamed While Away', role: 300 })).data).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ full_name: 'Renamed While Away', role: 300, is_active: false });
  });

  it('edits bots', async () => {
    const email = uniqueEmail('bot');
    const bot = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Helper Bot', role: 400, isBot: true, botType: 1, botOwnerId: env.users.hamlet.id, settings: { create: {} } },
    });
    expect((await patch('iago', bot.id, { full_name: 'Renamed Bot' })).data).toEqual(SUCCESS);
    expect((await readUser(env, bot.id, 'hamlet')).full_name).toBe('Renamed Bot');
  });

  it('succeeds without parameters and changes nothing', async () => {
    const target = await newUser({ name: 'Stays Same' });
    const before = await readUser(env, target.id, 'hamlet');
    const res = await env.raw(`/users/${target.id}`, { method: 'PATCH', as: 'iago' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(SUCCESS);
    expect(await readUser(env, target.id, 'hamlet')).toEqual(before);
  });

  it('reports parameters it does not know in ignored_parameters_unsupported', async () => {
    const target = await newUser();
    const res = await rawPatch('iago', target.id, { full_name: 'With Extras', is_admin: 'true', foo: 'bar' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...SUCCESS, ignored_parameters_unsupported: ['foo', 'is_admin'] });
    expect(await readUser(env, target.id, 'hamlet')).toMatchObject({ full_name: 'With Extras', role: 400, is_admin: false });
  });
});
