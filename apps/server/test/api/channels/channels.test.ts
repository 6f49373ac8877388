// GET /streams, GET /streams/{stream_id}, GET /get_stream_id, GET /streams/{stream_id}/members and
// DELETE /streams/{stream_id} (archiving): the channel object, the listing filters, access for every
// role (owner, administrator, moderator, member, guest, channel administrator through a group,
// non-subscriber of a private channel), stored state and stored events.
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createChannel, useChannelTestServer } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, adminIds, nonGuestIds } from '../../helpers/people.ts';

const { env, sys, roles } = useChannelTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const ids = (...xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);
const EVERYONE: Person[] = ['desdemona', 'iago', 'shiva', 'hamlet', 'othello', 'cordelia', 'polonius'];

const archive = (as: Person, id: number) => env.client(as).DELETE('/streams/{stream_id}', { params: { path: { stream_id: id } } });
const getStream = (as: Person, id: number) => env.client(as).GET('/streams/{stream_id}', { params: { path: { stream_id: id } } });
const getMembers = (as: Person, id: number) => env.client(as).GET('/streams/{stream_id}/members', { params: { path: { stream_id: id } } });
const getStreamId = (as: Person, name: string) => env.client(as).GET('/get_stream_id', { params: { query: { stream: name } } });
async function listStreams(as: Person, query: Record<string, boolean> = {}) {
  const { data, error } = await env.client(as).GET('/streams', { params: { query } });
  if (!data) throw new Error(JSON.stringify(error));
  return data.streams;
}

// ---------------------------------------------------------------------------------------------

describe('the channel object', () => {
  it('has every field of the spec, with the values of the channel', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true, history_public_to_subscribers: true }, ['othello']);
    await db().message.create({ data: { realmId: env.realmId, senderId: uid('hamlet'), channelId: c.id, topic: 'castle', content: 'x', renderedContent: '<p>x</p>' } });
    const first = await db().message.findFirstOrThrow({ where: { channelId: c.id } });
    const { data } = await getStream('hamlet', c.id);
    const row = await db().channel.findUniqueOrThrow({ where: { id: c.id } });
    expect(data!.stream).toEqual({
      stream_id: c.id,
      name: c.name,
      description: '',
      rendered_description: '',
      date_created: Math.floor(row.createdAt.getTime() / 1000),
      creator_id: uid('hamlet'),
      invite_only: true,
      is_web_public: false,
      history_public_to_subscribers: true,
      first_message_id: first.id,
      folder_id: null,
      message_retention_days: null,
      is_archived: false,
      is_announcement_only: false,
      stream_post_policy: 1,
      topics_policy: 'inherit',
      subscriber_count: 2,
      stream_weekly_traffic: null,
      is_recently_active: true,
      can_add_subscribers_group: sys['role:nobody'],
      can_administer_channel_group: { direct_members: [uid('hamlet')], direct_subgroups: [] },
      can_delete_any_message_group: sys['role:nobody'],
      can_delete_own_message_group: sys['role:nobody'],
      can_move_messages_out_of_channel_group: sys['role:nobody'],
      can_move_messages_within_channel_group: sys['role:nobody'],
      can_remove_subscribers_group: sys['role:administrators'],
      can_resolve_topics_group: sys['role:nobody'],
      can_send_message_group: sys['role:everyone'],
      can_subscribe_group: sys['role:nobody'],
    });
  });

  it('leaves deactivated users out of subscriber counts and anonymous settings (feature level 303)', async () => {
    const gone = await db().user.create({
      data: { realmId: env.realmId, email: 'gone-chan@parley.test', deliveryEmail: 'gone-chan@parley.test', fullName: 'Gone', isActive: false, settings: { create: {} } },
    });
    const c = await createChannel(env, 'iago', {}, ['hamlet']);
    await db().subscription.create({ data: { userId: gone.id, channelId: c.id } });
    await env.client('iago').PATCH('/streams/{stream_id}', {
      params: { path: { stream_id: c.id } },
      body: { can_send_message_group: { new: { direct_members: [uid('hamlet'), uid('othello')], direct_subgroups: [] } } },
    });
    await db().userGroupMember.create({ data: { groupId: (await db().channel.findUniqueOrThrow({ where: { id: c.id } })).canSendMessageGroupId, userId: gone.id } });
    const { data } = await getStream('iago', c.id);
    expect(data!.stream.subscriber_count).toBe(2);
    expect(data!.stream.can_send_message_group).toEqual({ direct_members: ids(uid('hamlet'), uid('othello')), direct_subgroups: [] });
    expect((await getMembers('iago', c.id)).data!.subscribers).toEqual(ids(uid('iago'), uid('hamlet')));
  });
});

