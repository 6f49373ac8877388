// PATCH /streams/{stream_id} (seed operation 5): every parameter, the state rules on the combined
// result, the limits of /register, the permission matrix, all-or-nothing application, stored state and
// stored events.
import type { RequestParams } from '@parley/api-types';
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, fresh, subscribeDirectly, useChannelTestServer } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { adminIds, nonGuestIds } from '../../helpers/people.ts';
import { withRealm } from '../../helpers/realm.ts';
import { unchecked } from '../../helpers/unchecked.ts';

const { env, sys, roles } = useChannelTestServer();

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const ids = (...xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);

async function patch(as: Person, streamId: number, body: RequestParams<'update-stream'>) {
  return env.client(as).PATCH('/streams/{stream_id}', { params: { path: { stream_id: streamId } }, body });
}
/** A PATCH its types refuse (a wrong value on purpose). */
const patchUnchecked = (as: Person, streamId: number, body: Record<string, unknown>) =>
  unchecked(env.client(as)).PATCH('/streams/{stream_id}', { params: { path: { stream_id: streamId } }, body });

async function channel(id: number) {
  return db().channel.findUniqueOrThrow({ where: { id } });
}

async function readStream(id: number, as: Person = 'iago') {
  const { data, error } = await env.client(as).GET('/streams/{stream_id}', { params: { path: { stream_id: id } } });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return data.stream;
}

async function addMessage(channelId: number, topic: string): Promise<void> {
  await db().message.create({ data: { realmId: env.realmId, senderId: uid('iago'), channelId, topic, content: 'hi', renderedContent: '<p>hi</p>' } });
}

// ---------------------------------------------------------------------------------------------

describe('PATCH /streams/{stream_id}: no parameters', () => {
  it('succeeds without changes or events', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    const { data } = await patch('iago', c.id, {});
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});

describe('PATCH /streams/{stream_id}: description', () => {
  it('replaces newlines by spaces, renders it and tells everyone who can see the channel', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { description: 'Line one\nline **two**' })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ description: 'Line one line **two**' });
    const stream = await readStream(c.id);
    expect(stream.description).toBe('Line one line **two**');
    expect(stream.rendered_description).toBe('<p>Line one line <strong>two</strong></p>'); // the message renderer's dialect
    expect(await eventsSince(env, mark)).toEqual([
      {
        userIds: nonGuestIds(roles),
        payload: {
          type: 'stream',
          op: 'update',
          stream_id: c.id,
          name: c.name,
          property: 'description',
          value: 'Line one line **two**',
          rendered_description: stream.rendered_description,
        },
      },
    ]);
  });

  it('allows max_stream_description_length (1024) characters and no more', async () => {
    const c = await createChannel(env, 'iago');
    expect((await patch('iago', c.id, { description: 'd'.repeat(1024) })).response.status).toBe(200);
    expectJsonError(await patch('iago', c.id, { description: 'd'.repeat(1025) }), 400, 'description is too long (limit: 1024 characters)');
  });
});

describe('PATCH /streams/{stream_id}: new_name', () => {
  it('renames, trimming the new name; the event carries the old name', async () => {
    const c = await createChannel(env, 'iago');
    const newName = fresh('renamed');
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { new_name: `  ${newName}  ` })).response.status).toBe(200);
    expect((await channel(c.id)).name).toBe(newName);
    const [event] = await eventsSince(env, mark);
    expect(event!.payload).toEqual({ type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'name', value: newName });
  });

  it("applies Zulip's name rules and max_stream_name_length (60)", async () => {
    const c = await createChannel(env, 'iago');
    const other = await createChannel(env, 'iago');
    expectJsonError(await patch('iago', c.id, { new_name: c.name }), 400, 'Channel already has that name.');
    expectJsonError(await patch('iago', c.id, { new_name: '   ' }), 400, "Channel name can't be empty.");
    expectJsonError(await patch('iago', c.id, { new_name: 'n'.repeat(61) }), 400, 'Channel name too long (limit: 60 characters).');
    expectJsonError(await patch('iago', c.id, { new_name: 'tab\there' }), 400, 'Invalid character in channel name, at position 4.');
    expectJsonError(await patch('iago', c.id, { new_name: other.name.toUpperCase() }), 400, 'Channel name already in use.');
    expect((await patch('iago', c.id, { new_name: 'n'.repeat(60) })).response.status).toBe(200);
    // A case-only rename of the channel itself is allowed.
    expect((await patch('iago', other.id, { new_name: other.name.toUpperCase() })).response.status).toBe(200);
    expect((await channel(other.id)).name).toBe(other.name.toUpperCase());
  });
});

