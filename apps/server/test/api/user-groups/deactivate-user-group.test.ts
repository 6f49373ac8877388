// POST /user_groups/{user_group_id}/deactivate (seed op 9): success and its event, the errors, who may
// deactivate, and CANNOT_DEACTIVATE_GROUP_IN_USE with the exact objections (subgroup, channel,
// user_group, realm), including uses through anonymous group-setting values, and the uses that do not
// count (deactivated supergroups and groups, archived channels).
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { createGroup, readGroup, setRealmGroupSetting, uniqueName, useSystemGroupIds, type GroupSettingValue } from '../../helpers/groups.ts';

const env = useTestServer();
const sys = useSystemGroupIds(env);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;
const deactivate = (as: Person, groupId: number) =>
  env.client(as).POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: groupId } } });

async function isDeactivated(groupId: number): Promise<boolean> {
  return (await readGroup(env, groupId)).deactivated;
}

async function patchGroupSetting(groupId: number, setting: string, value: GroupSettingValue): Promise<void> {
  const { error } = await env.client('iago').PATCH('/user_groups/{user_group_id}', {
    params: { path: { user_group_id: groupId } },
    body: { [setting]: { new: value } },
  });
  if (error) throw new Error(`setup: PATCH group ${setting} failed: ${JSON.stringify(error)}`);
}

/**
 * A channel row created directly (the channel endpoints are built elsewhere): every permission is a
 * system group unless overridden.
 */
async function createChannel(overrides: Partial<Record<ChannelGroupColumn, number>> = {}, isArchived = false): Promise<number> {
  const channel = await env.running.deps.db.channel.create({
    data: {
      realmId: env.realmId,
      name: uniqueName('channel'),
      isArchived,
      canAddSubscribersGroupId: sys['role:nobody'],
      canAdministerChannelGroupId: sys['role:administrators'],
      canDeleteAnyMessageGroupId: sys['role:nobody'],
      canDeleteOwnMessageGroupId: sys['role:everyone'],
      canMoveMessagesOutOfChannelGroupId: sys['role:nobody'],
      canMoveMessagesWithinChannelGroupId: sys['role:nobody'],
      canRemoveSubscribersGroupId: sys['role:administrators'],
      canResolveTopicsGroupId: sys['role:nobody'],
      canSendMessageGroupId: sys['role:everyone'],
      canSubscribeGroupId: sys['role:nobody'],
      ...overrides,
    },
  });
  return channel.id;
}
type ChannelGroupColumn =
  | 'canAddSubscribersGroupId'
  | 'canAdministerChannelGroupId'
  | 'canDeleteAnyMessageGroupId'
  | 'canDeleteOwnMessageGroupId'
  | 'canMoveMessagesOutOfChannelGroupId'
  | 'canMoveMessagesWithinChannelGroupId'
  | 'canRemoveSubscribersGroupId'
  | 'canResolveTopicsGroupId'
  | 'canSendMessageGroupId'
  | 'canSubscribeGroupId';

/** The anonymous group row storing a user group's setting value (for channel rows referencing it). */
async function storedSettingGroupId(groupId: number, column: 'canManageGroupId' | 'canAddMembersGroupId'): Promise<number> {
  const row = await env.running.deps.db.userGroup.findUniqueOrThrow({ where: { id: groupId } });
  return row[column]!;
}

/** Objections with each `settings` list sorted, so that the comparison is about the set of settings. */
function normaliseObjections(objections: any[]): any[] {
  return objections.map((o) => (o.settings ? { ...o, settings: [...o.settings].sort() } : o));
}

async function expectInUse(groupId: number, objections: any[]): Promise<void> {
  const before = await markEvents(env);
  const res = await deactivate('iago', groupId);
  expectJsonError(res, 400, 'Cannot deactivate user group in use.', 'CANNOT_DEACTIVATE_GROUP_IN_USE');
  expect(Object.keys(res.error as object).sort()).toEqual(['code', 'msg', 'objections', 'result']);
  expect(normaliseObjections((res.error as { objections: any[] }).objections)).toEqual(normaliseObjections(objections));
  expect(await isDeactivated(groupId)).toBe(false);
  expect(await eventPayloadsSince(env, before)).toEqual([]);
}

// ---------------------------------------------------------------------------------------------