describe('GET /streams', () => {
  it('lists public and subscribed channels by default, sorted by name, without archived ones', async () => {
    const pub = await createChannel(env, 'iago', { name: 'b public' });
    const priv = await createChannel(env, 'iago', { name: 'a private', invite_only: true }, ['hamlet']);
    const hidden = await createChannel(env, 'iago', { name: 'c hidden', invite_only: true });
    const gone = await createChannel(env, 'iago', { name: 'd archived' });
    await archive('iago', gone.id);

    const forHamlet = (await listStreams('hamlet')).map((s) => s.stream_id);
    expect(forHamlet).toEqual(expect.arrayContaining([pub.id, priv.id]));
    expect(forHamlet).not.toContain(hidden.id);
    expect(forHamlet).not.toContain(gone.id);
    const names = (await listStreams('hamlet')).map((s) => s.name);
    expect(names).toEqual([...names].sort());

    expect((await listStreams('hamlet', { include_public: false })).map((s) => s.stream_id)).not.toContain(pub.id);
    expect((await listStreams('hamlet', { include_subscribed: false })).map((s) => s.stream_id)).not.toContain(priv.id);
    expect((await listStreams('hamlet', { exclude_archived: false })).map((s) => s.stream_id)).toContain(gone.id);
  });

  it('shows guests only the channels they are subscribed to (and web-public ones on request)', async () => {
    const pub = await createChannel(env, 'iago');
    const theirs = await createChannel(env, 'iago', {}, ['polonius']);
    const seen = (await listStreams('polonius')).map((s) => s.stream_id);
    expect(seen).toContain(theirs.id);
    expect(seen).not.toContain(pub.id);
    await db().realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: true } });
    try {
      const web = await createChannel(env, 'desdemona', { is_web_public: true });
      expect((await listStreams('polonius', { include_web_public: true })).map((s) => s.stream_id)).toContain(web.id);
      expect((await listStreams('polonius')).map((s) => s.stream_id)).not.toContain(web.id);
    } finally {
      await db().realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: false } });
    }
  });

  it('include_all lists every channel the caller can see: all of them for administrators', async () => {
    const hidden = await createChannel(env, 'hamlet', { invite_only: true });
    expect((await listStreams('iago', { include_all: true })).map((s) => s.stream_id)).toContain(hidden.id);
    expect((await listStreams('othello', { include_all: true })).map((s) => s.stream_id)).not.toContain(hidden.id);
    // The deprecated alias.
    expect((await listStreams('iago', { include_all_active: true })).map((s) => s.stream_id)).toContain(hidden.id);
    // Channel administrators through a group see it too.
    const grouped = await createChannel(env, 'iago', { invite_only: true, can_administer_channel_group: sys['role:moderators'] });
    expect((await listStreams('shiva', { include_all: true })).map((s) => s.stream_id)).toContain(grouped.id);
  });

  it('include_can_access_content lists channels whose messages the caller can read', async () => {
    const hidden = await createChannel(env, 'iago', { invite_only: true });
    expect((await listStreams('othello', { include_can_access_content: true })).map((s) => s.stream_id)).not.toContain(hidden.id);
    await db().channel.update({ where: { id: hidden.id }, data: { canSubscribeGroupId: sys['role:members'] } });
    expect((await listStreams('othello', { include_can_access_content: true })).map((s) => s.stream_id)).toContain(hidden.id);
    // Administrators do not read private channels they are not in.
    const adminHidden = await createChannel(env, 'hamlet', { invite_only: true });
    expect((await listStreams('iago', { include_can_access_content: true })).map((s) => s.stream_id)).not.toContain(adminHidden.id);
  });

  it('include_default marks default channels', async () => {
    const def = await createChannel(env, 'iago', { is_default_stream: true });
    const streams = await listStreams('hamlet', { include_default: true });
    expect(streams.find((s) => s.stream_id === def.id)!.is_default).toBe(true);
    expect(streams.every((s) => typeof s.is_default === 'boolean')).toBe(true);
    expect((await listStreams('hamlet')).every((s) => !('is_default' in s))).toBe(true);
  });

  it('include_owner_subscribed adds a bot owner’s channels', async () => {
    const email = 'channels-bot@parley.test';
    const bot = await db().user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Channels Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
    });
    const key = 'b'.repeat(32);
    await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
    const priv = await createChannel(env, 'iago', { invite_only: true }, ['hamlet']);
    const auth = basicAuth(email, key);
    const without = await env.raw('/streams', { headers: { Authorization: auth } });
    expect(without.body.streams.map((s: any) => s.stream_id)).not.toContain(priv.id);
    const withOwner = await env.raw('/streams?include_owner_subscribed=true', { headers: { Authorization: auth } });
    expect(withOwner.body.streams.map((s: any) => s.stream_id)).toContain(priv.id);
  });
});

