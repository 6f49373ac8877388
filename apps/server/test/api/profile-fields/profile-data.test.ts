// Users' custom profile field values: their own (PATCH and DELETE /users/me/profile_data) and the
// administrators' form (`profile_data` of PATCH /users/{user_id}). Every field type with Zulip's
// validation and messages; `editable_by_user`; every entry checked before anything is written; the
// `realm_user` update events (rendered_value for text fields, null when cleared, none for a value
// that does not change); bots refused.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, createDeactivatedUser, readUser } from '../../helpers/people.ts';

const env = useTestServer();

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const uniqueName = (label: string) => `${label} ${randomBytes(3).toString('hex')}`;

/** The fields of the file, by type. */
const F = { short: 0, long: 0, select: 0, date: 0, url: 0, users: 0, external: 0, pronouns: 0, locked: 0 };
const names: Record<keyof typeof F, string> = {} as never;
let deactivatedId = 0;
let botId = 0;
let botAuth = '';

beforeAll(async () => {
  const specs: Record<keyof typeof F, Record<string, unknown>> = {
    short: { field_type: 1 },
    long: { field_type: 2 },
    select: { field_type: 3, field_data: { vim: { text: 'Vim', order: '1' }, emacs: { text: 'Emacs', order: '2' } } },
    date: { field_type: 4 },
    url: { field_type: 5 },
    users: { field_type: 6 },
    external: { field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://example.com/%(username)s' } },
    pronouns: { field_type: 8 },
    locked: { field_type: 1, editable_by_user: false },
  };
  for (const [key, spec] of Object.entries(specs) as Array<[keyof typeof F, Record<string, unknown>]>) {
    names[key] = uniqueName(key);
    const { data, error } = await env.client('iago').POST('/realm/profile_fields', { body: { name: names[key], ...spec } as never });
    if (!data) throw new Error(`setup: ${JSON.stringify(error)}`);
    F[key] = data.id;
  }
  deactivatedId = await createDeactivatedUser(env, 'profile-gone');
  const email = `profile-${randomBytes(3).toString('hex')}-bot@parley.test`;
  const bot = await db().user.create({ data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Profile Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } } });
  const key = randomBytes(16).toString('hex');
  await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
  botId = bot.id;
  botAuth = `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;
});

const patchOwn = (as: Person, data: unknown) => env.raw('/users/me/profile_data', { method: 'PATCH', as, body: new URLSearchParams({ data: JSON.stringify(data) }) });
const deleteOwn = (as: Person, data: unknown) => env.raw('/users/me/profile_data', { method: 'DELETE', as, body: new URLSearchParams({ data: JSON.stringify(data) }) });
const patchUser = (as: Person, userId: number, profileData: unknown) =>
  env.raw(`/users/${userId}`, { method: 'PATCH', as, body: new URLSearchParams({ profile_data: JSON.stringify(profileData) }) });

/** The user's stored values, by field id. */
async function valuesOf(userId: number): Promise<Record<number, string>> {
  const rows = await db().customProfileFieldValue.findMany({ where: { userId } });
  return Object.fromEntries(rows.map((r) => [r.fieldId, r.value]));
}

async function clearAll(userId: number): Promise<void> {
  await db().customProfileFieldValue.deleteMany({ where: { userId } });
}

/** The realm_user update events since `mark`: to every active user, each with one field. */
async function valueEvents(mark: bigint): Promise<any[]> {
  const everyone = (await activeUsers(env, env.realmId)).map((u) => u.id);
  const events = await eventsSince(env, mark);
  for (const e of events) expect(e.userIds).toEqual(everyone);
  return events.map((e) => e.payload);
}

const valueEvent = (userId: number, fieldId: number, value: string | null, renderedValue?: string) => ({
  type: 'realm_user',
  op: 'update',
  person: { user_id: userId, custom_profile_field: { id: fieldId, value, ...(renderedValue !== undefined ? { rendered_value: renderedValue } : {}) } },
});

describe('PATCH /users/me/profile_data', () => {
  it('sets values of every type, with one realm_user event per value (rendered for text fields)', async () => {
    await clearAll(uid('hamlet'));
    const mark = await markEvents(env);
    const data = [
      { id: F.short, value: 'Bartender **at night**' },
      { id: F.long, value: 'A long\n\ntext' },
      { id: F.select, value: 'emacs' },
      { id: F.date, value: '2000-02-29' },
      { id: F.url, value: 'https://zulip.com/help' },
      { id: F.users, value: [uid('othello'), uid('cordelia')] },
      { id: F.external, value: 'hamlet42' },
      { id: F.pronouns, value: 'he/him' },
    ];
    const res = await patchOwn('hamlet', data);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await valuesOf(uid('hamlet'))).toEqual({
      [F.short]: 'Bartender **at night**',
      [F.long]: 'A long\n\ntext',
      [F.select]: 'emacs',
      [F.date]: '2000-02-29',
      [F.url]: 'https://zulip.com/help',
      [F.users]: `[${uid('othello')},${uid('cordelia')}]`,
      [F.external]: 'hamlet42',
      [F.pronouns]: 'he/him',
    });
    const events = await valueEvents(mark);
    expect(events).toEqual([
      valueEvent(uid('hamlet'), F.short, 'Bartender **at night**', '<p>Bartender <strong>at night</strong></p>'),
      valueEvent(uid('hamlet'), F.long, 'A long\n\ntext', '<p>A long</p>\n<p>text</p>'),
      valueEvent(uid('hamlet'), F.select, 'emacs'),
      valueEvent(uid('hamlet'), F.date, '2000-02-29'),
      valueEvent(uid('hamlet'), F.url, 'https://zulip.com/help'),
      valueEvent(uid('hamlet'), F.users, `[${uid('othello')},${uid('cordelia')}]`),
      valueEvent(uid('hamlet'), F.external, 'hamlet42'),
      valueEvent(uid('hamlet'), F.pronouns, 'he/him'),
    ]);
    // And users read them back (profile_data).
    const user = await readUser(env, uid('hamlet'), 'polonius');
    expect(user.profile_data![String(F.short)]).toEqual({ value: 'Bartender **at night**', rendered_value: '<p>Bartender <strong>at night</strong></p>' });
    expect(user.profile_data![String(F.users)]).toEqual({ value: `[${uid('othello')},${uid('cordelia')}]` });
  });

  it('writes nothing and sends nothing for a value that does not change', async () => {
    await clearAll(uid('othello'));
    expect((await patchOwn('othello', [{ id: F.pronouns, value: 'they/them' }])).status).toBe(200);
    const mark = await markEvents(env);
    expect((await patchOwn('othello', [{ id: F.pronouns, value: 'they/them' }, { id: F.date, value: '1999-12-31' }])).status).toBe(200);
    expect(await valueEvents(mark)).toEqual([valueEvent(uid('othello'), F.date, '1999-12-31')]);
  });

  it('stores an empty string as given (only DELETE clears)', async () => {
    await clearAll(uid('othello'));
    expect((await patchOwn('othello', [{ id: F.short, value: '' }])).status).toBe(200);
    expect(await valuesOf(uid('othello'))).toEqual({ [F.short]: '' });
  });

  it.each(['desdemona', 'iago', 'shiva', 'polonius'] as const)('is open to %s for their own values', async (person) => {
    await clearAll(uid(person));
    expect((await patchOwn(person, [{ id: F.pronouns, value: 'any' }])).status).toBe(200);
    expect(await valuesOf(uid(person))).toEqual({ [F.pronouns]: 'any' });
  });

  it('lets administrators, not others, set fields that are not editable by users', async () => {
    await clearAll(uid('hamlet'));
    await clearAll(uid('iago'));
    expectJsonError(await patchOwn('hamlet', [{ id: F.locked, value: 'mine' }]), 400, 'You are not allowed to change this field. Contact an administrator to update it.', 'BAD_REQUEST');
    expectJsonError(await patchOwn('shiva', [{ id: F.locked, value: 'mine' }]), 400, 'You are not allowed to change this field. Contact an administrator to update it.', 'BAD_REQUEST');
    expect(await valuesOf(uid('hamlet'))).toEqual({});
    expect((await patchOwn('iago', [{ id: F.locked, value: 'admin value' }])).status).toBe(200);
    expect(await valuesOf(uid('iago'))).toEqual({ [F.locked]: 'admin value' });
  });

  it('refuses bots', async () => {
    const res = await env.raw('/users/me/profile_data', { method: 'PATCH', headers: { Authorization: botAuth }, body: new URLSearchParams({ data: JSON.stringify([{ id: F.short, value: 'x' }]) }) });
    expectJsonError(res, 400, 'This endpoint does not accept bot requests.', 'BAD_REQUEST');
    expect(await valuesOf(botId)).toEqual({});
  });

  describe('values that do not suit their field (nothing is written, no event)', () => {
    const cases: Array<[string, () => unknown, () => string]> = [
      ['unknown field', () => ({ id: 999_999, value: 'x' }), () => 'Field id 999999 not found.'],
      ['short text over 50', () => ({ id: F.short, value: 's'.repeat(51) }), () => `${names.short} is too long (limit: 50 characters)`],
      ['short text not a string', () => ({ id: F.short, value: [1] }), () => `${names.short} is not a string`],
      ['long text over 500', () => ({ id: F.long, value: 'l'.repeat(501) }), () => `${names.long} is too long (limit: 500 characters)`],
      ['unknown option', () => ({ id: F.select, value: 'nano' }), () => `'nano' is not a valid choice for '${names.select}'.`],
      ['option label instead of its id', () => ({ id: F.select, value: 'Vim' }), () => `'Vim' is not a valid choice for '${names.select}'.`],
      ['date in another format', () => ({ id: F.date, value: '29/02/2000' }), () => `${names.date} is not a date`],
      ['date that does not exist', () => ({ id: F.date, value: '2001-02-29' }), () => `${names.date} is not a date`],
      ['date without leading zeros', () => ({ id: F.date, value: '2001-2-3' }), () => `${names.date} is not a date`],
      ['link without a scheme', () => ({ id: F.url, value: 'zulip.com' }), () => `${names.url} is not a URL`],
      ['link with another scheme', () => ({ id: F.url, value: 'javascript:alert(1)' }), () => `${names.url} is not a URL`],
      ['link without a domain', () => ({ id: F.url, value: 'https://intranet' }), () => `${names.url} is not a URL`],
      ['users not a list', () => ({ id: F.users, value: 'hamlet' }), () => 'User IDs is not a list'],
      ['unknown users', () => ({ id: F.users, value: [uid('othello'), 999_998, 999_999] }), () => 'Invalid user IDs: 999998, 999999'],
      ['a deactivated user', () => ({ id: F.users, value: [deactivatedId] }), () => `User with ID ${deactivatedId} is deactivated`],
      ['a bot', () => ({ id: F.users, value: [botId] }), () => `User with ID ${botId} is a bot`],
      ['external account over 50', () => ({ id: F.external, value: 'e'.repeat(51) }), () => `${names.external} is too long (limit: 50 characters)`],
      ['pronouns over 50', () => ({ id: F.pronouns, value: 'p'.repeat(51) }), () => `${names.pronouns} is too long (limit: 50 characters)`],
    ];
    it.each(cases)('%s', async (_label, entry, msg) => {
      await clearAll(uid('cordelia'));
      const mark = await markEvents(env);
      // A valid entry before the bad one is not written either.
      expectJsonError(await patchOwn('cordelia', [{ id: F.pronouns, value: 'she/her' }, entry()]), 400, msg(), 'BAD_REQUEST');
      expect(await valuesOf(uid('cordelia'))).toEqual({});
      expect(await eventsSince(env, mark)).toEqual([]);
    });

    it('checks entries in order: the first bad one is reported', async () => {
      expectJsonError(await patchOwn('cordelia', [{ id: F.date, value: 'soon' }, { id: 999_999, value: 'x' }]), 400, `${names.date} is not a date`, 'BAD_REQUEST');
    });

    it('malformed data', async () => {
      expectJsonError(await env.raw('/users/me/profile_data', { method: 'PATCH', as: 'cordelia' }), 400, "Missing 'data' argument", 'REQUEST_VARIABLE_MISSING');
      expectJsonError(await env.raw('/users/me/profile_data', { method: 'PATCH', as: 'cordelia', body: new URLSearchParams({ data: '{' }) }), 400, 'data is not valid JSON', 'BAD_REQUEST');
      expectJsonError(await patchOwn('cordelia', { id: F.short, value: 'x' }), 400, 'data is not a list', 'BAD_REQUEST');
      expect(await valuesOf(uid('cordelia'))).toEqual({});
    });
  });
});

describe('DELETE /users/me/profile_data', () => {
  it('clears values, with a realm_user event (value null) per value cleared; a field without a value is skipped', async () => {
    await clearAll(uid('hamlet'));
    expect((await patchOwn('hamlet', [{ id: F.short, value: 'x' }, { id: F.users, value: [uid('othello')] }])).status).toBe(200);
    const mark = await markEvents(env);
    expect((await deleteOwn('hamlet', [F.short, F.users, F.date])).body).toEqual({ result: 'success', msg: '' });
    expect(await valuesOf(uid('hamlet'))).toEqual({});
    expect(await valueEvents(mark)).toEqual([valueEvent(uid('hamlet'), F.short, null), valueEvent(uid('hamlet'), F.users, null)]);
  });

  it('clears all or nothing: an unknown field refuses the whole request', async () => {
    await clearAll(uid('hamlet'));
    expect((await patchOwn('hamlet', [{ id: F.short, value: 'kept' }])).status).toBe(200);
    const mark = await markEvents(env);
    expectJsonError(await deleteOwn('hamlet', [F.short, 999_999]), 400, 'Field id 999999 not found.', 'BAD_REQUEST');
    expect(await valuesOf(uid('hamlet'))).toEqual({ [F.short]: 'kept' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('lets only administrators clear a field that is not editable by users', async () => {
    await db().customProfileFieldValue.create({ data: { userId: uid('hamlet'), fieldId: F.locked, value: 'set by admin' } });
    expectJsonError(await deleteOwn('hamlet', [F.locked]), 400, 'You are not allowed to change this field. Contact an administrator to update it.', 'BAD_REQUEST');
    expect((await valuesOf(uid('hamlet')))[F.locked]).toBe('set by admin');
    await db().customProfileFieldValue.create({ data: { userId: uid('desdemona'), fieldId: F.locked, value: 'owner' } });
    expect((await deleteOwn('desdemona', [F.locked])).status).toBe(200);
    expect((await valuesOf(uid('desdemona')))[F.locked]).toBeUndefined();
  });

  it('refuses bots', async () => {
    const res = await env.raw('/users/me/profile_data', { method: 'DELETE', headers: { Authorization: botAuth }, body: new URLSearchParams({ data: JSON.stringify([F.short]) }) });
    expectJsonError(res, 400, 'This endpoint does not accept bot requests.', 'BAD_REQUEST');
  });
});

describe('profile_data of PATCH /users/{user_id}: the administrators’ form', () => {
  it('sets and clears (null, "" or []) values of another user, not-editable fields included, clearing first', async () => {
    await clearAll(uid('othello'));
    await db().customProfileFieldValue.createMany({
      data: [
        { userId: uid('othello'), fieldId: F.short, value: 'old' },
        { userId: uid('othello'), fieldId: F.users, value: `[${uid('hamlet')}]` },
      ],
    });
    const mark = await markEvents(env);
    const res = await patchUser('iago', uid('othello'), [
      { id: F.locked, value: 'set by iago' },
      { id: F.short, value: null },
      { id: F.users, value: [] },
      { id: F.pronouns, value: '' },
    ]);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await valuesOf(uid('othello'))).toEqual({ [F.locked]: 'set by iago' });
    expect(await valueEvents(mark)).toEqual([
      valueEvent(uid('othello'), F.short, null),
      valueEvent(uid('othello'), F.users, null),
      valueEvent(uid('othello'), F.locked, 'set by iago', '<p>set by iago</p>'),
    ]);
  });

  it('applies nothing of the request when a value is refused (the name change neither)', async () => {
    await clearAll(uid('othello'));
    const before = await readUser(env, uid('othello'), 'iago');
    const mark = await markEvents(env);
    const res = await env.raw(`/users/${uid('othello')}`, {
      method: 'PATCH',
      as: 'iago',
      body: new URLSearchParams({ full_name: 'Renamed Othello', profile_data: JSON.stringify([{ id: F.pronouns, value: 'he/him' }, { id: F.date, value: 'tomorrow' }]) }),
    });
    expectJsonError(res, 400, `${names.date} is not a date`, 'BAD_REQUEST');
    expect(await valuesOf(uid('othello'))).toEqual({});
    expect((await readUser(env, uid('othello'), 'iago')).full_name).toBe(before.full_name);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('refuses an unknown field and a non-administrator', async () => {
    expectJsonError(await patchUser('iago', uid('othello'), [{ id: 999_999, value: null }]), 400, 'Field id 999999 not found.', 'BAD_REQUEST');
    expectJsonError(await patchUser('hamlet', uid('othello'), [{ id: F.short, value: 'x' }]), 400, 'Insufficient permission', 'BAD_REQUEST');
  });
});
