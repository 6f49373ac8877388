// Bot accounts (Zulip's /bots endpoints): creation by each role under the organization's
// can_create_bots_group / can_create_write_only_bots_group, the bot's address and service, the
// realm_user events for everyone and the realm_bot events (with the API key) for the owner and the
// human administrators only (the owner alone for a bot with a private default channel); listing,
// updating (name, owner, role, default channels, service, configuration) with every check before any
// change; deactivation and reactivation (POST /users/{id}/reactivate), a user's deactivation taking
// their bots along; key regeneration; the realm_bots state of /register; and `manage create-bot`.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { TEST_SECRET, type Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents, type StoredEvent } from '../../helpers/events.ts';
import { activeUsers, createAccount } from '../../helpers/people.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createChannel } from '../../helpers/channels.ts';
import { setRealmGroupSetting, useSystemGroupIds } from '../../helpers/groups.ts';
import { registerQueue } from '../../helpers/queues.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const env = useTestServer();
const sys = useSystemGroupIds(env);
const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

/** A bot made through the API: its id, address, key and a client acting as it. */
interface Bot {
  id: number;
  email: string;
  apiKey: string;
  client: ParleyClient;
  auth: string;
}

const shortName = (label: string) => `${label}${randomBytes(3).toString('hex')}`;
/** Parameters whose strings are JSON-encoded on the wire (as Zulip's web app sends them). */
const JSON_STRINGS = new Set(['payload_url', 'service_payload_url']);
const form = (fields: Record<string, string | number | boolean | object>) =>
  new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, typeof v === 'string' && !JSON_STRINGS.has(k) ? v : JSON.stringify(v)]));

const rawPost = (as: Person | { auth: string }, pathname: string, fields: Record<string, string | number | boolean | object> = {}) =>
  typeof as === 'string'
    ? env.raw(pathname, { method: 'POST', as, body: form(fields) })
    : env.raw(pathname, { method: 'POST', headers: { Authorization: as.auth }, body: form(fields) });
const rawPatch = (as: Person | { auth: string }, botId: number, fields: Record<string, string | number | boolean | object>) =>
  typeof as === 'string'
    ? env.raw(`/bots/${botId}`, { method: 'PATCH', as, body: form(fields) })
    : env.raw(`/bots/${botId}`, { method: 'PATCH', headers: { Authorization: as.auth }, body: form(fields) });
const rawDelete = (as: Person | { auth: string }, pathname: string) =>
  typeof as === 'string' ? env.raw(pathname, { method: 'DELETE', as }) : env.raw(pathname, { method: 'DELETE', headers: { Authorization: as.auth } });

