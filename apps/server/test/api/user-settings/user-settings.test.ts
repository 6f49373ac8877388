// PATCH /settings (and its deprecated aliases /settings/display, /settings/notifications): every
// setting of the spec changed and refused, its events in both shapes (user_settings_object and legacy),
// the defaults of a new account, name rules, password change and e-mail change end to end (the link
// read from the e-mail in the outbox, followed through the confirmation page). Requests are sent as
// real clients send them: parameters in the query string (zulip-js, and the real zulip-js package) or
// in a form body (the Python client).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { USER_SETTINGS, type UserSettingDefinition } from '../../../src/lib/user-settings.ts';
import { authorizationOf, basicAuth } from '../../helpers/auth.ts';
import { eventsSince, markEvents, type StoredEvent } from '../../helpers/events.ts';
import { TEST_PASSWORD, type Person } from '../../helpers/fixtures.ts';
import { createAccount, createUser, deactivateUser, type Account } from '../../helpers/people.ts';
import { withRealm } from '../../helpers/realm.ts';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { zulipJs as zulip } from '../../helpers/zulip-js.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../../../..');
const spec = JSON.parse(readFileSync(path.join(root, 'spec/dist/openapi.json'), 'utf8'));

/** Zulip's settings of the legacy groups (UserProfile.display_settings_legacy + timezone, notification_settings_legacy). */
const LEGACY_DISPLAY = [
  'color_scheme', 'default_language', 'web_home_view', 'demote_inactive_streams', 'emojiset', 'enable_drafts_synchronization', 'enter_sends',
  'fluid_layout_width', 'high_contrast_mode', 'left_side_userlist', 'starred_message_counts', 'translate_emoticons', 'twenty_four_hour_time', 'timezone',
];
const LEGACY_NOTIFICATIONS = [
  'desktop_icon_count_display', 'email_notifications_batching_period_seconds', 'enable_desktop_notifications', 'enable_digest_emails', 'enable_login_emails',
  'enable_marketing_emails', 'enable_offline_email_notifications', 'enable_offline_push_notifications', 'enable_online_push_notifications', 'enable_sounds',
  'enable_stream_audible_notifications', 'enable_stream_desktop_notifications', 'enable_stream_email_notifications', 'enable_stream_push_notifications',
  'message_content_in_email_notifications', 'notification_sound', 'pm_content_in_desktop_notifications', 'presence_enabled',
  'realm_name_in_email_notifications_policy', 'wildcard_mentions_notify',
];
const ACCOUNT_PARAMS = ['full_name', 'email', 'old_password', 'new_password'];

const env = useTestServer();

// ---------------------------------------------------------------------------------------------
// Helpers

/** A new member of the organization (TEST_PASSWORD), with an API key. */
const freshAccount = (label: string, fullName = 'Settings Tester') => createAccount(env, { label, fullName });
const authOf = (who: Account | Person) => authorizationOf(env, who);

/** PATCH `path` with `params` in the query string (zulip-js) or in a form-urlencoded body (the Python client). */
function patch(who: Account | Person, params: Record<string, string>, how: 'query' | 'form' = 'query', at = '/settings') {
  const fields = new URLSearchParams(params).toString();
  return how === 'query'
    ? env.raw(fields ? `${at}?${fields}` : at, { method: 'PATCH', headers: { Authorization: authOf(who) } })
    : env.raw(at, { method: 'PATCH', body: fields, headers: { Authorization: authOf(who), 'Content-Type': 'application/x-www-form-urlencoded' } });
}

async function expectSuccess(res: { status: number; body: any }) {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.result).toBe('success');
}