describe('POST /user_groups/{user_group_id}/deactivate', () => {
  it('deactivates an unused group, keeps its members and settings, and stores one update event', async () => {
    const groupId = await createGroup(env, 'hamlet', { members: [uid('hamlet'), uid('othello')], can_mention_group: sys['role:members'] });
    const groupBefore = await readGroup(env, groupId);
    const before = await markEvents(env);
    const { data, response } = await deactivate('hamlet', groupId);
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await readGroup(env, groupId)).toEqual({ ...groupBefore, deactivated: true });
    expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'user_group', op: 'update', group_id: groupId, data: { deactivated: true } }]);
    const { data: listed } = await env.client('hamlet').GET('/user_groups', { params: { query: {} } });
    expect(listed!.user_groups.map((g) => g.id)).not.toContain(groupId);
  });

  it('answers "Invalid user group" for unknown groups and anonymous setting groups', async () => {
    expectJsonError(await deactivate('iago', 999999), 400, 'Invalid user group', 'BAD_REQUEST');
    const anonymous = await env.running.deps.db.userGroup.findFirstOrThrow({ where: { name: null } });
    expectJsonError(await deactivate('iago', anonymous.id), 400, 'Invalid user group', 'BAD_REQUEST');
  });

  it('answers "User group is deactivated." for a deactivated group', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expect((await deactivate('hamlet', groupId)).response.status).toBe(200);
    const before = await markEvents(env);
    expectJsonError(await deactivate('hamlet', groupId), 400, 'User group is deactivated.', 'BAD_REQUEST');
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('checks "deactivated" before permission, as Zulip does (seed order: unknown, deactivated, permission)', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expect((await deactivate('hamlet', groupId)).response.status).toBe(200);
    expectJsonError(await deactivate('othello', groupId), 400, 'User group is deactivated.', 'BAD_REQUEST');
  });

  it('refuses system groups, even for the owner', async () => {
    for (const name of ['role:members', 'role:moderators', 'role:nobody', 'role:internet'] as const) {
      expectJsonError(await deactivate('desdemona', sys[name]), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await isDeactivated(sys[name]), name).toBe(false);
    }
  });

  describe('who may deactivate a group', () => {
    // The group is created by hamlet: can_manage_group = {hamlet}; can_manage_all_groups = administrators.
    const matrix: Array<[Person, boolean]> = [
      ['desdemona', true],
      ['iago', true],
      ['shiva', false],
      ['hamlet', true],
      ['othello', false],
      ['polonius', false],
    ];
    it.each(matrix)('%s → allowed: %s', async (person, allowed) => {
      const groupId = await createGroup(env, 'hamlet');
      const res = await deactivate(person, groupId);
      if (allowed) expect(res.response.status).toBe(200);
      else expectJsonError(res, 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await isDeactivated(groupId)).toBe(allowed);
    });

    it('a member holding can_manage_group through a named group may deactivate it', async () => {
      const managers = await createGroup(env, 'iago', { members: [uid('cordelia')] });
      const groupId = await createGroup(env, 'hamlet', { can_manage_group: managers });
      expectJsonError(await deactivate('hamlet', groupId), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect((await deactivate('cordelia', groupId)).response.status).toBe(200);
      expect(await isDeactivated(groupId)).toBe(true);
    });

    it('holding only can_add_members_group is not enough', async () => {
      const groupId = await createGroup(env, 'hamlet', { can_add_members_group: { direct_members: [uid('othello')], direct_subgroups: [] } });
      expectJsonError(await deactivate('othello', groupId), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await isDeactivated(groupId)).toBe(false);
    });

    it('a guest named in can_manage_group still cannot deactivate it (guests never manage groups)', async () => {
      const groupId = await createGroup(env, 'hamlet', { can_manage_group: { direct_members: [uid('hamlet'), uid('polonius')], direct_subgroups: [] } });
      const res = await deactivate('polonius', groupId);
      expect(res.response.status).toBe(400);
      expect(['Insufficient permission', 'Not allowed for guest users']).toContain(res.error?.msg);
      expect(await isDeactivated(groupId)).toBe(false);
    });
  });
});

