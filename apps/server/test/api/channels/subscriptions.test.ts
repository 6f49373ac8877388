// POST /users/me/subscriptions (subscribing, creating channels that do not exist) and
// GET /users/me/subscriptions: channel creation with its settings and permissions, subscribing others,
// authorization of private channels, results, stored state and stored events.
import { describe, expect, it } from 'vitest';
import type { RequestParams } from '@parley/api-types';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { activeSubscribers, fresh, useChannelTestServer } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { adminIds, nonGuestIds } from '../../helpers/people.ts';
import { withRealm } from '../../helpers/realm.ts';
import { CACHED_TABLES } from '../../../src/data/cached-tables.ts';

const { env, sys, roles } = useChannelTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const ids = (...xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);

async function subscribe(as: Person, body: RequestParams<'subscribe'>) {
  return env.client(as).POST('/users/me/subscriptions', { body });
}

async function createChannel(as: Person, name: string, extra: Record<string, unknown> = {}): Promise<number> {
  const { error } = await subscribe(as, { subscriptions: [{ name }], ...extra });
  if (error) throw new Error(`setup: creating ${name} failed: ${JSON.stringify(error)}`);
  return (await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } })).id;
}

// ---------------------------------------------------------------------------------------------

describe('POST /users/me/subscriptions: creating channels', () => {
  it('creates a missing channel with Zulip defaults and subscribes the creator', async () => {
    const mark = await markEvents(env);
    const name = fresh('Verona');
    const { data, response } = await subscribe('hamlet', { subscriptions: [{ name, description: 'Fair\nVerona' }] });
    expect(response.status).toBe(200);
    // Present because send_new_subscription_messages defaults to true; false because Parley sends no
    // notification-bot messages (Zulip reports whether it sent them).
    expect(data).toEqual({ result: 'success', msg: '', subscribed: { [uid('hamlet')]: [name] }, already_subscribed: {}, new_subscription_messages_sent: false });

    const channel = await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
    expect(channel).toMatchObject({
      description: 'Fair Verona',
      renderedDescription: '<p>Fair Verona</p>',
      inviteOnly: false,
      isWebPublic: false,
      historyPublicToSubscribers: true,
      isDefault: false,
      isArchived: false,
      messageRetentionDays: null,
      topicsPolicy: 'inherit',
      folderId: null,
      creatorId: uid('hamlet'),
      canAddSubscribersGroupId: sys['role:nobody'],
      canRemoveSubscribersGroupId: sys['role:administrators'],
      canSendMessageGroupId: sys['role:everyone'],
      canSubscribeGroupId: sys['role:nobody'],
    });
    expect(await activeSubscribers(env, channel.id)).toEqual([uid('hamlet')]);

    // The creator administers the new channel (an anonymous group holding just them).
    const { data: got } = await env.client('hamlet').GET('/streams/{stream_id}', { params: { path: { stream_id: channel.id } } });
    expect(got!.stream.can_administer_channel_group).toEqual({ direct_members: [uid('hamlet')], direct_subgroups: [] });

    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}`)).toEqual(['stream/create', 'subscription/add', 'subscription/peer_add']);
    expect(events[0]!.userIds).toEqual(nonGuestIds(roles));
    expect(events[0]!.payload.streams[0]).toMatchObject({ stream_id: channel.id, name, subscriber_count: 0 });
    expect(events[0]!.payload.for_unarchiving).toBe(false);
    expect(events[1]!.userIds).toEqual([uid('hamlet')]);
    expect(events[1]!.payload.subscriptions[0]).toMatchObject({ stream_id: channel.id, name, subscribers: [uid('hamlet')], color: expect.stringMatching(/^#[0-9a-f]{6}$/) });
    expect(events[2]!.userIds).toEqual(nonGuestIds(roles).filter((id) => id !== uid('hamlet')));
    expect(events[2]!.payload).toEqual({ type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: [uid('hamlet')] });
  });

  it('reports channels the user was already subscribed to, and matches names case-insensitively', async () => {
    const name = fresh('Denmark');
    await createChannel('hamlet', name);
    const mark = await markEvents(env);
    const { data } = await subscribe('hamlet', { subscriptions: [{ name: `  ${name.toUpperCase()} ` }] });
    expect(data).toMatchObject({ subscribed: {}, already_subscribed: { [uid('hamlet')]: [name] } });
    expect(await eventsSince(env, mark)).toEqual([]);
    expect(await db().channel.count({ where: { realmId: env.realmId, name: { equals: name, mode: 'insensitive' } } })).toBe(1);
  });

  it('checks channel names as Zulip does', async () => {
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: '   ' }] }), 400, "Channel name can't be empty.");
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: 'x'.repeat(61) }] }), 400, 'Channel name too long (limit: 60 characters).');
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: 'bad\u0001name' }] }), 400, 'Invalid character in channel name, at position 4.');
    const name = 'y'.repeat(60);
    expect((await subscribe('hamlet', { subscriptions: [{ name }] })).response.status).toBe(200);
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: 'z', description: 'd'.repeat(1025) }] }), 400, 'subscriptions[0]["description"] is too long (limit: 1024 characters)');
  });

  it('creates private channels with protected history unless asked otherwise', async () => {
    const a = await createChannel('hamlet', fresh('private'), { invite_only: true });
    const b = await createChannel('hamlet', fresh('private shared'), { invite_only: true, history_public_to_subscribers: true });
    // Public channels always have public history.
    const c = await createChannel('hamlet', fresh('public'), { history_public_to_subscribers: false });
    const rows = await db().channel.findMany({ where: { id: { in: [a, b, c] } }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => [r.inviteOnly, r.historyPublicToSubscribers])).toEqual([
      [true, false],
      [true, true],
      [false, true],
    ]);
  });

  it('sends the creation event of a private channel only to those who can see it', async () => {
    const mark = await markEvents(env);
    const id = await createChannel('hamlet', fresh('secret'), { invite_only: true });
    const events = await eventsSince(env, mark);
    const create = events.find((e) => e.payload.type === 'stream' && e.payload.op === 'create')!;
    // Organization administrators and the creator (administrator of the channel through its group).
    expect(create.userIds).toEqual(ids(...adminIds(roles), uid('hamlet')));
    const peer = events.find((e) => e.payload.op === 'peer_add')!;
    expect(peer.userIds).toEqual(adminIds(roles));
    expect(peer.payload.stream_ids).toEqual([id]);
  });

  it('needs the organization permission to create public and private channels', async () => {
    const admins = sys['role:administrators'];
    await withRealm(env, env.realmId, { canCreatePublicChannelGroupId: admins }, async () => {
      expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: fresh('nope') }] }), 400, 'Insufficient permission');
      expect((await subscribe('hamlet', { subscriptions: [{ name: fresh('allowed private') }], invite_only: true })).response.status).toBe(200);
      expect((await subscribe('iago', { subscriptions: [{ name: fresh('admin public') }] })).response.status).toBe(200);
    });
    await withRealm(env, env.realmId, { canCreatePrivateChannelGroupId: admins }, async () => {
      expectJsonError(await subscribe('shiva', { subscriptions: [{ name: fresh('nope') }], invite_only: true }), 400, 'Insufficient permission');
    });
    // Subscribing to existing channels needs no creation permission.
    const existing = fresh('existing');
    await createChannel('iago', existing);
    await withRealm(env, env.realmId, { canCreatePublicChannelGroupId: admins }, async () => {
      expect((await subscribe('hamlet', { subscriptions: [{ name: existing }] })).response.status).toBe(200);
    });
  });

  it('refuses guests', async () => {
    expectJsonError(await subscribe('polonius', { subscriptions: [{ name: fresh('guest') }] }), 400, 'Not allowed for guest users');
  });

  it('makes default channels only for organization administrators, and never private ones', async () => {
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: fresh('def') }], is_default_stream: true }), 400, 'Insufficient permission');
    expectJsonError(
      await subscribe('iago', { subscriptions: [{ name: fresh('def') }], is_default_stream: true, invite_only: true }),
      400,
      'A default channel cannot be private.',
    );
    const mark = await markEvents(env);
    const id = await createChannel('iago', fresh('default'), { is_default_stream: true });
    expect((await db().channel.findUniqueOrThrow({ where: { id } })).isDefault).toBe(true);
    const ev = (await eventsSince(env, mark)).find((e) => e.payload.type === 'default_streams')!;
    expect(ev.payload.default_streams).toContain(id);
    expect(ev.userIds).toEqual(nonGuestIds(roles));
  });

  it('sets message retention only for owners, and parses the special values', async () => {
    expectJsonError(
      await subscribe('iago', { subscriptions: [{ name: fresh('ret') }], message_retention_days: 30 }),
      400,
      'Must be an organization owner',
      'UNAUTHORIZED_PRINCIPAL',
    );
    expectJsonError(await subscribe('desdemona', { subscriptions: [{ name: fresh('ret') }], message_retention_days: 'forever' }), 400, "Bad value for 'message_retention_days': forever");
    expectJsonError(await subscribe('desdemona', { subscriptions: [{ name: fresh('ret') }], message_retention_days: 0 }), 400, "Bad value for 'message_retention_days': 0");
    const a = await createChannel('desdemona', fresh('ret'), { message_retention_days: 30 });
    const b = await createChannel('desdemona', fresh('ret'), { message_retention_days: 'unlimited' });
    const c = await createChannel('iago', fresh('ret'), { message_retention_days: 'realm_default' });
    const rows = await db().channel.findMany({ where: { id: { in: [a, b, c] } }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.messageRetentionDays)).toEqual([30, -1, null]);
  });

  it('creates web-public channels only where spectators are allowed, and only for the permitted group', async () => {
    expectJsonError(await subscribe('desdemona', { subscriptions: [{ name: fresh('web') }], is_web_public: true }), 400, 'Web-public channels are not enabled.');
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      // can_create_web_public_channel_group defaults to owners.
      expectJsonError(await subscribe('iago', { subscriptions: [{ name: fresh('web') }], is_web_public: true }), 400, 'Insufficient permission');
      const mark = await markEvents(env);
      const id = await createChannel('desdemona', fresh('web'), { is_web_public: true });
      expect(await db().channel.findUniqueOrThrow({ where: { id } })).toMatchObject({ isWebPublic: true, inviteOnly: false, historyPublicToSubscribers: true });
      // Everyone, guests included, learns about a web-public channel.
      const create = (await eventsSince(env, mark)).find((e) => e.payload.op === 'create')!;
      expect(create.userIds).toContain(uid('polonius'));
      expectJsonError(
        await subscribe('desdemona', { subscriptions: [{ name: fresh('web') }], is_web_public: true, invite_only: true }),
        400,
        'Invalid parameters',
      );
    });
  });

  it('sets topics policies only with the organization permission (moderators by default)', async () => {
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: fresh('topics') }], topics_policy: 'disable_empty_topic' }), 400, 'Insufficient permission');
    const a = await createChannel('shiva', fresh('topics'), { topics_policy: 'disable_empty_topic' });
    const b = await createChannel('hamlet', fresh('topics'), { topics_policy: 'inherit' });
    const rows = await db().channel.findMany({ where: { id: { in: [a, b] } }, orderBy: { id: 'asc' } });
    expect(rows.map((r) => r.topicsPolicy)).toEqual(['disable_empty_topic', 'inherit']);
  });

  it('stores the can_*_group settings given at creation', async () => {
    const admins = sys['role:administrators'];
    const moderators = sys['role:moderators'];
    const id = await createChannel('hamlet', fresh('groups'), {
      can_send_message_group: admins,
      can_add_subscribers_group: { direct_members: [uid('othello')], direct_subgroups: [moderators] },
      can_administer_channel_group: moderators,
      can_remove_subscribers_group: { direct_members: [], direct_subgroups: [moderators] },
    });
    const { data } = await env.client('hamlet').GET('/streams/{stream_id}', { params: { path: { stream_id: id } } });
    expect(data!.stream).toMatchObject({
      can_send_message_group: admins,
      stream_post_policy: 2,
      is_announcement_only: true,
      can_add_subscribers_group: { direct_members: [uid('othello')], direct_subgroups: [moderators] },
      can_administer_channel_group: moderators,
      can_remove_subscribers_group: moderators,
    });
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: fresh('groups') }], can_send_message_group: 999999 }), 400, 'Invalid user group');
    expectJsonError(
      await subscribe('hamlet', { subscriptions: [{ name: fresh('groups') }], can_send_message_group: sys['role:internet'] }),
      400,
      "'can_send_message_group' setting cannot be set to 'role:internet' group.",
    );
    expectJsonError(
      await subscribe('hamlet', { subscriptions: [{ name: fresh('groups') }], can_add_subscribers_group: { direct_members: [999999], direct_subgroups: [] } }),
      400,
      'Invalid user ID: 999999',
    );
  });

  it('puts new channels in a folder, and refuses unknown folders', async () => {
    const folder = await db().channelFolder.create({ data: { realmId: env.realmId, name: fresh('folder') } });
    const id = await createChannel('hamlet', fresh('foldered'), { folder_id: folder.id });
    expect((await db().channel.findUniqueOrThrow({ where: { id } })).folderId).toBe(folder.id);
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name: fresh('x') }], folder_id: 999999 }), 400, 'Invalid channel folder ID');
  });

  it('uses the requested color and checks it', async () => {
    const name = fresh('colored');
    await createChannel('hamlet', name);
    await subscribe('othello', { subscriptions: [{ name, color: '#123abc' }] });
    const channel = await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
    expect((await db().subscription.findUniqueOrThrow({ where: { userId_channelId: { userId: uid('othello'), channelId: channel.id } } })).color).toBe('#123abc');
    expectJsonError(await subscribe('othello', { subscriptions: [{ name, color: 'blue' }] }), 400, 'add.color is not a valid hex color code');
  });

  it('creates one channel when two requests race to create it', async () => {
    const name = fresh('race');
    const results = await Promise.all([subscribe('hamlet', { subscriptions: [{ name }] }), subscribe('othello', { subscriptions: [{ name }] })]);
    expect(results.map((r) => r.response.status)).toEqual([200, 200]);
    const channels = await db().channel.findMany({ where: { realmId: env.realmId, name } });
    expect(channels).toHaveLength(1);
    expect(await activeSubscribers(env, channels[0]!.id)).toEqual([uid('hamlet'), uid('othello')]);
  });
});

describe('POST /users/me/subscriptions: concurrent requests on one channel', () => {
  // Subscriptions only share-lock the channel: requests for different users run side by side, and the
  // unique key of (user, channel) keeps the results exact when they concern the same user.
  it('subscribes different users at once, each told once', async () => {
    const name = fresh('crowd');
    const id = await createChannel('iago', name);
    const people: Person[] = ['hamlet', 'othello', 'cordelia', 'desdemona', 'shiva'];
    const mark = await markEvents(env);
    const results = await Promise.all(people.map((p) => subscribe(p, { subscriptions: [{ name }] })));
    for (const [i, r] of results.entries()) expect(r.data, people[i]).toMatchObject({ subscribed: { [uid(people[i]!)]: [name] }, already_subscribed: {} });
    expect(await activeSubscribers(env, id)).toEqual(ids(uid('iago'), ...people.map(uid)));
    const adds = (await eventsSince(env, mark)).filter((e) => e.payload.op === 'add');
    expect(ids(...adds.flatMap((e) => e.userIds))).toEqual(ids(...people.map(uid)));
    expect(adds).toHaveLength(people.length);
  });

  it('subscribes one user once when the same request comes several times at once', async () => {
    const name = fresh('twice');
    const id = await createChannel('iago', name);
    const mark = await markEvents(env);
    const results = await Promise.all(Array.from({ length: 6 }, () => subscribe('hamlet', { subscriptions: [{ name }] })));
    expect(results.map((r) => r.response.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(results.filter((r) => r.data!.subscribed[uid('hamlet')] !== undefined)).toHaveLength(1);
    expect(results.filter((r) => r.data!.already_subscribed[uid('hamlet')] !== undefined)).toHaveLength(5);
    expect(await activeSubscribers(env, id)).toEqual(ids(uid('iago'), uid('hamlet')));
    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}`)).toEqual(['subscription/add', 'subscription/peer_add']);
  });

  it('resubscribes an unsubscribed user once under concurrent requests', async () => {
    const name = fresh('again');
    const id = await createChannel('iago', name);
    await subscribe('othello', { subscriptions: [{ name }] });
    await env.client('othello').DELETE('/users/me/subscriptions', { body: { subscriptions: [name] } });
    const results = await Promise.all(Array.from({ length: 4 }, () => subscribe('othello', { subscriptions: [{ name }] })));
    expect(results.filter((r) => r.data!.subscribed[uid('othello')] !== undefined)).toHaveLength(1);
    expect(await activeSubscribers(env, id)).toEqual(ids(uid('iago'), uid('othello')));
  });
});

