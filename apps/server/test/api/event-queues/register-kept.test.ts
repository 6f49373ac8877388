// What POST /register keeps between registrations while PostgreSQL says it is unchanged: the whole
// user lists of a kind of viewer (queries/realm-users-state.ts), every channel with its facts and the
// groups' member arrays (data/digest-cache.ts). A change committed anywhere (the other server process,
// or written in the database by no code of this process) is in the next registration of either
// process, and what is kept never gives one viewer what only another may see.
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();
const second = useSecondProcess(env);
const uid = (p: Person) => env.users[p].id;
const onSecond = (p: Person): ParleyClient => createParleyClient({ site: second.running.url, email: env.users[p].email, apiKey: env.users[p].apiKey });

interface Seen {
  users: Map<number, { full_name: string; delivery_email: string | null }>;
  streams: Map<number, { name: string; subscriber_count: number }>;
  neverSubscribed: Set<number>;
  groups: Map<string, number[]>;
}

/** The kinds of state kept between registrations, as the mobile app asks for them. */
async function seenBy(client: ParleyClient): Promise<Seen> {
  const state = (await registerQueue(client, {
    fetch_event_types: ['realm_user', 'stream', 'subscription', 'realm_user_groups'],
    event_types: ['message'],
    client_gravatar: true,
    include_subscribers: false,
  })) as unknown as {
    realm_users: Array<{ user_id: number; full_name: string; delivery_email: string | null }>;
    streams: Array<{ stream_id: number; name: string; subscriber_count: number }>;
    never_subscribed: Array<{ stream_id: number }>;
    realm_user_groups: Array<{ name: string; members: number[] }>;
  };
  return {
    users: new Map(state.realm_users.map((u) => [u.user_id, u])),
    streams: new Map(state.streams.map((s) => [s.stream_id, s])),
    neverSubscribed: new Set(state.never_subscribed.map((s) => s.stream_id)),
    groups: new Map(state.realm_user_groups.map((g) => [g.name, g.members])),
  };
}

async function ok(response: Promise<{ error?: unknown; response: Response }>) {
  const { error, response: res } = await response;
  if (error !== undefined || res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(error)}`);
}

describe('POST /register: state kept between registrations', () => {
  it('shows a change committed by the other process, or by no code of this one, in the next registration of either', async () => {
    const channel = await createChannel(env, 'iago', { name: 'kept' });
    // Registered twice on each process first, so that each keeps the lists and rows it would reuse.
    for (const client of [env.client('hamlet'), env.client('hamlet'), onSecond('hamlet'), onSecond('hamlet')]) await seenBy(client);
    const before = await seenBy(env.client('hamlet'));
    expect(before.streams.get(channel.id)).toMatchObject({ name: channel.name, subscriber_count: 1 });

    // On the second process: a rename of a user and of the channel, a new member of a group.
    await ok(onSecond('iago').PATCH('/users/{user_id}', { params: { path: { user_id: uid('othello') } }, body: { full_name: 'Othello the Kept' } }));
    await ok(onSecond('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channel.id } }, body: { new_name: `${channel.name} renamed` } }));
    const group = await onSecond('iago').POST('/user_groups/create', { body: { name: 'kept group', description: '', members: [uid('cordelia')] } });
    expect(group.response.status).toBe(200);
    await ok(onSecond('iago').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: (group.data as { group_id: number }).group_id } }, body: { add: [uid('othello')] } }));
    for (const client of [env.client('hamlet'), onSecond('hamlet')]) {
      const seen = await seenBy(client);
      expect(seen.users.get(uid('othello'))!.full_name).toBe('Othello the Kept');
      expect(seen.streams.get(channel.id)!.name).toBe(`${channel.name} renamed`);
      expect(seen.groups.get('kept group')).toEqual([uid('othello'), uid('cordelia')].sort((a, b) => a - b));
    }

    // Written in the database directly, as a process running other code would: a subscriber, a name.
    await subscribeDirectly(env, uid('othello'), channel.id);
    await env.running.deps.db.$executeRaw`UPDATE "user" SET full_name = 'Othello Unannounced' WHERE id = ${uid('othello')}`;
    for (const client of [env.client('hamlet'), onSecond('hamlet')]) {
      const seen = await seenBy(client);
      expect(seen.streams.get(channel.id)!.subscriber_count).toBe(2);
      expect(seen.users.get(uid('othello'))!.full_name).toBe('Othello Unannounced');
    }
  });

  it('shares kept rows between viewers without sharing what only some may see', async () => {
    const secret = await createChannel(env, 'othello', { name: 'kept secret', invite_only: true });
    await ok(env.client('cordelia').PATCH('/settings', { body: { email_address_visibility: 4 } }));
    // Members of the same kind one after another on the same process (the second reuses the first's lists and rows).
    const owner = await seenBy(env.client('othello'));
    const other = await seenBy(env.client('hamlet'));
    const own = await seenBy(env.client('cordelia'));
    const guest = await seenBy(env.client('polonius'));
    expect(owner.streams.has(secret.id)).toBe(true);
    for (const seen of [other, own, guest]) {
      expect(seen.streams.has(secret.id)).toBe(false);
      expect(seen.neverSubscribed.has(secret.id)).toBe(false);
    }
    expect(own.users.get(uid('cordelia'))!.delivery_email).toBe(env.users.cordelia.email);
    expect(other.users.get(uid('cordelia'))!.delivery_email).toBeNull();
    expect(guest.users.get(uid('cordelia'))!.delivery_email).toBeNull();
    // After the viewer's own registration, the next of their kind still sees only the public address.
    expect((await seenBy(env.client('othello'))).users.get(uid('cordelia'))!.delivery_email).toBeNull();
  });
});