describe('GET /streams/{stream_id}', () => {
  it('answers everyone who can see the channel, and `Invalid channel ID` to others', async () => {
    const pub = await createChannel(env, 'iago', {}, ['polonius']);
    const priv = await createChannel(env, 'hamlet', { invite_only: true });
    const grouped = await createChannel(env, 'iago', { invite_only: true, can_administer_channel_group: sys['role:moderators'] });
    const publicNotSubscribed = await createChannel(env, 'iago');

    for (const p of EVERYONE) expect((await getStream(p, pub.id)).response.status).toBe(200);
    for (const p of ['desdemona', 'iago', 'hamlet'] as Person[]) expect((await getStream(p, priv.id)).response.status).toBe(200);
    for (const p of ['shiva', 'othello', 'cordelia', 'polonius'] as Person[]) expectJsonError(await getStream(p, priv.id), 400, 'Invalid channel ID');
    // Channel administrators through a group see a private channel they are not subscribed to.
    expect((await getStream('shiva', grouped.id)).response.status).toBe(200);
    expectJsonError(await getStream('hamlet', grouped.id), 400, 'Invalid channel ID');
    // Guests only see public channels they are subscribed to.
    expectJsonError(await getStream('polonius', publicNotSubscribed.id), 400, 'Invalid channel ID');
    expectJsonError(await getStream('iago', 999999), 400, 'Invalid channel ID');
  });

  it('shows archived channels as archived', async () => {
    const c = await createChannel(env, 'iago');
    await archive('iago', c.id);
    expect((await getStream('hamlet', c.id)).data!.stream).toMatchObject({ stream_id: c.id, is_archived: true, name: c.name });
  });
});

