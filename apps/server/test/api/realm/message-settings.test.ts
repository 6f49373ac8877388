// The organization settings that govern editing, moving and deleting messages, edit history and read
// receipts (PATCH /realm): each value and its echo, Zulip's validation errors ("unlimited" time limits,
// the edit history policy, the group settings' forbidden system groups), who may change them (every
// administrator; none needs an owner), the events in Zulip's form (update_dict for
// allow_message_editing and message_content_edit_limit_seconds, update for the others), POST /register
// reflecting them, and Zulip's defaults for a new organization.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';
import { useSystemGroupIds, type RealmGroupSetting } from '../../helpers/groups.ts';
import { pollUntil, registerQueue } from '../../helpers/queues.ts';
import { doCreateRealm } from '../../../src/actions/realm.ts';

type RealmBody = NonNullable<paths['/realm']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];

const env = useTestServer();
const sys = useSystemGroupIds(env);

const patchRealm = (as: Person, body: RealmBody) => env.client(as).PATCH('/realm', { body });
const readRealm = () => env.running.deps.db.realm.findUniqueOrThrow({ where: { id: env.realmId } });

const TIME_LIMITS = [
  ['message_content_edit_limit_seconds', 'messageContentEditLimitSeconds', 600],
  ['move_messages_within_stream_limit_seconds', 'moveMessagesWithinStreamLimitSeconds', 604800],
  ['move_messages_between_streams_limit_seconds', 'moveMessagesBetweenStreamsLimitSeconds', 604800],
  ['message_content_delete_limit_seconds', 'messageContentDeleteLimitSeconds', 600],
] as const satisfies ReadonlyArray<readonly [keyof RealmBody, string, number]>;

const GROUP_SETTINGS = [
  ['can_move_messages_between_topics_group', 'canMoveMessagesBetweenTopicsGroupId', 'role:everyone'],
  ['can_move_messages_between_channels_group', 'canMoveMessagesBetweenChannelsGroupId', 'role:members'],
  ['can_resolve_topics_group', 'canResolveTopicsGroupId', 'role:everyone'],
  ['can_delete_any_message_group', 'canDeleteAnyMessageGroupId', 'role:administrators'],
  ['can_delete_own_message_group', 'canDeleteOwnMessageGroupId', 'role:everyone'],
] as const satisfies ReadonlyArray<readonly [RealmGroupSetting, string, string]>;

/** Zulip's defaults, set back after every test (as the owner, through the API). */
async function restoreDefaults(): Promise<void> {
  const body: RealmBody = {
    allow_message_editing: true,
    enable_read_receipts: true,
    message_edit_history_visibility_policy: 'all',
    ...Object.fromEntries(TIME_LIMITS.map(([name, , value]) => [name, value])),
    ...Object.fromEntries(GROUP_SETTINGS.map(([name, , group]) => [name, { new: sys[group] }])),
  };
  const { error } = await patchRealm('desdemona', body);
  if (error) throw new Error(`restoring the defaults failed: ${JSON.stringify(error)}`);
}

const badValue = (name: string, value: number | string) => `Bad value for '${name}': ${value}`;

/** The `realm` state of POST /register as `person` sees it. */
async function realmState(person: Person): Promise<Record<string, unknown>> {
  return (await registerQueue(env.client(person), { fetch_event_types: ['realm'] })) as Record<string, unknown>;
}

