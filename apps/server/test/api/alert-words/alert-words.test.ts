// Alert words: GET, POST and DELETE /users/me/alert_words for members, guests and bots, Zulip's rules
// for the list (trimmed, case-insensitive, no duplicates), its errors with nothing half-applied, the
// `alert_words` event and state; and the `has_alert_word` flag: set at sending for every recipient whose
// word the message contains (the sender too, rows written at once), recomputed at every content edit
// with the update_message event's flags, never causing a push; and the calls as the Python client and
// zulip-js make them. The matching rules case by case are in test/unit/alert-words.test.ts.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { createAccount, type Account } from '../../helpers/people.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';
import { zulipJs } from '../../helpers/zulip-js.ts';
import { closePushDelivery } from '../../../src/push/jobs.ts';

const env = useTestServer();
let channel: { id: number; name: string };
beforeAll(async () => {
  channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'cordelia', 'polonius']);
});
afterAll(async () => {
  await closePushDelivery(env.running.deps);
});

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

interface Actor {
  id: number;
  client: ParleyClient;
  auth: string;
}

/** A new member subscribed to the file's channel (no alert words yet). */
async function someone(label: string): Promise<Account> {
  const account = await createAccount(env, { label, fullName: `Alert ${label} ${randomBytes(3).toString('hex')}` });
  await subscribeDirectly(env, account.id, channel.id);
  return account;
}

/** A generic bot of hamlet's with its own API key (made in the database: Parley has no bot API yet). */
async function createBot(label: string): Promise<Actor> {
  const email = `${label}-${randomBytes(3).toString('hex')}-bot@parley.test`;
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: `Bot ${label}`, isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
  });
  const key = randomBytes(16).toString('hex');
  await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
  return { id: bot.id, client: createParleyClient({ site: env.url, email, apiKey: key }), auth: `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}` };
}

/** One of the fixed test users (no raw Authorization header: tests use env.raw's `as` for them). */
const fixed = (p: Person): Actor => ({ id: uid(p), client: env.client(p), auth: '' });

const list = (as: Actor) => as.client.GET('/users/me/alert_words');
const add = (as: Actor, words: string[]) => as.client.POST('/users/me/alert_words', { body: { alert_words: words } });
const remove = (as: Actor, words: string[]) => as.client.DELETE('/users/me/alert_words', { body: { alert_words: words } });

async function wordsOf(as: Actor): Promise<string[]> {
  const { data, error } = await list(as);
  if (!data) throw new Error(`get-alert-words failed: ${JSON.stringify(error)}`);
  return data.alert_words;
}
async function addOk(as: Actor, words: string[]): Promise<string[]> {
  const { data, error } = await add(as, words);
  if (!data) throw new Error(`add-alert-words failed: ${JSON.stringify(error)}`);
  return data.alert_words;
}

/** The flags the user sees on a message (GET /messages/{id}). */
async function flagsOf(as: Actor, messageId: number): Promise<string[]> {
  const { data, error } = await as.client.GET('/messages/{message_id}', { params: { path: { message_id: messageId } } });
  if (!data) throw new Error(`read of ${messageId} failed: ${JSON.stringify(error)}`);
  return [...(data.message.flags ?? [])].sort();
}
const hasAlert = async (as: Actor, messageId: number) => (await flagsOf(as, messageId)).includes('has_alert_word');

/** The stored user_message row of a user (null while deferred or absent). */
async function rowFlags(userId: number, messageId: number): Promise<number | null> {
  const row = await db().userMessage.findUnique({ where: { messageId_userId: { messageId, userId } } });
  return row === null ? null : Number(row.flags);
}

const post = (from: Actor, content: string, topic = 'alerts') => sendMessage(from.client, { type: 'stream', to: channel.name, topic, content });
const edit = (as: Actor, messageId: number, content: string) => as.client.PATCH('/messages/{message_id}', { params: { path: { message_id: messageId } }, body: { content } });

