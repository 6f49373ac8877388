// User status: POST /users/me/status, the administrators' POST /users/{user_id}/status and
// GET /users/{user_id}/status; the `user_status` events (to every user) and /register state, in
// Zulip's shapes; the deprecated `away` as the opposite of presence_enabled; every refusal, with
// nothing half-applied; and the calls as the Python client and zulip-js make them.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, createUser, uniqueEmail } from '../../helpers/people.ts';
import { pollEvents, registerQueue } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';
import { zulipJs } from '../../helpers/zulip-js.ts';

const env = useTestServer();
const db = () => env.running.deps.db;

type StatusBody = { status_text?: string; away?: boolean; emoji_name?: string; emoji_code?: string; reaction_type?: string };
const post = (as: Person, body: StatusBody) => env.client(as).POST('/users/me/status', { body });
async function posted(as: Person, body: StatusBody): Promise<void> {
  const { error } = await post(as, body);
  if (error) throw new Error(JSON.stringify(error));
}
const postFor = (as: Person, userId: number, body: Omit<StatusBody, 'away'>) =>
  env.client(as).POST('/users/{user_id}/status', { params: { path: { user_id: userId } }, body });

async function statusOf(userId: number, as: Person = 'othello'): Promise<Record<string, unknown>> {
  const { data, error } = await env.client(as).GET('/users/{user_id}/status', { params: { path: { user_id: userId } } });
  if (!data) throw new Error(JSON.stringify(error));
  return data.status;
}
/** POST /register's user_status, as `as` gets it. */
async function statusState(as: Person = 'othello'): Promise<Record<string, Record<string, unknown>>> {
  const res = await env.raw('/register', { method: 'POST', as, body: new URLSearchParams({ fetch_event_types: '["user_status"]' }) });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  expect(Object.keys(res.body)).toContain('user_status');
  return res.body.user_status;
}
const presenceEnabled = async (userId: number) => (await db().userSettings.findUniqueOrThrow({ where: { userId } })).presenceEnabled;

/** Everyone's status back to nothing, presence on (each test starts from there). */
async function reset(): Promise<void> {
  await db().$executeRaw`DELETE FROM user_status`;
  await db().userSettings.updateMany({ data: { presenceEnabled: true } });
}

/** A bot of hamlet's with an API key (bots have no status). */
async function insertBot(): Promise<{ id: number; auth: string }> {
  const email = uniqueEmail('status-bot');
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Status Bot', isBot: true, botType: 1, botOwnerId: env.users.hamlet.id, settings: { create: {} } },
  });
  const key = 'b'.repeat(24) + String(bot.id).padStart(8, '0');
  const cipher = env.running.deps.cipher;
  await db().apiKey.create({ data: { userId: bot.id, lookupHash: cipher.lookupHash(key), ciphertext: cipher.encrypt(key) } });
  return { id: bot.id, auth: basicAuth(email, key) };
}

