// Muted users: POST and DELETE /users/me/muted_users/{muted_user_id} for members, guests and bots,
// Zulip's errors with nothing changed, the `muted_users` event and state, and what muting does as in
// Zulip: the muted user's unread messages become read at once (an update_message_flags event, their
// pushes withdrawn), their new messages arrive read (no unread count, no push) and are otherwise
// delivered, and read receipts leave out both who the requester muted and who muted the requester.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { createAccount, createDeactivatedUser, type Account } from '../../helpers/people.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';
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
}
const person = (p: Person): Actor => ({ id: uid(p), client: env.client(p) });

/** A new member with a unique name (no mutes, no messages): tests that change state use their own. */
const someone = (label: string): Promise<Account> => createAccount(env, { label, fullName: `Mute ${label} ${randomBytes(3).toString('hex')}` });

/** A generic bot of hamlet's with its own API key (bots are made in the database: Parley has no bot API yet). */
async function createBot(label: string): Promise<Actor> {
  const email = `${label}-${randomBytes(3).toString('hex')}-bot@parley.test`;
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: `Bot ${label}`, isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
  });
  const key = randomBytes(16).toString('hex');
  await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
  return { id: bot.id, client: createParleyClient({ site: env.url, email, apiKey: key }) };
}

const mute = (as: Actor, target: number) => as.client.POST('/users/me/muted_users/{muted_user_id}', { params: { path: { muted_user_id: target } } });
const unmute = (as: Actor, target: number) => as.client.DELETE('/users/me/muted_users/{muted_user_id}', { params: { path: { muted_user_id: target } } });

async function muteOk(as: Actor, target: number): Promise<void> {
  const { data, error } = await mute(as, target);
  if (!data) throw new Error(`setup: mute failed: ${JSON.stringify(error)}`);
}

/** The `muted_users` state of /register. */
async function mutedState(as: Actor) {
  return (await registerQueue(as.client, { fetch_event_types: ['muted_users'] })).muted_users as Array<{ id: number; timestamp: number }>;
}

/** The `unread_msgs` state of /register. */
async function unreadState(as: Actor) {
  return (await registerQueue(as.client, { fetch_event_types: ['message', 'update_message_flags'] })).unread_msgs as {
    count: number;
    pms: Array<{ unread_message_ids: number[] }>;
    streams: Array<{ unread_message_ids: number[] }>;
    huddles: Array<{ unread_message_ids: number[] }>;
  };
}
const unreadIds = (u: Awaited<ReturnType<typeof unreadState>>) =>
  [...u.pms, ...u.streams, ...u.huddles].flatMap((c) => c.unread_message_ids).sort((a, b) => a - b);

/** The flags the user sees on a message (GET /messages/{id}). */
async function flagsOf(as: Actor, messageId: number): Promise<string[]> {
  const { data, error } = await as.client.GET('/messages/{message_id}', { params: { path: { message_id: messageId } } });
  if (!data) throw new Error(`read of ${messageId} failed: ${JSON.stringify(error)}`);
  return [...(data.message.flags ?? [])].sort();
}

const dm = (from: Actor, to: number, content = 'hello') => sendMessage(from.client, { type: 'direct', to: JSON.stringify([to]), content });
const toChannel = (from: Actor, content: string, topic = 'muting') => sendMessage(from.client, { type: 'stream', to: channel.name, topic, content });