describe('PATCH /streams/{stream_id}: privacy and the state rules', () => {
  it('makes a public channel private with protected history by default, and back', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { is_private: true })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ inviteOnly: true, historyPublicToSubscribers: false, isWebPublic: false });
    const events = await eventsSince(env, mark);
    // Who still sees it gets the update; members who no longer can lose the channel.
    expect(events[0]).toEqual({
      userIds: ids(...adminIds(roles), uid('iago')),
      payload: {
        type: 'stream',
        op: 'update',
        stream_id: c.id,
        name: c.name,
        property: 'invite_only',
        value: true,
        history_public_to_subscribers: false,
        is_web_public: false,
      },
    });
    expect(events[1]!.payload).toEqual({ type: 'stream', op: 'delete', streams: [{ stream_id: c.id }], stream_ids: [c.id], for_archiving: false });
    expect(events[1]!.userIds).toEqual(nonGuestIds(roles).filter((id) => !adminIds(roles).includes(id)));

    const mark2 = await markEvents(env);
    expect((await patch('iago', c.id, { is_private: false })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ inviteOnly: false, historyPublicToSubscribers: true });
    const again = await eventsSince(env, mark2);
    expect(again.map((e) => `${e.payload.type}/${e.payload.op}`)).toEqual(['stream/update', 'stream/create', 'subscription/peer_add']);
    expect(again[1]!.userIds).toEqual(nonGuestIds(roles).filter((id) => !adminIds(roles).includes(id)));
  });

  it('keeps shared history when asked', async () => {
    const c = await createChannel(env, 'iago');
    expect((await patch('iago', c.id, { is_private: true, history_public_to_subscribers: true })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ inviteOnly: true, historyPublicToSubscribers: true });
    // On a private channel, history alone can change.
    expect((await patch('iago', c.id, { history_public_to_subscribers: false })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ inviteOnly: true, historyPublicToSubscribers: false });
  });

  it('refuses invalid combinations of requested and current values with `Invalid parameters`', async () => {
    const pub = await createChannel(env, 'iago');
    expectJsonError(await patch('iago', pub.id, { history_public_to_subscribers: false }), 400, 'Invalid parameters');
    expectJsonError(await patch('iago', pub.id, { is_private: false, history_public_to_subscribers: false }), 400, 'Invalid parameters');
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      expectJsonError(await patch('desdemona', pub.id, { is_web_public: true, is_private: true }), 400, 'Invalid parameters');
      const web = await createChannel(env, 'desdemona', { is_web_public: true });
      // The current value counts: a web-public channel cannot become private on its own...
      expectJsonError(await patch('desdemona', web.id, { is_private: true }), 400, 'Invalid parameters');
      // ...but can when it stops being web-public in the same request.
      expect((await patch('desdemona', web.id, { is_private: true, is_web_public: false })).response.status).toBe(200);
      expect(await channel(web.id)).toMatchObject({ inviteOnly: true, isWebPublic: false, historyPublicToSubscribers: false });
      const priv = await createChannel(env, 'desdemona', { invite_only: true });
      expectJsonError(await patch('desdemona', priv.id, { is_web_public: true }), 400, 'Invalid parameters');
    });
    expect(await channel(pub.id)).toMatchObject({ inviteOnly: false, historyPublicToSubscribers: true });
  });

  it('refuses a private default channel, on the combined result', async () => {
    const c = await createChannel(env, 'iago', { is_default_stream: true });
    expectJsonError(await patch('iago', c.id, { is_private: true }), 400, 'A default channel cannot be private.');
    const p = await createChannel(env, 'iago', { invite_only: true });
    expectJsonError(await patch('iago', p.id, { is_default_stream: true }), 400, 'A default channel cannot be private.');
    // Leaving the defaults in the same request makes it valid.
    expect((await patch('iago', c.id, { is_private: true, is_default_stream: false })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ inviteOnly: true, isDefault: false });
  });

  it('keeps the moderation request channel private', async () => {
    const c = await createChannel(env, 'iago', { invite_only: true });
    await withRealm(env, env.realmId, { moderationRequestChannelId: c.id }, async () => {
      expectJsonError(await patch('iago', c.id, { is_private: false }), 400, 'Moderation request channel must be private.');
    });
  });

  it('needs content access to change privacy: an administrator not subscribed to a private channel cannot', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true });
    expectJsonError(await patch('iago', c.id, { is_private: false }), 400, 'Channel content access is required.');
    // Other settings only need the right to administer it.
    expect((await patch('iago', c.id, { description: 'seen by an administrator' })).response.status).toBe(200);
    await subscribeDirectly(env, uid('iago'), c.id);
    expect((await patch('iago', c.id, { is_private: false })).response.status).toBe(200);
  });

  it('needs the organization permission to create channels of the target kind', async () => {
    const c = await createChannel(env, 'hamlet');
    const adminsGroup = sys['role:administrators'];
    await withRealm(env, env.realmId, { canCreatePrivateChannelGroupId: adminsGroup }, async () => {
      expectJsonError(await patch('hamlet', c.id, { is_private: true }), 400, 'Insufficient permission');
    });
    expect((await patch('hamlet', c.id, { is_private: true })).response.status).toBe(200);
    await withRealm(env, env.realmId, { canCreatePublicChannelGroupId: adminsGroup }, async () => {
      expectJsonError(await patch('hamlet', c.id, { is_private: false }), 400, 'Insufficient permission');
    });
  });

  it('makes channels web-public only where spectators are allowed, and only for can_create_web_public_channel_group', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await patch('desdemona', c.id, { is_web_public: true }), 400, 'Web-public channels are not enabled.');
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      expectJsonError(await patch('iago', c.id, { is_web_public: true }), 400, 'Insufficient permission');
      const mark = await markEvents(env);
      expect((await patch('desdemona', c.id, { is_web_public: true })).response.status).toBe(200);
      expect(await channel(c.id)).toMatchObject({ isWebPublic: true, inviteOnly: false, historyPublicToSubscribers: true });
      const events = await eventsSince(env, mark);
      expect(events[0]!.payload).toMatchObject({ property: 'invite_only', value: false, is_web_public: true });
      // Guests can see web-public channels now.
      expect(events.find((e) => e.payload.op === 'create')!.userIds).toEqual([uid('polonius')]);
      // Turning it off needs no permission beyond administering the channel.
      expect((await patch('iago', c.id, { is_web_public: false })).response.status).toBe(200);
    });
  });
});

