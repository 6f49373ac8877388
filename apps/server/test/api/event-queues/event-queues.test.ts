// POST /register, GET /events, DELETE /events: queues, long-polling, acknowledgement, filtering, and
// that what is delivered is what the change stored (checked against the spec's event schemas by the
// server's response validation in tests).
import { describe, expect, it } from 'vitest';
import { expectJsonError, startTestServer, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { pollEvents, pollUntil, registerQueue, type Queue, type RegisterBody } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer({ heartbeatMs: 1_500 });
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);

const register = (as: Person, body: RegisterBody = {}) => registerQueue(env.client(as), body);
/** One poll from `lastEventId`: a long poll unless `dontBlock`. */
const poll = (as: Person, queue: Queue, lastEventId: number, dontBlock = false) => pollEvents(env.client(as), queue, { lastEventId, dontBlock });
/** Waits until the server holds `count` parked long-polls. */
const parkedPolls = (count: number) => waitFor(async () => env.running.deps.delivery.parked === count, { what: `${count} parked polls` });

async function renameChannelDescription(as: Person, channelId: number, description: string) {
  const { error } = await env.client(as).PATCH('/streams/{stream_id}', { params: { path: { stream_id: channelId } }, body: { description } });
  if (error) throw new Error(JSON.stringify(error));
}

async function anyChannel(): Promise<number> {
  return channel.id;
}

describe('POST /register', () => {
  it('answers a queue, the newest event id and the state asked for', async () => {
    const q = await register('hamlet', { fetch_event_types: ['realm_user', 'realm'] });
    expect(typeof q.queue_id).toBe('string');
    expect(Number.isInteger(q.last_event_id)).toBe(true);
    expect(q.zulip_feature_level).toBeTypeOf('number');
    expect(q.realm_users!.some((u) => u.user_id === env.users.hamlet.id)).toBe(true);
    expect(q.max_message_length).toBe(10_000);
    expect(q.server_typing_started_wait_period_milliseconds).toBe(30_000);
    expect(q).not.toHaveProperty('subscriptions');
  });

  it('answers every kind of state without fetch_event_types', async () => {
    const q = await register('hamlet');
    for (const key of ['realm_users', 'realm_user_groups', 'subscriptions', 'never_subscribed', 'streams', 'custom_profile_fields', 'max_message_id', 'unread_msgs', 'drafts', 'realm_emoji']) {
      expect(q, key).toHaveProperty(key);
    }
  });

  it('refuses all_public_streams to guests', async () => {
    const { error, response } = await env.client('polonius').POST('/register', { body: { all_public_streams: true } });
    expectJsonError({ response, error }, 400, 'User not authorized for this query');
  });
});