const pushesOf = (userId: number) => db().pushOutbox.findMany({ where: { userId }, orderBy: { id: 'asc' } });
async function addDevice(as: Actor): Promise<void> {
  const { error } = await as.client.POST('/users/me/apns_device_token', { body: { token: randomBytes(32).toString('hex'), appid: 'org.zulip.Zulip' } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
}
/** The user's pushes once none is pending any more (and there are `count`). */
const settledPushes = (userId: number, count: number) =>
  waitFor(async () => {
    const rows = await pushesOf(userId);
    return rows.length === count && rows.every((r) => r.status !== 'pending') && rows;
  });

/** The request fails with `msg` (400 BAD_REQUEST), and changes no mute and stores no event. */
async function expectRefused(as: Actor, send: () => Promise<Parameters<typeof expectJsonError>[0]>, msg: string) {
  const before = await mutedState(as);
  const mark = await markEvents(env);
  expectJsonError(await send(), 400, msg, 'BAD_REQUEST');
  expect(await mutedState(as)).toEqual(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

// ---------------------------------------------------------------------------------------------

describe('POST /users/me/muted_users/{muted_user_id}', () => {
  it('mutes a user: a `muted_users` event with the whole list to the muter only, and the /register state', async () => {
    const me = await someone('muter');
    const first = await someone('first');
    const second = await someone('second');
    const mark = await markEvents(env);
    const before = Math.floor(Date.now() / 1000);
    const res = await mute(me, first.id);
    expect(res.data).toEqual({ result: 'success', msg: '' });
    await muteOk(me, second.id);
    const after = Math.ceil(Date.now() / 1000);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => e.userIds)).toEqual([[me.id], [me.id]]);
    expect(events[0]!.payload).toEqual({ type: 'muted_users', muted_users: [{ id: first.id, timestamp: expect.any(Number) }] });
    expect(events[1]!.payload).toEqual({
      type: 'muted_users',
      muted_users: [
        { id: first.id, timestamp: expect.any(Number) },
        { id: second.id, timestamp: expect.any(Number) },
      ],
    });
    const state = await mutedState(me);
    expect(state).toEqual(events[1]!.payload.muted_users);
    for (const m of state) {
      expect(m.timestamp).toBeGreaterThanOrEqual(before);
      expect(m.timestamp).toBeLessThanOrEqual(after);
    }
    // Nobody else's state changes.
    expect(await mutedState(first)).toEqual([]);
  });

  it('delivers the event to the muter’s queue in Zulip’s shape', async () => {
    const me = await someone('queue');
    const target = await someone('queue-target');
    const queue = await registerQueue(me.client, { event_types: ['muted_users'] });
    await muteOk(me, target.id);
    const events = await pollEvents(me.client, queue);
    expect(events).toEqual([{ id: expect.any(Number), type: 'muted_users', muted_users: [{ id: target.id, timestamp: expect.any(Number) }] }]);
  });

  it('lets members, guests and bots mute; bots and deactivated users can be muted', async () => {
    const guest = person('polonius');
    const bot = await createBot('muting');
    const otherBot = await createBot('muted');
    const gone = await createDeactivatedUser(env, 'mute-gone');
    const member = await someone('roles');
    await muteOk(guest, member.id);
    await muteOk(bot, member.id);
    await muteOk(member, otherBot.id);
    await muteOk(member, gone);
    await muteOk(member, uid('polonius'));
    expect((await mutedState(guest)).map((m) => m.id)).toContain(member.id);
    expect((await mutedState(bot)).map((m) => m.id)).toEqual([member.id]);
    expect((await mutedState(member)).map((m) => m.id)).toEqual([otherBot.id, gone, uid('polonius')]);
    // Clean up the fixed guest's list for the other tests.
    expect((await unmute(guest, member.id)).response.status).toBe(200);
  });

  it("refuses oneself, unknown users and users already muted with Zulip's errors, changing nothing", async () => {
    const me = await someone('errors');
    const target = await someone('errors-target');
    await expectRefused(me, () => mute(me, me.id), 'Cannot mute self');
    await expectRefused(me, () => mute(me, 999_999_999), 'No such user');
    await muteOk(me, target.id);
    await expectRefused(me, () => mute(me, target.id), 'User already muted');
    // A bot muting itself gets the same answer.
    const bot = await createBot('self');
    await expectRefused(bot, () => mute(bot, bot.id), 'Cannot mute self');
    // Not an integer: no such endpoint (as Zulip's URL pattern, which takes digits only).
    const raw = await env.raw('/users/me/muted_users/abc', { method: 'POST', as: 'hamlet' });
    expect(raw.status).toBe(404);
    expect(raw.body.result).toBe('error');
  });

  it("marks the muted user's unread messages read at once (direct, channel, deferred rows), with one update_message_flags event", async () => {
    const me = await someone('catchup');
    const noisy = await someone('noisy');
    const other = person('othello');
    await subscribeDirectly(env, me.id, channel.id);
    await subscribeDirectly(env, noisy.id, channel.id);
    const fromNoisy = [await dm(noisy, me.id, 'one'), await toChannel(noisy, 'two'), await dm(noisy, me.id, 'three')];
    const fromOther = [await dm(other, me.id, 'keep unread'), await toChannel(other, 'keep this one too')];
    // One of noisy's messages was already read: it is not listed again.
    const { error } = await me.client.POST('/messages/flags', { body: { messages: [fromNoisy[2]!], op: 'add', flag: 'read' } });
    expect(error).toBeUndefined();
    expect(unreadIds(await unreadState(me))).toEqual([fromNoisy[0]!, fromNoisy[1]!, ...fromOther].sort((a, b) => a - b));
    const queue = await registerQueue(me.client, { event_types: ['update_message_flags', 'muted_users'] });
    // Sent after the user's last read: their row of it is still deferred (not written) when they mute.
    const late = await toChannel(noisy, 'not written yet');
    expect((await db().message.findUniqueOrThrow({ where: { id: late } })).deferredRecipientIds).toContain(me.id);
    await muteOk(me, noisy.id);
    const events = await pollEvents(me.client, queue);
    expect(events).toEqual([
      { id: expect.any(Number), type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [fromNoisy[0]!, fromNoisy[1]!, late].sort((a, b) => a - b), all: false },
      { id: expect.any(Number), type: 'muted_users', muted_users: [{ id: noisy.id, timestamp: expect.any(Number) }] },
    ]);
    const unread = await unreadState(me);
    expect(unreadIds(unread)).toEqual([...fromOther].sort((a, b) => a - b));
    expect(unread.count).toBe(2);
    expect(await flagsOf(me, fromNoisy[1]!)).toEqual(['read']);
    expect(await flagsOf(me, late)).toEqual(['read']);
    // Nothing unread from them: only the muted_users event.
    const quiet = await someone('quiet');
    const mark = await markEvents(env);
    await muteOk(me, quiet.id);
    expect((await eventsSince(env, mark)).map((e) => e.payload.type)).toEqual(['muted_users']);
  });

  it('withdraws the mobile notifications of the messages it marks read', async () => {
    const me = await someone('withdraw');
    const noisy = await someone('withdraw-noisy');
    await addDevice(me);
    const pushed = await dm(noisy, me.id, 'you will not see this for long');
    await settledPushes(me.id, 1);
    await muteOk(me, noisy.id);
    const rows = await settledPushes(me.id, 2);
    expect(rows.map((p) => p.event)).toEqual(['message', 'remove']);
    expect(JSON.stringify(rows[1]!.payload)).toContain(String(pushed));
  });
});

/**
 * A call as the Python client's call_endpoint(url="/users/me/muted_users/<id>", method=…) sends it (Zulip's
 * documented example): "v1/" joined with the leading-slash URL (a double slash), no parameters, so an
 * empty body with Content-Length 0.
 */
function pythonCall(auth: string, method: string, path: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(`/api/v1/${path}`, env.url), { method, headers: { Authorization: auth, 'User-Agent': 'ZulipPython/0.9.0', 'Content-Length': '0' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('muting from the Python client and zulip-js', () => {
  it("answers call_endpoint's double-slash URL and zulip-js's callEndpoint as Zulip does", async () => {
    const me = await someone('clients');
    const target = await someone('clients-target');
    expect(await pythonCall(me.auth, 'POST', `/users/me/muted_users/${target.id}`)).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    expect(await pythonCall(me.auth, 'POST', `/users/me/muted_users/${target.id}`)).toEqual({ status: 400, body: { result: 'error', msg: 'User already muted', code: 'BAD_REQUEST' } });
    expect(await pythonCall(me.auth, 'DELETE', `/users/me/muted_users/${target.id}`)).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    const js = await zulipJs({ username: me.email, apiKey: me.key, realm: env.url });
    expect(await js.callEndpoint(`/users/me/muted_users/${target.id}`, 'POST', {})).toEqual({ result: 'success', msg: '' });
    expect((await mutedState(me)).map((m) => m.id)).toEqual([target.id]);
    expect(await js.callEndpoint(`/users/me/muted_users/${target.id}`, 'DELETE', {})).toEqual({ result: 'success', msg: '' });
    expect(await mutedState(me)).toEqual([]);
  });
});

describe('messages from a muted user', () => {
  it('arrive already read for the muter (message event flags, unread counts) and are otherwise delivered', async () => {
    const me = await someone('later');
    const noisy = await someone('later-noisy');
    const bystander = await someone('later-bystander');
    for (const u of [me, noisy, bystander]) await subscribeDirectly(env, u.id, channel.id);
    await muteOk(me, noisy.id);
    const mine = await registerQueue(me.client, { event_types: ['message'] });
    const theirs = await registerQueue(bystander.client, { event_types: ['message'] });
    const inChannel = await toChannel(noisy, `plain, and a mention of @**${me.fullName}**`);
    const direct = await dm(noisy, me.id, 'direct');
    const group = await sendMessage(noisy.client, { type: 'direct', to: JSON.stringify([me.id, bystander.id]), content: 'group' });
    const received = await pollEvents(me.client, mine);
    expect(received.map((e) => [e.message.id, [...e.flags].sort()])).toEqual([
      [inChannel, ['mentioned', 'read']],
      [direct, ['read']],
      [group, ['read']],
    ]);
    // Others get them unread.
    expect((await pollEvents(bystander.client, theirs)).map((e) => [e.message.id, e.flags])).toEqual([
      [inChannel, []],
      [group, []],
    ]);
    expect(unreadIds(await unreadState(me))).toEqual([]);
    expect(unreadIds(await unreadState(bystander))).toEqual([inChannel, group]);
    // Still delivered: readable, in the muter's history and narrows.
    expect(await flagsOf(me, direct)).toEqual(['read']);
    const query = new URLSearchParams({ anchor: 'newest', num_before: '10', num_after: '0', narrow: JSON.stringify([{ operator: 'sender', operand: noisy.id }]) });
    const history = await env.raw(`/messages?${query}`, { headers: { Authorization: me.auth } });
    expect(history.body.messages.map((m: { id: number }) => m.id)).toEqual([inChannel, direct, group]);
  });

  it('make no push for the muter, while others are pushed; unmuting makes them unread and pushed again', async () => {
    const me = await someone('nopush');
    const bystander = await someone('nopush-bystander');
    const noisy = await someone('nopush-noisy');
    await addDevice(me);
    await addDevice(bystander);
    await muteOk(me, noisy.id);
    await sendMessage(noisy.client, { type: 'direct', to: JSON.stringify([me.id, bystander.id]), content: 'to both' });
    await settledPushes(bystander.id, 1);
    expect(await pushesOf(me.id)).toEqual([]);
    // A personal mention by the muted user in a channel pushes nothing either.
    await subscribeDirectly(env, me.id, channel.id);
    await subscribeDirectly(env, noisy.id, channel.id);
    await toChannel(noisy, `@**${me.fullName}** look`);
    expect(await pushesOf(me.id)).toEqual([]);
    // A sender the user did not mute still pushes.
    await dm(person('cordelia'), me.id, 'from cordelia');
    expect((await settledPushes(me.id, 1)).map((p) => p.event)).toEqual(['message']);

    expect((await unmute(me, noisy.id)).data).toEqual({ result: 'success', msg: '' });
    const after = await dm(noisy, me.id, 'unmuted now');
    expect(await flagsOf(me, after)).toEqual([]);
    expect(unreadIds(await unreadState(me))).toContain(after);
    expect((await settledPushes(me.id, 2)).map((p) => p.messageId)).toContain(after);
  });

  it('arrive read when the muted user is a bot', async () => {
    const me = await someone('botmute');
    const bot = await createBot('chatty');
    await muteOk(me, bot.id);
    const id = await dm(bot, me.id, 'beep');
    expect(await flagsOf(me, id)).toEqual(['read']);
  });
});

describe('DELETE /users/me/muted_users/{muted_user_id}', () => {
  it('unmutes: the `muted_users` event with the new list; messages marked read stay read', async () => {
    const me = await someone('unmuter');
    const a = await someone('unmute-a');
    const b = await someone('unmute-b');
    const old = await dm(a, me.id, 'before muting');
    await muteOk(me, a.id);
    await muteOk(me, b.id);
    const mark = await markEvents(env);
    const res = await unmute(me, a.id);
    expect(res.data).toEqual({ result: 'success', msg: '' });
    const events = await eventsSince(env, mark);
    expect(events).toEqual([{ userIds: [me.id], payload: { type: 'muted_users', muted_users: [{ id: b.id, timestamp: expect.any(Number) }] } }]);
    expect((await mutedState(me)).map((m) => m.id)).toEqual([b.id]);
    expect(await flagsOf(me, old)).toEqual(['read']);
    // Muting again works, and lists the user last.
    await muteOk(me, a.id);
    expect((await mutedState(me)).map((m) => m.id)).toEqual([b.id, a.id]);
  });

  it('lets guests and bots unmute', async () => {
    const target = await someone('unmute-roles');
    const bot = await createBot('unmuting');
    const guest = person('polonius');
    await muteOk(bot, target.id);
    await muteOk(guest, target.id);
    expect((await unmute(bot, target.id)).response.status).toBe(200);
    expect((await unmute(guest, target.id)).response.status).toBe(200);
    expect(await mutedState(bot)).toEqual([]);
    expect((await mutedState(guest)).map((m) => m.id)).not.toContain(target.id);
  });

  it("refuses unknown users and users not muted (oneself included) with Zulip's errors, changing nothing", async () => {
    const me = await someone('unmute-errors');
    const target = await someone('unmute-errors-target');
    const kept = await someone('unmute-kept');
    await muteOk(me, kept.id);
    await expectRefused(me, () => unmute(me, 999_999_999), 'No such user');
    await expectRefused(me, () => unmute(me, target.id), 'User is not muted');
    await expectRefused(me, () => unmute(me, me.id), 'User is not muted');
    // Someone else's mute is not the caller's to remove.
    await muteOk(target, kept.id);
    await expectRefused(me, () => unmute(me, target.id), 'User is not muted');
    expect((await mutedState(target)).map((m) => m.id)).toEqual([kept.id]);
  });
});

describe('muted users in read receipts', () => {
  it('leave out users the requester muted and users who muted the requester (GET /messages/{message_id}/read_receipts)', async () => {
    const sender = await someone('rr-sender');
    const reader = await someone('rr-reader');
    const viewer = await someone('rr-viewer');
    for (const u of [sender, reader, viewer]) await subscribeDirectly(env, u.id, channel.id);
    const id = await toChannel(sender, 'who read this?', 'receipts');
    for (const u of [reader, viewer]) {
      const { error } = await u.client.POST('/messages/flags', { body: { messages: [id], op: 'add', flag: 'read' } });
      expect(error).toBeUndefined();
    }
    const receipts = async (as: Actor) => {
      const { data, error } = await as.client.GET('/messages/{message_id}/read_receipts', { params: { path: { message_id: id } } });
      if (!data) throw new Error(JSON.stringify(error));
      return [...data.user_ids].sort((a, b) => a - b);
    };
    const both = [reader.id, viewer.id].sort((a, b) => a - b);
    expect(await receipts(sender)).toEqual(both);
    expect(await receipts(viewer)).toEqual(both);
    // The viewer mutes the reader: the viewer no longer sees the reader; the sender still does.
    await muteOk(viewer, reader.id);
    expect(await receipts(viewer)).toEqual([viewer.id]);
    expect(await receipts(sender)).toEqual(both);
    await unmute(viewer, reader.id);
    // The reader mutes the viewer: the viewer no longer sees the reader either.
    await muteOk(reader, viewer.id);
    expect(await receipts(viewer)).toEqual([viewer.id]);
    expect(await receipts(reader)).toEqual([reader.id]);
    expect(await receipts(sender)).toEqual(both);
  });
});