describe('PATCH /streams/{stream_id}: is_default_stream', () => {
  it('adds and removes default channels (organization administrators only)', async () => {
    const c = await createChannel(env, 'hamlet');
    expectJsonError(await patch('hamlet', c.id, { is_default_stream: true }), 400, 'You do not have permission to change default channels.', 'CANNOT_MANAGE_DEFAULT_CHANNEL');
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { is_default_stream: true })).response.status).toBe(200);
    expect((await channel(c.id)).isDefault).toBe(true);
    const [event] = await eventsSince(env, mark);
    expect(event!.payload.type).toBe('default_streams');
    expect(event!.payload.default_streams).toContain(c.id);
    expect(event!.userIds).toEqual(nonGuestIds(roles));
    const { data } = await env.client('iago').GET('/streams', { params: { query: { include_default: true } } });
    expect(data!.streams.find((s) => s.stream_id === c.id)!.is_default).toBe(true);
    expect((await patch('iago', c.id, { is_default_stream: false })).response.status).toBe(200);
    expect((await channel(c.id)).isDefault).toBe(false);
  });
});

describe('PATCH /streams/{stream_id}: message_retention_days', () => {
  it('needs an organization owner', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await patch('iago', c.id, { message_retention_days: 30 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect((await channel(c.id)).messageRetentionDays).toBeNull();
  });

  it('takes days, "unlimited" and "realm_default"', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    expect((await patch('desdemona', c.id, { message_retention_days: 30 })).response.status).toBe(200);
    expect((await channel(c.id)).messageRetentionDays).toBe(30);
    expect((await patch('desdemona', c.id, { message_retention_days: 'unlimited' })).response.status).toBe(200);
    expect((await readStream(c.id)).message_retention_days).toBe(-1);
    expect((await patch('desdemona', c.id, { message_retention_days: 'realm_default' })).response.status).toBe(200);
    expect((await channel(c.id)).messageRetentionDays).toBeNull();
    expect((await eventsSince(env, mark)).map((e) => e.payload.value)).toEqual([30, -1, null]);
  });

  it('refuses other values', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await patch('desdemona', c.id, { message_retention_days: 'forever' }), 400, "Bad value for 'message_retention_days': forever");
    expectJsonError(await patch('desdemona', c.id, { message_retention_days: 0 }), 400, "Bad value for 'message_retention_days': 0");
    expectJsonError(await patch('desdemona', c.id, { message_retention_days: -5 }), 400, "Bad value for 'message_retention_days': -5");
  });
});