async function register(who: Account | Person, body: Record<string, unknown>): Promise<any> {
  const fields = new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  const res = await env.raw('/register', { method: 'POST', body: fields.toString(), headers: { Authorization: authOf(who), 'Content-Type': 'application/x-www-form-urlencoded' } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function poll(who: Account | Person, queue: { queue_id: string; last_event_id: number }): Promise<any[]> {
  const res = await env.raw(`/events?queue_id=${queue.queue_id}&last_event_id=${queue.last_event_id}&dont_block=true`, { headers: { Authorization: authOf(who) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.events;
}

async function userSettingsOf(who: Account | Person): Promise<Record<string, unknown>> {
  return (await register(who, { fetch_event_types: ['user_settings'], client_capabilities: { user_settings_object: true } })).user_settings;
}

const wire = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));
const ownEvents = (events: StoredEvent[], userId: number) => events.filter((e) => e.userIds.length === 1 && e.userIds[0] === userId).map((e) => e.payload);
const db = () => env.running.deps.db;
const outboxTo = (to: string) => db().emailOutbox.findMany({ where: { to }, orderBy: { id: 'asc' } });

/** A value other than the default, for each setting. */
function validChange(s: UserSettingDefinition): boolean | number | string {
  if (s.type === 'boolean') return !s.defaultValue;
  if (s.type === 'integer') {
    if (s.allowed) return s.allowed.find((v) => v !== s.defaultValue)!;
    return s.name === 'email_notifications_batching_period_seconds' ? 300 : s.defaultValue + 2;
  }
  const special: Record<string, string> = { default_language: 'de', notification_sound: 'ding', timezone: 'Europe/Copenhagen' };
  return special[s.name] ?? s.allowed!.find((v) => v !== s.defaultValue)!;
}

/** Values each setting refuses, as sent on the wire, with Zulip's error text. */
function invalidValues(s: UserSettingDefinition): Array<[string, string]> {
  const n = s.name;
  const list = `Invalid ${n}: Value error, Not in the list of possible values`;
  if (s.type === 'boolean') return [['1', `${n} is not a boolean`], ['True', `${n} is not valid JSON`], ['"true"', `${n} is not a boolean`], ['null', `${n} is not a boolean`]];
  if (s.type === 'integer') {
    const cases: Array<[string, string]> = [['"2"', `${n} is not an integer`], ['2.5', `${n} is not an integer`], ['2.0', `${n} is not an integer`], ['true', `${n} is not an integer`], ['two', `${n} is not valid JSON`]];
    if (s.allowed) cases.push(['99', list], ['0', list], ['-1', list]);
    if (n === 'email_notifications_batching_period_seconds') cases.push(['0', 'Invalid email batching period: 0 seconds'], ['604801', 'Invalid email batching period: 604801 seconds'], ['-5', 'Invalid email batching period: -5 seconds']);
    return cases;
  }
  if (n === 'default_language') return [['xx', 'Invalid default_language'], ['english', 'Invalid default_language'], ['', 'Invalid default_language']];
  if (n === 'notification_sound') return [['gong', "Invalid notification sound 'gong'"], ['', "Invalid notification sound ''"]];
  if (n === 'timezone') {
    const msg = 'Invalid timezone: Value error, Not a recognized time zone';
    return [['Mars/Olympus', msg], ['europe/copenhagen', msg], ['+01:00', msg], ['', msg]];
  }
  const message = s.invalidMessage === 'plain' ? `Invalid ${n}` : list;
  return [['bogus', message], ['', message], [String(s.allowed![0]).toUpperCase(), message]];
}

// ---------------------------------------------------------------------------------------------

describe("the settings table agrees with the spec, the database, Zulip's defaults and the event schemas", () => {
  const body = spec.components.requestBodies.UpdateSettings.content['application/x-www-form-urlencoded'];
  const properties: Record<string, any> = body.schema.properties;

  it('names exactly the settings of the spec, with their types, lists and error style', () => {
    expect(USER_SETTINGS.map((s) => s.name).sort()).toEqual(Object.keys(properties).filter((n) => !ACCOUNT_PARAMS.includes(n)).sort());
    for (const s of USER_SETTINGS) {
      const p = properties[s.name];
      expect(p.type, s.name).toBe(s.type);
      // Everything but plain strings is JSON on the wire.
      expect(body.encoding[s.name]?.contentType === 'application/json', s.name).toBe(s.type !== 'string');
      expect(p.enum ? [...p.enum].sort() : undefined, s.name).toEqual('allowed' in s && s.allowed ? [...s.allowed].sort() : undefined);
      if (p.enum) expect(p['x-zulip-invalid-message'] === 'list' ? 'list' : 'plain', s.name).toBe(s.invalidMessage);
    }
  });

  it('has the defaults the spec documents for new accounts', () => {
    for (const s of USER_SETTINGS) {
      const text: string = properties[s.name].description;
      const m = /New\s+accounts\s+start\s+with\s+`([^`]*)`/.exec(text);
      if (s.name === 'timezone') {
        expect(text).toMatch(/New\s+accounts\s+start\s+with\s+the\s+empty\s+string/);
        expect(s.defaultValue).toBe('');
        continue;
      }
      expect(m, `${s.name}: the spec states no default`).not.toBeNull();
      expect(wire(s.defaultValue), s.name).toBe(m![1]);
    }
  });

  it('has the defaults of the database (prisma/schema.prisma, model UserSettings)', () => {
    const schema = readFileSync(path.join(root, 'packages/db/prisma/schema.prisma'), 'utf8');
    const model = schema.slice(schema.indexOf('model UserSettings {'));
    const block = model.slice(0, model.indexOf('\n}'));
    const defaults = new Map<string, string>();
    for (const m of block.matchAll(/^\s+(\w+)\s+\w+\s+@default\(("[^"]*"|[^)]*)\)/gm)) defaults.set(m[1]!, m[2]!);
    const stored = USER_SETTINGS.filter((s) => s.store.table === 'user_settings');
    expect(stored.map((s) => s.store.column).sort()).toEqual([...defaults.keys()].sort());
    for (const s of stored) expect(defaults.get(s.store.column), s.name).toBe(JSON.stringify(s.defaultValue));
    // The time zone lives on the user row.
    expect(schema).toMatch(/\n\s+timezone\s+String\s+@default\(""\)/);
  });

  // Zulip's defaults, kept as data in the repository (test/fixtures/zulip-user-setting-defaults.json).
  it("has Zulip's defaults (where Zulip's default is uncertain, the table's value is the other value Zulip may use)", () => {
    const zulip: { defaults: Record<string, unknown>; uncertain: Record<string, unknown[]> } = JSON.parse(
      readFileSync(path.join(here, '../../fixtures/zulip-user-setting-defaults.json'), 'utf8'),
    );
    expect(Object.keys(zulip.defaults).sort()).toEqual(USER_SETTINGS.map((s) => s.name).sort());
    for (const s of USER_SETTINGS) {
      if (JSON.stringify(zulip.defaults[s.name]) === JSON.stringify(s.defaultValue)) continue;
      // Only an uncertain default may differ, and only for the other value Zulip may use.
      expect(zulip.uncertain[s.name] ?? [], `${s.name}: table ${JSON.stringify(s.defaultValue)}, Zulip ${JSON.stringify(zulip.defaults[s.name])}`).toContainEqual(s.defaultValue);
    }
  });

  it('matches the event schemas: every setting a user_settings property, the legacy groups as Zulip has them', () => {
    const schemas = spec.components.schemas;
    expect([...schemas.EventUserSettingsUpdate.properties.property.enum].sort()).toEqual(USER_SETTINGS.map((s) => s.name).sort());
    expect([...schemas.EventUpdateDisplaySettings.properties.setting_name.enum].sort()).toEqual([...LEGACY_DISPLAY].sort());
    expect([...schemas.EventUpdateGlobalNotifications.properties.notification_name.enum].sort()).toEqual([...LEGACY_NOTIFICATIONS].sort());
    expect(USER_SETTINGS.filter((s) => s.legacy === 'display').map((s) => s.name).sort()).toEqual([...LEGACY_DISPLAY].sort());
    expect(USER_SETTINGS.filter((s) => s.legacy === 'notifications').map((s) => s.name).sort()).toEqual([...LEGACY_NOTIFICATIONS].sort());
  });
});

describe('a new account', () => {
  it('starts with every default in user_settings of POST /register, with the choices clients offer', async () => {
    const account = await freshAccount('defaults');
    const settings = await userSettingsOf(account);
    const expected: Record<string, unknown> = Object.fromEntries(USER_SETTINGS.map((s) => [s.name, s.defaultValue]));
    const { emojiset_choices, available_notification_sounds, ...values } = settings;
    expect(values).toEqual(expected);
    expect(emojiset_choices).toEqual([
      { key: 'google', text: 'Google' },
      { key: 'twitter', text: 'Twitter' },
      { key: 'text', text: 'Plain text' },
      { key: 'google-blob', text: 'Google blobs' },
    ]);
    expect(available_notification_sounds).toContain('zulip');
    expect(available_notification_sounds).toContain('ding');
  });

  it('gets the legacy top-level keys too when the client does not declare user_settings_object (and only then)', async () => {
    const account = await freshAccount('legacy-state');
    const legacy = await register(account, { fetch_event_types: ['user_settings', 'update_display_settings', 'update_global_notifications'] });
    expect(legacy.user_settings.enter_sends).toBe(false);
    for (const name of [...LEGACY_DISPLAY, ...LEGACY_NOTIFICATIONS]) expect(legacy, name).toHaveProperty(name);
    expect(legacy.emojiset_choices).toHaveLength(4);
    expect(legacy.available_notification_sounds).toContain('zulip');
    // Settings added after feature level 89 are only in user_settings.
    expect(legacy).not.toHaveProperty('web_home_view_x');
    expect(legacy).not.toHaveProperty('email_address_visibility');
    expect(legacy).not.toHaveProperty('receives_typing_notifications');
    const modern = await register(account, {
      fetch_event_types: ['user_settings', 'update_display_settings', 'update_global_notifications'],
      client_capabilities: { user_settings_object: true },
    });
    expect(modern.user_settings.enter_sends).toBe(false);
    for (const name of [...LEGACY_DISPLAY, ...LEGACY_NOTIFICATIONS]) expect(modern, name).not.toHaveProperty(name);
  });
});

describe('PATCH /settings: every setting', () => {
  let account: Account;
  beforeAll(async () => {
    account = await freshAccount('every-setting');
  });

  it.each(USER_SETTINGS.map((s) => [s.name, s] as const))('%s: a change is stored and announced; the same value again is a no-op', async (_name, s) => {
    const value = validChange(s);
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { [s.name]: wire(value) }));
    const events = await eventsSince(env, mark);
    const own = ownEvents(events, account.id);
    const update: Record<string, unknown> = { type: 'user_settings', op: 'update', property: s.name, value };
    if (s.name === 'default_language') update['language_name'] = 'Deutsch';
    const expected: Array<Record<string, unknown>> = [update];
    if (LEGACY_DISPLAY.includes(s.name)) expected.push({ type: 'update_display_settings', user: account.email, setting_name: s.name, setting: value, ...(s.name === 'default_language' ? { language_name: 'Deutsch' } : {}) });
    if (LEGACY_NOTIFICATIONS.includes(s.name)) expected.push({ type: 'update_global_notifications', user: account.email, notification_name: s.name, setting: value });
    if (s.name === 'email_address_visibility') {
      // The visible address changed (no longer everyone's): others learn the new `email` and avatar.
      expect(own.slice(-expected.length)).toEqual(expected);
    } else {
      expect(own).toEqual(expected);
    }
    // Nobody else hears of a personal setting, except of the time zone, presence_enabled (the user's
    // presence, written at once, below), the address visibility (below) and the consent to private
    // data in exports (the administrators, below).
    if (!['timezone', 'email_address_visibility', 'presence_enabled', 'allow_private_data_export'].includes(s.name)) expect(events).toHaveLength(own.length);
    if (s.name === 'allow_private_data_export') {
      const consent = events.filter((e) => e.payload.type === 'realm_export_consent');
      expect(consent.map((e) => e.payload)).toEqual([{ type: 'realm_export_consent', user_id: account.id, consented: value }]);
      expect(consent[0]!.userIds).toContain(env.users.iago.id);
      expect(consent[0]!.userIds).not.toContain(env.users.othello.id);
      expect(events).toHaveLength(own.length + 1);
    }
    if (s.name === 'presence_enabled') {
      const presence = events.filter((e) => e.payload.type === 'presence');
      expect(presence.map((e) => e.payload.user_id)).toEqual([account.id]);
      expect(presence[0]!.userIds).toContain(env.users.othello.id);
      expect(events).toHaveLength(own.length + 1);
    }
    if (s.name === 'timezone') {
      const others = events.filter((e) => e.payload.type === 'realm_user');
      expect(others.map((e) => e.payload)).toEqual([{ type: 'realm_user', op: 'update', person: { email: account.email, user_id: account.id, timezone: value } }]);
      expect(others[0]!.userIds).toContain(env.users.othello.id);
    }
    expect((await userSettingsOf(account))[s.name]).toEqual(value);

    const again = await markEvents(env);
    await expectSuccess(await patch(account, { [s.name]: wire(value) }, 'form'));
    expect(await eventsSince(env, again)).toEqual([]);
  });

  it.each(USER_SETTINGS.map((s) => [s.name, s] as const))('%s: out-of-range values and wrong types are refused with Zulip’s text, and change nothing', async (_name, s) => {
    const before = (await userSettingsOf(account))[s.name];
    const mark = await markEvents(env);
    for (const [value, message] of invalidValues(s)) {
      const res = await patch(account, { [s.name]: value });
      expectJsonError(res, 400, message, 'BAD_REQUEST');
    }
    expect(await eventsSince(env, mark)).toEqual([]);
    expect((await userSettingsOf(account))[s.name]).toEqual(before);
  });

  it('accepts the values each list allows, and the boundaries of the batching period', async () => {
    for (const s of USER_SETTINGS) {
      if (!('allowed' in s) || !s.allowed) continue;
      for (const v of s.allowed) await expectSuccess(await patch(account, { [s.name]: wire(v) }));
    }
    for (const v of [1, 604800]) await expectSuccess(await patch(account, { email_notifications_batching_period_seconds: String(v) }));
    for (const sound of ['none', 'zulip', 'chime']) await expectSuccess(await patch(account, { notification_sound: sound }));
    for (const tz of ['UTC', 'America/New_York', 'Asia/Kolkata', 'US/Eastern']) await expectSuccess(await patch(account, { timezone: tz }));
    for (const lang of ['en', 'fr', 'zh-hans', 'pt-br']) await expectSuccess(await patch(account, { default_language: lang }));
    const settings = await userSettingsOf(account);
    expect(settings['email_notifications_batching_period_seconds']).toBe(604800);
    expect(settings['timezone']).toBe('US/Eastern');
    expect(settings['default_language']).toBe('pt-br');
  });
});

describe('PATCH /settings: the request', () => {
  it('succeeds without parameters, changing nothing', async () => {
    const mark = await markEvents(env);
    const res = await env.raw('/settings', { method: 'PATCH', as: 'hamlet' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('reports unknown parameters in ignored_parameters_unsupported and applies the rest', async () => {
    const account = await freshAccount('ignored');
    const res = await patch(account, { foo: '1', enter_sends: 'true', dense_mode: 'true' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['dense_mode', 'foo'] });
    expect((await userSettingsOf(account))['enter_sends']).toBe(true);
  });

  it('changes several settings at once, from a form body (the Python client) and the typed client', async () => {
    const account = await freshAccount('several');
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { left_side_userlist: 'true', emojiset: 'text', color_scheme: '3', enable_sounds: 'false' }, 'form'));
    const own = ownEvents(await eventsSince(env, mark), account.id).filter((e) => e.type === 'user_settings');
    expect(own.map((e) => [e.property, e.value])).toEqual([
      ['color_scheme', 3],
      ['left_side_userlist', true],
      ['emojiset', 'text'],
      ['enable_sounds', false],
    ]);
    const { error } = await env.client('cordelia').PATCH('/settings', { body: { twenty_four_hour_time: true, web_home_view: 'all_messages' } });
    expect(error).toBeUndefined();
    const settings = await userSettingsOf('cordelia');
    expect([settings['twenty_four_hour_time'], settings['web_home_view']]).toEqual([true, 'all_messages']);
  });

  it('refuses the whole request when one value is bad: nothing changes', async () => {
    const account = await freshAccount('atomic');
    const res = await patch(account, { enter_sends: 'true', full_name: 'New Name', color_scheme: '7' });
    expectJsonError(res, 400, 'Invalid color_scheme: Value error, Not in the list of possible values', 'BAD_REQUEST');
    const res2 = await patch(account, { enter_sends: 'true', full_name: 'x', notification_sound: 'gong' });
    expectJsonError(res2, 400, "Invalid notification sound 'gong'", 'BAD_REQUEST');
    const res3 = await patch(account, { enter_sends: 'true', full_name: 'x' });
    expectJsonError(res3, 400, 'Name too short!', 'BAD_REQUEST');
    expect((await userSettingsOf(account))['enter_sends']).toBe(false);
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).fullName).toBe('Settings Tester');
  });

  it('refuses bots', async () => {
    const email = 'settings-bot@parley.test';
    const bot = await db().user.create({ data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Settings Bot', isBot: true, botType: 1, botOwnerId: env.users.hamlet.id, settings: { create: {} } } });
    const key = 's'.repeat(32);
    await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
    const headers = { Authorization: basicAuth(email, key) };
    expectJsonError(await env.raw('/settings?enter_sends=true', { method: 'PATCH', headers }), 400, 'This endpoint does not accept bot requests.', 'BAD_REQUEST');
    expectJsonError(await env.raw('/settings', { method: 'PATCH', headers }), 400, 'This endpoint does not accept bot requests.', 'BAD_REQUEST');
    expect((await db().userSettings.findUniqueOrThrow({ where: { userId: bot.id } })).enterSends).toBe(false);
  });

  it('lets guests change their own settings', async () => {
    await expectSuccess(await patch('polonius', { starred_message_counts: 'false' }));
    expect((await userSettingsOf('polonius'))['starred_message_counts']).toBe(false);
  });

  it('requires authentication', async () => {
    const res = await env.raw('/settings?enter_sends=true', { method: 'PATCH' });
    expectJsonError(res, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
  });

  it('works with the real zulip-js package (parameters in the query string)', async () => {
    const account = await freshAccount('zulip-js');
    const client = await zulip({ username: account.email, apiKey: account.key, realm: env.url });
    const answer = await client.callEndpoint('/settings', 'PATCH', { emojiset: 'google-blob', left_side_userlist: true, email_notifications_batching_period_seconds: 600 });
    expect(answer).toEqual({ result: 'success', msg: '' });
    const refused = await client.callEndpoint('/settings', 'PATCH', { web_home_view: 'nowhere' });
    expect(refused).toMatchObject({ result: 'error', msg: 'Invalid web_home_view: Value error, Not in the list of possible values', code: 'BAD_REQUEST' });
    const settings = await userSettingsOf(account);
    expect([settings['emojiset'], settings['left_side_userlist'], settings['email_notifications_batching_period_seconds']]).toEqual(['google-blob', true, 600]);
  });

  it('deletes the drafts stored on the server when drafts synchronization is turned off, without events', async () => {
    const account = await freshAccount('drafts-off');
    await db().draft.create({ data: { userId: account.id, type: '', toIds: [], topic: '', content: 'kept until sync is off', lastEditTime: new Date() } });
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { enable_drafts_synchronization: 'false' }));
    expect(await db().draft.count({ where: { userId: account.id } })).toBe(0);
    expect((await eventsSince(env, mark)).map((e) => e.payload.type).sort()).toEqual(['update_display_settings', 'user_settings']);
  });
});

// The deprecated aliases of PATCH /settings: each takes every parameter of PATCH /settings, not only
// those of its legacy group.
describe('PATCH /settings/display', () => {
  it('is PATCH /settings under the deprecated path, with every parameter', async () => {
    const account = await freshAccount('display-alias');
    await expectSuccess(await patch(account, { enable_sounds: 'false', twenty_four_hour_time: 'true' }, 'query', '/settings/display'));
    const ignored = await patch(account, { nonsense: 'x' }, 'query', '/settings/display');
    expect(ignored.body.ignored_parameters_unsupported).toEqual(['nonsense']);
    const settings = await userSettingsOf(account);
    expect([settings['enable_sounds'], settings['twenty_four_hour_time']]).toEqual([false, true]);
  });
});

describe('PATCH /settings/notifications', () => {
  it('is PATCH /settings under the deprecated path, with every parameter', async () => {
    const account = await freshAccount('notifications-alias');
    await expectSuccess(await patch(account, { emojiset: 'twitter', enable_digest_emails: 'false' }, 'form', '/settings/notifications'));
    const res = await patch(account, { color_scheme: '9' }, 'query', '/settings/notifications');
    expectJsonError(res, 400, 'Invalid color_scheme: Value error, Not in the list of possible values', 'BAD_REQUEST');
    const settings = await userSettingsOf(account);
    expect([settings['emojiset'], settings['enable_digest_emails']]).toEqual(['twitter', false]);
  });
});

describe('events, as each kind of client receives them', () => {
  it('user_settings_object clients get user_settings events only; older clients also the legacy events', async () => {
    const account = await freshAccount('event-shapes');
    const modern = await register(account, { client_capabilities: { user_settings_object: true } });
    const legacy = await register(account, {});
    const onlyDisplay = await register(account, { event_types: ['update_display_settings'] });
    await expectSuccess(await patch(account, { twenty_four_hour_time: 'true', enable_sounds: 'false', send_read_receipts: 'false', default_language: 'fr' }));
    const strip = (events: any[]) => events.map(({ id: _id, ...rest }) => rest);
    expect(strip(await poll(account, modern))).toEqual([
      { type: 'user_settings', op: 'update', property: 'twenty_four_hour_time', value: true },
      { type: 'user_settings', op: 'update', property: 'default_language', value: 'fr', language_name: 'Français' },
      { type: 'user_settings', op: 'update', property: 'enable_sounds', value: false },
      { type: 'user_settings', op: 'update', property: 'send_read_receipts', value: false },
    ]);
    expect(strip(await poll(account, legacy))).toEqual([
      { type: 'user_settings', op: 'update', property: 'twenty_four_hour_time', value: true },
      { type: 'update_display_settings', user: account.email, setting_name: 'twenty_four_hour_time', setting: true },
      { type: 'user_settings', op: 'update', property: 'default_language', value: 'fr', language_name: 'Français' },
      { type: 'update_display_settings', user: account.email, setting_name: 'default_language', setting: 'fr', language_name: 'Français' },
      { type: 'user_settings', op: 'update', property: 'enable_sounds', value: false },
      { type: 'update_global_notifications', user: account.email, notification_name: 'enable_sounds', setting: false },
      { type: 'user_settings', op: 'update', property: 'send_read_receipts', value: false },
    ]);
    expect(strip(await poll(account, onlyDisplay))).toEqual([
      { type: 'update_display_settings', user: account.email, setting_name: 'twenty_four_hour_time', setting: true },
      { type: 'update_display_settings', user: account.email, setting_name: 'default_language', setting: 'fr', language_name: 'Français' },
    ]);
  });

  it('others see a time zone change (realm_user), and never the user’s own settings events', async () => {
    const account = await freshAccount('tz-watch');
    const watcher = await register('othello', {});
    await expectSuccess(await patch(account, { timezone: 'Asia/Tokyo', enter_sends: 'true' }));
    const seen = (await poll('othello', watcher)).map(({ id: _id, ...rest }: any) => rest);
    expect(seen).toEqual([{ type: 'realm_user', op: 'update', person: { email: account.email, user_id: account.id, timezone: 'Asia/Tokyo' } }]);
    const { data } = await env.client('othello').GET('/users/{user_id}', { params: { path: { user_id: account.id } } });
    expect(data!.user.timezone).toBe('Asia/Tokyo');
  });
});

describe('full_name', () => {
  it('changes the name (stripped), tells everyone and shows in GET /users', async () => {
    const account = await freshAccount('rename', 'Before Rename');
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { full_name: '  After Rename  ' }));
    const events = await eventsSince(env, mark);
    expect(events.map((e) => e.payload)).toEqual([{ type: 'realm_user', op: 'update', person: { user_id: account.id, full_name: 'After Rename' } }]);
    expect(events[0]!.userIds).toContain(env.users.othello.id);
    const { data } = await env.client('othello').GET('/users');
    expect(data!.members.find((m) => m.user_id === account.id)!.full_name).toBe('After Rename');
    // The same name again (even with other spaces around it) is a no-op.
    const again = await markEvents(env);
    await expectSuccess(await patch(account, { full_name: 'After Rename ' }));
    await expectSuccess(await patch(account, { full_name: 'After Rename' }));
    expect(await eventsSince(env, again)).toEqual([]);
  });

  it('refuses names Zulip refuses', async () => {
    const account = await freshAccount('bad-names');
    for (const [name, message] of [
      ['x'.repeat(101), 'Name too long!'],
      ['x', 'Name too short!'],
      ['   y   ', 'Name too short!'],
      ['', 'Name too short!'],
      ['Star *name', 'Invalid characters in name!'],
      ['Back`tick', 'Invalid characters in name!'],
      ['Back\\slash', 'Invalid characters in name!'],
      ['Quote > name', 'Invalid characters in name!'],
      ['Double "quote"', 'Invalid characters in name!'],
      ['At @name', 'Invalid characters in name!'],
      ['Mimic|123', 'Invalid format!'],
    ]) {
      expectJsonError(await patch(account, { full_name: name! }, 'form'), 400, message!, 'BAD_REQUEST');
    }
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).fullName).toBe('Settings Tester');
    await expectSuccess(await patch(account, { full_name: 'x'.repeat(100) }));
  });

  it('is ignored without an error when the organization disables name changes, except for administrators', async () => {
    const account = await freshAccount('no-renames', 'Fixed Name');
    await withRealm(env, env.realmId, { nameChangesDisabled: true }, async () => {
      const mark = await markEvents(env);
      await expectSuccess(await patch(account, { full_name: 'Renamed Anyway', enter_sends: 'true' }));
      // Not even validated when ignored.
      await expectSuccess(await patch(account, { full_name: 'x' }));
      expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).fullName).toBe('Fixed Name');
      expect((await eventsSince(env, mark)).map((e) => e.payload.type)).toEqual(['user_settings', 'update_display_settings']);
      await expectSuccess(await patch('iago', { full_name: 'Iago the Admin' }));
      expect((await db().user.findUniqueOrThrow({ where: { id: env.users.iago.id } })).fullName).toBe('Iago the Admin');
    });
  });
});

