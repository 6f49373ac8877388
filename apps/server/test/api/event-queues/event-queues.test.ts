// POST /register, GET /events, DELETE /events: queues, long-polling, acknowledgement, filtering, and
// that what is delivered is what the change stored (checked against the spec's event schemas by the
// server's response validation in tests).
import { describe, expect, it } from 'vitest';
import { expectJsonError, startTestServer, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { pollEvents, registerQueue, type Queue, type RegisterBody } from '../../helpers/queues.ts';
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