describe('PATCH /streams/{stream_id}: is_archived', () => {
  it('unarchives with false, and ignores true', async () => {
    const c = await createChannel(env, 'iago', {}, ['hamlet']);
    await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: c.id } } });
    expect((await patch('iago', c.id, { is_archived: true })).response.status).toBe(200);
    expect((await channel(c.id)).isArchived).toBe(true);
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { is_archived: false })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ isArchived: false, name: c.name });
    const events = await eventsSince(env, mark);
    expect(events.map((e) => e.payload)).toEqual([
      { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'is_archived', value: false },
      expect.objectContaining({ type: 'stream', op: 'create', for_unarchiving: true }),
    ]);
    expect(events[1]!.payload.streams[0]).toMatchObject({ stream_id: c.id, is_archived: false, subscriber_count: 2 });
    expect(events[1]!.userIds).toEqual(nonGuestIds(roles));
  });

  it('refuses to unarchive a channel that is not archived', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await patch('iago', c.id, { is_archived: false }), 400, 'Channel is not currently deactivated');
    expect((await patch('iago', c.id, { is_archived: true })).response.status).toBe(200);
    expect((await channel(c.id)).isArchived).toBe(false);
  });

  it('lets archived channels be reconfigured', async () => {
    const c = await createChannel(env, 'iago');
    await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: c.id } } });
    expect((await patch('iago', c.id, { description: 'archived but edited' })).response.status).toBe(200);
    expect(await channel(c.id)).toMatchObject({ isArchived: true, description: 'archived but edited' });
  });
});