describe('PATCH /realm: message settings', () => {
  afterEach(restoreDefaults);

  describe('allow_message_editing and enable_read_receipts', () => {
    it('allow_message_editing changes, is echoed and announced as update_dict, to every active user', async () => {
      const before = await markEvents(env);
      const { data, response } = await patchRealm('iago', { allow_message_editing: false });
      expect(response.status).toBe(200);
      expect(data).toEqual({ result: 'success', msg: '', allow_message_editing: false });
      expect((await readRealm()).allowMessageEditing).toBe(false);
      const events = await eventsSince(env, before);
      expect(events.map((e) => e.payload)).toEqual([{ type: 'realm', op: 'update_dict', property: 'default', data: { allow_message_editing: false } }]);
      expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id).sort((a, b) => a - b));
    });

    it('enable_read_receipts changes, is echoed and announced as a realm update', async () => {
      const before = await markEvents(env);
      const { data } = await patchRealm('iago', { enable_read_receipts: false });
      expect(data).toEqual({ result: 'success', msg: '', enable_read_receipts: false });
      expect((await readRealm()).enableReadReceipts).toBe(false);
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update', property: 'enable_read_receipts', value: false }]);
    });

    it('a value equal to the current one is no change: not echoed, no event', async () => {
      const before = await markEvents(env);
      const { data } = await patchRealm('iago', { allow_message_editing: true, enable_read_receipts: true });
      expect(data).toEqual({ result: 'success', msg: '' });
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('a value that is not a JSON boolean is refused', async () => {
      const res = await env.raw('/realm', { method: 'PATCH', as: 'iago', body: new URLSearchParams({ allow_message_editing: '"no"' }) });
      expectJsonError(res, 400, 'allow_message_editing is not a boolean', 'BAD_REQUEST');
      expect((await readRealm()).allowMessageEditing).toBe(true);
    });
  });

  describe('time limits', () => {
    it.each(TIME_LIMITS)('%s takes a number of seconds, echoed and announced in Zulip\'s form', async (name, column) => {
      const before = await markEvents(env);
      const { data, response } = await patchRealm('iago', { [name]: 1234 });
      expect(response.status).toBe(200);
      expect(data).toEqual({ result: 'success', msg: '', [name]: 1234 });
      expect((await readRealm())[column]).toBe(1234);
      const event =
        name === 'message_content_edit_limit_seconds'
          ? { type: 'realm', op: 'update_dict', property: 'default', data: { [name]: 1234 } }
          : { type: 'realm', op: 'update', property: name, value: 1234 };
      expect(await eventPayloadsSince(env, before)).toEqual([event]);
    });

    it.each(TIME_LIMITS)('%s: "unlimited" is stored, echoed and announced as null; again it is no change', async (name, column) => {
      const before = await markEvents(env);
      const { data } = await patchRealm('iago', { [name]: 'unlimited' });
      expect(data).toEqual({ result: 'success', msg: '', [name]: null });
      expect((await readRealm())[column]).toBeNull();
      const event =
        name === 'message_content_edit_limit_seconds'
          ? { type: 'realm', op: 'update_dict', property: 'default', data: { [name]: null } }
          : { type: 'realm', op: 'update', property: name, value: null };
      expect(await eventPayloadsSince(env, before)).toEqual([event]);

      const again = await markEvents(env);
      expect((await patchRealm('iago', { [name]: 'unlimited' })).data).toEqual({ result: 'success', msg: '' });
      expect(await eventPayloadsSince(env, again)).toEqual([]);
    });

    it.each(TIME_LIMITS)('%s: zero, negative numbers and other strings are refused with REQUEST_VARIABLE_INVALID', async (name, column, initial) => {
      for (const value of [0, -5, 'forever', '600', 'Unlimited'] as const) {
        const res = await patchRealm('iago', { [name]: value });
        expectJsonError(res, 400, badValue(name, value), 'REQUEST_VARIABLE_INVALID');
        expect(res.error).toMatchObject({ var_name: name, bad_value: value });
      }
      expect((await readRealm())[column]).toBe(initial);
    });

    it('"unlimited" must be JSON-encoded, as Zulip\'s clients send it', async () => {
      const res = await env.raw('/realm', { method: 'PATCH', as: 'iago', body: new URLSearchParams({ message_content_delete_limit_seconds: 'unlimited' }) });
      expectJsonError(res, 400, 'message_content_delete_limit_seconds is not valid JSON', 'BAD_REQUEST');
      const ok = await env.raw('/realm', { method: 'PATCH', as: 'iago', body: new URLSearchParams({ message_content_delete_limit_seconds: '"unlimited"' }) });
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ result: 'success', msg: '', message_content_delete_limit_seconds: null });
    });

    it('a bad limit refuses the whole request: nothing else changes and no event is stored', async () => {
      const before = await markEvents(env);
      const realmBefore = await readRealm();
      expectJsonError(
        await patchRealm('iago', { allow_message_editing: false, message_content_edit_limit_seconds: 60, move_messages_within_stream_limit_seconds: 0 }),
        400,
        badValue('move_messages_within_stream_limit_seconds', 0),
        'REQUEST_VARIABLE_INVALID',
      );
      const realmAfter = await readRealm();
      expect(realmAfter.allowMessageEditing).toBe(realmBefore.allowMessageEditing);
      expect(realmAfter.messageContentEditLimitSeconds).toBe(realmBefore.messageContentEditLimitSeconds);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });
  });

  describe('message_edit_history_visibility_policy', () => {
    it('takes all, moves or none (plain strings), echoes the policy\'s number and announces its name', async () => {
      for (const [policy, code] of [['moves', 2], ['none', 3], ['all', 1]] as const) {
        const before = await markEvents(env);
        const { data } = await patchRealm('iago', { message_edit_history_visibility_policy: policy });
        expect(data).toEqual({ result: 'success', msg: '', message_edit_history_visibility_policy: code });
        expect((await readRealm()).messageEditHistoryVisibilityPolicy).toBe(policy);
        expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update', property: 'message_edit_history_visibility_policy', value: policy }]);
      }
    });

    it('the current policy again is no change', async () => {
      const before = await markEvents(env);
      expect((await patchRealm('iago', { message_edit_history_visibility_policy: 'all' })).data).toEqual({ result: 'success', msg: '' });
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('any other value is refused', async () => {
      for (const value of ['some', 'All', '1', '"moves"']) {
        const res = await env.raw('/realm', { method: 'PATCH', as: 'iago', body: new URLSearchParams({ message_edit_history_visibility_policy: value }) });
        expectJsonError(res, 400, 'Invalid message_edit_history_visibility_policy', 'BAD_REQUEST');
      }
      expect((await readRealm()).messageEditHistoryVisibilityPolicy).toBe('all');
    });
  });

  describe('group settings', () => {
    it.each(GROUP_SETTINGS)('%s changes, is echoed and announced as update_dict', async (name, column) => {
      const before = await markEvents(env);
      const { data } = await patchRealm('iago', { [name]: { new: sys['role:moderators'] } });
      expect(data).toEqual({ result: 'success', msg: '', [name]: sys['role:moderators'] });
      expect((await readRealm())[column]).toBe(sys['role:moderators']);
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update_dict', property: 'default', data: { [name]: sys['role:moderators'] } }]);
    });

    it.each(GROUP_SETTINGS)('%s takes anonymous values and role:nobody', async (name, column) => {
      const hamlet = env.users.hamlet.id;
      const anonymous = await patchRealm('iago', { [name]: { new: { direct_members: [hamlet], direct_subgroups: [sys['role:moderators']] } } });
      expect(anonymous.data).toEqual({ result: 'success', msg: '', [name]: { direct_members: [hamlet], direct_subgroups: [sys['role:moderators']] } });
      const nobody = await patchRealm('iago', { [name]: { new: sys['role:nobody'] } });
      expect(nobody.data).toEqual({ result: 'success', msg: '', [name]: sys['role:nobody'] });
      expect((await readRealm())[column]).toBe(sys['role:nobody']);
    });

    it.each(GROUP_SETTINGS)('%s can never be role:internet', async (name, column, initial) => {
      expectJsonError(await patchRealm('iago', { [name]: { new: sys['role:internet'] } }), 400, `'${name}' setting cannot be set to 'role:internet' group.`, 'BAD_REQUEST');
      expect((await readRealm())[column]).toBe(sys[initial]);
    });

    it('moving between channels and deleting any message cannot be role:everyone; the other three can', async () => {
      for (const name of ['can_move_messages_between_channels_group', 'can_delete_any_message_group'] as const) {
        expectJsonError(await patchRealm('iago', { [name]: { new: sys['role:everyone'] } }), 400, `'${name}' setting cannot be set to 'role:everyone' group.`, 'BAD_REQUEST');
      }
      const realm = await readRealm();
      expect(realm.canMoveMessagesBetweenChannelsGroupId).toBe(sys['role:members']);
      expect(realm.canDeleteAnyMessageGroupId).toBe(sys['role:administrators']);
      for (const name of ['can_move_messages_between_topics_group', 'can_resolve_topics_group', 'can_delete_own_message_group'] as const) {
        await patchRealm('iago', { [name]: { new: sys['role:members'] } });
        expect((await patchRealm('iago', { [name]: { new: sys['role:everyone'] } })).data).toEqual({ result: 'success', msg: '', [name]: sys['role:everyone'] });
      }
    });

    it('compare-and-swap on old applies', async () => {
      expectJsonError(
        await patchRealm('iago', { can_delete_own_message_group: { new: sys['role:members'], old: sys['role:moderators'] } }),
        400,
        "'old' value does not match the expected value.",
        'EXPECTATION_MISMATCH',
      );
      const ok = await patchRealm('iago', { can_delete_own_message_group: { new: sys['role:members'], old: sys['role:everyone'] } });
      expect(ok.data).toEqual({ result: 'success', msg: '', can_delete_own_message_group: sys['role:members'] });
    });
  });

  describe('who may change them', () => {
    const bodies = (): Array<[string, RealmBody]> => [
      ['allow_message_editing', { allow_message_editing: false }],
      ['enable_read_receipts', { enable_read_receipts: false }],
      ['message_edit_history_visibility_policy', { message_edit_history_visibility_policy: 'none' }],
      ...TIME_LIMITS.map(([name]): [string, RealmBody] => [name, { [name]: 77 }]),
      ...GROUP_SETTINGS.map(([name]): [string, RealmBody] => [name, { [name]: { new: sys['role:moderators'] } }]),
    ];

    it('moderators, members and guests are refused every one of them, and nothing changes', async () => {
      const before = await markEvents(env);
      const realmBefore = await readRealm();
      for (const person of ['shiva', 'hamlet', 'polonius'] as const) {
        for (const [, body] of bodies()) {
          expectJsonError(await patchRealm(person, body), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
        }
      }
      expect(await readRealm()).toEqual(realmBefore);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('a moderator holding the moving and deleting permissions still may not change them', async () => {
      await patchRealm('desdemona', { can_delete_any_message_group: { new: sys['role:moderators'] }, can_move_messages_between_channels_group: { new: sys['role:moderators'] } });
      expectJsonError(await patchRealm('shiva', { can_delete_any_message_group: { new: sys['role:members'] } }), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    });

    it('an administrator who is not an owner may change every one of them (none is owner-only in Zulip)', async () => {
      for (const [name, body] of bodies()) {
        const { data, response } = await patchRealm('iago', body);
        expect(response.status, name).toBe(200);
        expect(Object.keys(data ?? {}), name).toContain(name);
      }
      const realm = await readRealm();
      expect(realm.allowMessageEditing).toBe(false);
      expect(realm.enableReadReceipts).toBe(false);
      expect(realm.messageEditHistoryVisibilityPolicy).toBe('none');
      for (const [, column] of TIME_LIMITS) expect(realm[column]).toBe(77);
      for (const [, column] of GROUP_SETTINGS) expect(realm[column]).toBe(sys['role:moderators']);
    });

    it('an owner may change them too, all in one request', async () => {
      const body = Object.assign({}, ...bodies().map(([, b]) => b)) as RealmBody;
      const { data } = await patchRealm('desdemona', body);
      expect(data).toEqual({
        result: 'success',
        msg: '',
        allow_message_editing: false,
        enable_read_receipts: false,
        message_edit_history_visibility_policy: 3,
        ...Object.fromEntries(TIME_LIMITS.map(([name]) => [name, 77])),
        ...Object.fromEntries(GROUP_SETTINGS.map(([name]) => [name, sys['role:moderators']])),
      });
    });
  });

  describe('POST /register', () => {
    it("shows Zulip's defaults for the organization", async () => {
      const state = await realmState('hamlet');
      expect(state).toMatchObject({
        realm_allow_message_editing: true,
        realm_message_content_edit_limit_seconds: 600,
        realm_move_messages_within_stream_limit_seconds: 604800,
        realm_move_messages_between_streams_limit_seconds: 604800,
        realm_message_content_delete_limit_seconds: 600,
        realm_message_edit_history_visibility_policy: 'all',
        realm_allow_edit_history: true,
        realm_enable_read_receipts: true,
        realm_can_move_messages_between_topics_group: sys['role:everyone'],
        realm_can_move_messages_between_channels_group: sys['role:members'],
        realm_can_resolve_topics_group: sys['role:everyone'],
        realm_can_delete_any_message_group: sys['role:administrators'],
        realm_can_delete_own_message_group: sys['role:everyone'],
      });
    });

    it('reflects every change, to every role', async () => {
      const hamlet = env.users.hamlet.id;
      const { error } = await patchRealm('iago', {
        allow_message_editing: false,
        enable_read_receipts: false,
        message_edit_history_visibility_policy: 'moves',
        message_content_edit_limit_seconds: 'unlimited',
        move_messages_within_stream_limit_seconds: 3600,
        move_messages_between_streams_limit_seconds: 'unlimited',
        message_content_delete_limit_seconds: 120,
        can_move_messages_between_topics_group: { new: sys['role:moderators'] },
        can_move_messages_between_channels_group: { new: sys['role:nobody'] },
        can_resolve_topics_group: { new: { direct_members: [hamlet], direct_subgroups: [sys['role:administrators']] } },
        can_delete_any_message_group: { new: sys['role:moderators'] },
        can_delete_own_message_group: { new: sys['role:members'] },
      });
      expect(error).toBeUndefined();
      for (const person of ['desdemona', 'hamlet', 'polonius'] as const) {
        expect(await realmState(person), person).toMatchObject({
          realm_allow_message_editing: false,
          realm_message_content_edit_limit_seconds: null,
          realm_move_messages_within_stream_limit_seconds: 3600,
          realm_move_messages_between_streams_limit_seconds: null,
          realm_message_content_delete_limit_seconds: 120,
          realm_message_edit_history_visibility_policy: 'moves',
          realm_allow_edit_history: true,
          realm_enable_read_receipts: false,
          realm_can_move_messages_between_topics_group: sys['role:moderators'],
          realm_can_move_messages_between_channels_group: sys['role:nobody'],
          realm_can_resolve_topics_group: { direct_members: [hamlet], direct_subgroups: [sys['role:administrators']] },
          realm_can_delete_any_message_group: sys['role:moderators'],
          realm_can_delete_own_message_group: sys['role:members'],
        });
      }
    });

    it('realm_allow_edit_history is false exactly when the policy is none', async () => {
      for (const [policy, allowed] of [['none', false], ['moves', true], ['all', true]] as const) {
        await patchRealm('iago', { message_edit_history_visibility_policy: policy });
        expect(await realmState('othello'), policy).toMatchObject({ realm_message_edit_history_visibility_policy: policy, realm_allow_edit_history: allowed });
      }
    });

    it("a registered queue receives the changes in Zulip's event forms", async () => {
      const client = env.client('cordelia');
      const queue = await registerQueue(client, { event_types: ['realm'] });
      await patchRealm('iago', { message_content_edit_limit_seconds: 300 });
      await patchRealm('iago', { message_edit_history_visibility_policy: 'none' });
      await patchRealm('iago', { can_resolve_topics_group: { new: sys['role:members'] } });
      const events = await pollUntil(client, queue, (received) => received.length >= 3);
      expect(events).toMatchObject([
        { type: 'realm', op: 'update_dict', property: 'default', data: { message_content_edit_limit_seconds: 300 } },
        { type: 'realm', op: 'update', property: 'message_edit_history_visibility_policy', value: 'none' },
        { type: 'realm', op: 'update_dict', property: 'default', data: { can_resolve_topics_group: sys['role:members'] } },
      ]);
    });
  });
});

describe('PATCH /realm: message settings of a new organization', () => {
  it("a new organization starts with Zulip's defaults, its group settings naming its own system groups", async () => {
    // Another organization in this file's database (the last test of the file: nothing after it reads "the" organization).
    const db = env.running.deps.db;
    const realm = await doCreateRealm(db, { name: 'Second', url: `http://second-${randomBytes(4).toString('hex')}.parley.test` });
    const groups = new Map((await db.userGroup.findMany({ where: { realmId: realm.id, isSystemGroup: true } })).map((g) => [g.id, g.name]));
    expect(realm).toMatchObject({
      allowMessageEditing: true,
      messageContentEditLimitSeconds: 600,
      moveMessagesWithinStreamLimitSeconds: 604800,
      moveMessagesBetweenStreamsLimitSeconds: 604800,
      messageContentDeleteLimitSeconds: 600,
      messageEditHistoryVisibilityPolicy: 'all',
      // Zulip enables read receipts at creation for organizations that require invitations (the default).
      inviteRequired: true,
      enableReadReceipts: true,
    });
    expect({
      can_move_messages_between_topics_group: groups.get(realm.canMoveMessagesBetweenTopicsGroupId!),
      can_move_messages_between_channels_group: groups.get(realm.canMoveMessagesBetweenChannelsGroupId!),
      can_resolve_topics_group: groups.get(realm.canResolveTopicsGroupId!),
      can_delete_any_message_group: groups.get(realm.canDeleteAnyMessageGroupId!),
      can_delete_own_message_group: groups.get(realm.canDeleteOwnMessageGroupId!),
    }).toEqual(Object.fromEntries(GROUP_SETTINGS.map(([name, , group]) => [name, group])));
  });
});