/** The organization's host: bots' addresses are `<short name>-bot@<host>`. */
async function realmHost(): Promise<string> {
  return new URL((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
}

/** POST /bots as `as`; the new bot. */
async function createBot(as: Person, fields: Record<string, string | number | boolean | object> = {}): Promise<Bot> {
  const short = (fields.short_name as string | undefined) ?? shortName('bot');
  const res = await rawPost(as, '/bots', { full_name: `Bot ${short}`, short_name: short, bot_type: 1, ...fields });
  if (res.status !== 200) throw new Error(`create-bot failed: ${JSON.stringify(res.body)}`);
  const email = `${short}-bot@${await realmHost()}`;
  const apiKey = res.body.api_key as string;
  return { id: res.body.user_id, email, apiKey, client: createParleyClient({ site: env.url, email, apiKey }), auth: basicAuth(email, apiKey) };
}

const userCount = () => db().user.count({ where: { realmId: env.realmId } });
const humanAdmins = async () => {
  const rows = await db().user.findMany({ where: { realmId: env.realmId, isActive: true, isBot: false, role: { in: [100, 200] } }, select: { id: true } });
  return rows.map((r) => r.id).sort((a, b) => a - b);
};
const sortedIds = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b);
const ofType = (events: StoredEvent[], type: string, op?: string) => events.filter((e) => e.payload.type === type && (op === undefined || e.payload.op === op));

describe('POST /bots', () => {
  it.each(['desdemona', 'iago', 'shiva', 'hamlet'] as const)('creates a generic bot for %s, announced to everyone and, with its key, to its owner and the administrators', async (person) => {
    const mark = await markEvents(env);
    const short = shortName('gen');
    const res = await rawPost(person, '/bots', { full_name: `Generic ${short}`, short_name: `  ${short} ` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      result: 'success',
      msg: '',
      user_id: expect.any(Number),
      api_key: expect.stringMatching(/^[A-Za-z0-9]{32}$/),
      avatar_url: expect.stringMatching(/^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/),
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
    });
    const id = res.body.user_id as number;
    const email = `${short}-bot@${await realmHost()}`;
    const row = await db().user.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ email, deliveryEmail: email, isBot: true, botType: 1, botOwnerId: uid(person), role: 400, isActive: true, passwordHash: null });
    // Bots join no channel (Zulip subscribes humans only to the default channels).
    expect(await db().subscription.count({ where: { userId: id } })).toBe(0);

    const events = await eventsSince(env, mark);
    const [add] = ofType(events, 'realm_user', 'add');
    expect(add!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id));
    expect(add!.payload.person).toMatchObject({ user_id: id, email, delivery_email: email, is_bot: true, bot_type: 1, bot_owner_id: uid(person), full_name: `Generic ${short}` });
    const botEvents = ofType(events, 'realm_bot');
    expect(botEvents).toHaveLength(1);
    expect(botEvents[0]!.userIds).toEqual(sortedIds([...(await humanAdmins()), uid(person)]));
    expect(botEvents[0]!.payload).toEqual({
      type: 'realm_bot',
      op: 'add',
      bot: {
        email,
        user_id: id,
        full_name: `Generic ${short}`,
        bot_type: 1,
        is_active: true,
        api_key: res.body.api_key,
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
        avatar_url: res.body.avatar_url,
        services: [],
        owner_id: uid(person),
      },
    });

    // The bot works with its key, and is listed as a bot by GET /users.
    const bot = createParleyClient({ site: env.url, email, apiKey: res.body.api_key });
    const me = await bot.GET('/users/me');
    expect(me.data).toMatchObject({ user_id: id, is_bot: true, bot_type: 1, bot_owner_id: uid(person) });
    const { data } = await env.client('othello').GET('/users/{user_id}', { params: { path: { user_id: id }, query: {} } });
    expect(data!.user).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: uid(person), delivery_email: email });
  });

  it('refuses guests and bots, creating nothing', async () => {
    const bot = await createBot('hamlet');
    const before = await userCount();
    const mark = await markEvents(env);
    expectJsonError(await rawPost('polonius', '/bots', { full_name: 'Guest Bot', short_name: shortName('guest') }), 400, 'Not allowed for guest users');
    expectJsonError(await rawPost(bot, '/bots', { full_name: 'Bot Bot', short_name: shortName('botbot') }), 400, 'This endpoint does not accept bot requests.');
    expect(await userCount()).toBe(before);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('answers bad input with Zulip\'s errors, in Zulip\'s order, and creates nothing', async () => {
    const taken = await createBot('hamlet');
    const takenShort = taken.email.split('-bot@')[0]!;
    const secret = await createChannel(env, 'iago', { invite_only: true });
    const before = await userCount();
    const mark = await markEvents(env);
    const attempt = (fields: Record<string, string | number | boolean | object>) =>
      rawPost('hamlet', '/bots', { full_name: 'Some Bot', short_name: shortName('bad'), ...fields });
    expectJsonError(await attempt({ short_name: '   ' }), 400, 'Bad name or username');
    // A blank short name is found before a bad name, a bad name before an unusable short name.
    expectJsonError(await attempt({ short_name: '', full_name: 'x' }), 400, 'Bad name or username');
    expectJsonError(await attempt({ short_name: 'two words', full_name: 'x' }), 400, 'Name too short!');
    expectJsonError(await attempt({ short_name: 'two words' }), 400, 'Bad name or username');
    expectJsonError(await attempt({ short_name: 'a@b' }), 400, 'Bad name or username');
    expectJsonError(await attempt({ full_name: 'Bad *name*' }), 400, 'Invalid characters in name!');
    expectJsonError(await attempt({ bot_type: 4, service_name: 'converter' }), 400, 'Embedded bots are not enabled.');
    expectJsonError(await attempt({ short_name: takenShort }), 400, 'Email is already in use.');
    expectJsonError(await attempt({ full_name: 'King Hamlet' }), 400, 'Name is already in use.');
    expectJsonError(await attempt({ bot_type: 7 }), 400, 'Invalid bot type');
    expectJsonError(await attempt({ bot_type: 3, payload_url: 'https://bots.example.com/x', interface_type: 3 }), 400, 'Invalid interface type');
    expectJsonError(await attempt({ default_sending_stream: 'no such channel' }), 400, "Invalid channel name 'no such channel'");
    expectJsonError(await attempt({ default_sending_stream: '' }), 400, "Invalid channel name ''");
    // A private channel the caller is not subscribed to does not exist for them.
    expectJsonError(await attempt({ default_events_register_stream: secret.name }), 400, `Invalid channel name '${secret.name}'`);
    // Parameter errors: JSON-encoded values, checked before anything else.
    const rawPayload = await env.raw('/bots', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ full_name: 'Some Bot', short_name: shortName('bad'), bot_type: '3', payload_url: 'https://x.example.com' }) });
    expectJsonError(rawPayload, 400, 'payload_url is not valid JSON');
    expectJsonError(await attempt({ bot_type: 3, payload_url: 'not a url' }), 400, 'Invalid payload_url: Value error, Not a URL');
    expectJsonError(await attempt({ bot_type: 2, config_data: { a: 1 } }), 400, 'config_data["a"] is not a string');
    expectJsonError(await attempt({ bot_type: 'generic' }), 400, 'bot_type is not valid JSON');
    expectJsonError(await env.raw('/bots', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ full_name: 'No Short Name' }) }), 400, "Missing 'short_name' argument", 'REQUEST_VARIABLE_MISSING');
    expect(await userCount()).toBe(before);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('follows can_create_bots_group and can_create_write_only_bots_group', async () => {
    try {
      await setRealmGroupSetting(env, 'can_create_bots_group', sys['role:administrators']);
      expectJsonError(await rawPost('hamlet', '/bots', { full_name: 'Not Allowed', short_name: shortName('no'), bot_type: 1 }), 400, 'Insufficient permission');
      expectJsonError(await rawPost('hamlet', '/bots', { full_name: 'Not Allowed', short_name: shortName('no'), bot_type: 3, payload_url: 'https://bots.example.com' }), 400, 'Insufficient permission');
      // Members may still create incoming webhook bots (can_create_write_only_bots_group: members).
      const hook = await createBot('hamlet', { bot_type: 2 });
      expect((await db().user.findUniqueOrThrow({ where: { id: hook.id } })).botType).toBe(2);
      await setRealmGroupSetting(env, 'can_create_write_only_bots_group', sys['role:nobody']);
      expectJsonError(await rawPost('hamlet', '/bots', { full_name: 'Not Allowed', short_name: shortName('no'), bot_type: 2 }), 400, 'Insufficient permission');
      // Administrators still may, every kind.
      await createBot('iago', { bot_type: 1 });
      await createBot('iago', { bot_type: 2 });
    } finally {
      await setRealmGroupSetting(env, 'can_create_bots_group', sys['role:members']);
      await setRealmGroupSetting(env, 'can_create_write_only_bots_group', sys['role:members']);
    }
  });

  it('gives an outgoing webhook bot its service (URL, interface, a new token), shown to its owner', async () => {
    const mark = await markEvents(env);
    const short = shortName('out');
    const bot = await createBot('hamlet', { short_name: short, bot_type: 3, payload_url: 'https://bots.example.com/zulip', interface_type: 2 });
    const [service] = await db().botService.findMany({ where: { botId: bot.id } });
    expect(service).toMatchObject({ name: short, baseUrl: 'https://bots.example.com/zulip', interface: 2, token: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });
    const [add] = ofType(await eventsSince(env, mark), 'realm_bot', 'add');
    expect(add!.payload.bot.services).toEqual([{ base_url: 'https://bots.example.com/zulip', interface: 2, token: service!.token }]);
    // A named service keeps its name; without a URL the service posts nowhere yet ('').
    const named = await createBot('hamlet', { bot_type: 3, service_name: 'my-service' });
    expect(await db().botService.findFirstOrThrow({ where: { botId: named.id } })).toMatchObject({ name: 'my-service', baseUrl: '', interface: 1 });
  });

  it("records an incoming webhook bot's integration and configuration", async () => {
    const bot = await createBot('hamlet', { bot_type: 2, service_name: 'github', config_data: { branches: 'main' } });
    const config = await db().botConfigData.findMany({ where: { botId: bot.id }, orderBy: { key: 'asc' } });
    expect(config.map((c) => [c.key, c.value])).toEqual([['branches', 'main'], ['integration_id', 'github']]);
    expect(await db().botService.count({ where: { botId: bot.id } })).toBe(0);
  });

  it('stores default channels; a private one keeps the bot (and its key) between its owner and the channel', async () => {
    const open = await createChannel(env, 'iago', {}, ['hamlet']);
    const secret = await createChannel(env, 'hamlet', { invite_only: true });
    const mark = await markEvents(env);
    const res = await rawPost('hamlet', '/bots', { full_name: `Private ${shortName('p')}`, short_name: shortName('priv'), default_sending_stream: secret.name, default_events_register_stream: open.name, default_all_public_streams: true });
    expect(res.body).toMatchObject({ default_sending_stream: secret.name, default_events_register_stream: open.name, default_all_public_streams: true });
    const [add] = ofType(await eventsSince(env, mark), 'realm_bot', 'add');
    expect(add!.userIds).toEqual([uid('hamlet')]);
    expect(add!.payload.bot).toMatchObject({ default_sending_stream: secret.name, default_events_register_stream: open.name, default_all_public_streams: true });
  });
});