/** The request fails with `msg`, and changes no word of the caller and stores no event. */
async function expectRefused(as: Actor, send: () => Promise<Parameters<typeof expectJsonError>[0]>, msg: string, code = 'BAD_REQUEST') {
  const before = await wordsOf(as);
  const mark = await markEvents(env);
  expectJsonError(await send(), 400, msg, code);
  expect(await wordsOf(as)).toEqual(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

/** A request with the Python client's shape (python-zulip-api: requests, form body, json.dumps values). */
function pythonCall(auth: string, method: string, path: string, form: string | null): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const body = form === null ? Buffer.alloc(0) : Buffer.from(form);
    const headers: Record<string, string> = { Authorization: auth, 'User-Agent': 'ZulipPython/0.9.0', 'Content-Length': String(body.length) };
    if (form !== null) headers['Content-Type'] = 'application/x-www-form-urlencoded';
    const req = http.request(new URL(`/api/v1/${path}`, env.url), { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------

describe('GET /users/me/alert_words', () => {
  it('lists nothing at first, then the words in the order they were added, for members, guests and bots', async () => {
    const member = await someone('get');
    const bot = await createBot('get');
    const guest = fixed('polonius');
    for (const who of [member, bot, guest]) expect(await list(who)).toMatchObject({ data: { result: 'success', msg: '', alert_words: [] } });
    await addOk(member, ['zeta', 'alpha']);
    await addOk(member, ['Mid']);
    await addOk(bot, ['beep']);
    await addOk(guest, ['guest word']);
    expect(await wordsOf(member)).toEqual(['zeta', 'alpha', 'Mid']);
    expect(await wordsOf(bot)).toEqual(['beep']);
    expect(await wordsOf(guest)).toEqual(['guest word']);
    // The /register state is the same list.
    expect((await registerQueue(member.client, { fetch_event_types: ['alert_words'] })).alert_words).toEqual(['zeta', 'alpha', 'Mid']);
    expect((await registerQueue(guest.client, {})).alert_words).toEqual(['guest word']);
    await remove(guest, ['guest word']);
  });

  it('answers zulip-js (users.me.alertWords.retrieve) and the Python client (get_alert_words)', async () => {
    const member = await someone('clients');
    await addOk(member, ['from clients']);
    const js = await zulipJs({ username: member.email, apiKey: member.key, realm: env.url });
    expect(await js.users.me.alertWords.retrieve()).toEqual({ result: 'success', msg: '', alert_words: ['from clients'] });
    // get_alert_words: call_endpoint(url="users/me/alert_words", method="GET"), no parameters.
    expect(await pythonCall(member.auth, 'GET', 'users/me/alert_words', null)).toEqual({ status: 200, body: { result: 'success', msg: '', alert_words: ['from clients'] } });
  });
});

describe('POST /users/me/alert_words', () => {
  it('adds words (trimmed, empty ones left out), answers the whole list, and sends it in an `alert_words` event to the user only', async () => {
    const me = await someone('add');
    await addOk(me, ['existing']);
    const queue = await registerQueue(me.client, { event_types: ['alert_words'] });
    const mark = await markEvents(env);
    const res = await add(me, ['one ', '\n two', 'three', '   ', 'multi-word word', '☃']);
    expect(res.data).toEqual({ result: 'success', msg: '', alert_words: ['existing', 'one', 'two', 'three', 'multi-word word', '☃'] });
    const events = await eventsSince(env, mark);
    expect(events).toEqual([{ userIds: [me.id], payload: { type: 'alert_words', alert_words: ['existing', 'one', 'two', 'three', 'multi-word word', '☃'] } }]);
    expect(await pollEvents(me.client, queue)).toEqual([{ id: expect.any(Number), type: 'alert_words', alert_words: ['existing', 'one', 'two', 'three', 'multi-word word', '☃'] }]);
  });

  it('compares case-insensitively: a word the user has in any case is not added again; within a request the last spelling wins', async () => {
    const me = await someone('case');
    expect(await addOk(me, ['Alert'])).toEqual(['Alert']);
    expect(await addOk(me, ['ALERT', 'alert', 'new'])).toEqual(['Alert', 'new']);
    expect(await addOk(me, ['Shout', 'other', 'SHOUT'])).toEqual(['Alert', 'new', 'SHOUT', 'other']);
    // Nothing new: the same list, and still an event (as Zulip sends one for every request).
    const mark = await markEvents(env);
    expect(await addOk(me, ['alert', ''])).toEqual(['Alert', 'new', 'SHOUT', 'other']);
    expect((await eventsSince(env, mark)).map((e) => e.payload.type)).toEqual(['alert_words']);
  });

  it('takes words of up to 100 characters (counted as characters, not bytes or UTF-16 units)', async () => {
    const me = await someone('length');
    const longest = 'w'.repeat(100);
    const emoji = '🐙'.repeat(100);
    expect(await addOk(me, [longest, emoji])).toEqual([longest, emoji]);
    // Over the limit before trimming counts too.
    await expectRefused(me, () => add(me, [`${'x'.repeat(99)}  `]), 'alert_words[0] is too long (limit: 100 characters)');
  });

  it("refuses bad input with Zulip's errors, adding none of the request's words", async () => {
    const me = await someone('bad');
    await addOk(me, ['kept']);
    const raw = (form: Record<string, string>) =>
      env.raw('/users/me/alert_words', { method: 'POST', headers: { Authorization: me.auth, 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
    await expectRefused(me, () => add(me, ['fine', 'y'.repeat(101)]), 'alert_words[1] is too long (limit: 100 characters)');
    await expectRefused(me, () => raw({}), "Missing 'alert_words' argument", 'REQUEST_VARIABLE_MISSING');
    await expectRefused(me, () => raw({ alert_words: '"word"' }), 'alert_words is not a list');
    await expectRefused(me, () => raw({ alert_words: '["ok", 3]' }), 'alert_words[1] is not a string');
    await expectRefused(me, () => unchecked(me.client).POST('/users/me/alert_words', { body: { alert_words: [['nested']] } }), 'alert_words[0] is not a string');
    await expectRefused(me, () => raw({ alert_words: '[not json' }), 'alert_words is not valid JSON');
  });

  it('answers the Python client (add_alert_words: a json.dumps-ed list in a form body) and zulip-js (multipart)', async () => {
    const me = await someone('py-add');
    const form = `alert_words=${encodeURIComponent('["caf\\u00e9", "two words"]')}`;
    expect(await pythonCall(me.auth, 'POST', 'users/me/alert_words', form)).toEqual({ status: 200, body: { result: 'success', msg: '', alert_words: ['café', 'two words'] } });
    const js = await zulipJs({ username: me.email, apiKey: me.key, realm: env.url });
    expect(await js.callEndpoint('/users/me/alert_words', 'POST', { alert_words: ['from js'] })).toEqual({ result: 'success', msg: '', alert_words: ['café', 'two words', 'from js'] });
  });
});

describe('DELETE /users/me/alert_words', () => {
  it('removes words case-insensitively and as given (not trimmed), ignores unknown ones, and always sends the list', async () => {
    const me = await someone('remove');
    await addOk(me, ['One', 'two', 'three', 'four']);
    const mark = await markEvents(env);
    const res = await remove(me, ['ONE', ' two', 'unknown']);
    expect(res.data).toEqual({ result: 'success', msg: '', alert_words: ['two', 'three', 'four'] });
    expect(await remove(me, ['TWO', 'three'])).toMatchObject({ data: { alert_words: ['four'] } });
    expect(await remove(me, [])).toMatchObject({ data: { alert_words: ['four'] } });
    expect((await eventsSince(env, mark)).map((e) => [e.userIds, e.payload])).toEqual([
      [[me.id], { type: 'alert_words', alert_words: ['two', 'three', 'four'] }],
      [[me.id], { type: 'alert_words', alert_words: ['four'] }],
      [[me.id], { type: 'alert_words', alert_words: ['four'] }],
    ]);
  });

  it('lets guests and bots remove their words; refuses bad input, removing nothing', async () => {
    const bot = await createBot('remove');
    const guest = fixed('polonius');
    await addOk(bot, ['beep', 'boop']);
    await addOk(guest, ['mine']);
    expect(await remove(bot, ['BEEP'])).toMatchObject({ data: { alert_words: ['boop'] } });
    expect(await remove(guest, ['mine'])).toMatchObject({ data: { alert_words: [] } });
    const raw = (form: Record<string, string>) =>
      env.raw('/users/me/alert_words', { method: 'DELETE', headers: { Authorization: bot.auth, 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString() });
    await expectRefused(bot, () => raw({}), "Missing 'alert_words' argument", 'REQUEST_VARIABLE_MISSING');
    await expectRefused(bot, () => raw({ alert_words: '"boop"' }), 'alert_words is not a list');
    await expectRefused(bot, () => raw({ alert_words: '[1]' }), 'alert_words[0] is not a string');
    // The Python client's remove_alert_words: DELETE with a form body.
    expect(await pythonCall(bot.auth, 'DELETE', 'users/me/alert_words', `alert_words=${encodeURIComponent('["boop"]')}`)).toEqual({
      status: 200,
      body: { result: 'success', msg: '', alert_words: [] },
    });
  });
});

describe('has_alert_word', () => {
  it('is set at sending for each recipient whose word the message contains, the sender included, rows written at once', async () => {
    const sender = await someone('sender');
    const deployer = await someone('deployer');
    const watcher = await someone('watcher');
    const quiet = await someone('quiet');
    await addOk(sender, ['Friday']);
    await addOk(deployer, ['deploy', 'rollback']);
    await addOk(watcher, ['OUTAGE']);
    await addOk(quiet, ['never mentioned']);
    const queues = await Promise.all([sender, deployer, watcher, quiet].map((u) => registerQueue(u.client, { event_types: ['message'] })));
    const id = await post(sender, 'We deploy on Friday; any outage? Roll back if needed.');
    const flagsInEvents = await Promise.all([sender, deployer, watcher, quiet].map(async (u, i) => (await pollEvents(u.client, queues[i]!))[0].flags as string[]));
    expect(flagsInEvents[0]).toContain('has_alert_word');
    expect(flagsInEvents[1]).toEqual(['has_alert_word']);
    expect(flagsInEvents[2]).toEqual(['has_alert_word']);
    expect(flagsInEvents[3]).toEqual([]);
    // The flagged recipients' rows exist now; the others' wait (deferred), as with any flagless row.
    expect(await rowFlags(deployer.id, id)).toBe(512);
    expect(await rowFlags(watcher.id, id)).toBe(512);
    expect(await rowFlags(quiet.id, id)).toBeNull();
    expect(await hasAlert(quiet, id)).toBe(false);
    expect(await hasAlert(deployer, id)).toBe(true);
  });

  it('follows the matching rules through the API: whole words, punctuation, Unicode, fenced code', async () => {
    const sender = await someone('rules-sender');
    const me = await someone('rules');
    await addOk(me, ['one', 'café', 'release notes']);
    const cases: Array<[string, boolean]> = [
      ['Normal alert one time', true],
      ['(one)', true],
      ['CAFÉ opens at nine', true],
      ['see the Release Notes.', true],
      ["Don't alert on clone, twofold or someone", false],
      ['http://t.co/one/', false],
      ['```\none\n```', false],
      ['inline `one` code', true],
      ['caféteria', false],
    ];
    for (const [content, expected] of cases) {
      const id = await post(sender, content, 'rules');
      expect(await hasAlert(me, id), content).toBe(expected);
    }
  });

  it('is set on direct messages, for guests and bots too', async () => {
    const bot = await createBot('flagged');
    const guest = fixed('polonius');
    await addOk(bot, ['beep']);
    await addOk(guest, ['polonius word']);
    const direct = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([bot.id]), content: 'Beep!' });
    expect(await hasAlert(bot, direct)).toBe(true);
    const inChannel = await sendMessage(env.client('hamlet'), { type: 'stream', to: channel.name, topic: 'alerts', content: 'a polonius word for you' });
    expect(await hasAlert(guest, inChannel)).toBe(true);
    await remove(guest, ['polonius word']);
  });

  it('is recomputed at every content edit, with the update_message event carrying each user’s flags', async () => {
    const sender = await someone('editor');
    const watcher = await someone('edit-watcher');
    const late = await someone('edit-late');
    await addOk(sender, ['ALERT']);
    await addOk(watcher, ['alert']);
    await addOk(late, ['later']);
    const id = await post(sender, 'this is an ALERT for you', 'edits');
    expect(await hasAlert(sender, id)).toBe(true);
    expect(await hasAlert(watcher, id)).toBe(true);
    expect(await rowFlags(late.id, id)).toBeNull(); // deferred: no flag of theirs yet
    const queues = await Promise.all([sender, watcher, late].map((u) => registerQueue(u.client, { event_types: ['update_message'] })));
    const editedFlags = async () =>
      Promise.all([sender, watcher, late].map(async (u, i) => {
        const events = await pollEvents(u.client, queues[i]!);
        return (events.at(-1).flags as string[]).includes('has_alert_word');
      }));

    // Still the word: flags unchanged. Then the word goes, and another user's word comes.
    expect((await edit(sender, id, 'new ALERT for you')).response.status).toBe(200);
    expect(await editedFlags()).toEqual([true, true, false]);
    expect((await edit(sender, id, 'sorry, false alarm; later')).response.status).toBe(200);
    expect(await editedFlags()).toEqual([false, false, true]);
    expect(await hasAlert(sender, id)).toBe(false);
    expect(await hasAlert(watcher, id)).toBe(false);
    expect(await rowFlags(late.id, id)).toBe(512); // the deferred recipient's row is written with the flag
    expect((await db().message.findUniqueOrThrow({ where: { id } })).deferredRecipientIds).not.toContain(late.id);
    // A word inside fenced code after an edit flags nothing.
    expect((await edit(sender, id, '```\nlater\n```')).response.status).toBe(200);
    expect(await editedFlags()).toEqual([false, false, false]);
  });

  it('never causes a push notification (Zulip pushes mentions, not alert words)', async () => {
    const me = await someone('nopush');
    const { error } = await me.client.POST('/users/me/apns_device_token', { body: { token: randomBytes(32).toString('hex'), appid: 'org.zulip.Zulip' } });
    expect(error).toBeUndefined();
    await addOk(me, ['urgent']);
    const flagged = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'alerts', content: 'urgent: read this' });
    expect(await hasAlert(me, flagged)).toBe(true);
    expect(await db().pushOutbox.count({ where: { userId: me.id } })).toBe(0);
    // A mention in the same channel does push (the device works).
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'alerts', content: `@**${me.fullName}** urgent` });
    expect(await db().pushOutbox.count({ where: { userId: me.id } })).toBe(1);
  });

  it('stays on messages already flagged when the word is removed, and is not set on new ones', async () => {
    const me = await someone('removed');
    await addOk(me, ['transient']);
    const before = await post(fixed('othello'), 'a transient thing');
    await remove(me, ['transient']);
    const after = await post(fixed('othello'), 'another transient thing');
    expect(await hasAlert(me, before)).toBe(true);
    expect(await hasAlert(me, after)).toBe(false);
  });
});