describe('GET /get_stream_id', () => {
  it('finds a channel by name, case-insensitively', async () => {
    const c = await createChannel(env, 'iago', { name: 'Elsinore' });
    expect((await getStreamId('hamlet', c.name.toLowerCase())).data).toEqual({ result: 'success', msg: '', stream_id: c.id });
  });

  it('treats channels the caller cannot read, and archived ones, as unknown', async () => {
    const priv = await createChannel(env, 'hamlet', { invite_only: true });
    expect((await getStreamId('hamlet', priv.name)).data!.stream_id).toBe(priv.id);
    expectJsonError(await getStreamId('iago', priv.name), 400, `Invalid channel name '${priv.name}'`);
    const pub = await createChannel(env, 'iago');
    expectJsonError(await getStreamId('polonius', pub.name), 400, `Invalid channel name '${pub.name}'`);
    await archive('iago', pub.id);
    expectJsonError(await getStreamId('hamlet', pub.name), 400, `Invalid channel name '${pub.name}'`);
    expectJsonError(await getStreamId('hamlet', 'nonexistent'), 400, "Invalid channel name 'nonexistent'");
  });

  it('requires the name', async () => {
    const res = await env.raw('/get_stream_id', { as: 'hamlet' });
    expectJsonError(res, 400, "Missing 'stream' argument", 'REQUEST_VARIABLE_MISSING');
  });

  it('takes the name raw in the query string, as the Python client sends it', async () => {
    const c = await createChannel(env, 'iago', { name: 'Denmark & Norway' });
    const res = await env.raw(`/get_stream_id?stream=${encodeURIComponent(c.name)}`, { as: 'othello' });
    expect(res.body).toEqual({ result: 'success', msg: '', stream_id: c.id });
  });
});

describe('GET /streams/{stream_id}/members', () => {
  it('lists active subscribers to those who can see the channel', async () => {
    const pub = await createChannel(env, 'iago', {}, ['hamlet', 'polonius']);
    const expected = ids(uid('iago'), uid('hamlet'), uid('polonius'));
    for (const p of ['desdemona', 'shiva', 'othello', 'polonius'] as Person[]) {
      expect((await getMembers(p, pub.id)).data!.subscribers).toEqual(expected);
    }
    const priv = await createChannel(env, 'hamlet', { invite_only: true }, ['othello']);
    expect((await getMembers('iago', priv.id)).data!.subscribers).toEqual(ids(uid('hamlet'), uid('othello')));
    expectJsonError(await getMembers('cordelia', priv.id), 400, 'Invalid channel ID');
    const other = await createChannel(env, 'iago');
    expectJsonError(await getMembers('polonius', other.id), 400, 'Invalid channel ID');
  });
});

describe('DELETE /streams/{stream_id}', () => {
  it('archives: keeps name and subscriptions, leaves the defaults, and tells everyone who could see it', async () => {
    const c = await createChannel(env, 'iago', { is_default_stream: true }, ['hamlet']);
    const mark = await markEvents(env);
    const { data, response } = await archive('iago', c.id);
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await db().channel.findUniqueOrThrow({ where: { id: c.id } })).toMatchObject({ isArchived: true, isDefault: false, name: c.name });
    expect(await db().subscription.count({ where: { channelId: c.id, active: true } })).toBe(2);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => e.payload)).toEqual([
      { type: 'default_streams', default_streams: expect.not.arrayContaining([c.id]) },
      { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'is_archived', value: true },
      { type: 'stream', op: 'delete', streams: [{ stream_id: c.id }], stream_ids: [c.id], for_archiving: true },
    ]);
    expect(events[1]!.userIds).toEqual(nonGuestIds(await activeUsers(env, env.realmId)));
    expect((await listStreams('hamlet')).map((s) => s.stream_id)).not.toContain(c.id);
  });

  it('refuses a channel that is already archived', async () => {
    const c = await createChannel(env, 'iago');
    await archive('iago', c.id);
    expectJsonError(await archive('iago', c.id), 400, 'Channel is already deactivated');
  });

  it('stops a channel being the moderation request channel', async () => {
    const c = await createChannel(env, 'iago', { invite_only: true });
    await db().realm.update({ where: { id: env.realmId }, data: { moderationRequestChannelId: c.id } });
    const mark = await markEvents(env);
    await archive('iago', c.id);
    expect((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).moderationRequestChannelId).toBeNull();
    expect((await eventsSince(env, mark))[0]!.payload).toEqual({ type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: -1 });
  });

  it('permission matrix: administrators and channel administrators only', async () => {
    const forEach = async (who: Person, setup: () => Promise<{ id: number }>, expectation: 'ok' | 'cannot' | 'invalid') => {
      const c = await setup();
      const res = await archive(who, c.id);
      if (expectation === 'ok') expect(res.response.status, who).toBe(200);
      else if (expectation === 'cannot') expectJsonError(res, 400, 'You do not have permission to administer this channel.', 'CANNOT_ADMINISTER_CHANNEL');
      else expectJsonError(res, 400, 'Invalid channel ID');
    };
    const publicChannel = () => createChannel(env, 'cordelia', {}, ['polonius']);
    await forEach('desdemona', publicChannel, 'ok');
    await forEach('iago', publicChannel, 'ok');
    await forEach('shiva', publicChannel, 'cannot');
    await forEach('hamlet', publicChannel, 'cannot');
    await forEach('polonius', publicChannel, 'cannot');
    await forEach('cordelia', publicChannel, 'ok'); // the creator administers the channel
    // Private channels: administrators even when not subscribed; others cannot even see it.
    const privateChannel = () => createChannel(env, 'cordelia', { invite_only: true });
    await forEach('iago', privateChannel, 'ok');
    await forEach('hamlet', privateChannel, 'invalid');
    await forEach('polonius', privateChannel, 'invalid');
    // Channel administrators through a group.
    await forEach('shiva', async () => createChannel(env, 'iago', { invite_only: true, can_administer_channel_group: sys['role:moderators'] }), 'ok');
    // Guests never, even through a group.
    await forEach(
      'polonius',
      async () => createChannel(env, 'iago', { can_administer_channel_group: { direct_members: [uid('polonius')], direct_subgroups: [] } }, ['polonius']),
      'cannot',
    );
    expectJsonError(await archive('iago', 999999), 400, 'Invalid channel ID');
  });

  it('archives the way the Python client asks (client.delete_stream)', async () => {
    const c = await createChannel(env, 'iago');
    const res = await env.raw(`/streams/${c.id}`, { method: 'DELETE', as: 'iago' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
  });
});