describe('GET /bots', () => {
  it("lists the caller's own active bots, oldest first, with their keys (administrators too get only theirs)", async () => {
    const owner = await createAccount(env, { label: 'lister', fullName: 'Bot Lister' });
    const first = await rawPost({ auth: owner.auth }, '/bots', { full_name: `First ${shortName('f')}`, short_name: shortName('first') });
    const second = await rawPost({ auth: owner.auth }, '/bots', { full_name: `Second ${shortName('s')}`, short_name: shortName('second') });
    const gone = await rawPost({ auth: owner.auth }, '/bots', { full_name: `Gone ${shortName('g')}`, short_name: shortName('gone') });
    await expect(rawDelete({ auth: owner.auth }, `/bots/${gone.body.user_id}`).then((r) => r.status)).resolves.toBe(200);
    const { data } = await owner.client.GET('/bots');
    const rows = await db().user.findMany({ where: { id: { in: [first.body.user_id, second.body.user_id] } }, orderBy: { id: 'asc' } });
    expect(data).toEqual({
      result: 'success',
      msg: '',
      bots: rows.map((r, i) => ({
        username: r.email,
        full_name: r.fullName,
        api_key: [first, second][i]!.body.api_key,
        avatar_url: expect.stringContaining('https://secure.gravatar.com/avatar/'),
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
      })),
    });
    // iago (an administrator) sees only the bots he owns.
    const mine = await env.client('iago').GET('/bots');
    const owned = await db().user.findMany({ where: { botOwnerId: uid('iago'), isActive: true, isBot: true } });
    expect(mine.data!.bots.map((b) => b.username).sort()).toEqual(owned.map((b) => b.email).sort());
  });

  it('refuses guests and bots', async () => {
    const bot = await createBot('hamlet');
    expectJsonError(await env.raw('/bots', { as: 'polonius' }), 400, 'Not allowed for guest users');
    expectJsonError(await env.raw('/bots', { headers: { Authorization: bot.auth } }), 400, 'This endpoint does not accept bot requests.');
  });
});