describe('email_address_visibility', () => {
  it('tells who can now see the real address, who no longer can, and everyone the shown address', async () => {
    const account = await freshAccount('visibility');
    const host = new URL((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { email_address_visibility: '3' }));
    const events = await eventsSince(env, mark);
    const lost = events.find((e) => e.payload.person?.delivery_email === null)!;
    expect(lost.userIds).toContain(env.users.hamlet.id);
    expect(lost.userIds).toContain(env.users.polonius.id);
    expect(lost.userIds).not.toContain(env.users.iago.id);
    expect(lost.userIds).not.toContain(account.id);
    expect(events.find((e) => e.payload.person?.new_email)!.payload.person.new_email).toBe(`user${account.id}@${host}`);
    expect(events.some((e) => e.payload.person?.avatar_url)).toBe(true);
    const asMember = await env.client('hamlet').GET('/users/{user_id}', { params: { path: { user_id: account.id } } });
    expect([asMember.data!.user.email, asMember.data!.user.delivery_email]).toEqual([`user${account.id}@${host}`, null]);
    const asAdmin = await env.client('iago').GET('/users/{user_id}', { params: { path: { user_id: account.id } } });
    expect(asAdmin.data!.user.delivery_email).toBe(account.email);
    const list = await env.client('hamlet').GET('/users');
    expect(list.data!.members.find((m) => m.user_id === account.id)!.delivery_email).toBeNull();

    const back = await markEvents(env);
    await expectSuccess(await patch(account, { email_address_visibility: '1' }));
    const gained = (await eventsSince(env, back)).find((e) => e.payload.person?.delivery_email === account.email)!;
    expect(gained.userIds).toContain(env.users.hamlet.id);
    expect(gained.userIds).not.toContain(env.users.iago.id);
    const again = await env.client('hamlet').GET('/users');
    expect(again.data!.members.find((m) => m.user_id === account.id)!.email).toBe(account.email);
  });
});

