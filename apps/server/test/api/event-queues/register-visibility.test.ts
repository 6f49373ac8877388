// What POST /register shows each kind of user (issue 20): former subscriptions only while the user can
// still see the channel (Zulip's gather_subscriptions_helper and
// has_metadata_access_to_previously_subscribed_stream), subscriber lists only of channels the user may
// know the subscribers of (validate_user_access_to_subscribers_helper), and a full state for guests
// (Zulip's fetch_initial_state_data: every user group, only the channels they may see, no default
// channels).
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, useChannelTestServer } from '../../helpers/channels.ts';
import { withRealm } from '../../helpers/realm.ts';
import type { RegisterBody } from '../../helpers/queues.ts';
import type { RequestParams } from '@parley/api-types';

const { env, sys } = useChannelTestServer();

const uid = (p: Person) => env.users[p].id;
const db = () => env.running.deps.db;

interface ChannelEntry {
  stream_id: number;
  name: string;
  description?: string;
  subscribers?: number[];
  partial_subscribers?: number[];
  [key: string]: unknown;
}

interface RegisterState {
  subscriptions: ChannelEntry[];
  unsubscribed: ChannelEntry[];
  never_subscribed: ChannelEntry[];
  streams: ChannelEntry[];
  [key: string]: unknown;
}

async function register(as: Person, body: RegisterBody = {}): Promise<RegisterState> {
  const { data, error } = await env.client(as).POST('/register', { body });
  if (error) throw new Error(`register as ${as}: ${JSON.stringify(error)}`);
  return data as unknown as RegisterState;
}

const idsOf = (list: ChannelEntry[]) => list.map((c) => c.stream_id);
const entry = (list: ChannelEntry[], id: number) => list.find((c) => c.stream_id === id);

async function unsubscribe(as: Person, name: string, principals?: number[]) {
  const { error } = await env.client(as).DELETE('/users/me/subscriptions', { body: { subscriptions: [name], ...(principals ? { principals } : {}) } });
  if (error) throw new Error(`unsubscribe: ${JSON.stringify(error)}`);
}

async function updateChannel(as: Person, id: number, body: RequestParams<'update-stream'>) {
  const { error } = await env.client(as).PATCH('/streams/{stream_id}', { params: { path: { stream_id: id } }, body });
  if (error) throw new Error(`update: ${JSON.stringify(error)}`);
}

describe('POST /register: former subscriptions (defect 3)', () => {
  it('leaves out a private channel the user was removed from, with its new name, description and subscribers', async () => {
    const secret = await createChannel(env, 'iago', { invite_only: true }, ['hamlet', 'othello']);
    await unsubscribe('iago', secret.name, [uid('hamlet')]);
    const renamed = `${secret.name} renamed`;
    await updateChannel('iago', secret.id, { new_name: renamed, description: 'the new plans' });

    const state = await register('hamlet', { include_subscribers: true });
    const everywhere = [...state.subscriptions, ...state.unsubscribed, ...state.never_subscribed, ...state.streams];
    expect(idsOf(everywhere)).not.toContain(secret.id);
    expect(JSON.stringify(state)).not.toContain(renamed);
    expect(JSON.stringify(state)).not.toContain('the new plans');

    // The same with fetch_event_types, and with partial subscriber lists.
    for (const body of [{ fetch_event_types: ['subscription'], include_subscribers: 'partial' }, { fetch_event_types: ['subscription'] }] satisfies RegisterBody[]) {
      const partial = await register('hamlet', body);
      expect(idsOf(partial.unsubscribed)).not.toContain(secret.id);
    }
  });

  it('keeps a former subscription the user can still see: public channels, and private ones an administrator or a group grants', async () => {
    const pub = await createChannel(env, 'iago', {}, ['hamlet', 'othello']);
    await unsubscribe('hamlet', pub.name);
    const state = await register('hamlet', { include_subscribers: true });
    expect(entry(state.unsubscribed, pub.id)?.subscribers).toEqual([uid('iago'), uid('othello')].sort((a, b) => a - b));
    expect(idsOf(state.subscriptions)).not.toContain(pub.id);
    expect(idsOf(state.never_subscribed)).not.toContain(pub.id);

    // An administrator sees every private channel, so a former subscription stays listed.
    const adminsToo = await createChannel(env, 'hamlet', { invite_only: true }, ['iago']);
    await unsubscribe('iago', adminsToo.name);
    const iago = await register('iago', { include_subscribers: true });
    expect(entry(iago.unsubscribed, adminsToo.id)?.subscribers).toEqual([uid('hamlet')]);

    // A member of the channel's can_subscribe_group keeps metadata access.
    const joinable = await createChannel(env, 'iago', { invite_only: true, can_subscribe_group: sys['role:members'] }, ['iago', 'cordelia']);
    await unsubscribe('cordelia', joinable.name);
    const cordelia = await register('cordelia', { include_subscribers: true });
    expect(entry(cordelia.unsubscribed, joinable.id)?.subscribers).toEqual([uid('iago')]);
  });

  it('shows a guest no former subscription to a public channel, but keeps web-public ones', async () => {
    const pub = await createChannel(env, 'iago', {}, ['polonius']);
    await unsubscribe('polonius', pub.name);
    const state = await register('polonius', { include_subscribers: true });
    expect(idsOf([...state.subscriptions, ...state.unsubscribed, ...state.never_subscribed, ...state.streams])).not.toContain(pub.id);

    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      const web = await createChannel(env, 'desdemona', { is_web_public: true }, ['polonius']);
      await unsubscribe('polonius', web.name);
      const again = await register('polonius', { include_subscribers: true });
      expect(entry(again.unsubscribed, web.id)?.subscribers).toEqual([uid('desdemona')]);
    });
  });

  it('lists the subscribers of never-subscribed channels the user may see, and only of those', async () => {
    const pub = await createChannel(env, 'iago', {}, ['othello']);
    const state = await register('cordelia', { include_subscribers: true });
    expect(entry(state.never_subscribed, pub.id)?.subscribers).toEqual([uid('iago'), uid('othello')].sort((a, b) => a - b));
    const without = await register('cordelia');
    expect(entry(without.never_subscribed, pub.id)).toBeDefined();
    expect(entry(without.never_subscribed, pub.id)?.subscribers).toBeUndefined();
  });

  it('GET /users/me/subscriptions lists only current subscriptions', async () => {
    const secret = await createChannel(env, 'iago', { invite_only: true }, ['othello']);
    await unsubscribe('othello', secret.name);
    const { data, error } = await env.client('othello').GET('/users/me/subscriptions', { params: { query: { include_subscribers: 'true' } } });
    expect(error).toBeUndefined();
    expect(data!.subscriptions.map((s) => s.stream_id)).not.toContain(secret.id);
  });
});