describe('CANNOT_DEACTIVATE_GROUP_IN_USE objections', () => {
  it('subgroup: lists the active supergroups only', async () => {
    const groupId = await createGroup(env, 'iago');
    const s1 = await createGroup(env, 'iago', { subgroups: [groupId] });
    const s2 = await createGroup(env, 'iago', { subgroups: [groupId] });
    const s3 = await createGroup(env, 'iago', { subgroups: [groupId] });
    expect((await deactivate('iago', s3)).response.status).toBe(200);
    await expectInUse(groupId, [{ type: 'subgroup', supergroup_ids: [s1, s2].sort((a, b) => a - b) }]);
  });

  it('a deactivated supergroup does not object', async () => {
    const groupId = await createGroup(env, 'iago');
    const supergroup = await createGroup(env, 'iago', { subgroups: [groupId] });
    expect((await deactivate('iago', supergroup)).response.status).toBe(200);
    expect((await deactivate('iago', groupId)).response.status).toBe(200);
  });

  it('user_group: names the settings of another group using it, directly or through an anonymous value', async () => {
    const groupId = await createGroup(env, 'iago');
    const user1 = await createGroup(env, 'iago', {
      can_mention_group: groupId,
      can_join_group: groupId,
      can_manage_group: { direct_members: [uid('hamlet')], direct_subgroups: [groupId] },
    });
    const user2 = await createGroup(env, 'iago', { can_remove_members_group: { direct_members: [uid('othello')], direct_subgroups: [groupId, sys['role:moderators']] } });
    await expectInUse(groupId, [
      { type: 'user_group', group_id: user1, settings: ['can_join_group', 'can_manage_group', 'can_mention_group'] },
      { type: 'user_group', group_id: user2, settings: ['can_remove_members_group'] },
    ]);
  });

  it('a deactivated group using it does not object', async () => {
    const groupId = await createGroup(env, 'iago');
    const user = await createGroup(env, 'iago', { can_mention_group: groupId });
    expect((await deactivate('iago', user)).response.status).toBe(200);
    expect((await deactivate('iago', groupId)).response.status).toBe(200);
  });

  it('realm: names the organization settings using it, directly or through an anonymous value', async () => {
    const groupId = await createGroup(env, 'iago');
    await setRealmGroupSetting(env, 'can_create_public_channel_group', groupId);
    await setRealmGroupSetting(env, 'can_mention_many_users_group', { direct_members: [uid('hamlet')], direct_subgroups: [groupId] });
    try {
      await expectInUse(groupId, [{ type: 'realm', settings: ['can_create_public_channel_group', 'can_mention_many_users_group'] }]);
    } finally {
      await setRealmGroupSetting(env, 'can_create_public_channel_group', sys['role:members']);
      await setRealmGroupSetting(env, 'can_mention_many_users_group', sys['role:administrators']);
    }
    expect((await deactivate('iago', groupId)).response.status).toBe(200);
  });

  it('channel: names the settings of non-archived channels using it, directly or through an anonymous value', async () => {
    const groupId = await createGroup(env, 'iago');
    // An anonymous value {hamlet} + groupId, stored as its own group row, referenced by a channel setting.
    const holder = await createGroup(env, 'iago', { can_add_members_group: { direct_members: [uid('hamlet')], direct_subgroups: [groupId] } });
    const anonymous = await storedSettingGroupId(holder, 'canAddMembersGroupId');
    const channel = await createChannel({ canSendMessageGroupId: groupId, canRemoveSubscribersGroupId: groupId, canResolveTopicsGroupId: anonymous });
    await createChannel({ canAdministerChannelGroupId: groupId }, true); // archived: does not count
    await expectInUse(groupId, [
      { type: 'channel', channel_id: channel, settings: ['can_remove_subscribers_group', 'can_resolve_topics_group', 'can_send_message_group'] },
      { type: 'user_group', group_id: holder, settings: ['can_add_members_group'] },
    ]);
  });

  it('lists every kind of use at once, in Zulip order: subgroup, channel, user_group, realm', async () => {
    const groupId = await createGroup(env, 'iago');
    const supergroup = await createGroup(env, 'iago', { subgroups: [groupId] });
    const user = await createGroup(env, 'iago', { can_leave_group: groupId });
    const channel = await createChannel({ canSubscribeGroupId: groupId });
    await setRealmGroupSetting(env, 'can_add_subscribers_group', groupId);
    try {
      await expectInUse(groupId, [
        { type: 'subgroup', supergroup_ids: [supergroup] },
        { type: 'channel', channel_id: channel, settings: ['can_subscribe_group'] },
        { type: 'user_group', group_id: user, settings: ['can_leave_group'] },
        { type: 'realm', settings: ['can_add_subscribers_group'] },
      ]);

      // Removing the uses one by one clears the objections; then the group can be deactivated.
      expect((await env.client('iago').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: supergroup } }, body: { delete: [groupId] } })).response.status).toBe(200);
      await env.running.deps.db.channel.update({ where: { id: channel }, data: { canSubscribeGroupId: sys['role:nobody'] } });
      await patchGroupSetting(user, 'can_leave_group', sys['role:everyone']);
      await expectInUse(groupId, [{ type: 'realm', settings: ['can_add_subscribers_group'] }]);
    } finally {
      await setRealmGroupSetting(env, 'can_add_subscribers_group', sys['role:members']);
    }
    expect((await deactivate('iago', groupId)).response.status).toBe(200);
    expect(await isDeactivated(groupId)).toBe(true);
  });

  it('being used does not stop deactivating the groups that use it, nor a group whose own subgroups are in use', async () => {
    const used = await createGroup(env, 'iago');
    const user = await createGroup(env, 'iago', { can_manage_group: used, subgroups: [used] });
    expect((await deactivate('iago', user)).response.status).toBe(200);
    expect((await deactivate('iago', used)).response.status).toBe(200);
  });
});