describe('POST /users/me/status', () => {
  it('sets a text and an emoji named only: stored, read back, in /register and in a user_status event to every user', async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    const mark = await markEvents(env);
    await posted('hamlet', { status_text: '  on vacation  ', emoji_name: 'car' });
    const expected = { status_text: 'on vacation', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' };
    expect(await statusOf(hamlet)).toEqual(expected);
    expect(await statusOf(hamlet, 'polonius')).toEqual(expected);
    expect(await statusState()).toEqual({ [hamlet]: expected });

    const events = await eventsSince(env, mark);
    expect(events).toEqual([
      { userIds: (await activeUsers(env, env.realmId)).map((u) => u.id), payload: { type: 'user_status', user_id: hamlet, ...expected } },
    ]);
  });

  it('changes only what it names, and the event carries only that', async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    await posted('hamlet', { status_text: 'at lunch', emoji_name: 'coffee' });
    let mark = await markEvents(env);
    await posted('hamlet', { status_text: 'back at 2' });
    expect(await statusOf(hamlet)).toEqual({ status_text: 'back at 2', emoji_name: 'coffee', emoji_code: '2615', reaction_type: 'unicode_emoji' });
    expect((await eventsSince(env, mark)).map((e) => e.payload)).toEqual([{ type: 'user_status', user_id: hamlet, status_text: 'back at 2' }]);

    mark = await markEvents(env);
    await posted('hamlet', { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' });
    expect(await statusOf(hamlet)).toEqual({ status_text: 'back at 2', emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' });
    expect((await eventsSince(env, mark)).map((e) => e.payload)).toEqual([
      { type: 'user_status', user_id: hamlet, emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' },
    ]);

    // An alias names its emoji; `zulip` is the one zulip_extra_emoji.
    await posted('hamlet', { emoji_name: 'thumbs_up' });
    expect(await statusOf(hamlet)).toMatchObject({ emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' });
    await posted('hamlet', { emoji_name: 'zulip' });
    expect(await statusOf(hamlet)).toMatchObject({ emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' });
  });

  it('clears with empty values: the emoji whatever code and type come with it; a cleared user leaves the state', async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    await posted('hamlet', { status_text: 'busy', emoji_name: 'car' });
    const mark = await markEvents(env);
    await posted('hamlet', { status_text: '', emoji_name: '', emoji_code: '1f697', reaction_type: 'realm_emoji' });
    expect(await statusOf(hamlet)).toEqual({});
    expect(await statusState()).toEqual({});
    expect((await eventsSince(env, mark)).map((e) => e.payload)).toEqual([
      { type: 'user_status', user_id: hamlet, status_text: '', emoji_name: '', emoji_code: '', reaction_type: 'unicode_emoji' },
    ]);
    // Never set at all: {} too.
    expect(await statusOf(env.users.cordelia.id)).toEqual({});
  });

  it('counts 60 characters (code points) after stripping; one more is refused', async () => {
    await reset();
    const sixty = '🐙'.repeat(60); // 120 UTF-16 units, 60 characters
    await posted('cordelia', { status_text: `   ${sixty}\n` });
    expect(await statusOf(env.users.cordelia.id)).toEqual({ status_text: sixty });
    expectJsonError(await post('cordelia', { status_text: `${sixty}x` }), 400, 'status_text is too long (limit: 60 characters)', 'BAD_REQUEST');
    expect(await statusOf(env.users.cordelia.id)).toEqual({ status_text: sixty });
  });

  it('away turns presence_enabled off and on, with the settings events for the user and away in the status', async () => {
    await reset();
    const othello = env.users.othello.id;
    let mark = await markEvents(env);
    await posted('othello', { away: true, status_text: 'out' });
    expect(await presenceEnabled(othello)).toBe(false);
    expect(await statusOf(othello, 'hamlet')).toEqual({ away: true, status_text: 'out' });
    expect((await statusState('hamlet'))[othello]).toEqual({ away: true, status_text: 'out' });
    const everyone = (await activeUsers(env, env.realmId)).map((u) => u.id);
    // As Zulip's do_change_user_setting: the setting's events, then the user's presence (offline now).
    expect(await eventsSince(env, mark)).toEqual([
      { userIds: [othello], payload: { type: 'user_settings', op: 'update', property: 'presence_enabled', value: false } },
      { userIds: [othello], payload: { type: 'update_global_notifications', user: env.users.othello.email, notification_name: 'presence_enabled', setting: false } },
      { userIds: everyone, payload: expect.objectContaining({ type: 'presence', user_id: othello }) },
      { userIds: everyone, payload: { type: 'user_status', user_id: othello, away: true, status_text: 'out' } },
    ]);

    // away alone, back: the status keeps its text and loses `away`.
    mark = await markEvents(env);
    await posted('othello', { away: false });
    expect(await presenceEnabled(othello)).toBe(true);
    expect(await statusOf(othello)).toEqual({ status_text: 'out' });
    expect((await eventsSince(env, mark)).map((e) => e.payload).at(-1)).toEqual({ type: 'user_status', user_id: othello, away: false });

    // A user whose presence is off but whose text is cleared stays in the state as away.
    await posted('othello', { away: true, status_text: '' });
    expect((await statusState())[othello]).toEqual({ away: true });
    await reset();
  });

  it('is open to every human role and refused to bots', async () => {
    await reset();
    const people: Person[] = ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'];
    for (const person of people) await posted(person, { status_text: `${person} here` });
    const state = await statusState('polonius');
    for (const person of people) expect(state[env.users[person].id]).toEqual({ status_text: `${person} here` });

    const bot = await insertBot();
    const res = await env.raw('/users/me/status', { method: 'POST', headers: { Authorization: bot.auth }, body: new URLSearchParams({ status_text: 'beep' }) });
    expectJsonError(res, 400, 'This endpoint does not accept bot requests.', 'BAD_REQUEST');
    expect(await db().$queryRaw<unknown[]>`SELECT 1 FROM user_status WHERE user_id = ${bot.id}`).toEqual([]);
  });

  it("answers Zulip's error for each bad input and changes nothing, presence_enabled included", async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    await posted('hamlet', { status_text: 'steady', emoji_name: 'car' });
    const before = await statusOf(hamlet);
    const mark = await markEvents(env);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'Client did not pass any new values.'],
      [{ emoji_code: '1f697', reaction_type: 'unicode_emoji' }, 'Client did not pass any new values.'],
      [{ away: true, status_text: 'x'.repeat(61) }, 'status_text is too long (limit: 60 characters)'],
      [{ away: true, emoji_name: 'not_an_emoji' }, "Emoji 'not_an_emoji' does not exist"],
      [{ away: true, status_text: 'new', emoji_code: '1f697' }, 'Client must pass emoji_name if they pass either emoji_code or reaction_type.'],
      [{ away: true, status_text: 'new', reaction_type: 'unicode_emoji' }, 'Client must pass emoji_name if they pass either emoji_code or reaction_type.'],
      [{ away: true, emoji_name: 'car', emoji_code: 'ffffff' }, 'Invalid emoji code.'],
      [{ away: true, emoji_name: 'car', emoji_code: '' }, 'Invalid emoji code.'],
      [{ away: true, emoji_name: 'bus', emoji_code: '1f697', reaction_type: 'unicode_emoji' }, 'Invalid emoji name.'],
      [{ away: true, emoji_name: 'not_an_emoji', emoji_code: '1f697', reaction_type: 'unicode_emoji' }, 'Invalid emoji name.'],
      [{ away: true, emoji_name: 'car', reaction_type: 'emoji_of_the_day' }, 'Invalid emoji type.'],
      [{ away: true, emoji_name: 'party_parrot', emoji_code: '1', reaction_type: 'realm_emoji' }, 'Invalid custom emoji.'],
      [{ away: true, emoji_name: 'car', reaction_type: 'realm_emoji' }, 'Invalid custom emoji.'],
      [{ away: true, emoji_name: 'zulip', emoji_code: '1f697', reaction_type: 'zulip_extra_emoji' }, 'Invalid emoji code.'],
      [{ away: 'yes', status_text: 'new' }, 'away is not a boolean'],
    ];
    for (const [body, msg] of cases) {
      const res = await unchecked(env.client('hamlet')).POST('/users/me/status', { body });
      expectJsonError(res, 400, msg, 'BAD_REQUEST');
    }
    expect(await statusOf(hamlet)).toEqual(before);
    expect(await presenceEnabled(hamlet)).toBe(true);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('answers the Python client (call_endpoint with a leading slash: /api/v1//users/me/status) and zulip-js (multipart) as Zulip does', async () => {
    await reset();
    // requests' form body; the Python client joins "v1/" and "/users/me/status" into a double slash.
    const python = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const body = Buffer.from('status_text=on+vacation&away=false&emoji_name=car&emoji_code=1f697&reaction_type=unicode_emoji');
      const req = http.request(
        new URL('/api/v1//users/me/status', env.url),
        {
          method: 'POST',
          headers: {
            Authorization: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey),
            'Content-Type': 'application/x-www-form-urlencoded',
            'Content-Length': String(body.length),
            'User-Agent': 'ZulipPython/0.9.0',
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(python).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    expect(await statusOf(env.users.hamlet.id)).toEqual({ status_text: 'on vacation', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });

    const js = await zulipJs({ username: env.users.othello.email, apiKey: env.users.othello.apiKey, realm: env.url });
    expect(await js.callEndpoint('/users/me/status', 'POST', { status_text: 'from js', emoji_name: 'octopus' })).toEqual({ result: 'success', msg: '' });
    expect(await js.callEndpoint(`/users/${env.users.othello.id}/status`, 'GET', {})).toEqual({
      result: 'success',
      msg: '',
      status: { status_text: 'from js', emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' },
    });
  });

  it("delivers the event to every user's queue in Zulip's shape", async () => {
    await reset();
    const queues = await Promise.all((['cordelia', 'polonius'] as Person[]).map(async (p) => ({ p, q: await registerQueue(env.client(p), { event_types: ['user_status'] }) })));
    await posted('shiva', { status_text: 'moderating', emoji_name: 'smile' });
    for (const { p, q } of queues) {
      const events = (await pollEvents(env.client(p), q)).filter((e) => e.type !== 'heartbeat');
      expect(events).toEqual([
        { id: expect.any(Number), type: 'user_status', user_id: env.users.shiva.id, status_text: 'moderating', emoji_name: 'smile', emoji_code: '1f642', reaction_type: 'unicode_emoji' },
      ]);
    }
  });
});

describe('POST /users/{user_id}/status', () => {
  it("lets administrators set another user's status (not away), announced like the user's own", async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    const mark = await markEvents(env);
    const { error } = await postFor('iago', hamlet, { status_text: 'in a meeting', emoji_name: 'calendar' });
    expect(error).toBeUndefined();
    expect(await statusOf(hamlet)).toEqual({ status_text: 'in a meeting', emoji_name: 'calendar', emoji_code: '1f4c5', reaction_type: 'unicode_emoji' });
    expect((await eventsSince(env, mark)).map((e) => e.payload)).toEqual([
      { type: 'user_status', user_id: hamlet, status_text: 'in a meeting', emoji_name: 'calendar', emoji_code: '1f4c5', reaction_type: 'unicode_emoji' },
    ]);
    // Owners too, on administrators and on themselves; `away` is not a parameter here.
    const res = await unchecked(env.client('desdemona')).POST('/users/{user_id}/status', { params: { path: { user_id: env.users.iago.id } }, body: { status_text: 'admin', away: true } });
    expect(res.data).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['away'] });
    expect(await statusOf(env.users.iago.id)).toEqual({ status_text: 'admin' });
    expect(await presenceEnabled(env.users.iago.id)).toBe(true);
  });

  it('refuses non-administrators, bots, unknown and deactivated users, and bad input, changing nothing', async () => {
    await reset();
    const hamlet = env.users.hamlet.id;
    const bot = await insertBot();
    const gone = await createUser(env, { label: 'status-gone', fullName: 'Gone User' });
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: gone.id } } })).error).toBeUndefined();
    const mark = await markEvents(env);
    for (const person of ['shiva', 'othello', 'polonius'] as Person[]) {
      expectJsonError(await postFor(person, hamlet, { status_text: 'hijacked' }), 400, 'Insufficient permission', 'BAD_REQUEST');
    }
    // The bot's own owner administers it, but bots have no status.
    expectJsonError(await postFor('hamlet', bot.id, { status_text: 'beep' }), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await postFor('iago', bot.id, { status_text: 'beep' }), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await postFor('iago', 999_999, { status_text: 'who' }), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await postFor('iago', gone.id, { status_text: 'gone' }), 400, 'User is deactivated', 'BAD_REQUEST');
    // The user is checked before the values; the text's length (a parameter) before the user.
    expectJsonError(await postFor('iago', 999_999, {}), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await postFor('othello', hamlet, { status_text: 'x'.repeat(61) }), 400, 'status_text is too long (limit: 60 characters)', 'BAD_REQUEST');
    expectJsonError(await postFor('iago', hamlet, {}), 400, 'Client did not pass any new values.', 'BAD_REQUEST');
    expectJsonError(await postFor('iago', hamlet, { emoji_name: 'not_an_emoji' }), 400, "Emoji 'not_an_emoji' does not exist", 'BAD_REQUEST');
    expect(await statusOf(hamlet)).toEqual({});
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});

describe('GET /users/{user_id}/status', () => {
  it('answers any user, bots included, about active humans; bots and unknown ids are no such user, the deactivated deactivated', async () => {
    await reset();
    await posted('cordelia', { status_text: 'reading' });
    const bot = await insertBot();
    for (const person of ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'] as Person[]) {
      expect(await statusOf(env.users.cordelia.id, person)).toEqual({ status_text: 'reading' });
    }
    const asBot = await env.raw(`/users/${env.users.cordelia.id}/status`, { headers: { Authorization: bot.auth } });
    expect(asBot.body).toEqual({ result: 'success', msg: '', status: { status_text: 'reading' } });

    const get = (userId: number) => env.client('hamlet').GET('/users/{user_id}/status', { params: { path: { user_id: userId } } });
    expectJsonError(await get(bot.id), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await get(999_999), 400, 'No such user', 'BAD_REQUEST');
    const gone = await createUser(env, { label: 'status-read-gone', fullName: 'Gone Reader' });
    await db().$executeRaw`INSERT INTO user_status (user_id, realm_id, status_text, updated_at) VALUES (${gone.id}, ${env.realmId}, 'left', now())`;
    expect(await statusOf(gone.id)).toEqual({ status_text: 'left' });
    expect((await statusState())[gone.id]).toEqual({ status_text: 'left' });
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: gone.id } } })).error).toBeUndefined();
    expectJsonError(await get(gone.id), 400, 'User is deactivated', 'BAD_REQUEST');
    // Deactivated users leave the state.
    expect((await statusState())[gone.id]).toBeUndefined();
  });
});