describe('password change', () => {
  const fetchKey = (email: string, password: string) =>
    env.raw('/fetch_api_key', { method: 'POST', body: new URLSearchParams({ username: email, password }).toString(), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });

  it('end to end: the new password logs in (fetch_api_key), the old one no longer does, the API key stays valid', async () => {
    const account = await freshAccount('password');
    const newPassword = 'a quite different passphrase 42';
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { old_password: TEST_PASSWORD, new_password: newPassword }, 'form'));
    expect(await eventsSince(env, mark)).toEqual([]);
    const me = await env.raw('/users/me', { headers: { Authorization: account.auth } });
    expect(me.status).toBe(200);
    const login = await fetchKey(account.email, newPassword);
    expect(login.status).toBe(200);
    expect(login.body.api_key).toBe(account.key);
    expectJsonError(await fetchKey(account.email, TEST_PASSWORD), 401, 'Your username or password is incorrect', 'AUTHENTICATION_FAILED');
    const stored = (await db().user.findUniqueOrThrow({ where: { id: account.id } })).passwordHash!;
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(stored).not.toContain(newPassword);
  });

  it('refuses a wrong or missing current password', async () => {
    const account = await freshAccount('wrong-password');
    expectJsonError(await patch(account, { old_password: 'not it', new_password: 'a quite different passphrase 42' }), 400, 'Wrong password!', 'BAD_REQUEST');
    expectJsonError(await patch(account, { new_password: 'a quite different passphrase 42' }), 400, 'Wrong password!', 'BAD_REQUEST');
    expect((await fetchKey(account.email, TEST_PASSWORD)).status).toBe(200);
  });

  it('refuses weak new passwords (too short, or guessed in under 10,000 tries)', async () => {
    const account = await freshAccount('weak-password');
    for (const weak of ['abc', 'abcde', 'password', 'qwerty123', 'zzzzzzzz', '123456789', 'iloveyou']) {
      expectJsonError(await patch(account, { old_password: TEST_PASSWORD, new_password: weak }), 400, 'New password is too weak!', 'BAD_REQUEST');
    }
    expect((await fetchKey(account.email, TEST_PASSWORD)).status).toBe(200);
    await expectSuccess(await patch(account, { old_password: TEST_PASSWORD, new_password: 'Tr0ub4dor&3 horse' }));
  });

  it('checks the current password before the new one, and nothing else is changed when it fails', async () => {
    const account = await freshAccount('password-order');
    expectJsonError(await patch(account, { old_password: 'nope', new_password: 'abc', enter_sends: 'true' }), 400, 'Wrong password!', 'BAD_REQUEST');
    expect((await userSettingsOf(account))['enter_sends']).toBe(false);
  });

  it('limits attempts: after 5 in 30 minutes, even the right password waits, with Zulip’s message', async () => {
    const account = await freshAccount('password-limit');
    for (let i = 0; i < 5; i++) expectJsonError(await patch(account, { old_password: `guess ${i}`, new_password: 'a quite different passphrase 42' }), 400, 'Wrong password!');
    const limited = await patch(account, { old_password: TEST_PASSWORD, new_password: 'a quite different passphrase 42' });
    expect(limited.status).toBe(400);
    expect(limited.body.code).toBe('BAD_REQUEST');
    const m = /^You're making too many attempts! Try again in (\d+) seconds\.$/.exec(limited.body.msg);
    expect(m, limited.body.msg).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(1700);
    expect(Number(m![1])).toBeLessThanOrEqual(1800);
    expect((await fetchKey(account.email, TEST_PASSWORD)).status).toBe(200);
  });

  it('a success starts the count over', async () => {
    const account = await freshAccount('password-reset-count');
    for (let i = 0; i < 4; i++) expectJsonError(await patch(account, { old_password: `guess ${i}`, new_password: 'a quite different passphrase 42' }), 400, 'Wrong password!');
    await expectSuccess(await patch(account, { old_password: TEST_PASSWORD, new_password: 'another fine passphrase 43' }));
    for (let i = 0; i < 5; i++) expectJsonError(await patch(account, { old_password: `guess ${i}`, new_password: 'a quite different passphrase 42' }), 400, 'Wrong password!');
  });
});

