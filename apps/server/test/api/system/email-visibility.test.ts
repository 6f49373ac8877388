// email_address_visibility outside user objects (issue 20, defect 2): wherever an address leaves the
// server (messages read and delivered live, typing events, push payloads, errors) a user whose address
// is not visible to everyone appears as `user{id}@{host}`, as Zulip's `email` field does; and a direct
// message addressed to the real address resolves only for senders who may see it.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { authorizationOf } from '../../helpers/auth.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { createAccount, deactivateUser, type Account as NewAccount } from '../../helpers/people.ts';
import { waitFor } from '../../helpers/wait.ts';
import { pollEvents, registerQueue, type Queue } from '../../helpers/queues.ts';

const env = useTestServer();
let host: string;
let channel: { id: number; name: string };

interface Account extends NewAccount {
  /** The address others see: `user{id}@{host}`. */
  shown: string;
}

/** A new member whose email_address_visibility is `visibility` (1 everyone … 4 nobody, 5 moderators). */
async function account(label: string, visibility: 1 | 2 | 3 | 4 | 5): Promise<Account> {
  const created = await createAccount(env, { label, fullName: `Visibility ${label} ${randomBytes(3).toString('hex')}` });
  const { error } = await created.client.PATCH('/settings', { body: { email_address_visibility: visibility } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
  return { ...created, shown: `user${created.id}@${host}` };
}

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const authOf = (who: Person | Account) => authorizationOf(env, who);

async function send(who: Person | Account, body: Record<string, unknown>) {
  const form = new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  return env.raw('/messages', { method: 'POST', body: form, headers: { Authorization: authOf(who), 'Content-Type': 'application/x-www-form-urlencoded' } });
}

async function sent(who: Person | Account, body: Record<string, unknown>): Promise<number> {
  const res = await send(who, body);
  if (res.status !== 200) throw new Error(`setup: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

const clientOf = (who: Person | Account) => (typeof who === 'string' ? env.client(who) : who.client);

const register = (who: Person | Account, eventTypes: string[]) =>
  registerQueue(clientOf(who), { event_types: eventTypes, client_capabilities: { stream_typing_notifications: true } });
const poll = (who: Person | Account, q: Queue) => pollEvents(clientOf(who), q);

/** Typing events are notified, not stored: polls (without blocking) until `count` of them arrived. */
async function typingEvents(who: Person | Account, q: Queue, count: number): Promise<any[]> {
  const seen: any[] = [];
  let last = q.last_event_id;
  return waitFor(async () => {
    const events = await pollEvents(clientOf(who), q, { lastEventId: last });
    for (const e of events) {
      last = Math.max(last, e.id);
      if (e.type === 'typing') seen.push(e);
    }
    return seen.length >= count && seen;
  }, { what: `${count} typing events`, timeoutMs: 10_000 });
}

async function readMessage(who: Person | Account, id: number) {
  const params = new URLSearchParams({ anchor: String(id), num_before: '0', num_after: '0', narrow: '[]' });
  const res = await env.raw(`/messages?${params}`, { headers: { Authorization: authOf(who) } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  const [message] = res.body.messages;
  expect(message.id).toBe(id);
  return message;
}

let hidden: Account;
let adminsOnly: Account;
let everyone: Account;
beforeAll(async () => {
  host = new URL((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
  hidden = await account('nobody', 4);
  adminsOnly = await account('admins', 3);
  everyone = await account('everyone', 1);
  channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
  await subscribeDirectly(env, hidden.id, channel.id);
});

describe('messages show the address everyone sees', () => {
  it('GET /messages: sender_email and display_recipient of a direct message, for both participants', async () => {
    const id = await sent(hidden, { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'who am I?' });
    for (const viewer of ['hamlet', hidden] as const) {
      const message = await readMessage(viewer, id);
      expect(message.sender_email).toBe(hidden.shown);
      const people = Object.fromEntries((message.display_recipient as Array<{ id: number; email: string }>).map((p) => [p.id, p.email]));
      expect(people).toEqual({ [hidden.id]: hidden.shown, [uid('hamlet')]: env.users.hamlet.email });
      expect(JSON.stringify(message)).not.toContain(hidden.email);
    }
  });

  it('GET /messages: channel messages and group direct messages', async () => {
    const inChannel = await sent(hidden, { type: 'stream', to: channel.name, topic: 'addresses', content: 'hello' });
    expect((await readMessage('hamlet', inChannel)).sender_email).toBe(hidden.shown);
    // The same address for every viewer, even one who may see the real one (Zulip's `email`).
    await subscribeDirectly(env, adminsOnly.id, channel.id);
    const byAdminsOnly = await sent(adminsOnly, { type: 'stream', to: channel.name, topic: 'addresses', content: 'hello' });
    expect((await readMessage('iago', byAdminsOnly)).sender_email).toBe(adminsOnly.shown);
    expect((await readMessage('hamlet', byAdminsOnly)).sender_email).toBe(adminsOnly.shown);
    const group = await sent('hamlet', { type: 'private', to: JSON.stringify([hidden.id, adminsOnly.id, everyone.id]), content: 'group' });
    const message = await readMessage('hamlet', group);
    const people = Object.fromEntries((message.display_recipient as Array<{ id: number; email: string }>).map((p) => [p.id, p.email]));
    expect(people).toEqual({ [hidden.id]: hidden.shown, [adminsOnly.id]: adminsOnly.shown, [everyone.id]: everyone.email, [uid('hamlet')]: env.users.hamlet.email });
  });

  it('live `message` events carry the same addresses', async () => {
    const hq = await register('hamlet', ['message']);
    const sq = await register(hidden, ['message']);
    const id = await sent(hidden, { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'live' });
    for (const [who, q] of [['hamlet', hq], [hidden, sq]] as const) {
      const events = (await poll(who, q)).filter((e) => e.type === 'message' && e.message.id === id);
      expect(events).toHaveLength(1);
      const message = events[0].message;
      expect(message.sender_email).toBe(hidden.shown);
      expect(Object.fromEntries(message.display_recipient.map((p: any) => [p.id, p.email]))).toEqual({ [hidden.id]: hidden.shown, [uid('hamlet')]: env.users.hamlet.email });
      expect(JSON.stringify(events[0])).not.toContain(hidden.email);
    }
  });

  it('a narrow by address resolves the address everyone sees, not the hidden one', async () => {
    const id = await sent(hidden, { type: 'stream', to: channel.name, topic: 'narrow', content: 'find me' });
    const narrowed = async (operand: string) => {
      const params = new URLSearchParams({ anchor: 'newest', num_before: '5', num_after: '0', narrow: JSON.stringify([{ operator: 'sender', operand }]) });
      return env.raw(`/messages?${params}`, { as: 'hamlet' });
    };
    const shown = await narrowed(hidden.shown);
    expect(shown.status).toBe(200);
    expect(shown.body.messages.map((m: any) => m.id)).toContain(id);
    expectJsonError(await narrowed(hidden.email), 400, `Invalid narrow operator: unknown user ${hidden.email}`, 'BAD_NARROW');
  });
});

describe('typing events', () => {
  it('show the sender and recipients by the address everyone sees', async () => {
    const hq = await register('hamlet', ['typing']);
    const { error } = await hidden.client.POST('/typing', { body: { op: 'start', to: [uid('hamlet')] } });
    expect(error).toBeUndefined();
    const events = await typingEvents('hamlet', hq, 1);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'typing',
      op: 'start',
      message_type: 'direct',
      sender: { user_id: hidden.id, email: hidden.shown },
      recipients: [
        { user_id: uid('hamlet'), email: env.users.hamlet.email },
        { user_id: hidden.id, email: hidden.shown },
      ].sort((a, b) => a.user_id - b.user_id),
    });
  });

  it('hamlet typing to a hidden user lists them by the address everyone sees', async () => {
    const q = await register(adminsOnly, ['typing']);
    const { error } = await env.client('hamlet').POST('/typing', { body: { op: 'start', to: [adminsOnly.id] } });
    expect(error).toBeUndefined();
    const [event] = await typingEvents(adminsOnly, q, 1);
    expect(event.sender).toEqual({ user_id: uid('hamlet'), email: env.users.hamlet.email });
    expect(event.recipients.find((r: any) => r.user_id === adminsOnly.id).email).toBe(adminsOnly.shown);
  });

  it('channel typing shows the sender by the address everyone sees', async () => {
    const hq = await register('hamlet', ['typing']);
    const { error } = await hidden.client.POST('/typing', { body: { op: 'start', type: 'channel', stream_id: channel.id, topic: 'typing' } });
    expect(error).toBeUndefined();
    const [event] = await typingEvents('hamlet', hq, 1);
    expect(event.sender).toEqual({ user_id: hidden.id, email: hidden.shown });
  });

  it('follow a change of visibility made after the sender was last seen', async () => {
    const who = await account('changing', 1);
    const hq = await register('hamlet', ['typing']);
    await who.client.POST('/typing', { body: { op: 'start', to: [uid('hamlet')] } });
    await typingEvents('hamlet', hq, 1);
    const { error } = await who.client.PATCH('/settings', { body: { email_address_visibility: 4 } });
    expect(error).toBeUndefined();
    await who.client.POST('/typing', { body: { op: 'stop', to: [uid('hamlet')] } });
    const events = await typingEvents('hamlet', hq, 2);
    expect(events.map((e) => e.sender.email)).toEqual([who.email, who.shown]);
  });
});

describe('direct messages addressed by e-mail', () => {
  it('the address everyone sees always resolves', async () => {
    const res = await send('hamlet', { type: 'private', to: JSON.stringify([hidden.shown]), content: 'by shown address' });
    expect(res.status).toBe(200);
    expect((await readMessage('hamlet', res.body.id)).display_recipient.map((p: any) => p.id).sort()).toEqual([hidden.id, uid('hamlet')].sort());
  });

  it('the real address resolves only for senders who may see it', async () => {
    // Visible to administrators: a member gets Zulip's error for an unknown address, an administrator succeeds.
    expectJsonError(await send('hamlet', { type: 'private', to: JSON.stringify([adminsOnly.email]), content: 'guess' }), 400, `Invalid email '${adminsOnly.email}'`);
    expectJsonError(await send('shiva', { type: 'private', to: adminsOnly.email, content: 'guess' }), 400, `Invalid email '${adminsOnly.email}'`);
    const ok = await send('iago', { type: 'private', to: JSON.stringify([adminsOnly.email]), content: 'I may' });
    expect(ok.status).toBe(200);
    expect((await readMessage('iago', ok.body.id)).display_recipient.map((p: any) => p.id).sort()).toEqual([adminsOnly.id, uid('iago')].sort());
    // Visible to nobody: nobody else resolves it, the user themselves does.
    expectJsonError(await send('iago', { type: 'private', to: JSON.stringify([hidden.email]), content: 'guess' }), 400, `Invalid email '${hidden.email}'`);
    expectJsonError(await send('desdemona', { type: 'private', to: JSON.stringify([hidden.email]), content: 'guess' }), 400, `Invalid email '${hidden.email}'`);
    expect((await send(hidden, { type: 'private', to: JSON.stringify([hidden.email]), content: 'note to self' })).status).toBe(200);
    // Visible to everyone: the real address is the shown one.
    expect((await send('polonius', { type: 'private', to: JSON.stringify([everyone.email]), content: 'hi' })).status).toBe(200);
  });

  it("a deactivated recipient's error names the address everyone sees", async () => {
    const gone = await account('gone', 4);
    await deactivateUser(env, gone.id);
    expectJsonError(await send('hamlet', { type: 'private', to: JSON.stringify([gone.id]), content: 'x' }), 400, `'${gone.shown}' is no longer using Zulip.`);
    expectJsonError(await send('hamlet', { type: 'private', to: JSON.stringify([gone.shown]), content: 'x' }), 400, `'${gone.shown}' is no longer using Zulip.`);
  });
});

describe('push notifications', () => {
  it("carry the sender's address as everyone sees it", async () => {
    const r = await account('push', 1);
    const { error } = await r.client.POST('/users/me/apns_device_token', { body: { token: randomBytes(32).toString('hex'), appid: 'org.zulip.Zulip' } });
    expect(error).toBeUndefined();
    const id = await sent(hidden, { type: 'private', to: JSON.stringify([r.id]), content: 'pushed' });
    const [push] = await db().pushOutbox.findMany({ where: { userId: r.id, messageId: id } });
    expect((push!.payload as { zulip: { sender_email: string } }).zulip.sender_email).toBe(hidden.shown);
    expect(JSON.stringify(push!.payload)).not.toContain(hidden.email);
  });
});

describe('subscription principals given as addresses', () => {
  async function subscribeOthers(as: Person, principals: string[]) {
    const target = await createChannel(env, 'iago', {}, [as]);
    return env.client(as).POST('/users/me/subscriptions', { body: { subscriptions: [{ name: target.name }], principals } });
  }

  it('name a user by the address the caller sees, or by the real one only when the caller may see it', async () => {
    // hamlet may not see the real address of an admins-only user: unknown, like every other unknown address.
    expectJsonError(await subscribeOthers('hamlet', [adminsOnly.email]), 400, 'No such user');
    expectJsonError(await subscribeOthers('iago', [hidden.email]), 400, 'No such user');
    // The shown form always works; an administrator may use the real address they can see.
    expect((await subscribeOthers('hamlet', [adminsOnly.shown])).error).toBeUndefined();
    expect((await subscribeOthers('iago', [adminsOnly.email])).error).toBeUndefined();
    expect((await subscribeOthers('hamlet', [everyone.email])).error).toBeUndefined();
  });
});