describe('POST /users/me/subscriptions: subscribing others', () => {
  it('subscribes users given by id or e-mail, and reports per user', async () => {
    const name = fresh('Rome');
    await createChannel('hamlet', name);
    const mark = await markEvents(env);
    const { data } = await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello'), uid('hamlet')] });
    expect(data).toMatchObject({ subscribed: { [uid('othello')]: [name] }, already_subscribed: { [uid('hamlet')]: [name] } });
    // Othello was told by nobody: Parley sends no notification-bot messages yet.
    expect(data!.new_subscription_messages_sent).toBe(false);
    const { data: byEmail } = await subscribe('hamlet', { subscriptions: [{ name }], principals: ['CORDELIA@parley.test'] });
    expect(byEmail).toMatchObject({ subscribed: { [uid('cordelia')]: [name] } });
    const channel = await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
    expect(await activeSubscribers(env, channel.id)).toEqual([uid('hamlet'), uid('othello'), uid('cordelia')].sort((a, b) => a - b));
    const events = await eventsSince(env, mark);
    const add = events.find((e) => e.payload.op === 'add' && e.userIds.includes(uid('othello')))!;
    expect(add.userIds).toEqual([uid('othello')]);
    expect(add.payload.subscriptions[0].subscribers).toEqual([uid('hamlet'), uid('othello')]);
  });

  it('reports new_subscription_messages_sent only when the messages were asked for, and never as sent', async () => {
    const name = fresh('notices');
    await createChannel('hamlet', name);
    const { data: asked } = await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello')], send_new_subscription_messages: true });
    expect(asked).toEqual({ result: 'success', msg: '', subscribed: { [uid('othello')]: [name] }, already_subscribed: {}, new_subscription_messages_sent: false });
    const { data: quiet } = await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('iago')], send_new_subscription_messages: false });
    expect(quiet).toEqual({ result: 'success', msg: '', subscribed: { [uid('iago')]: [name] }, already_subscribed: {} });
  });

  it('refuses unknown and deactivated principals with 400 BAD_REQUEST', async () => {
    const name = fresh('principals');
    await createChannel('hamlet', name);
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name }], principals: [999999] }), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name }], principals: ['nobody@parley.test'] }), 400, 'No such user', 'BAD_REQUEST');
    const gone = await db().user.create({
      data: { realmId: env.realmId, email: 'gone-sub@parley.test', deliveryEmail: 'gone-sub@parley.test', fullName: 'Gone', isActive: false, settings: { create: {} } },
    });
    expectJsonError(await subscribe('hamlet', { subscriptions: [{ name }], principals: [gone.id] }), 400, 'User is deactivated', 'BAD_REQUEST');
  });

  it("needs the organization's or the channel's permission to add subscribers", async () => {
    const name = fresh('adders');
    const id = await createChannel('iago', name);
    const admins = sys['role:administrators'];
    await withRealm(env, env.realmId, { canAddSubscribersGroupId: admins }, async () => {
      expectJsonError(await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello')] }), 400, 'Insufficient permission');
      // Subscribing oneself is always fine on a public channel.
      expect((await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('hamlet')] })).response.status).toBe(200);
      // The channel's own can_add_subscribers_group grants it.
      await db().channel.update({ where: { id }, data: { canAddSubscribersGroupId: sys['role:members'] } });
      expect((await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello')] })).response.status).toBe(200);
      // Channel administrators may too: the creator of a channel administers it.
      const own = fresh('own');
      await createChannel('cordelia', own);
      expect((await subscribe('cordelia', { subscriptions: [{ name: own }], principals: [uid('othello')] })).response.status).toBe(200);
      // Organization administrators always may.
      expect((await subscribe('iago', { subscriptions: [{ name: own }], principals: [uid('shiva')] })).response.status).toBe(200);
    });
  });
});