describe('e-mail change', () => {
  /** The confirmation path of the link in the newest e-mail to `to`. */
  async function confirmationPath(to: string): Promise<string> {
    const mails = await outboxTo(to);
    expect(mails.length).toBeGreaterThan(0);
    const mail = mails.at(-1)!;
    const link = /(https?:\/\/\S+\/accounts\/confirm_new_email\/([a-z0-9]{24}))/.exec(mail.text);
    expect(link, mail.text).not.toBeNull();
    expect(mail.html).toContain(link![1]);
    return new URL(link![1]!).pathname;
  }

  /** Opens the link's page and submits its form, as a browser does. */
  async function followLink(linkPath: string): Promise<{ status: number; html: string }> {
    const pageRes = await fetch(`${env.url}${linkPath}`);
    const html = await pageRes.text();
    if (pageRes.status !== 200) return { status: pageRes.status, html };
    const action = /<form[^>]*method="post"[^>]*action="([^"]+)"/.exec(html)![1]!;
    const key = /name="key" value="([^"]+)"/.exec(html)![1]!;
    const res = await fetch(`${env.url}${action}`, { method: 'POST', body: new URLSearchParams({ key }), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    return { status: res.status, html: await res.text() };
  }

  it('end to end: mails a link to the new address; the address changes only when it is followed; the old address is told', async () => {
    const account = await freshAccount('mail-change');
    const newEmail = `renamed-${account.id}@parley.test`;
    const mark = await markEvents(env);
    await expectSuccess(await patch(account, { email: `  ${newEmail} ` }));
    expect(await eventsSince(env, mark)).toEqual([]);
    // Nothing changed yet: the old address still authenticates, GET /users shows it.
    const me = await env.raw('/users/me', { headers: { Authorization: account.auth } });
    expect(me.body.email).toBe(account.email);
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).pendingEmail).toBe(newEmail);
    const linkPath = await confirmationPath(newEmail);
    // Only a hash of the key is stored.
    const key = linkPath.split('/').at(-1)!;
    const stored = await db().emailChange.findFirstOrThrow({ where: { userId: account.id } });
    expect(stored.keyHash).not.toContain(key);
    expect(stored.keyHash).toMatch(/^[0-9a-f]{64}$/);

    // Opening the page alone changes nothing (scanners fetch links).
    const page = await fetch(`${env.url}${linkPath}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(newEmail);
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).deliveryEmail).toBe(account.email);

    const confirmed = await followLink(linkPath);
    expect(confirmed.status, confirmed.html).toBe(200);
    expect(confirmed.html).toContain(newEmail);
    const events = await eventsSince(env, mark);
    expect(events.find((e) => e.payload.person?.delivery_email === newEmail)!.userIds).toContain(env.users.othello.id);
    expect(events.some((e) => e.payload.person?.new_email === newEmail)).toBe(true);
    expect(events.some((e) => e.payload.person?.avatar_url)).toBe(true);

    // The same key works with the new address; the old address no longer does.
    expect((await env.raw('/users/me', { headers: { Authorization: basicAuth(newEmail, account.key) } })).body.email).toBe(newEmail);
    expectJsonError(await env.raw('/users/me', { headers: { Authorization: account.auth } }), 401, 'Invalid API key', 'UNAUTHORIZED');
    const list = await env.client('othello').GET('/users');
    expect(list.data!.members.find((m) => m.user_id === account.id)!.email).toBe(newEmail);
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).pendingEmail).toBeNull();
    const notice = await outboxTo(account.email);
    expect(notice).toHaveLength(1);
    expect(notice[0]!.text).toContain(newEmail);
    // A link works once.
    const reused = await followLink(linkPath);
    expect(reused.status).toBe(404);
  });

  it('only the newest link works', async () => {
    const account = await freshAccount('mail-twice');
    const first = `first-${account.id}@parley.test`;
    const second = `second-${account.id}@parley.test`;
    await expectSuccess(await patch(account, { email: first }));
    const firstLink = await confirmationPath(first);
    await expectSuccess(await patch(account, { email: second }, 'form'));
    const secondLink = await confirmationPath(second);
    expect((await followLink(firstLink)).status).toBe(404);
    expect((await followLink(secondLink)).status).toBe(200);
    expect((await db().user.findUniqueOrThrow({ where: { id: account.id } })).deliveryEmail).toBe(second);
  });

  it('refuses a malformed or unknown link', async () => {
    expect((await fetch(`${env.url}/accounts/confirm_new_email/nope`)).status).toBe(404);
    expect((await fetch(`${env.url}/accounts/confirm_new_email/${'a'.repeat(24)}`)).status).toBe(404);
    const post = await fetch(`${env.url}/accounts/confirm_new_email`, { method: 'POST', body: 'key=zzzzzzzzzzzzzzzzzzzzzzzz', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(post.status).toBe(404);
  });

  it("refuses Zulip's invalid, taken and deactivated addresses; the current address is a no-op", async () => {
    const account = await freshAccount('mail-invalid');
    for (const bad of ['not-an-address', 'two@@parley.test', '', 'spaces in@parley.test']) {
      expectJsonError(await patch(account, { email: bad }), 400, 'Invalid address.', 'BAD_REQUEST');
    }
    expectJsonError(await patch(account, { email: env.users.othello.email }), 400, 'Already has an account.', 'BAD_REQUEST');
    expectJsonError(await patch(account, { email: env.users.othello.email.toUpperCase() }), 400, 'Already has an account.', 'BAD_REQUEST');
    const gone = await createUser(env, { label: 'mail-gone', fullName: 'Gone User' });
    await deactivateUser(env, gone.id);
    expectJsonError(await patch(account, { email: gone.email }), 400, 'Account has been deactivated.', 'BAD_REQUEST');
    await expectSuccess(await patch(account, { email: ` ${account.email} ` }));
    expect(await db().emailChange.count({ where: { userId: account.id } })).toBe(0);
    expect(await outboxTo(account.email)).toEqual([]);
  });

  it('is refused to non-administrators when the organization disables e-mail changes', async () => {
    const account = await freshAccount('mail-disabled');
    await withRealm(env, env.realmId, { emailChangesDisabled: true }, async () => {
      expectJsonError(await patch(account, { email: `x-${account.id}@parley.test` }), 400, 'Email address changes are disabled in this organization.', 'BAD_REQUEST');
      // Even an invalid address gets the policy error first; the current one is still fine.
      expectJsonError(await patch(account, { email: 'junk' }), 400, 'Email address changes are disabled in this organization.', 'BAD_REQUEST');
      await expectSuccess(await patch(account, { email: account.email }));
      await expectSuccess(await patch('iago', { email: `iago-new-${account.id}@parley.test` }));
    });
    expect(await db().emailChange.count({ where: { userId: env.users.iago.id } })).toBe(1);
  });

  it('is rate limited: 2 requests an hour (429)', async () => {
    const account = await freshAccount('mail-limit');
    await expectSuccess(await patch(account, { email: `one-${account.id}@parley.test` }));
    await expectSuccess(await patch(account, { email: `two-${account.id}@parley.test` }));
    const res = await patch(account, { email: `three-${account.id}@parley.test` });
    expectJsonError(res, 429, 'API usage exceeded rate limit', 'RATE_LIMIT_HIT');
    expect(res.body['retry-after']).toBeGreaterThan(3000);
    expect(await outboxTo(`three-${account.id}@parley.test`)).toEqual([]);
  });
});