describe('POST /register as a guest (defect 6)', () => {
  it('answers a full state with no parameters, as every Zulip client sends it', async () => {
    const theirs = await createChannel(env, 'iago', {}, ['polonius']);
    const pub = await createChannel(env, 'iago', {}, ['hamlet']);
    const secret = await createChannel(env, 'iago', { invite_only: true }, ['hamlet']);
    await db().channel.update({ where: { id: pub.id }, data: { isDefault: true } });

    const { data, error, response } = await env.client('polonius').POST('/register', { body: {} });
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    const state = data as unknown as RegisterState;

    // Every user group, system groups included (Zulip sends realm_user_groups to everyone).
    const groups = state.realm_user_groups as Array<{ id: number; name: string; is_system_group: boolean }>;
    expect(groups.map((g) => g.id)).toEqual(expect.arrayContaining(Object.values(sys)));

    // Only the channels a guest may see: subscribed ones (and web-public ones).
    expect(idsOf(state.subscriptions)).toContain(theirs.id);
    expect(idsOf(state.streams)).toContain(theirs.id);
    for (const hidden of [pub.id, secret.id]) {
      expect(idsOf([...state.subscriptions, ...state.unsubscribed, ...state.never_subscribed, ...state.streams])).not.toContain(hidden);
    }
    // Guests get no default channels (Zulip pretends the organization has none).
    expect(state.realm_default_streams).toEqual([]);

    // Who they are and what they may do.
    expect(state.is_guest).toBe(true);
    expect(state.is_admin).toBe(false);
    expect(state.is_owner).toBe(false);
    expect(state.is_moderator).toBe(false);
    expect(state.role).toBe(600);
    expect(state.can_create_streams).toBe(false);
    expect(state.can_subscribe_other_users).toBe(false);
    expect(state.can_invite_others_to_realm).toBe(false);
    expect((state.realm_users as Array<{ user_id: number }>).map((u) => u.user_id)).toContain(uid('polonius'));
  });

  it('lists only web-public channels among a guest’s never-subscribed channels', async () => {
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      const web = await createChannel(env, 'desdemona', { is_web_public: true });
      const pub = await createChannel(env, 'desdemona');
      const state = await register('polonius', { include_subscribers: true });
      expect(entry(state.never_subscribed, web.id)?.subscribers).toEqual([uid('desdemona')]);
      expect(idsOf(state.never_subscribed)).not.toContain(pub.id);
      expect(idsOf(state.streams)).toContain(web.id);
    });
  });

  it('still refuses guests GET /user_groups (Zulip’s require_member_or_admin)', async () => {
    expectJsonError(await env.client('polonius').GET('/user_groups', { params: { query: {} } }), 400, 'Not allowed for guest users');
  });
});

describe('POST /register: what members and administrators are told they may do', () => {
  it('answers the role flags and permissions from the organization’s settings', async () => {
    const hamlet = await register('hamlet', { fetch_event_types: ['realm_user'] });
    expect([hamlet.is_admin, hamlet.is_owner, hamlet.is_moderator, hamlet.is_guest]).toEqual([false, false, false, false]);
    // The organization's defaults let members create channels, subscribe others and invite.
    expect([hamlet.can_create_streams, hamlet.can_subscribe_other_users, hamlet.can_invite_others_to_realm]).toEqual([true, true, true]);
    const adminsOnly = sys['role:administrators'];
    await withRealm(
      env,
      env.realmId,
      { canCreatePublicChannelGroupId: adminsOnly, canCreatePrivateChannelGroupId: adminsOnly, canAddSubscribersGroupId: adminsOnly, canInviteUsersGroupId: adminsOnly },
      async () => {
        const restricted = await register('hamlet', { fetch_event_types: ['realm_user'] });
        expect([restricted.can_create_streams, restricted.can_subscribe_other_users, restricted.can_invite_others_to_realm]).toEqual([false, false, false]);
        const admin = await register('iago', { fetch_event_types: ['realm_user'] });
        expect([admin.can_create_streams, admin.can_subscribe_other_users, admin.can_invite_others_to_realm]).toEqual([true, true, true]);
      },
    );
    const shiva = await register('shiva', { fetch_event_types: ['realm_user'] });
    expect([shiva.is_admin, shiva.is_owner, shiva.is_moderator, shiva.is_guest]).toEqual([false, false, true, false]);
    const iago = await register('iago', { fetch_event_types: ['realm_user'] });
    expect([iago.is_admin, iago.is_owner, iago.is_moderator, iago.can_subscribe_other_users]).toEqual([true, false, false, true]);
    const desdemona = await register('desdemona', { fetch_event_types: ['realm_user'] });
    expect([desdemona.is_admin, desdemona.is_owner]).toEqual([true, true]);
  });
});
