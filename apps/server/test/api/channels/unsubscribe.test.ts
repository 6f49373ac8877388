// DELETE /users/me/subscriptions (seed operation 14): channel names, principals by id or e-mail, the
// three ways to remove others, removed / not_removed, STREAM_DOES_NOT_EXIST with `stream`, unknown or
// deactivated principals (400 BAD_REQUEST), archived channels, stored state and stored events.
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { activeSubscribers, fresh, subscribeDirectly, useChannelTestServer } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { adminIds, nonGuestIds } from '../../helpers/people.ts';

const { env, sys, roles } = useChannelTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const ids = (...xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);

/** Creates a channel (as `creator`) with the given subscribers. */
async function channelWith(creator: Person, subscribers: Person[], extra: Record<string, unknown> = {}): Promise<{ id: number; name: string }> {
  const name = fresh('chan');
  const { error } = await env.client(creator).POST('/users/me/subscriptions', { body: { subscriptions: [{ name }], ...extra } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
  const others = subscribers.filter((p) => p !== creator);
  if (others.length) {
    const res = await env.client(creator).POST('/users/me/subscriptions', { body: { subscriptions: [{ name }], principals: others.map(uid) } });
    if (res.error) throw new Error(`setup: ${JSON.stringify(res.error)}`);
  }
  if (!subscribers.includes(creator)) await unsubscribe(creator, { subscriptions: [name] });
  const row = await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
  return { id: row.id, name };
}

async function unsubscribe(as: Person, body: { subscriptions: string[]; principals?: number[] | string[] }) {
  return env.client(as).DELETE('/users/me/subscriptions', { body });
}

let bots = 0;
async function createBot(owner: Person): Promise<{ id: number; email: string }> {
  const n = ++bots;
  const email = `bot-${n}@parley.test`;
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: `Bot ${n}`, isBot: true, botType: 1, botOwnerId: uid(owner), settings: { create: {} } },
  });
  return { id: bot.id, email };
}

// ---------------------------------------------------------------------------------------------