describe('wire shapes of the Python zulip client', () => {
  it('client.get_streams(include_public=False, include_default=True): JSON-dumped booleans in the query', async () => {
    const mine = await createChannel(env, 'iago', {}, ['othello']);
    const other = await createChannel(env, 'iago');
    const res = await env.raw('/streams?include_public=false&include_default=true', { as: 'othello' });
    expect(res.status).toBe(200);
    const got = res.body.streams.map((s: any) => s.stream_id);
    expect(got).toContain(mine.id);
    expect(got).not.toContain(other.id);
    expect(res.body.streams.every((s: any) => typeof s.is_default === 'boolean')).toBe(true);
    expectJsonError(await env.raw('/streams?include_public=False', { as: 'othello' }), 400, 'include_public is not valid JSON');
  });

  it('client.get_stream_by_id(id) and client.get_subscribers(stream=name)', async () => {
    const c = await createChannel(env, 'iago', {}, ['hamlet']);
    const one = await env.raw(`/streams/${c.id}`, { as: 'hamlet' });
    expect(one.body).toMatchObject({ result: 'success', msg: '', stream: { stream_id: c.id, name: c.name } });
    // The Python client resolves the name with get_stream_id first, then asks for the members.
    const id = await env.raw(`/get_stream_id?stream=${encodeURIComponent(c.name)}`, { as: 'hamlet' });
    const members = await env.raw(`/streams/${id.body.stream_id}/members`, { as: 'hamlet' });
    expect(members.body).toEqual({ result: 'success', msg: '', subscribers: ids(uid('iago'), uid('hamlet')) });
  });
});

describe('events for private channels', () => {
  it('archiving a private channel tells only those who could see it', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true }, ['othello']);
    const mark = await markEvents(env);
    await archive('iago', c.id);
    const events = await eventsSince(env, mark);
    expect(events.every((e) => JSON.stringify(e.userIds) === JSON.stringify(ids(...adminIds(roles), uid('hamlet'), uid('othello'))))).toBe(true);
  });
});