describe('PATCH /bots/{bot_id}', () => {
  it("renames a bot (its owner or an administrator), telling everyone and, in realm_bot, the owner and the administrators", async () => {
    const bot = await createBot('hamlet');
    for (const [person, name] of [['hamlet', `Renamed ${shortName('r')}`], ['iago', `Again ${shortName('a')}`]] as const) {
      const mark = await markEvents(env);
      const res = await rawPatch(person, bot.id, { full_name: `  ${name} ` });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        result: 'success',
        msg: '',
        full_name: name,
        avatar_url: expect.stringContaining('https://secure.gravatar.com/avatar/'),
        service_interface: 1,
        service_payload_url: null,
        config_data: null,
        default_sending_stream: null,
        default_events_register_stream: null,
        default_all_public_streams: false,
        bot_owner: env.users.hamlet.email,
      });
      const events = await eventsSince(env, mark);
      expect(events.map((e) => [e.payload.type, e.payload.op])).toEqual([['realm_user', 'update'], ['realm_bot', 'update']]);
      expect(events[0]!.payload.person).toEqual({ user_id: bot.id, full_name: name });
      expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id));
      expect(events[1]!.payload.bot).toEqual({ user_id: bot.id, full_name: name });
      expect(events[1]!.userIds).toEqual(sortedIds([...(await humanAdmins()), uid('hamlet')]));
    }
    // The same name again changes nothing.
    const mark = await markEvents(env);
    const current = (await db().user.findUniqueOrThrow({ where: { id: bot.id } })).fullName;
    expect((await rawPatch('hamlet', bot.id, { full_name: current })).status).toBe(200);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('refuses who may not administer the bot, users who are not bots, and unknown bots', async () => {
    const bot = await createBot('hamlet');
    expectJsonError(await rawPatch('othello', bot.id, { full_name: 'Stolen Bot' }), 400, 'Insufficient permission');
    expectJsonError(await rawPatch('shiva', bot.id, { full_name: 'Stolen Bot' }), 400, 'Insufficient permission');
    expectJsonError(await rawPatch('polonius', bot.id, { full_name: 'Stolen Bot' }), 400, 'Not allowed for guest users');
    expectJsonError(await rawPatch(bot, bot.id, { full_name: 'Self Renamed' }), 400, 'This endpoint does not accept bot requests.');
    expectJsonError(await rawPatch('iago', uid('othello'), { full_name: 'Not A Bot' }), 400, 'No such bot');
    expectJsonError(await rawPatch('iago', 999_999, { full_name: 'Nobody' }), 400, 'No such bot');
    // The server's own bots are not the organization's.
    const notificationBot = await db().user.findFirst({ where: { realmId: env.realmId, systemBot: { not: null } } });
    if (notificationBot) expectJsonError(await rawPatch('iago', notificationBot.id, { full_name: 'Mine Now' }), 400, 'No such bot');
    expect((await db().user.findUniqueOrThrow({ where: { id: bot.id } })).fullName).toMatch(/^Bot /);
  });

  it('checks everything before changing anything', async () => {
    const bot = await createBot('hamlet');
    const before = await db().user.findUniqueOrThrow({ where: { id: bot.id } });
    const mark = await markEvents(env);
    const other = await createBot('othello');
    const deactivated = await createAccount(env, { label: 'gone-owner', fullName: 'Gone Owner' });
    await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: deactivated.id } } });
    const mark2 = await markEvents(env);
    const cases: Array<[Record<string, string | number | boolean | object>, string]> = [
      [{ full_name: 'Fine Name', bot_owner_id: 999_999 }, 'Failed to change owner, no such user'],
      [{ full_name: 'Fine Name', bot_owner_id: deactivated.id }, 'Failed to change owner, user is deactivated'],
      [{ full_name: 'Fine Name', bot_owner_id: other.id }, "Failed to change owner, bots can't own other bots"],
      [{ full_name: 'Fine Name', default_sending_stream: 'no such channel' }, "Invalid channel name 'no such channel'"],
      [{ full_name: 'Fine Name', role: 200 }, 'Must be an organization administrator'],
      [{ full_name: 'Othello, the Moor of Venice' }, 'Name is already in use.'],
      [{ full_name: 'Fine Name', service_payload_url: 'https://bots.example.com' }, 'This bot has no outgoing webhook service.'],
      [{ full_name: 'Fine Name', config_data: { big: 'x'.repeat(10_001) } }, 'Cannot store configuration. Request would require 10004 characters. The current configuration size limit is 10000 characters.'],
      [{ full_name: 'Fine Name', service_payload_url: 'nope' }, 'Invalid service_payload_url: Value error, Not a URL'],
    ];
    for (const [fields, msg] of cases) expectJsonError(await rawPatch('hamlet', bot.id, fields), 400, msg);
    expect(await db().user.findUniqueOrThrow({ where: { id: bot.id } })).toEqual(before);
    expect(await eventsSince(env, mark2)).toEqual([]);
    expect((await eventsSince(env, mark)).length).toBeGreaterThan(0);
  });

  it('gives a bot a new owner: the previous owner loses it, the new one gains it, everyone learns bot_owner_id', async () => {
    const bot = await createBot('hamlet');
    const mark = await markEvents(env);
    const res = await rawPatch('hamlet', bot.id, { bot_owner_id: uid('othello') });
    expect(res.body.bot_owner).toBe(env.users.othello.email);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => [e.payload.type, e.payload.op, e.userIds])).toEqual([
      ['realm_bot', 'delete', [uid('hamlet')]],
      ['realm_bot', 'add', [uid('othello')]],
      ['realm_bot', 'update', await humanAdmins()],
      ['realm_user', 'update', (await activeUsers(env, env.realmId)).map((u) => u.id)],
    ]);
    expect(events[0]!.payload.bot).toEqual({ user_id: bot.id });
    expect(events[1]!.payload.bot).toMatchObject({ user_id: bot.id, owner_id: uid('othello'), api_key: bot.apiKey });
    expect(events[2]!.payload.bot).toEqual({ user_id: bot.id, owner_id: uid('othello') });
    expect(events[3]!.payload.person).toEqual({ user_id: bot.id, bot_owner_id: uid('othello') });
    expect((await env.client('hamlet').GET('/bots')).data!.bots.map((b) => b.username)).not.toContain(bot.email);
    expect((await env.client('othello').GET('/bots')).data!.bots.map((b) => b.username)).toContain(bot.email);
    // hamlet may no longer change it; to an administrator, no add (they list every bot) but an update.
    expectJsonError(await rawPatch('hamlet', bot.id, { full_name: 'Taken Back' }), 400, 'Insufficient permission');
    const mark2 = await markEvents(env);
    await rawPatch('othello', bot.id, { bot_owner_id: uid('iago') });
    expect((await eventsSince(env, mark2)).map((e) => [e.payload.type, e.payload.op, e.userIds])).toEqual([
      ['realm_bot', 'delete', [uid('othello')]],
      ['realm_bot', 'update', await humanAdmins()],
      ['realm_user', 'update', (await activeUsers(env, env.realmId)).map((u) => u.id)],
    ]);
  });

  it("changes a bot's role (administrators only), default channels, service and configuration", async () => {
    const bot = await createBot('hamlet', { bot_type: 3, payload_url: 'https://bots.example.com/old' });
    const channel = await createChannel(env, 'iago', {}, ['hamlet']);
    const mark = await markEvents(env);
    const res = await rawPatch('iago', bot.id, {
      role: 300,
      default_sending_stream: channel.name,
      default_events_register_stream: channel.name,
      default_all_public_streams: true,
      service_payload_url: 'https://bots.example.com/new',
      service_interface: 2,
      config_data: { answer: '42' },
    });
    expect(res.body).toMatchObject({
      service_interface: 2,
      service_payload_url: 'https://bots.example.com/new',
      config_data: { answer: '42' },
      default_sending_stream: channel.name,
      default_events_register_stream: channel.name,
      default_all_public_streams: true,
    });
    const events = await eventsSince(env, mark);
    const [service] = await db().botService.findMany({ where: { botId: bot.id } });
    expect(service).toMatchObject({ baseUrl: 'https://bots.example.com/new', interface: 2 });
    expect(ofType(events, 'realm_user').map((e) => e.payload.person)).toEqual([{ user_id: bot.id, role: 300 }]);
    expect(ofType(events, 'realm_bot').map((e) => e.payload.bot)).toEqual([
      { user_id: bot.id, default_sending_stream: channel.name },
      { user_id: bot.id, default_events_register_stream: channel.name },
      { user_id: bot.id, default_all_public_streams: true },
      { user_id: bot.id, services: [{ base_url: 'https://bots.example.com/new', interface: 2, token: service!.token }] },
      { user_id: bot.id, services: [{ config_data: { answer: '42' } }] },
    ]);
    // The empty string takes a default channel away; configuration entries add up.
    const again = await rawPatch('hamlet', bot.id, { default_sending_stream: '', config_data: { other: 'x' } });
    expect(again.body).toMatchObject({ default_sending_stream: null, default_events_register_stream: channel.name });
    expect((await db().botConfigData.findMany({ where: { botId: bot.id }, orderBy: { key: 'asc' } })).map((c) => c.key)).toEqual(['answer', 'other']);
    expectJsonError(await rawPatch('hamlet', bot.id, { service_payload_url: 'https://bots.example.com', service_interface: 5 }), 400, 'Invalid interface type');
    // A member owner may not give their bot a role.
    expectJsonError(await rawPatch('hamlet', bot.id, { role: 400 }), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    expectJsonError(await rawPatch('iago', bot.id, { role: 100 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
  });
});

describe('DELETE /bots/{bot_id}', () => {
  it('deactivates a bot: its key stops working, everyone is told, its owner and the administrators in realm_bot', async () => {
    const bot = await createBot('hamlet');
    expectJsonError(await rawDelete('othello', `/bots/${bot.id}`), 400, 'Insufficient permission');
    expectJsonError(await rawDelete('iago', `/bots/${uid('othello')}`), 400, 'No such bot');
    // Bots are not deactivated through DELETE /users/{user_id}, as in Zulip.
    expectJsonError(await rawDelete('iago', `/users/${bot.id}`), 400, 'No such user');
    const mark = await markEvents(env);
    expect((await rawDelete('hamlet', `/bots/${bot.id}`)).status).toBe(200);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => [e.payload.type, e.payload.op])).toEqual([['realm_user', 'update'], ['realm_bot', 'update']]);
    expect(events[0]!.payload.person).toEqual({ user_id: bot.id, is_active: false });
    expect(events[1]!.payload.bot).toEqual({ user_id: bot.id, is_active: false });
    expect(events[1]!.userIds).toEqual(sortedIds([...(await humanAdmins()), uid('hamlet')]));
    expectJsonError(await bot.client.GET('/users/me'), 401, 'Account is deactivated');
    // Again: nothing to do.
    const mark2 = await markEvents(env);
    expect((await rawDelete('hamlet', `/bots/${bot.id}`)).status).toBe(200);
    expect(await eventsSince(env, mark2)).toEqual([]);
  });

  it('is reversed by POST /users/{user_id}/reactivate, under the bot-creation permission and with its name free', async () => {
    const bot = await createBot('hamlet');
    const name = (await db().user.findUniqueOrThrow({ where: { id: bot.id } })).fullName;
    await rawDelete('hamlet', `/bots/${bot.id}`);
    // Another active bot took the name meanwhile.
    const twin = await createBot('othello', { full_name: name });
    expectJsonError(
      await rawPost('hamlet', `/users/${bot.id}/reactivate`),
      400,
      `There is already an active bot named "${name}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
    await rawDelete('othello', `/bots/${twin.id}`);
    try {
      await setRealmGroupSetting(env, 'can_create_bots_group', sys['role:administrators']);
      expectJsonError(await rawPost('hamlet', `/users/${bot.id}/reactivate`), 400, 'Insufficient permission');
    } finally {
      await setRealmGroupSetting(env, 'can_create_bots_group', sys['role:members']);
    }
    const mark = await markEvents(env);
    expect((await rawPost('hamlet', `/users/${bot.id}/reactivate`)).status).toBe(200);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => [e.payload.type, e.payload.op])).toEqual([['realm_user', 'update'], ['realm_bot', 'update']]);
    expect(events[1]!.payload.bot).toEqual({ user_id: bot.id, is_active: true });
    expect((await bot.client.GET('/users/me')).data).toMatchObject({ user_id: bot.id });
  });

  it("goes with its owner: deactivating a user deactivates their bots; an administrator reactivating one becomes its owner", async () => {
    const owner = await createAccount(env, { label: 'cascade', fullName: 'Cascade Owner' });
    const res = await rawPost({ auth: owner.auth }, '/bots', { full_name: `Cascade ${shortName('c')}`, short_name: shortName('cascade') });
    const botId = res.body.user_id as number;
    const mark = await markEvents(env);
    expect((await rawDelete('iago', `/users/${owner.id}`)).status).toBe(200);
    const events = await eventsSince(env, mark);
    expect(ofType(events, 'realm_user', 'update').map((e) => e.payload.person)).toEqual([
      { user_id: owner.id, is_active: false },
      { user_id: botId, is_active: false },
    ]);
    const [botEvent] = ofType(events, 'realm_bot');
    expect(botEvent!.payload.bot).toEqual({ user_id: botId, is_active: false });
    expect(botEvent!.userIds).toEqual(sortedIds([...(await humanAdmins()), owner.id]));
    expect((await db().user.findUniqueOrThrow({ where: { id: botId } })).isActive).toBe(false);

    const mark2 = await markEvents(env);
    expect((await rawPost('iago', `/users/${botId}/reactivate`)).status).toBe(200);
    const after = await eventsSince(env, mark2);
    // As Zulip: the bot is back (told to its new owner and the administrators), the deactivated owner
    // loses it from their list, the administrators learn its new owner (iago lists every bot: no add).
    expect(after.map((e) => [e.payload.type, e.payload.op, e.userIds])).toEqual([
      ['realm_user', 'update', (await activeUsers(env, env.realmId)).map((u) => u.id)],
      ['realm_bot', 'update', await humanAdmins()],
      ['realm_bot', 'delete', [owner.id]],
      ['realm_bot', 'update', await humanAdmins()],
      ['realm_user', 'update', (await activeUsers(env, env.realmId)).map((u) => u.id)],
    ]);
    expect(after[1]!.payload.bot).toEqual({ user_id: botId, is_active: true });
    expect(after[3]!.payload.bot).toEqual({ user_id: botId, owner_id: uid('iago') });
    expect(after[4]!.payload.person).toEqual({ user_id: botId, bot_owner_id: uid('iago') });
    expect((await db().user.findUniqueOrThrow({ where: { id: botId } })).botOwnerId).toBe(uid('iago'));
  });
});

describe('POST /bots/{bot_id}/api_key/regenerate', () => {
  it('gives the bot a new key (the old one stops working), told to its owner and the administrators', async () => {
    const bot = await createBot('hamlet');
    expectJsonError(await rawPost('othello', `/bots/${bot.id}/api_key/regenerate`), 400, 'Insufficient permission');
    expectJsonError(await rawPost('polonius', `/bots/${bot.id}/api_key/regenerate`), 400, 'Not allowed for guest users');
    expectJsonError(await rawPost(bot, `/bots/${bot.id}/api_key/regenerate`), 400, 'This endpoint does not accept bot requests.');
    expectJsonError(await rawPost('iago', `/bots/${uid('hamlet')}/api_key/regenerate`), 400, 'No such bot');
    const mark = await markEvents(env);
    const res = await rawPost('hamlet', `/bots/${bot.id}/api_key/regenerate`);
    expect(res.body).toEqual({ result: 'success', msg: '', api_key: expect.stringMatching(/^[A-Za-z0-9]{32}$/) });
    expect(res.body.api_key).not.toBe(bot.apiKey);
    const events = await eventsSince(env, mark);
    expect(events).toEqual([{ userIds: sortedIds([...(await humanAdmins()), uid('hamlet')]), payload: { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, api_key: res.body.api_key } } }]);
    expectJsonError(await bot.client.GET('/users/me'), 401, 'Invalid API key');
    const fresh = createParleyClient({ site: env.url, email: bot.email, apiKey: res.body.api_key });
    expect((await fresh.GET('/users/me')).data).toMatchObject({ user_id: bot.id });
    // An administrator may too.
    expect((await rawPost('iago', `/bots/${bot.id}/api_key/regenerate`)).status).toBe(200);
  });
});

describe('POST /register: realm_bots', () => {
  it("holds a user's own bots (deactivated ones too), every bot for administrators, none for others", async () => {
    const owner = await createAccount(env, { label: 'state', fullName: 'State Owner' });
    const kept = await rawPost({ auth: owner.auth }, '/bots', { full_name: `Kept ${shortName('k')}`, short_name: shortName('kept'), bot_type: 3, payload_url: 'https://bots.example.com/hook' });
    const gone = await rawPost({ auth: owner.auth }, '/bots', { full_name: `Gone ${shortName('g')}`, short_name: shortName('gone') });
    await rawDelete({ auth: owner.auth }, `/bots/${gone.body.user_id}`);
    const mine = await registerQueue(owner.client, { fetch_event_types: ['realm_bot'] });
    const token = (await db().botService.findFirstOrThrow({ where: { botId: kept.body.user_id } })).token;
    expect(mine.realm_bots).toEqual([
      expect.objectContaining({ user_id: kept.body.user_id, is_active: true, bot_type: 3, api_key: kept.body.api_key, owner_id: owner.id, services: [{ base_url: 'https://bots.example.com/hook', interface: 1, token }] }),
      expect.objectContaining({ user_id: gone.body.user_id, is_active: false, bot_type: 1, owner_id: owner.id, services: [] }),
    ]);
    const admin = await registerQueue(env.client('iago'), { fetch_event_types: ['realm_bot'] });
    const everyBot = await db().user.findMany({ where: { realmId: env.realmId, isBot: true, systemBot: null }, orderBy: { id: 'asc' } });
    expect(admin.realm_bots!.map((b) => b.user_id)).toEqual(everyBot.map((b) => b.id));
    expect((await registerQueue(env.client('polonius'), { fetch_event_types: ['realm_bot'] })).realm_bots).toEqual([]);
    expect((await registerQueue(env.client('cordelia'), { fetch_event_types: ['realm_bot'] })).realm_bots).toEqual([]);
  });
});

describe('incoming webhook bots', () => {
  it('may only send messages with their key', async () => {
    const hook = await createBot('hamlet', { bot_type: 2 });
    const channel = await createChannel(env, 'iago');
    expectJsonError(await hook.client.GET('/users/me'), 401, 'This API is not available to incoming webhook bots.');
    expectJsonError(await hook.client.GET('/users'), 401, 'This API is not available to incoming webhook bots.');
    expectJsonError(await hook.client.POST('/register', { body: {} }), 401, 'This API is not available to incoming webhook bots.');
    expectJsonError(await hook.client.GET('/bot_storage', { params: { query: {} } }), 401, 'This API is not available to incoming webhook bots.');
    const sent = await hook.client.POST('/messages', { body: { type: 'stream', to: channel.name, topic: 'alerts', content: 'Build passed' } });
    expect(sent.data).toMatchObject({ result: 'success', id: expect.any(Number) });
    const message = await db().message.findUniqueOrThrow({ where: { id: sent.data!.id } });
    expect(message.senderId).toBe(hook.id);
    // A generic bot's key works everywhere a user's does.
    const generic = await createBot('hamlet');
    expect((await generic.client.GET('/users/me')).data).toMatchObject({ user_id: generic.id });
  });

  it('cannot log in with a password', async () => {
    const bot = await createBot('hamlet');
    const res = await env.raw('/fetch_api_key', { method: 'POST', body: new URLSearchParams({ username: bot.email, password: '' }) });
    expect(res.status).not.toBe(200);
    const res2 = await env.raw('/fetch_api_key', { method: 'POST', body: new URLSearchParams({ username: bot.email, password: bot.apiKey }) });
    expect(res2.status).not.toBe(200);
  });
});

describe('POST /bots: manage create-bot', () => {
  it('creates a bot for an owner and prints a zuliprc that works for API calls', async () => {
    const short = shortName('managed');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(here, '../../../src/manage.ts'), 'create-bot', '--owner', env.users.hamlet.email, '--full-name', `Managed ${short}`, '--short-name', short, '--realm', String(env.realmId)],
      {
        cwd: path.join(here, '../../..'),
        env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: os.tmpdir(), PARLEY_URL: env.url, PARLEY_LOG_LEVEL: 'silent' },
      },
    );
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toBe('[api]');
    const rc = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    expect(rc).toEqual({ email: `${short}-bot@${await realmHost()}`, key: expect.stringMatching(/^[A-Za-z0-9]{32}$/), site: env.url });
    const client = createParleyClient({ site: rc.site!, email: rc.email!, apiKey: rc.key! });
    const me = await client.GET('/users/me');
    expect(me.data).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: uid('hamlet'), full_name: `Managed ${short}` });
    expect((await env.client('hamlet').GET('/bots')).data!.bots.map((b) => b.username)).toContain(rc.email);
  });
});