describe('PATCH /streams/{stream_id}: folder_id', () => {
  it('moves the channel into a folder, and out with null', async () => {
    const c = await createChannel(env, 'iago');
    const folder = await db().channelFolder.create({ data: { realmId: env.realmId, name: fresh('folder') } });
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { folder_id: folder.id })).response.status).toBe(200);
    expect((await readStream(c.id)).folder_id).toBe(folder.id);
    expect((await patch('iago', c.id, { folder_id: null })).response.status).toBe(200);
    expect((await channel(c.id)).folderId).toBeNull();
    expect((await eventsSince(env, mark)).map((e) => [e.payload.property, e.payload.value])).toEqual([
      ['folder_id', folder.id],
      ['folder_id', null],
    ]);
    expectJsonError(await patch('iago', c.id, { folder_id: 999999 }), 400, 'Invalid channel folder ID');
  });
});

describe('PATCH /streams/{stream_id}: topics_policy', () => {
  it('needs the organization permission to set topics policies, except back to inherit', async () => {
    const c = await createChannel(env, 'hamlet');
    expectJsonError(await patch('hamlet', c.id, { topics_policy: 'disable_empty_topic' }), 400, 'Insufficient permission');
    expect((await patch('iago', c.id, { topics_policy: 'disable_empty_topic' })).response.status).toBe(200);
    expect((await readStream(c.id)).topics_policy).toBe('disable_empty_topic');
    const mark = await markEvents(env);
    expect((await patch('hamlet', c.id, { topics_policy: 'inherit' })).response.status).toBe(200);
    expect((await eventsSince(env, mark))[0]!.payload).toMatchObject({ property: 'topics_policy', value: 'inherit' });
  });

  it('allows empty_topic_only only while every message is in the empty topic', async () => {
    const c = await createChannel(env, 'iago');
    await addMessage(c.id, '');
    expect((await patch('iago', c.id, { topics_policy: 'empty_topic_only' })).response.status).toBe(200);
    expect((await channel(c.id)).topicsPolicy).toBe('empty_topic_only');
    await patch('iago', c.id, { topics_policy: 'allow_empty_topic' });
    await addMessage(c.id, 'castle');
    const res = await patch('iago', c.id, { topics_policy: 'empty_topic_only' });
    expect(res.response.status).toBe(400);
    expect(res.error!.msg).toMatch(/all messages in this channel must be in the "general chat" topic/);
    expect((await channel(c.id)).topicsPolicy).toBe('allow_empty_topic');
  });

  it('rejects unknown policies', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await patchUnchecked('iago', c.id, { topics_policy: 'sometimes' }), 400, 'Invalid topics_policy');
  });
});