describe('POST /users/me/subscriptions: who may subscribe others (permission matrix)', () => {
  it('with the default organization setting (members): everyone but guests', async () => {
    const name = fresh('matrix');
    await createChannel('iago', name);
    for (const who of ['desdemona', 'iago', 'shiva', 'hamlet'] as Person[]) {
      const { data, error } = await subscribe(who, { subscriptions: [{ name }], principals: [uid('cordelia')] });
      expect(error, who).toBeUndefined();
      expect(data!.subscribed[uid('cordelia')] ?? data!.already_subscribed[uid('cordelia')]).toEqual([name]);
    }
    expectJsonError(await subscribe('polonius', { subscriptions: [{ name }], principals: [uid('cordelia')] }), 400, 'Not allowed for guest users');
  });

  it('with the organization setting restricted to administrators: administrators and channel administrators', async () => {
    const name = fresh('restricted');
    const moderators = sys['role:moderators'];
    await createChannel('iago', name, { can_administer_channel_group: moderators });
    const hidden = fresh('restricted private');
    await createChannel('hamlet', hidden, { invite_only: true, can_administer_channel_group: moderators });
    await withRealm(env, env.realmId, { canAddSubscribersGroupId: sys['role:administrators'] }, async () => {
      expect((await subscribe('desdemona', { subscriptions: [{ name }], principals: [uid('othello')] })).response.status).toBe(200);
      expect((await subscribe('iago', { subscriptions: [{ name }], principals: [uid('othello')] })).response.status).toBe(200);
      // A moderator administers the channel through can_administer_channel_group.
      expect((await subscribe('shiva', { subscriptions: [{ name }], principals: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello')] }), 400, 'Insufficient permission');
      // Administering a private channel does not give access to its messages: not subscribed, no adding.
      expectJsonError(await subscribe('shiva', { subscriptions: [{ name: hidden }], principals: [uid('othello')] }), 400, `Unable to access channel (${hidden}).`);
    });
  });
});

describe('POST /users/me/subscriptions: private channels', () => {
  it('refuses private channels the caller cannot read, or lists them as unauthorized', async () => {
    const name = fresh('hidden');
    const id = await createChannel('hamlet', name, { invite_only: true });
    const open = fresh('open');
    await createChannel('hamlet', open);
    expectJsonError(await subscribe('othello', { subscriptions: [{ name }] }), 400, `Unable to access channel (${name}).`);
    // Not even organization administrators subscribe themselves to private channels they are not in.
    expectJsonError(await subscribe('iago', { subscriptions: [{ name }] }), 400, `Unable to access channel (${name}).`);
    const { data } = await subscribe('othello', { subscriptions: [{ name }, { name: open }], authorization_errors_fatal: false });
    expect(data).toMatchObject({ subscribed: { [uid('othello')]: [open] }, already_subscribed: {}, unauthorized: [name] });
    expect(await activeSubscribers(env, id)).toEqual([uid('hamlet')]);
  });

  it('lets subscribers add others, and can_subscribe_group members subscribe themselves', async () => {
    const name = fresh('club');
    const id = await createChannel('hamlet', name, { invite_only: true });
    expect((await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('othello')] })).response.status).toBe(200);
    await db().channel.update({ where: { id }, data: { canSubscribeGroupId: sys['role:members'] } });
    expect((await subscribe('cordelia', { subscriptions: [{ name }] })).response.status).toBe(200);
    expect(await activeSubscribers(env, id)).toEqual([uid('hamlet'), uid('othello'), uid('cordelia')].sort((a, b) => a - b));
  });

  it('sends the channel to newly subscribed users who could not see it before', async () => {
    const name = fresh('reveal');
    const id = await createChannel('hamlet', name, { invite_only: true });
    const mark = await markEvents(env);
    await subscribe('hamlet', { subscriptions: [{ name }], principals: [uid('polonius')] });
    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}:${e.userIds.join(',')}`)).toEqual([
      `stream/create:${uid('polonius')}`,
      `subscription/add:${uid('polonius')}`,
      `subscription/peer_add:${ids(...adminIds(roles), uid('hamlet')).join(',')}`,
    ]);
    expect(events[0]!.payload.streams[0].stream_id).toBe(id);
  });
});

describe('POST /users/me/subscriptions: archived channels', () => {
  it('still changes subscriptions of archived channels (feature level 362)', async () => {
    const name = fresh('archived');
    const id = await createChannel('iago', name);
    expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: id } } })).response.status).toBe(200);
    const { data } = await subscribe('hamlet', { subscriptions: [{ name }] });
    expect(data).toMatchObject({ subscribed: { [uid('hamlet')]: [name] } });
    expect(await db().channel.count({ where: { realmId: env.realmId, name } })).toBe(1);
  });
});

describe('GET /users/me/subscriptions', () => {
  it('lists the caller’s subscriptions sorted by name, with subscribers on request', async () => {
    const b = fresh('zz-b');
    const a = fresh('zz-a');
    await createChannel('cordelia', b);
    await createChannel('cordelia', a);
    await subscribe('cordelia', { subscriptions: [{ name: a }], principals: [uid('othello')] });

    const { data: plain } = await env.client('cordelia').GET('/users/me/subscriptions', {});
    const names = plain!.subscriptions.map((s) => s.name);
    expect(names).toEqual([...names].sort());
    const subA = plain!.subscriptions.find((s) => s.name === a)!;
    expect(subA).not.toHaveProperty('subscribers');
    expect(subA).toMatchObject({ is_muted: false, in_home_view: true, pin_to_top: false, desktop_notifications: null, subscriber_count: 2 });

    const { data: full } = await env.client('cordelia').GET('/users/me/subscriptions', { params: { query: { include_subscribers: 'true' } } });
    expect(full!.subscriptions.find((s) => s.name === a)!.subscribers).toEqual([uid('othello'), uid('cordelia')].sort((x, y) => x - y));
    const { data: partial } = await env.client('cordelia').GET('/users/me/subscriptions', { params: { query: { include_subscribers: 'partial' } } });
    // Small channels get the full list even when a partial one is allowed.
    expect(partial!.subscriptions.find((s) => s.name === b)!.subscribers).toEqual([uid('cordelia')]);
  });

  it('rejects unknown include_subscribers values', async () => {
    expectJsonError(await env.raw('/users/me/subscriptions?include_subscribers=maybe', { as: 'hamlet' }), 400, 'Invalid include_subscribers');
  });

  it('leaves out channels the user left', async () => {
    const name = fresh('left');
    await createChannel('shiva', name);
    await env.client('shiva').DELETE('/users/me/subscriptions', { body: { subscriptions: [name] } });
    const { data } = await env.client('shiva').GET('/users/me/subscriptions', {});
    expect(data!.subscriptions.map((s) => s.name)).not.toContain(name);
  });
});

describe('wire shapes of the Python zulip client', () => {
  it('subscribes with form-encoded JSON values, principals by e-mail', async () => {
    const name = fresh('python');
    const body = new URLSearchParams({
      subscriptions: JSON.stringify([{ name, description: 'made by zulip.Client.add_subscriptions' }]),
      principals: JSON.stringify(['othello@parley.test']),
      invite_only: 'false',
      announce: 'true',
    });
    const res = await env.raw('/users/me/subscriptions', {
      method: 'POST',
      as: 'hamlet',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ result: 'success', subscribed: { [uid('othello')]: [name] } });
    // Zulip subscribes only the principals, not the caller.
    const channel = await db().channel.findFirstOrThrow({ where: { realmId: env.realmId, name } });
    expect(await activeSubscribers(env, channel.id)).toEqual([uid('othello')]);
    expect(channel.creatorId).toBe(uid('hamlet'));
  });

  it('lists subscriptions with include_subscribers sent as the Python client sends True', async () => {
    const res = await env.raw('/users/me/subscriptions?include_subscribers=true', { as: 'othello' });
    expect(res.status).toBe(200);
    expect(res.body.subscriptions.every((s: any) => Array.isArray(s.subscribers))).toBe(true);
  });

  it('reports a missing subscriptions parameter', async () => {
    const res = await env.raw('/users/me/subscriptions', { method: 'POST', as: 'hamlet', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    expectJsonError(res, 400, "Missing 'subscriptions' argument", 'REQUEST_VARIABLE_MISSING');
    expect(res.body.var_name).toBe('subscriptions');
  });
});

describe('POST /users/me/subscriptions: answering without the invalidation barrier', () => {
  // Subscribing to existing channels answers without waiting to hear its invalidations (it writes
  // subscription and event rows only); that holds while no other table is followed by a cache.
  it('the tables whose triggers notify (cache invalidations) are exactly CACHED_TABLES', async () => {
    const rows = await db().$queryRaw<Array<{ table: string }>>`
      SELECT DISTINCT c.relname AS table FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
      WHERE NOT t.tgisinternal AND pg_get_functiondef(p.oid) LIKE '%pg_notify%'`;
    // event_queue's trigger is no cache invalidation: it tells the other processes' queue caches
    // (events/queue-cache.ts) that a queue was deleted; the deleting process forgets it itself.
    expect(rows.map((r) => r.table).filter((t) => t !== 'event_queue').sort()).toEqual([...CACHED_TABLES].sort());
    expect(rows.map((r) => r.table)).toContain('event_queue');
  });
});
