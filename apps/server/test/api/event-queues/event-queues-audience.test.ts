// GET /events delivers to a queue only what happened after it was registered, each event to the users
// entitled to it when it happened: no replay of stored events with a low last_event_id, and a queue
// whose owner is deactivated (or, registered with all_public_streams, becomes a guest) ends at that
// change, even for a poll that was waiting when it happened.
import { describe, expect, it } from 'vitest';
import { type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { createChannel } from '../../helpers/channels.ts';
import { createAccount, deactivateUser, setRole, type Role } from '../../helpers/people.ts';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer({ heartbeatMs: 60_000 });

type EventList = Record<string, unknown>[];

/** A new user of the given role, with a client authenticated as them. */
const newPerson = (label: string, role: Role = 400) => createAccount(env, { label, fullName: label, role });

async function register(client: ParleyClient, allPublicStreams = false): Promise<{ queueId: string; lastEventId: number }> {
  const { data, error } = await client.POST('/register', { body: { all_public_streams: allPublicStreams, fetch_event_types: ['realm'] } });
  if (!data) throw new Error(`register: ${JSON.stringify(error)}`);
  return { queueId: data.queue_id!, lastEventId: data.last_event_id };
}

async function poll(client: ParleyClient, queueId: string, lastEventId: number, dontBlock = true) {
  return client.GET('/events', { params: { query: { queue_id: queueId, last_event_id: lastEventId, dont_block: dontBlock } } });
}

async function polled(client: ParleyClient, queueId: string, lastEventId: number): Promise<EventList> {
  const { data, error } = await poll(client, queueId, lastEventId);
  if (!data) throw new Error(`events: ${JSON.stringify(error)}`);
  return data.events as EventList;
}

const about = (events: EventList, channelId: number) => events.filter((e) => JSON.stringify(e).includes(`"stream_id":${channelId}`));

describe('GET /events: a queue starts when it was registered', () => {
  it('a guest created after a public channel does not replay its creation or description from last_event_id -1', async () => {
    const channel = await createChannel(env, 'iago', { description: 'members only reading' });
    const guest = await newPerson('late-guest', 600);
    // Withheld from the guest through the API...
    const { response } = await guest.client.GET('/streams/{stream_id}', { params: { path: { stream_id: channel.id } } });
    expect(response.status).toBe(400);
    // ...and through the queue, whatever last_event_id it asks from.
    const q = await register(guest.client);
    for (const from of [-1, 0, 1]) {
      const events = await polled(guest.client, q.queueId, from);
      expect(about(events, channel.id)).toEqual([]);
      expect(events.every((e) => (e['id'] as number) > q.lastEventId)).toBe(true);
    }
  });

  it("a user created after a private channel's update does not replay it", async () => {
    const channel = await createChannel(env, 'iago', { invite_only: true }, ['hamlet']);
    const { error } = await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channel.id } }, body: { description: 'secret plans' } });
    expect(error).toBeUndefined();
    const late = await newPerson('late-member');
    const q = await register(late.client);
    const events = await polled(late.client, q.queueId, -1);
    expect(about(events, channel.id)).toEqual([]);
    expect(JSON.stringify(events)).not.toContain('secret plans');
  });

  it('a message of a channel since made private is not replayed to an all_public_streams queue', async () => {
    const channel = await createChannel(env, 'iago', {}, []);
    const sent = await env.client('iago').POST('/messages', { body: { type: 'stream', to: String(channel.id), topic: 'plans', content: 'before the door closed' } });
    expect(sent.error).toBeUndefined();
    const { error } = await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channel.id } }, body: { is_private: true } });
    expect(error).toBeUndefined();
    // hamlet was never subscribed: the message is no longer his to read...
    const read = await env.client('hamlet').GET('/messages/{message_id}', { params: { path: { message_id: sent.data!.id } } });
    expect(read.response.status).toBe(400);
    // ...nor to replay.
    const q = await register(env.client('hamlet'), true);
    const events = await polled(env.client('hamlet'), q.queueId, -1);
    expect(events.filter((e) => e['type'] === 'message')).toEqual([]);
    expect(JSON.stringify(events)).not.toContain('before the door closed');
  });

  it('a low last_event_id after acknowledging does not bring acknowledged events back', async () => {
    const q = await register(env.client('hamlet'));
    const channel = await createChannel(env, 'iago', {}, ['hamlet']);
    const { error } = await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channel.id } }, body: { description: 'first' } });
    expect(error).toBeUndefined();
    const first = await polled(env.client('hamlet'), q.queueId, q.lastEventId);
    expect(about(first, channel.id).length).toBeGreaterThan(0);
    const newest = Math.max(...first.map((e) => e['id'] as number));
    expect(await polled(env.client('hamlet'), q.queueId, newest)).toEqual([]);
    // Acknowledged up to `newest`: asking from before it again answers nothing old.
    expect(await polled(env.client('hamlet'), q.queueId, q.lastEventId)).toEqual([]);
    expect(await polled(env.client('hamlet'), q.queueId, -1)).toEqual([]);
  });
});

describe('GET /events: a queue ends with its owner’s right to it', () => {
  it('a poll waiting when its owner is deactivated answers BAD_EVENT_QUEUE_ID, without the deactivation or anything after', async () => {
    const gone = await newPerson('soon-gone');
    const q = await register(gone.client);
    const parked = env.running.deps.delivery.parked;
    const waiting = poll(gone.client, q.queueId, q.lastEventId, false);
    // The poll is parked before the change (the server counts it).
    await waitFor(async () => env.running.deps.delivery.parked > parked, { what: 'the parked poll' });
    await deactivateUser(env, gone.id);
    const { error } = await env.client('iago').PATCH('/realm', { body: { description: `after ${gone.id} left` } });
    expect(error).toBeUndefined();
    const answer = await waiting;
    expectJsonError(answer, 400, `Bad event queue ID: ${q.queueId}`);
  });

  it('an all_public_streams queue ends when its owner becomes a guest; messages after it are not delivered', async () => {
    const member = await newPerson('soon-guest');
    const q = await register(member.client, true);
    const channel = await createChannel(env, 'iago', {}, []);
    const before = await env.client('iago').POST('/messages', { body: { type: 'stream', to: String(channel.id), topic: 't', content: 'while a member' } });
    expect(before.error).toBeUndefined();
    const events = await polled(member.client, q.queueId, q.lastEventId);
    expect(events.filter((e) => e['type'] === 'message').map((e) => (e['message'] as { id: number }).id)).toEqual([before.data!.id]);
    const seen = Math.max(...events.map((e) => e['id'] as number));
    const parked = env.running.deps.delivery.parked;
    const waiting = poll(member.client, q.queueId, seen, false);
    await waitFor(async () => env.running.deps.delivery.parked > parked, { what: 'the parked poll' });
    await setRole(env, member.id, 600);
    const after = await env.client('iago').POST('/messages', { body: { type: 'stream', to: String(channel.id), topic: 't', content: 'once a guest' } });
    expect(after.error).toBeUndefined();
    expectJsonError(await waiting, 400, `Bad event queue ID: ${q.queueId}`);
    expectJsonError(await poll(member.client, q.queueId, seen), 400, `Bad event queue ID: ${q.queueId}`);
  });

  it('a queue without all_public_streams survives the same role change', async () => {
    const member = await newPerson('guest-keeps-queue');
    const q = await register(member.client, false);
    await setRole(env, member.id, 600);
    const events = await polled(member.client, q.queueId, q.lastEventId);
    expect(events.some((e) => e['type'] === 'realm_user' && (e['person'] as { role?: number }).role === 600)).toBe(true);
  });
});