describe('PATCH /streams/{stream_id}: permission settings', () => {
  const SETTINGS = [
    'can_add_subscribers_group',
    'can_administer_channel_group',
    'can_delete_any_message_group',
    'can_delete_own_message_group',
    'can_move_messages_out_of_channel_group',
    'can_move_messages_within_channel_group',
    'can_remove_subscribers_group',
    'can_resolve_topics_group',
    'can_send_message_group',
    'can_subscribe_group',
  ] as const;

  it.each(SETTINGS)('changes %s to a named group and to an anonymous group, with an event each', async (setting) => {
    const c = await createChannel(env, 'iago', {}, ['iago']);
    const moderators = sys['role:moderators'];
    const mark = await markEvents(env);
    expect((await patch('iago', c.id, { [setting]: { new: moderators } })).response.status).toBe(200);
    expect((await readStream(c.id))[setting]).toBe(moderators);
    const anonymous = { direct_members: [uid('hamlet')], direct_subgroups: [moderators] };
    expect((await patch('iago', c.id, { [setting]: { new: anonymous, old: moderators } })).response.status).toBe(200);
    expect((await readStream(c.id))[setting]).toEqual(anonymous);
    const events = (await eventsSince(env, mark)).filter((e) => e.payload.property === setting);
    expect(events.map((e) => e.payload.value)).toEqual([moderators, anonymous]);
  });

  it("refuses a stale `old` value, unknown groups and users, and disallowed system groups", async () => {
    const c = await createChannel(env, 'iago');
    const everyone = sys['role:everyone'];
    const admins = sys['role:administrators'];
    expectJsonError(
      await patch('iago', c.id, { can_send_message_group: { new: admins, old: admins } }),
      400,
      "'old' value does not match the expected value.",
      'EXPECTATION_MISMATCH',
    );
    expect((await patch('iago', c.id, { can_send_message_group: { new: admins, old: everyone } })).response.status).toBe(200);
    expectJsonError(await patch('iago', c.id, { can_send_message_group: { new: 999999 } }), 400, 'Invalid user group');
    expectJsonError(await patch('iago', c.id, { can_send_message_group: { new: { direct_members: [999999], direct_subgroups: [] } } }), 400, 'Invalid user ID: 999999');
    expectJsonError(await patch('iago', c.id, { can_send_message_group: { new: { direct_members: [uid('hamlet')], direct_subgroups: [999999] } } }), 400, 'Invalid user group ID: 999999');
    expectJsonError(
      await patch('iago', c.id, { can_send_message_group: { new: sys['role:internet'] } }),
      400,
      "'can_send_message_group' setting cannot be set to 'role:internet' group.",
    );
    expectJsonError(await patchUnchecked('iago', c.id, { can_send_message_group: { old: admins } }), 400, 'can_send_message_group["new"] field is missing');
  });

  it('sends the legacy stream_post_policy events when can_send_message_group changes it', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    await patch('iago', c.id, { can_send_message_group: { new: sys['role:administrators'] } });
    expect((await eventsSince(env, mark)).map((e) => [e.payload.property, e.payload.value])).toEqual([
      ['can_send_message_group', sys['role:administrators']],
      ['stream_post_policy', 2],
      ['is_announcement_only', true],
    ]);
    const stream = await readStream(c.id);
    expect(stream).toMatchObject({ stream_post_policy: 2, is_announcement_only: true });
  });

  it('needs content access for the settings that grant it', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true });
    const members = sys['role:members'];
    expectJsonError(await patch('iago', c.id, { can_subscribe_group: { new: members } }), 400, 'Channel content access is required.');
    expectJsonError(await patch('iago', c.id, { can_add_subscribers_group: { new: members } }), 400, 'Channel content access is required.');
    expect((await patch('iago', c.id, { can_send_message_group: { new: members } })).response.status).toBe(200);
  });

  it('gives members of can_subscribe_group metadata access, with a creation event', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true });
    const mark = await markEvents(env);
    expect((await patch('hamlet', c.id, { can_subscribe_group: { new: { direct_members: [uid('othello')], direct_subgroups: [] } } })).response.status).toBe(200);
    const events = await eventsSince(env, mark);
    expect(events.map((e) => `${e.payload.type}/${e.payload.op}:${e.userIds.join(',')}`)).toEqual([
      `stream/update:${ids(...adminIds(roles), uid('hamlet')).join(',')}`,
      `stream/create:${uid('othello')}`,
      `subscription/peer_add:${uid('othello')}`,
    ]);
    // Othello can now see the channel.
    expect((await readStream(c.id, 'othello')).stream_id).toBe(c.id);
  });

  it('deletes the anonymous group a replaced value used', async () => {
    const c = await createChannel(env, 'iago');
    const before = (await channel(c.id)).canAdministerChannelGroupId;
    expect(await db().userGroup.findUnique({ where: { id: before } })).toMatchObject({ name: null });
    expect((await patch('iago', c.id, { can_administer_channel_group: { new: sys['role:administrators'] } })).response.status).toBe(200);
    expect(await db().userGroup.findUnique({ where: { id: before } })).toBeNull();
  });
});