describe('GET /events', () => {
  it('answers at once with dont_block, then delivers a change made after /register exactly once', async () => {
    const q = await register('hamlet');
    expect(await poll('hamlet', q, q.last_event_id, true)).toEqual([]);
    const channelId = await anyChannel();
    await renameChannelDescription('iago', channelId, `described ${Date.now()}`);
    const events = await poll('hamlet', q, q.last_event_id, true);
    const update = events.filter((e) => e.type === 'stream' && e.op === 'update' && e.property === 'description');
    expect(update).toHaveLength(1);
    expect(update[0].stream_id).toBe(channelId);
    expect(update[0].id).toBeGreaterThan(q.last_event_id);
    // Acknowledged: nothing after it.
    const last = events[events.length - 1].id;
    expect(await poll('hamlet', q, last, true)).toEqual([]);
  });

  it('wakes a parked long-poll when a change commits', async () => {
    const q = await register('othello');
    const before = env.running.deps.delivery.parked;
    const parked = poll('othello', q, q.last_event_id);
    await parkedPolls(before + 1);
    const channelId = await anyChannel();
    const description = `woken ${Date.now()}`;
    await renameChannelDescription('iago', channelId, description);
    const events = await parked;
    expect(events.some((e) => e.type === 'stream' && e.property === 'description' && e.value === description)).toBe(true);
  });

  // The poll parks first (no heartbeat at once); the server's heartbeat is configured to 1.5 s here, so a
  // server that waited Zulip's 45 s instead would not answer within this test's timeout.
  it('answers a heartbeat when nothing happens, carrying the id already seen', async () => {
    const q = await register('cordelia', { event_types: ['drafts'] });
    const before = env.running.deps.delivery.parked;
    const polled = poll('cordelia', q, q.last_event_id);
    await parkedPolls(before + 1);
    expect(await polled).toEqual([{ type: 'heartbeat', id: q.last_event_id }]);
    expect(env.running.deps.delivery.parked).toBe(before);
  }, 20_000);

  it('filters by event_types', async () => {
    const q = await register('hamlet', { event_types: ['realm_user'] });
    await renameChannelDescription('iago', await anyChannel(), `filtered ${Date.now()}`);
    expect(await poll('hamlet', q, q.last_event_id, true)).toEqual([]);
  });

  it('refuses unknown and foreign queues with BAD_EVENT_QUEUE_ID and the queue id', async () => {
    const unknown = await env.raw('/events?queue_id=nope&dont_block=true', { as: 'hamlet' });
    expectJsonError(unknown, 400, 'Bad event queue ID: nope', 'BAD_EVENT_QUEUE_ID');
    expect(unknown.body.queue_id).toBe('nope');
    const q = await register('hamlet');
    const foreign = await env.raw(`/events?queue_id=${q.queue_id}&dont_block=true`, { as: 'othello' });
    expectJsonError(foreign, 400, `Bad event queue ID: ${q.queue_id}`, 'BAD_EVENT_QUEUE_ID');
  });

  it('expires a queue not polled within its lifespan', async () => {
    const q = await register('hamlet');
    await env.running.deps.db.$executeRaw`UPDATE event_queue SET last_accessed_at = now() - interval '11 minutes' WHERE id = ${q.queue_id}`;
    const res = await env.raw(`/events?queue_id=${q.queue_id}&dont_block=true`, { as: 'hamlet' });
    expectJsonError(res, 400, `Bad event queue ID: ${q.queue_id}`, 'BAD_EVENT_QUEUE_ID');
  });

  it('frees a parked poll whose client goes away', async () => {
    const q = await register('shiva');
    const before = env.running.deps.delivery.parked;
    const controller = new AbortController();
    const request = fetch(`${env.url}/api/v1/events?queue_id=${q.queue_id}&last_event_id=${q.last_event_id}`, {
      headers: { Authorization: `Basic ${Buffer.from(`${env.users.shiva.email}:${env.users.shiva.apiKey}`).toString('base64')}` },
      signal: controller.signal,
    }).catch(() => null);
    await parkedPolls(before + 1);
    controller.abort();
    await request;
    await parkedPolls(before);
  });
});

describe('DELETE /events', () => {
  it('deletes the caller\'s queue; polling it then fails', async () => {
    const q = await register('hamlet');
    const { error } = await env.client('hamlet').DELETE('/events', { body: { queue_id: q.queue_id } });
    expect(error).toBeUndefined();
    const res = await env.raw(`/events?queue_id=${q.queue_id}&dont_block=true`, { as: 'hamlet' });
    expectJsonError(res, 400, `Bad event queue ID: ${q.queue_id}`, 'BAD_EVENT_QUEUE_ID');
    const again = await env.client('hamlet').DELETE('/events', { body: { queue_id: q.queue_id } });
    expectJsonError(again, 400, `Bad event queue ID: ${q.queue_id}`, 'BAD_EVENT_QUEUE_ID');
  });
});

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
});

describe('stopping the server', () => {
  it('answers parked long-polls at once with a heartbeat, so clients poll again elsewhere', async () => {
    const other = await startTestServer();
    const q = await registerQueue(other.client('hamlet'), { event_types: ['message'] });
    const parked = pollEvents(other.client('hamlet'), q, { dontBlock: false });
    await waitFor(async () => other.running.deps.delivery.parked === 1, { what: 'the parked poll' });
    const closing = other.running.close({ drainMs: 5_000 }); // as SIGTERM does (main.ts)
    // Answered as close() begins, not when the drain ends or a heartbeat falls due.
    expect(other.running.deps.delivery.parked).toBe(0);
    expect(await parked).toEqual([{ type: 'heartbeat', id: q.last_event_id }]);
    await closing;
  });
});