describe('DELETE /users/me/subscriptions: the caller', () => {
  it('unsubscribes the caller, reporting removed and not_removed channels', async () => {
    const a = await channelWith('hamlet', ['hamlet', 'othello']);
    const b = await channelWith('othello', ['othello']);
    const mark = await markEvents(env);
    const { data, response } = await unsubscribe('hamlet', { subscriptions: [a.name, ` ${b.name.toUpperCase()} `] });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '', removed: [a.name], not_removed: [b.name] });
    expect(await activeSubscribers(env, a.id)).toEqual([uid('othello')]);
    // The row is kept (inactive) so that the user's settings for the channel survive.
    expect(await db().subscription.findUnique({ where: { userId_channelId: { userId: uid('hamlet'), channelId: a.id } } })).toMatchObject({ active: false });

    const events = await eventsSince(env, mark);
    expect(events).toEqual([
      { userIds: [uid('hamlet')], payload: { type: 'subscription', op: 'remove', subscriptions: [{ name: a.name, stream_id: a.id }] } },
      {
        userIds: nonGuestIds(roles).filter((id) => id !== uid('hamlet')),
        payload: { type: 'subscription', op: 'peer_remove', stream_ids: [a.id], user_ids: [uid('hamlet')] },
      },
    ]);
  });

  it('changes nothing and sends nothing when the caller was not subscribed', async () => {
    const a = await channelWith('othello', ['othello']);
    const mark = await markEvents(env);
    const { data } = await unsubscribe('cordelia', { subscriptions: [a.name] });
    expect(data).toMatchObject({ removed: [], not_removed: [a.name] });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('answers STREAM_DOES_NOT_EXIST with the name in `stream` for an unknown channel (the seed)', async () => {
    const a = await channelWith('hamlet', ['hamlet']);
    const res = await unsubscribe('hamlet', { subscriptions: [a.name, 'no such place'] });
    expectJsonError(res, 400, "Channel 'no such place' does not exist", 'STREAM_DOES_NOT_EXIST');
    expect(res.error).toMatchObject({ stream: 'no such place' });
    // Nothing was removed.
    expect(await activeSubscribers(env, a.id)).toEqual([uid('hamlet')]);
  });

  it('checks channel names', async () => {
    expectJsonError(await unsubscribe('hamlet', { subscriptions: [' '] }), 400, "Channel name can't be empty.");
    expectJsonError(await unsubscribe('hamlet', { subscriptions: ['n'.repeat(61)] }), 400, 'Channel name too long (limit: 60 characters).');
  });

  it('lets guests leave channels', async () => {
    const a = await channelWith('hamlet', ['hamlet', 'polonius']);
    const { data } = await unsubscribe('polonius', { subscriptions: [a.name] });
    expect(data).toMatchObject({ removed: [a.name], not_removed: [] });
  });

  it('sends a stream deletion to a user who can no longer see a private channel', async () => {
    const a = await channelWith('hamlet', ['hamlet', 'othello'], { invite_only: true });
    const mark = await markEvents(env);
    await unsubscribe('othello', { subscriptions: [a.name] });
    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}:${e.userIds.join(',')}`)).toEqual([
      `subscription/remove:${uid('othello')}`,
      `stream/delete:${uid('othello')}`,
      `subscription/peer_remove:${ids(...adminIds(roles), uid('hamlet')).join(',')}`,
    ]);
    expect(events[1]!.payload).toEqual({ type: 'stream', op: 'delete', streams: [{ stream_id: a.id }], stream_ids: [a.id], for_archiving: false });
  });

  it('leaves archived channels too (feature level 362)', async () => {
    const a = await channelWith('iago', ['iago', 'hamlet']);
    await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: a.id } } });
    const { data } = await unsubscribe('hamlet', { subscriptions: [a.name] });
    expect(data).toMatchObject({ removed: [a.name] });
    expect(await activeSubscribers(env, a.id)).toEqual([uid('iago')]);
  });
});

describe('DELETE /users/me/subscriptions: principals', () => {
  it('removes users given by id or by e-mail, repeating names per user', async () => {
    const a = await channelWith('iago', ['hamlet', 'othello', 'cordelia']);
    const b = await channelWith('iago', ['hamlet']);
    const { data } = await unsubscribe('iago', { subscriptions: [a.name, b.name], principals: [uid('hamlet'), uid('othello')] });
    expect(data).toMatchObject({ removed: [a.name, b.name, a.name], not_removed: [b.name] });
    const { data: byEmail } = await unsubscribe('iago', { subscriptions: [a.name], principals: ['Cordelia@Parley.test'] });
    expect(byEmail).toMatchObject({ removed: [a.name], not_removed: [] });
    expect(await activeSubscribers(env, a.id)).toEqual([]);
  });

  it('sends each removed user their own removal event', async () => {
    const a = await channelWith('iago', ['hamlet', 'othello']);
    const mark = await markEvents(env);
    await unsubscribe('iago', { subscriptions: [a.name], principals: [uid('hamlet'), uid('othello')] });
    const events = await eventsSince(env, mark);
    const removes = events.filter((e) => e.payload.op === 'remove');
    expect(removes.map((e) => e.userIds)).toEqual([[uid('hamlet')], [uid('othello')]]);
    const peer = events.find((e) => e.payload.op === 'peer_remove')!;
    expect(peer.payload.user_ids).toEqual(ids(uid('hamlet'), uid('othello')));
  });

  it('refuses unknown and deactivated principals with HTTP 400 BAD_REQUEST (feature level 208)', async () => {
    const a = await channelWith('iago', ['hamlet']);
    expectJsonError(await unsubscribe('iago', { subscriptions: [a.name], principals: [999999] }), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await unsubscribe('iago', { subscriptions: [a.name], principals: ['ghost@parley.test'] }), 400, 'No such user', 'BAD_REQUEST');
    const gone = await db().user.create({
      data: { realmId: env.realmId, email: 'gone-unsub@parley.test', deliveryEmail: 'gone-unsub@parley.test', fullName: 'Gone', isActive: false, settings: { create: {} } },
    });
    await subscribeDirectly(env, gone.id, a.id);
    expectJsonError(await unsubscribe('iago', { subscriptions: [a.name], principals: [gone.id] }), 400, 'User is deactivated', 'BAD_REQUEST');
    expectJsonError(await unsubscribe('iago', { subscriptions: [a.name], principals: ['gone-unsub@parley.test'] }), 400, 'User is deactivated', 'BAD_REQUEST');
  });

  it('treats principals naming only the caller as leaving', async () => {
    const a = await channelWith('hamlet', ['hamlet']);
    const { data } = await unsubscribe('hamlet', { subscriptions: [a.name], principals: [uid('hamlet')] });
    expect(data).toMatchObject({ removed: [a.name] });
  });
});

describe('DELETE /users/me/subscriptions: who may remove others', () => {
  it('organization administrators may remove anyone from any channel, even private ones they are not in', async () => {
    const a = await channelWith('hamlet', ['hamlet', 'othello'], { invite_only: true });
    for (const admin of ['desdemona', 'iago'] as Person[]) {
      await subscribeDirectly(env, uid('othello'), a.id);
      const { data } = await unsubscribe(admin, { subscriptions: [a.name], principals: [uid('othello')] });
      expect(data).toMatchObject({ removed: [a.name] });
    }
  });

  it('moderators, members and guests may not by default (can_remove_subscribers_group is administrators)', async () => {
    const a = await channelWith('iago', ['shiva', 'hamlet', 'othello', 'polonius']);
    for (const who of ['shiva', 'hamlet', 'polonius'] as Person[]) {
      expectJsonError(await unsubscribe(who, { subscriptions: [a.name], principals: [uid('othello')] }), 400, 'Insufficient permission');
    }
    expect(await activeSubscribers(env, a.id)).toContain(uid('othello'));
  });

  it("members of the channel's can_remove_subscribers_group may, when they can access the channel", async () => {
    const a = await channelWith('iago', ['othello']);
    await db().channel.update({ where: { id: a.id }, data: { canRemoveSubscribersGroupId: sys['role:members'] } });
    const { data } = await unsubscribe('hamlet', { subscriptions: [a.name], principals: [uid('othello')] });
    expect(data).toMatchObject({ removed: [a.name] });

    // A private channel the member cannot access: the group alone is not enough.
    const p = await channelWith('iago', ['othello'], { invite_only: true });
    await db().channel.update({ where: { id: p.id }, data: { canRemoveSubscribersGroupId: sys['role:members'] } });
    expectJsonError(await unsubscribe('hamlet', { subscriptions: [p.name], principals: [uid('othello')] }), 400, 'Insufficient permission');
    await subscribeDirectly(env, uid('hamlet'), p.id);
    expect((await unsubscribe('hamlet', { subscriptions: [p.name], principals: [uid('othello')] })).data).toMatchObject({ removed: [p.name] });
  });

  it('guests may not even when the group would include them', async () => {
    const a = await channelWith('iago', ['othello', 'polonius']);
    await db().channel.update({ where: { id: a.id }, data: { canRemoveSubscribersGroupId: sys['role:everyone'] } });
    expectJsonError(await unsubscribe('polonius', { subscriptions: [a.name], principals: [uid('othello')] }), 400, 'Insufficient permission');
  });

  it('channel administrators (through can_administer_channel_group) may', async () => {
    // The creator administers the channel by default.
    const a = await channelWith('cordelia', ['cordelia', 'othello'], { invite_only: true });
    expect((await unsubscribe('cordelia', { subscriptions: [a.name], principals: [uid('othello')] })).data).toMatchObject({ removed: [a.name] });
    // Also through a group, without being subscribed.
    const b = await channelWith('iago', ['othello'], { invite_only: true, can_administer_channel_group: sys['role:moderators'] });
    expect((await unsubscribe('shiva', { subscriptions: [b.name], principals: [uid('othello')] })).data).toMatchObject({ removed: [b.name] });
  });

  it('users may remove their own bots from channels they can access, not other bots', async () => {
    const bot = await createBot('hamlet');
    const other = await createBot('othello');
    const a = await channelWith('iago', []);
    await subscribeDirectly(env, bot.id, a.id);
    await subscribeDirectly(env, other.id, a.id);
    expect((await unsubscribe('hamlet', { subscriptions: [a.name], principals: [bot.email] })).data).toMatchObject({ removed: [a.name] });
    expectJsonError(await unsubscribe('hamlet', { subscriptions: [a.name], principals: [other.id] }), 400, 'Insufficient permission');

    // A private channel the owner cannot access.
    const p = await channelWith('iago', [], { invite_only: true });
    await subscribeDirectly(env, bot.id, p.id);
    expectJsonError(await unsubscribe('hamlet', { subscriptions: [p.name], principals: [bot.id] }), 400, 'Insufficient permission');
    expect(await activeSubscribers(env, p.id)).toEqual([bot.id]);
  });

  it('checks permissions before telling whether channels exist', async () => {
    const a = await channelWith('iago', ['othello']);
    expectJsonError(await unsubscribe('hamlet', { subscriptions: [a.name, 'missing'], principals: [uid('othello')] }), 400, 'Insufficient permission');
    expectJsonError(await unsubscribe('iago', { subscriptions: [a.name, 'missing'], principals: [uid('othello')] }), 400, "Channel 'missing' does not exist", 'STREAM_DOES_NOT_EXIST');
  });
});

describe('wire shapes of the Python zulip client', () => {
  const form = (values: Record<string, unknown>) =>
    new URLSearchParams(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))).toString();

  it('client.remove_subscriptions(["x"]): a form-encoded DELETE body', async () => {
    const a = await channelWith('hamlet', ['hamlet']);
    const res = await env.raw('/users/me/subscriptions', {
      method: 'DELETE',
      as: 'hamlet',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ subscriptions: [a.name] }),
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', removed: [a.name], not_removed: [] });
  });

  it('client.remove_subscriptions(["x"], principals=["email"]): unsubscribing by e-mail principal', async () => {
    const a = await channelWith('iago', ['othello']);
    const res = await env.raw('/users/me/subscriptions', {
      method: 'DELETE',
      as: 'iago',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form({ subscriptions: [a.name], principals: ['othello@parley.test'] }),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ removed: [a.name], not_removed: [] });
    expect(await activeSubscribers(env, a.id)).toEqual([]);
  });

  it('parameters in the query string of a DELETE work too', async () => {
    const a = await channelWith('hamlet', ['hamlet']);
    const res = await env.raw(`/users/me/subscriptions?${form({ subscriptions: [a.name] })}`, { method: 'DELETE', as: 'hamlet' });
    expect(res.body).toMatchObject({ result: 'success', removed: [a.name] });
  });

  it('reports malformed and missing parameters as Zulip does', async () => {
    const send = (body: string) =>
      env.raw('/users/me/subscriptions', { method: 'DELETE', as: 'hamlet', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    expectJsonError(await send('subscriptions=Verona'), 400, 'subscriptions is not valid JSON');
    expectJsonError(await send(''), 400, "Missing 'subscriptions' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await send(form({ subscriptions: 'Verona' })), 400, 'subscriptions is not valid JSON');
    expectJsonError(await send(form({ subscriptions: { name: 'Verona' } })), 400, 'subscriptions is not a list');
  });
});