describe('PATCH /streams/{stream_id}: who may', () => {
  it('owner and administrators: any channel; moderators and members: not by default', async () => {
    const c = await createChannel(env, 'cordelia', {}, ['shiva', 'hamlet']);
    expect((await patch('desdemona', c.id, { description: 'by the owner' })).response.status).toBe(200);
    expect((await patch('iago', c.id, { description: 'by an administrator' })).response.status).toBe(200);
    for (const who of ['shiva', 'hamlet', 'othello'] as Person[]) {
      expectJsonError(await patch(who, c.id, { description: 'no' }), 400, 'You do not have permission to administer this channel.', 'CANNOT_ADMINISTER_CHANNEL');
    }
    expect((await channel(c.id)).description).toBe('by an administrator');
  });

  it('the creator, and members of can_administer_channel_group', async () => {
    const c = await createChannel(env, 'cordelia');
    expect((await patch('cordelia', c.id, { description: 'by the creator' })).response.status).toBe(200);
    await patch('iago', c.id, { can_administer_channel_group: { new: { direct_members: [uid('othello')], direct_subgroups: [sys['role:moderators']] } } });
    expect((await patch('othello', c.id, { description: 'by a channel administrator' })).response.status).toBe(200);
    expect((await patch('shiva', c.id, { description: 'by a moderator through the group' })).response.status).toBe(200);
    expectJsonError(await patch('cordelia', c.id, { description: 'no longer' }), 400, 'You do not have permission to administer this channel.', 'CANNOT_ADMINISTER_CHANNEL');
  });

  it('channel administrators of a private channel they are not subscribed to', async () => {
    const c = await createChannel(env, 'iago', { invite_only: true, can_administer_channel_group: sys['role:moderators'] });
    expect((await patch('shiva', c.id, { description: 'moderators administer it' })).response.status).toBe(200);
  });

  it('guests never administer, even when the group includes them', async () => {
    const c = await createChannel(env, 'iago', {}, ['polonius']);
    await patch('iago', c.id, { can_administer_channel_group: { new: sys['role:everyone'] } });
    expectJsonError(await patch('polonius', c.id, { description: 'guest' }), 400, 'You do not have permission to administer this channel.', 'CANNOT_ADMINISTER_CHANNEL');
    // A guest who cannot see the channel learns nothing about it.
    const hidden = await createChannel(env, 'iago');
    expectJsonError(await patch('polonius', hidden.id, { description: 'guest' }), 400, 'Invalid channel ID');
  });

  it('non-subscribers of a private channel get `Invalid channel ID`', async () => {
    const c = await createChannel(env, 'hamlet', { invite_only: true });
    expectJsonError(await patch('othello', c.id, { description: 'x' }), 400, 'Invalid channel ID');
    expectJsonError(await patch('shiva', c.id, { description: 'x' }), 400, 'Invalid channel ID');
    expectJsonError(await patch('iago', 999999, { description: 'x' }), 400, 'Invalid channel ID');
  });
});

