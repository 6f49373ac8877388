// POST /typing: typing notifications for direct messages and channels, delivered to the event queues
// of the clients that want them and never stored; Zulip's errors; the typing settings of sender and
// recipients, also when changed behind the server's back. (How the notifications travel on the listener
// connection: typing-listener.test.ts.)
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { randomBytes } from 'node:crypto';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { systemGroupIds } from '../../helpers/groups.ts';
import { pollEvents, pollUntil, registerQueue, type Queue, type RegisterBody } from '../../helpers/queues.ts';

const env = useTestServer({ heartbeatMs: 1_500 });
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);

const register = (as: Person, body: RegisterBody = {}) => registerQueue(env.client(as), body);
/** One poll from `lastEventId`: a long poll unless `dontBlock`. */
const poll = (as: Person, queue: Queue, lastEventId: number, dontBlock = false) => pollEvents(env.client(as), queue, { lastEventId, dontBlock });

async function anyChannel(): Promise<number> {
  return channel.id;
}

describe('POST /typing', () => {
  it('delivers direct typing to every recipient, sender included, without storing anything', async () => {
    const hq = await register('hamlet');
    const oq = await register('othello');
    const stored = await env.running.deps.db.event.count();
    const { error } = await env.client('hamlet').POST('/typing', { body: { op: 'start', to: [env.users.othello.id] } });
    expect(error).toBeUndefined();
    const expected = {
      type: 'typing',
      op: 'start',
      message_type: 'direct',
      sender: { user_id: env.users.hamlet.id, email: env.users.hamlet.email },
      recipients: [
        { user_id: env.users.hamlet.id, email: env.users.hamlet.email },
        { user_id: env.users.othello.id, email: env.users.othello.email },
      ].sort((a, b) => a.user_id - b.user_id),
    };
    for (const [who, q] of [['othello', oq], ['hamlet', hq]] as const) {
      const events = await poll(who, q, q.last_event_id);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject(expected);
      expect(events[0].id).toBeGreaterThan(q.last_event_id);
    }
    expect(await env.running.deps.db.event.count()).toBe(stored);
  });

  it('refuses unknown recipients, empty lists and missing arguments with Zulip\'s errors', async () => {
    expectJsonError(await env.client('hamlet').POST('/typing', { body: { op: 'start', to: [999999] } }), 400, 'Invalid user ID 999999');
    expectJsonError(await env.client('hamlet').POST('/typing', { body: { op: 'start', to: [] } }), 400, "Empty 'to' list");
    expectJsonError(await env.client('hamlet').POST('/typing', { body: { op: 'start' } }), 400, "Missing 'to' argument");
    expectJsonError(await env.client('hamlet').POST('/typing', { body: { op: 'start', type: 'stream', topic: 'x' } }), 400, "Missing 'stream_id' argument");
    expectJsonError(await env.client('hamlet').POST('/typing', { body: { op: 'start', type: 'channel', stream_id: 999999, topic: 'x' } }), 400, 'Invalid channel ID');
  });

  it("refuses a sender who turned typing notifications off, before looking at the recipients", async () => {
    const setSending = (key: string, value: boolean) => env.client('cordelia').PATCH('/settings', { body: { [key]: value } });
    expect((await setSending('send_private_typing_notifications', false)).response.status).toBe(200);
    expect((await setSending('send_stream_typing_notifications', false)).response.status).toBe(200);
    try {
      expectJsonError(await env.client('cordelia').POST('/typing', { body: { op: 'start', to: [env.users.othello.id] } }), 400, 'User has disabled typing notifications for direct messages');
      expectJsonError(await env.client('cordelia').POST('/typing', { body: { op: 'start', to: [999999] } }), 400, 'User has disabled typing notifications for direct messages');
      expectJsonError(await env.client('cordelia').POST('/typing', { body: { op: 'start', type: 'channel', stream_id: 999999, topic: 'x' } }), 400, 'User has disabled typing notifications for channel messages');
    } finally {
      await setSending('send_private_typing_notifications', true);
      await setSending('send_stream_typing_notifications', true);
    }
    const { error } = await env.client('cordelia').POST('/typing', { body: { op: 'start', to: [env.users.othello.id] } });
    expect(error).toBeUndefined();
  });

  it('delivers every one of many concurrent typing notifications once, in id order (they are notified in batches)', async () => {
    const q = await register('othello', { event_types: ['typing'] });
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => env.client('hamlet').POST('/typing', { body: { op: i % 2 ? 'stop' : 'start', to: [env.users.othello.id] } })),
    );
    for (const { error } of answers) expect(error).toBeUndefined();
    const events = await pollUntil(env.client('othello'), q, (got) => got.length >= 20, { maxPolls: 20 });
    expect(events).toHaveLength(20);
    expect(events.every((e) => e.type === 'typing' && e.sender.user_id === env.users.hamlet.id)).toBe(true);
    expect(events.filter((e) => e.op === 'start')).toHaveLength(10);
    const ids = events.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(20);
  });

  it("follows typing settings changed behind the server's back at once (kept per process, dropped when the database announces a change)", async () => {
    const db = env.running.deps.db;
    const othello = env.users.othello.id;
    const hamlet = env.users.hamlet.id;
    const type = () => env.client('hamlet').POST('/typing', { body: { op: 'start', to: [othello] } });
    const q = await register('othello', { event_types: ['typing'] });
    expect((await type()).error).toBeUndefined(); // both are known to the process from now on
    const first = await poll('othello', q, q.last_event_id);
    expect(first).toHaveLength(1);
    await db.$executeRaw`UPDATE user_settings SET receives_typing_notifications = false WHERE user_id = ${othello}`;
    try {
      expect((await type()).error).toBeUndefined();
      expect(await poll('othello', q, first[0].id, true)).toEqual([]);
      await db.$executeRaw`UPDATE user_settings SET send_private_typing_notifications = false WHERE user_id = ${hamlet}`;
      expectJsonError(await type(), 400, 'User has disabled typing notifications for direct messages');
    } finally {
      await db.$executeRaw`UPDATE user_settings SET receives_typing_notifications = true WHERE user_id = ${othello}`;
      await db.$executeRaw`UPDATE user_settings SET send_private_typing_notifications = true WHERE user_id = ${hamlet}`;
    }
    expect((await type()).error).toBeUndefined();
    expect(await poll('othello', q, first[0].id)).toHaveLength(1);
  });

  it('delivers channel typing only to clients with stream_typing_notifications', async () => {
    const channelId = await anyChannel();
    const capable = await register('othello', { client_capabilities: { stream_typing_notifications: true } });
    const plain = await register('othello');
    const { error } = await env.client('hamlet').POST('/typing', { body: { op: 'start', type: 'channel', stream_id: channelId, topic: '(no topic)' } });
    expect(error).toBeUndefined();
    const events = await poll('othello', capable, capable.last_event_id);
    expect(events[0]).toMatchObject({ type: 'typing', op: 'start', message_type: 'stream', stream_id: channelId, topic: '' });
    expect(events[0]).not.toHaveProperty('recipients');
    expect(await poll('othello', plain, plain.last_event_id, true)).toEqual([]);
  });

  it('lets into a channel only who may send there: a private channel is unknown to others, a channel for administrators refuses members', async () => {
    const body = (stream_id: number) => ({ op: 'start' as const, type: 'channel' as const, stream_id, topic: 'who' });
    // A private channel of iago's and othello's: hamlet is told it does not exist, as for an unknown id.
    const secret = await createChannel(env, 'iago', { invite_only: true }, ['othello']);
    const watcher = await register('othello', { client_capabilities: { stream_typing_notifications: true } });
    expectJsonError(await env.client('hamlet').POST('/typing', { body: body(secret.id) }), 400, 'Invalid channel ID');
    expect(await poll('othello', watcher, watcher.last_event_id, true)).toEqual([]);
    expect((await env.client('othello').POST('/typing', { body: body(secret.id) })).error).toBeUndefined();
    expect(await poll('othello', watcher, watcher.last_event_id)).toMatchObject([{ type: 'typing', stream_id: secret.id, sender: { user_id: env.users.othello.id } }]);

    // Posting for administrators only (their group holds iago through his role): hamlet, subscribed, is refused.
    const admins = (await systemGroupIds(env))['role:administrators'];
    const announcements = await createChannel(env, 'iago', { can_send_message_group: admins }, ['hamlet', 'othello']);
    const second = await register('othello', { client_capabilities: { stream_typing_notifications: true } });
    expectJsonError(await env.client('hamlet').POST('/typing', { body: body(announcements.id) }), 400, 'You do not have permission to post in this channel.');
    expect((await env.client('iago').POST('/typing', { body: body(announcements.id) })).error).toBeUndefined();
    expect(await poll('othello', second, second.last_event_id)).toMatchObject([{ type: 'typing', stream_id: announcements.id, sender: { user_id: env.users.iago.id } }]);
  });

  it('delivers channel typing in a channel of 100 active subscribers, and none once it has 101', async () => {
    // iago (who creates it), hamlet and othello, and 97 new users; then one more.
    const big = await createChannel(env, 'iago', {}, ['hamlet', 'othello']);
    const db = env.running.deps.db;
    const tag = randomBytes(4).toString('hex');
    const addSubscribers = async (from: number, count: number) => {
      await db.user.createMany({
        data: Array.from({ length: count }, (_, i) => {
          const email = `typing-${tag}-${from + i}@parley.test`;
          return { realmId: env.realmId, email, deliveryEmail: email, fullName: `Subscriber ${from + i}`, role: 400 };
        }),
      });
      const added = await db.user.findMany({ where: { deliveryEmail: { in: Array.from({ length: count }, (_, i) => `typing-${tag}-${from + i}@parley.test`) } }, select: { id: true } });
      await db.subscription.createMany({ data: added.map((u) => ({ userId: u.id, channelId: big.id, active: true })) });
    };
    // Deactivated subscribers do not count.
    await addSubscribers(0, 97);
    const inactive = `typing-${tag}-inactive@parley.test`;
    const gone = await db.user.create({ data: { realmId: env.realmId, email: inactive, deliveryEmail: inactive, fullName: 'Gone', role: 400, isActive: false } });
    await db.subscription.create({ data: { userId: gone.id, channelId: big.id, active: true } });
    const body = { op: 'start' as const, type: 'channel' as const, stream_id: big.id, topic: 'crowd' };
    const q = await register('othello', { client_capabilities: { stream_typing_notifications: true } });
    expect((await env.client('hamlet').POST('/typing', { body })).error).toBeUndefined();
    const events = await poll('othello', q, q.last_event_id);
    expect(events).toMatchObject([{ type: 'typing', stream_id: big.id, topic: 'crowd' }]);

    await addSubscribers(97, 1);
    expect((await env.client('hamlet').POST('/typing', { body })).error).toBeUndefined();
    expect(await poll('othello', q, events[0].id, true)).toEqual([]);
  });
});