describe('PATCH /streams/{stream_id}: all or nothing', () => {
  it('applies nothing when any part of the request is refused', async () => {
    const c = await createChannel(env, 'iago');
    const mark = await markEvents(env);
    expectJsonError(await patch('iago', c.id, { description: 'new', new_name: fresh('new'), message_retention_days: 3 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expectJsonError(
      await patch('iago', c.id, { description: 'new', can_send_message_group: { new: 999999 } }),
      400,
      'Invalid user group',
    );
    expect(await channel(c.id)).toMatchObject({ description: '', name: c.name, messageRetentionDays: null });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('sends the events of several changes in Zulip’s order, the rename in the middle', async () => {
    const c = await createChannel(env, 'iago');
    const newName = fresh('several');
    const folder = await db().channelFolder.create({ data: { realmId: env.realmId, name: fresh('folder') } });
    const mark = await markEvents(env);
    const res = await patch('desdemona', c.id, { new_name: newName, description: 'both', message_retention_days: 7, folder_id: folder.id });
    expect(res.response.status).toBe(200);
    expect((await eventsSince(env, mark)).map((e) => [e.payload.property, e.payload.name])).toEqual([
      ['message_retention_days', c.name],
      ['description', c.name],
      ['name', c.name],
      ['folder_id', newName],
    ]);
  });

  it('never leaves a channel setting on a group deactivated concurrently (10 rounds)', async () => {
    const c = await createChannel(env, 'iago');
    for (let round = 0; round < 10; round++) {
      const created = await env.client('iago').POST('/user_groups/create', { body: { name: fresh('race group'), description: 'race', members: [uid('hamlet')] } });
      if (!created.data) throw new Error(`setup: ${JSON.stringify(created.error)}`);
      const g = created.data.group_id;
      const [deactivate, use] = await Promise.all([
        env.client('iago').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: g } } }),
        patch('iago', c.id, { can_send_message_group: { new: g } }),
      ]);
      const state = `round ${round}: deactivate ${deactivate.response.status} ${deactivate.error?.msg ?? ''}, use ${use.response.status} ${use.error?.msg ?? ''}`;
      expect([deactivate.response.status, use.response.status].filter((s) => s === 200), state).toHaveLength(1);
      const group = await db().userGroup.findUniqueOrThrow({ where: { id: g } });
      expect(group.deactivated && (await channel(c.id)).canSendMessageGroupId === g, state).toBe(false);
    }
  });

  it('serialises concurrent compare-and-swap updates of one setting', async () => {
    const c = await createChannel(env, 'iago');
    const everyone = sys['role:everyone'];
    const results = await Promise.all(
      (['role:administrators', 'role:moderators', 'role:members'] as const).map((g) =>
        patch('iago', c.id, { can_send_message_group: { new: sys[g], old: everyone } }),
      ),
    );
    expect(results.filter((r) => r.response.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.error?.code === 'EXPECTATION_MISMATCH')).toHaveLength(2);
  });
});

describe('wire shapes of the Python zulip client', () => {
  const form = (values: Record<string, unknown>) =>
    new URLSearchParams(Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))).toString();
  const send = (as: Person, streamId: number, body: string) =>
    env.raw(`/streams/${streamId}`, { method: 'PATCH', as, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });

  it('client.update_stream({...}): JSON-dumped booleans and group updates, raw strings', async () => {
    const c = await createChannel(env, 'desdemona', {}, ['desdemona']);
    const admins = sys['role:administrators'];
    const res = await send(
      'desdemona',
      c.id,
      form({
        description: 'from Python',
        new_name: fresh('python'),
        is_private: true,
        history_public_to_subscribers: true,
        // Python sends strings raw; Zulip's Json[str] needs the JSON text, which callers json.dumps themselves.
        message_retention_days: JSON.stringify('unlimited'),
        topics_policy: 'allow_empty_topic',
        can_send_message_group: { new: admins },
      }),
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await channel(c.id)).toMatchObject({
      description: 'from Python',
      inviteOnly: true,
      historyPublicToSubscribers: true,
      messageRetentionDays: -1,
      topicsPolicy: 'allow_empty_topic',
      canSendMessageGroupId: admins,
    });
  });

  it('reports Zulip’s messages for wrongly encoded values and lists unknown parameters', async () => {
    const c = await createChannel(env, 'iago');
    expectJsonError(await send('iago', c.id, 'is_private=True'), 400, 'is_private is not valid JSON');
    expectJsonError(await send('iago', c.id, 'is_private=1'), 400, 'is_private is not a boolean');
    expectJsonError(await send('iago', c.id, 'message_retention_days=unlimited'), 400, 'message_retention_days is not valid JSON');
    expectJsonError(await send('iago', c.id, 'folder_id="3"'), 400, 'folder_id is not an integer');
    const res = await send('iago', c.id, form({ description: 'ok', stream_post_policy: 2 }));
    expect(res.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['stream_post_policy'] });
  });

  it('answers 404 for a non-numeric channel id, as Zulip’s routes do', async () => {
    const res = await send('iago', 0, '');
    expectJsonError(res, 400, 'Invalid channel ID');
    expect((await env.raw('/streams/abc', { method: 'PATCH', as: 'iago' })).status).toBe(404);
  });
});
