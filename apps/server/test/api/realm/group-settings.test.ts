// Group-setting values and updates, on user groups (PATCH /user_groups/{id}) and on the organization
// (PATCH /realm): Zulip's normalisation ({[], [X]} → X, empty → role:nobody), {new, old} compare-and-
// swap, the per-setting restrictions (role:internet, role:everyone, role:owners, system groups only),
// invalid values, deactivated groups (cannot be named; can still be edited), who may change organization
// settings, and the stored events.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { TEST_PASSWORD, type Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { createGroup, deactivateGroup, readGroup, uniqueName, useSystemGroupIds, type CreateGroupBody, type GroupSettingValue } from '../../helpers/groups.ts';
import { createDeactivatedUser } from '../../helpers/people.ts';

type PatchBody = NonNullable<paths['/user_groups/{user_group_id}']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];
type RealmBody = NonNullable<paths['/realm']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];

const GROUP_SETTINGS = [
  'can_add_members_group',
  'can_join_group',
  'can_leave_group',
  'can_manage_group',
  'can_mention_group',
  'can_remove_members_group',
] as const;
type GroupSetting = (typeof GROUP_SETTINGS)[number];

const env = useTestServer();
const sys = useSystemGroupIds(env);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;
const anon = (members: number[], subgroups: number[] = []) => ({ direct_members: members, direct_subgroups: subgroups });

const patch = (as: Person, groupId: number, body: PatchBody) =>
  env.client(as).PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: groupId } }, body });

const patchRealm = (as: Person, body: RealmBody) => env.client(as).PATCH('/realm', { body });

async function readSetting(groupId: number, setting: GroupSetting): Promise<GroupSettingValue> {
  return (await readGroup(env, groupId))[setting];
}

/** Organization settings have no read endpoint here (POST /register is not part of this work): read the row. */
async function realmSettingGroupId(column: 'canCreateGroupsId' | 'canCreatePublicChannelGroupId' | 'canManageAllGroupsId' | 'canAccessAllUsersGroupId' | 'canMentionManyUsersGroupId' | 'canCreateWebPublicChannelGroupId') {
  const realm = await env.running.deps.db.realm.findFirstOrThrow();
  return realm[column];
}

/** Anonymous setting groups no setting refers to any more (leaks of replaced values). */
async function orphanAnonymousGroups(): Promise<number[]> {
  const rows = await env.running.deps.db.$queryRaw<{ id: number }[]>`
    SELECT g.id FROM user_group g WHERE g.name IS NULL AND NOT EXISTS (
      SELECT 1 FROM user_group o WHERE g.id IN (o.can_add_members_group_id, o.can_join_group_id, o.can_leave_group_id,
        o.can_manage_group_id, o.can_mention_group_id, o.can_remove_members_group_id)
    ) AND NOT EXISTS (
      SELECT 1 FROM realm r WHERE g.id IN (r.can_add_subscribers_group_id, r.can_create_groups_id, r.can_create_public_channel_group_id,
        r.can_create_private_channel_group_id, r.can_create_web_public_channel_group_id, r.can_invite_users_group_id,
        r.can_manage_all_groups_id, r.can_mention_many_users_group_id, r.can_access_all_users_group_id)
    ) AND NOT EXISTS (
      SELECT 1 FROM channel c WHERE g.id IN (c.can_add_subscribers_group_id, c.can_administer_channel_group_id,
        c.can_delete_any_message_group_id, c.can_delete_own_message_group_id, c.can_move_messages_out_of_channel_group_id,
        c.can_move_messages_within_channel_group_id, c.can_remove_subscribers_group_id, c.can_resolve_topics_group_id,
        c.can_send_message_group_id, c.can_subscribe_group_id)
    )`;
  return rows.map((r) => r.id);
}

const MISMATCH = "'old' value does not match the expected value.";

// ---------------------------------------------------------------------------------------------

describe('normalisation of group-setting values', () => {
  it.each(GROUP_SETTINGS)('%s: {[], [X]} is stored and returned as X', async (setting) => {
    const target = await createGroup(env, 'iago', { members: [uid('othello')] });
    const groupId = await createGroup(env, 'hamlet');
    const { response } = await patch('iago', groupId, { [setting]: { new: anon([], [target]) } });
    expect(response.status).toBe(200);
    expect(await readSetting(groupId, setting)).toBe(target);
  });

  it.each(GROUP_SETTINGS)('%s: {[], []} is stored and returned as role:nobody', async (setting) => {
    const groupId = await createGroup(env, 'hamlet', { [setting]: sys['role:members'] } as Partial<CreateGroupBody>);
    const { response } = await patch('iago', groupId, { [setting]: { new: anon([]) } });
    expect(response.status).toBe(200);
    expect(await readSetting(groupId, setting)).toBe(sys['role:nobody']);
  });

  it('a real anonymous value keeps the object form, with ids sorted and duplicates removed', async () => {
    const sub = await createGroup(env, 'iago');
    const groupId = await createGroup(env, 'hamlet');
    const { response } = await patch('hamlet', groupId, {
      can_manage_group: { new: anon([uid('othello'), uid('hamlet'), uid('othello')], [sub, sys['role:moderators'], sub]) },
    });
    expect(response.status).toBe(200);
    expect(await readSetting(groupId, 'can_manage_group')).toEqual(anon([uid('hamlet'), uid('othello')].sort((a, b) => a - b), [sub, sys['role:moderators']].sort((a, b) => a - b)));
  });

  it('a setting change stores one user_group update event carrying the normalised value', async () => {
    const target = await createGroup(env, 'iago');
    const groupId = await createGroup(env, 'hamlet');
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, {
      can_mention_group: { new: anon([], [target]) },
      can_join_group: { new: anon([uid('cordelia')], [sys['role:moderators']]) },
    });
    expect(response.status).toBe(200);
    expect(await eventPayloadsSince(env, before)).toEqual([
      {
        type: 'user_group',
        op: 'update',
        group_id: groupId,
        data: { can_mention_group: target, can_join_group: anon([uid('cordelia')], [sys['role:moderators']]) },
      },
    ]);
  });

  it('setting the current value again is no change: success and no event, also when written differently', async () => {
    const groupId = await createGroup(env, 'hamlet', { can_join_group: anon([uid('othello'), uid('cordelia')]), can_leave_group: sys['role:nobody'] });
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, {
      can_join_group: { new: anon([uid('cordelia'), uid('othello')]) },
      can_leave_group: { new: anon([]) },
    });
    expect(response.status).toBe(200);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('replacing an anonymous value leaves no orphaned anonymous group behind', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const orphansBefore = (await orphanAnonymousGroups()).length;
    expect((await patch('hamlet', groupId, { can_add_members_group: { new: anon([uid('othello')]) } })).response.status).toBe(200);
    expect((await patch('hamlet', groupId, { can_add_members_group: { new: sys['role:members'] } })).response.status).toBe(200);
    expect((await patch('iago', groupId, { can_manage_group: { new: anon([uid('iago')], [sys['role:owners']]) } })).response.status).toBe(200);
    expect((await orphanAnonymousGroups()).length).toBe(orphansBefore);
  });

  it('deactivated users are left out of direct_members of a returned value', async () => {
    const gone = await createDeactivatedUser(env, 'settings');
    // A user who was active when the value was stored and is deactivated afterwards.
    const email = `later-gone-${randomBytes(4).toString('hex')}@parley.test`;
    const created = await env.client('iago').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: 'Later Gone' } });
    const later = created.data!.user_id;
    const groupId = await createGroup(env, 'hamlet', { can_join_group: anon([uid('hamlet'), later]) });
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: later } } })).response.status).toBe(200);
    expect(await readSetting(groupId, 'can_join_group')).toEqual(anon([uid('hamlet')]));
    // And a deactivated user cannot be named in a new value.
    expectJsonError(await patch('hamlet', groupId, { can_join_group: { new: anon([gone]) } }), 400, `Invalid user ID: ${gone}`, 'BAD_REQUEST');
  });
});

describe('compare-and-swap on old', () => {
  it('applies the change when old equals the current value (named group)', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const { response } = await patch('hamlet', groupId, { can_join_group: { new: sys['role:members'], old: sys['role:nobody'] } });
    expect(response.status).toBe(200);
    expect(await readSetting(groupId, 'can_join_group')).toBe(sys['role:members']);
  });

  it('applies the change when old equals the current anonymous value, in any order and with duplicates', async () => {
    const groupId = await createGroup(env, 'hamlet', { can_join_group: anon([uid('othello'), uid('cordelia')], [sys['role:moderators']]) });
    const { response } = await patch('hamlet', groupId, {
      can_join_group: { new: sys['role:members'], old: anon([uid('cordelia'), uid('othello'), uid('cordelia')], [sys['role:moderators']]) },
    });
    expect(response.status).toBe(200);
    expect(await readSetting(groupId, 'can_join_group')).toBe(sys['role:members']);
  });

  it('compares old after normalisation: {[], [X]} matches X and {[], []} matches role:nobody', async () => {
    const groupId = await createGroup(env, 'hamlet', { can_mention_group: sys['role:members'] });
    expect((await patch('hamlet', groupId, { can_mention_group: { new: sys['role:moderators'], old: anon([], [sys['role:members']]) } })).response.status).toBe(200);
    // can_remove_members_group defaults to role:nobody.
    expect((await patch('hamlet', groupId, { can_remove_members_group: { new: sys['role:moderators'], old: anon([]) } })).response.status).toBe(200);
    const group = await readGroup(env, groupId);
    expect(group.can_mention_group).toBe(sys['role:moderators']);
    expect(group.can_remove_members_group).toBe(sys['role:moderators']);
  });

  it('rejects a stale old with EXPECTATION_MISMATCH and changes nothing', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const before = await markEvents(env);
    const cases: PatchBody[] = [
      { can_join_group: { new: sys['role:members'], old: sys['role:everyone'] } },
      { can_manage_group: { new: sys['role:members'], old: anon([uid('othello')]) } },
      { can_manage_group: { new: sys['role:members'], old: anon([uid('hamlet')], [sys['role:owners']]) } },
      { can_manage_group: { new: sys['role:members'], old: uid('hamlet') } }, // a user id is not the value
    ];
    for (const body of cases) {
      expectJsonError(await patch('hamlet', groupId, body), 400, MISMATCH, 'EXPECTATION_MISMATCH');
    }
    const group = await readGroup(env, groupId);
    expect(group.can_join_group).toBe(sys['role:nobody']);
    expect(group.can_manage_group).toEqual(anon([uid('hamlet')]));
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('rejects a stale old even when new equals the current value', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(await patch('hamlet', groupId, { can_join_group: { new: sys['role:nobody'], old: sys['role:members'] } }), 400, MISMATCH, 'EXPECTATION_MISMATCH');
  });

  it('is all or nothing across the settings and the name of one request', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const before = await readGroup(env, groupId);
    const res = await patch('hamlet', groupId, {
      name: uniqueName('renamed'),
      can_join_group: { new: sys['role:members'], old: sys['role:nobody'] },
      can_leave_group: { new: sys['role:members'], old: sys['role:nobody'] }, // stale: it is role:everyone
    });
    expectJsonError(res, 400, MISMATCH, 'EXPECTATION_MISMATCH');
    expect(await readGroup(env, groupId)).toEqual(before);
  });

  it('without old the change is unconditional', async () => {
    const groupId = await createGroup(env, 'hamlet', { can_leave_group: sys['role:moderators'] });
    expect((await patch('hamlet', groupId, { can_leave_group: { new: sys['role:members'] } })).response.status).toBe(200);
    expect(await readSetting(groupId, 'can_leave_group')).toBe(sys['role:members']);
  });

  it('can_mention_group accepts only the {new, old} object form (feature level 260)', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const res = await env.raw(`/user_groups/${groupId}`, { method: 'PATCH', as: 'hamlet', body: new URLSearchParams({ can_mention_group: String(sys['role:members']) }) });
    expectJsonError(res, 400, 'can_mention_group is not a dict', 'BAD_REQUEST');
    const missingNew = await env.raw(`/user_groups/${groupId}`, { method: 'PATCH', as: 'hamlet', body: new URLSearchParams({ can_mention_group: JSON.stringify({ old: sys['role:everyone'] }) }) });
    expect(missingNew.status).toBe(400);
    expect(missingNew.body.code).toBe('BAD_REQUEST');
    expect(await readSetting(groupId, 'can_mention_group')).toBe(sys['role:everyone']);
  });
});

describe('per-setting restrictions', () => {
  it.each(GROUP_SETTINGS)('%s can never be role:internet', async (setting) => {
    const groupId = await createGroup(env, 'hamlet');
    const current = await readSetting(groupId, setting);
    expectJsonError(
      await patch('iago', groupId, { [setting]: { new: sys['role:internet'] } }),
      400,
      `'${setting}' setting cannot be set to 'role:internet' group.`,
      'BAD_REQUEST',
    );
    expect(await readSetting(groupId, setting)).toEqual(current);
  });

  it('can_manage_group cannot be role:everyone, directly or written as {[], [role:everyone]}', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const msg = "'can_manage_group' setting cannot be set to 'role:everyone' group.";
    expectJsonError(await patch('iago', groupId, { can_manage_group: { new: sys['role:everyone'] } }), 400, msg, 'BAD_REQUEST');
    expectJsonError(await patch('iago', groupId, { can_manage_group: { new: anon([], [sys['role:everyone']]) } }), 400, msg, 'BAD_REQUEST');
    expect(await readSetting(groupId, 'can_manage_group')).toEqual(anon([uid('hamlet')]));
  });

  it('can_manage_group may be any other system group', async () => {
    for (const name of ['role:members', 'role:fullmembers', 'role:moderators', 'role:administrators', 'role:owners', 'role:nobody'] as const) {
      const groupId = await createGroup(env, 'hamlet');
      expect((await patch('iago', groupId, { can_manage_group: { new: sys[name] } })).response.status, name).toBe(200);
      expect(await readSetting(groupId, 'can_manage_group')).toBe(sys[name]);
    }
  });

  it('can_mention_group cannot be role:owners, but may be role:everyone and role:administrators', async () => {
    const groupId = await createGroup(env, 'hamlet', { can_mention_group: sys['role:members'] });
    expectJsonError(
      await patch('iago', groupId, { can_mention_group: { new: sys['role:owners'] } }),
      400,
      "'can_mention_group' setting cannot be set to 'role:owners' group.",
      'BAD_REQUEST',
    );
    expect(await readSetting(groupId, 'can_mention_group')).toBe(sys['role:members']);
    expect((await patch('iago', groupId, { can_mention_group: { new: sys['role:administrators'] } })).response.status).toBe(200);
    expect((await patch('iago', groupId, { can_mention_group: { new: sys['role:everyone'] } })).response.status).toBe(200);
    expect(await readSetting(groupId, 'can_mention_group')).toBe(sys['role:everyone']);
  });

  it('the settings that allow role:everyone accept it', async () => {
    for (const setting of ['can_add_members_group', 'can_join_group', 'can_leave_group', 'can_remove_members_group'] as const) {
      const groupId = await createGroup(env, 'hamlet');
      expect((await patch('iago', groupId, { [setting]: { new: sys['role:everyone'] } })).response.status, setting).toBe(200);
      expect(await readSetting(groupId, setting)).toBe(sys['role:everyone']);
    }
  });

  it('a forbidden system group is also refused as a subgroup of an anonymous value (Parley documents this choice)', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(
      await patch('iago', groupId, { can_manage_group: { new: anon([uid('hamlet')], [sys['role:everyone']]) } }),
      400,
      "'can_manage_group' setting cannot be set to 'role:everyone' group.",
      'BAD_REQUEST',
    );
    expectJsonError(
      await patch('iago', groupId, { can_join_group: { new: anon([uid('hamlet')], [sys['role:internet']]) } }),
      400,
      "'can_join_group' setting cannot be set to 'role:internet' group.",
      'BAD_REQUEST',
    );
  });
});

describe('invalid values', () => {
  it('unknown and anonymous group ids, unknown users and subgroups', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const anonymousId = (await env.running.deps.db.userGroup.findUniqueOrThrow({ where: { id: groupId } })).canManageGroupId!;
    const before = await readGroup(env, groupId);
    const cases: Array<[PatchBody, string]> = [
      [{ can_join_group: { new: 999999 } }, 'Invalid user group'],
      [{ can_join_group: { new: anonymousId } }, 'Invalid user group'],
      [{ can_join_group: { new: anon([999999]) } }, 'Invalid user ID: 999999'],
      [{ can_join_group: { new: anon([uid('hamlet')], [999999]) } }, 'Invalid user group ID: 999999'],
      [{ can_join_group: { new: anon([uid('hamlet')], [anonymousId]) } }, `Invalid user group ID: ${anonymousId}`],
    ];
    for (const [body, msg] of cases) expectJsonError(await patch('hamlet', groupId, body), 400, msg, 'BAD_REQUEST');
    expect(await readGroup(env, groupId)).toEqual(before);
  });

  it('malformed values are validation errors', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const send = (value: string) => env.raw(`/user_groups/${groupId}`, { method: 'PATCH', as: 'hamlet', body: new URLSearchParams({ can_join_group: value }) });
    expectJsonError(await send('not json'), 400, 'can_join_group is not valid JSON', 'BAD_REQUEST');
    // The exact path notation of this message belongs to the wire-format work (validation-errors.ts).
    const extra = await send(JSON.stringify({ new: sys['role:members'], extra: 1 }));
    expect(extra.status).toBe(400);
    expect(extra.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    expect(extra.body.msg).toMatch(/^Argument "extra" at can_join_group.* is unexpected$/);
    expect(await readSetting(groupId, 'can_join_group')).toBe(sys['role:nobody']);
  });
});

describe('deactivated groups', () => {
  let gone: number;
  beforeAll(async () => {
    gone = await createGroup(env, 'hamlet', { members: [uid('othello')], can_manage_group: anon([uid('othello')]) });
    await deactivateGroup(env, gone);
  });

  it('cannot be named in a group setting, directly, as {[], [X]} or inside an anonymous value', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const before = await readGroup(env, groupId);
    for (const value of [gone, anon([], [gone]), anon([uid('hamlet')], [gone])]) {
      expectJsonError(await patch('hamlet', groupId, { can_join_group: { new: value } }), 400, 'User group is deactivated.', 'BAD_REQUEST');
    }
    expect(await readGroup(env, groupId)).toEqual(before);
  });

  it('cannot be named in a new group or used as its subgroup', async () => {
    const name = uniqueName('uses deactivated');
    expectJsonError(
      await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [], can_mention_group: gone } }),
      400,
      'User group is deactivated.',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [], subgroups: [gone] } }),
      400,
      'User group is deactivated.',
      'BAD_REQUEST',
    );
  });

  it('cannot be added as a subgroup', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(
      await env.client('hamlet').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: groupId } }, body: { add: [gone] } }),
      400,
      'User group is deactivated.',
      'BAD_REQUEST',
    );
  });

  it('cannot be named in an organization setting', async () => {
    const current = await realmSettingGroupId('canCreatePublicChannelGroupId');
    expectJsonError(await patchRealm('iago', { can_create_public_channel_group: { new: gone } }), 400, 'User group is deactivated.', 'BAD_REQUEST');
    expectJsonError(
      await patchRealm('iago', { can_create_public_channel_group: { new: anon([uid('hamlet')], [gone]) } }),
      400,
      'User group is deactivated.',
      'BAD_REQUEST',
    );
    expect(await realmSettingGroupId('canCreatePublicChannelGroupId')).toBe(current);
  });

  it("can still have its own settings edited, governed by its own can_manage_group", async () => {
    expectJsonError(await patch('cordelia', gone, { can_mention_group: { new: sys['role:members'] } }), 400, 'Insufficient permission', 'BAD_REQUEST');
    const { response } = await patch('othello', gone, { can_mention_group: { new: sys['role:members'], old: sys['role:everyone'] } });
    expect(response.status).toBe(200);
    expect(await readGroup(env, gone)).toMatchObject({ deactivated: true, can_mention_group: sys['role:members'] });
  });

  it('can be named again once reactivated', async () => {
    const other = await createGroup(env, 'hamlet', { members: [uid('cordelia')] });
    await deactivateGroup(env, other);
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(await patch('hamlet', groupId, { can_join_group: { new: other } }), 400, 'User group is deactivated.', 'BAD_REQUEST');
    expect((await patch('hamlet', other, { deactivated: false })).response.status).toBe(200);
    expect((await patch('hamlet', groupId, { can_join_group: { new: other } })).response.status).toBe(200);
    expect(await readSetting(groupId, 'can_join_group')).toBe(other);
  });
});

describe('PATCH /realm: organization-level group settings', () => {
  it('changes a setting, echoes the new value and stores one realm update_dict event', async () => {
    const target = await createGroup(env, 'iago');
    const before = await markEvents(env);
    const { data, response } = await patchRealm('iago', { can_create_public_channel_group: { new: target, old: sys['role:members'] } });
    try {
      expect(response.status).toBe(200);
      expect(data).toEqual({ result: 'success', msg: '', can_create_public_channel_group: target });
      expect(await realmSettingGroupId('canCreatePublicChannelGroupId')).toBe(target);
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update_dict', property: 'default', data: { can_create_public_channel_group: target } }]);
    } finally {
      await patchRealm('iago', { can_create_public_channel_group: { new: sys['role:members'] } });
    }
  });

  it('normalises values like group settings and echoes them normalised', async () => {
    try {
      const one = await patchRealm('iago', { can_mention_many_users_group: { new: anon([], [sys['role:moderators']]) } });
      expect(one.data).toEqual({ result: 'success', msg: '', can_mention_many_users_group: sys['role:moderators'] });
      const empty = await patchRealm('iago', { can_mention_many_users_group: { new: anon([]) } });
      expect(empty.data).toEqual({ result: 'success', msg: '', can_mention_many_users_group: sys['role:nobody'] });
      const mixed = await patchRealm('iago', { can_mention_many_users_group: { new: anon([uid('othello'), uid('hamlet')], [sys['role:moderators']]) } });
      expect(mixed.data).toEqual({
        result: 'success',
        msg: '',
        can_mention_many_users_group: anon([uid('hamlet'), uid('othello')].sort((a, b) => a - b), [sys['role:moderators']]),
      });
    } finally {
      await patchRealm('iago', { can_mention_many_users_group: { new: sys['role:administrators'] } });
    }
  });

  it('omits unchanged settings from the response and stores no event for them', async () => {
    const before = await markEvents(env);
    const { data, response } = await patchRealm('iago', { can_create_public_channel_group: { new: anon([], [sys['role:members']]) } });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('applies compare-and-swap on old', async () => {
    expectJsonError(
      await patchRealm('iago', { can_create_public_channel_group: { new: sys['role:moderators'], old: sys['role:administrators'] } }),
      400,
      MISMATCH,
      'EXPECTATION_MISMATCH',
    );
    expect(await realmSettingGroupId('canCreatePublicChannelGroupId')).toBe(sys['role:members']);
  });

  it('is all or nothing across settings', async () => {
    const before = await markEvents(env);
    expectJsonError(
      await patchRealm('iago', {
        can_create_public_channel_group: { new: sys['role:moderators'] },
        can_create_private_channel_group: { new: sys['role:moderators'], old: sys['role:nobody'] },
      }),
      400,
      MISMATCH,
      'EXPECTATION_MISMATCH',
    );
    expect(await realmSettingGroupId('canCreatePublicChannelGroupId')).toBe(sys['role:members']);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('refuses role:internet and role:everyone where Zulip does', async () => {
    const cases: Array<[RealmBody, string, Person]> = [
      [{ can_create_public_channel_group: { new: sys['role:everyone'] } }, "'can_create_public_channel_group' setting cannot be set to 'role:everyone' group.", 'iago'],
      [{ can_create_private_channel_group: { new: sys['role:internet'] } }, "'can_create_private_channel_group' setting cannot be set to 'role:internet' group.", 'iago'],
      [{ can_add_subscribers_group: { new: sys['role:internet'] } }, "'can_add_subscribers_group' setting cannot be set to 'role:internet' group.", 'iago'],
      [{ can_create_groups: { new: sys['role:everyone'] } }, "'can_create_groups' setting cannot be set to 'role:everyone' group.", 'desdemona'],
      [{ can_manage_all_groups: { new: sys['role:everyone'] } }, "'can_manage_all_groups' setting cannot be set to 'role:everyone' group.", 'desdemona'],
      [{ can_invite_users_group: { new: sys['role:everyone'] } }, "'can_invite_users_group' setting cannot be set to 'role:everyone' group.", 'desdemona'],
    ];
    for (const [body, msg, as] of cases) expectJsonError(await patchRealm(as, body), 400, msg, 'BAD_REQUEST');
    expect(await realmSettingGroupId('canManageAllGroupsId')).toBe(sys['role:administrators']);
  });

  it('can_access_all_users_group must be the system group role:everyone or role:members', async () => {
    const named = await createGroup(env, 'iago');
    const required = "'can_access_all_users_group' must be a system user group.";
    expectJsonError(await patchRealm('iago', { can_access_all_users_group: { new: named } }), 400, required, 'SYSTEM_GROUP_REQUIRED');
    expectJsonError(await patchRealm('iago', { can_access_all_users_group: { new: anon([uid('hamlet')], [sys['role:members']]) } }), 400, required, 'SYSTEM_GROUP_REQUIRED');
    expect(await realmSettingGroupId('canAccessAllUsersGroupId')).toBe(sys['role:everyone']);
    try {
      const ok = await patchRealm('iago', { can_access_all_users_group: { new: sys['role:members'] } });
      expect(ok.data).toEqual({ result: 'success', msg: '', can_access_all_users_group: sys['role:members'] });
    } finally {
      await patchRealm('iago', { can_access_all_users_group: { new: sys['role:everyone'] } });
    }
  });

  it('can_access_all_users_group refuses other system groups with Zulip\'s "cannot be set to" message', async () => {
    expectJsonError(
      await patchRealm('iago', { can_access_all_users_group: { new: sys['role:administrators'] } }),
      400,
      "'can_access_all_users_group' setting cannot be set to 'role:administrators' group.",
      'BAD_REQUEST',
    );
    expect(await realmSettingGroupId('canAccessAllUsersGroupId')).toBe(sys['role:everyone']);
  });

  it('can_create_web_public_channel_group accepts only system groups', async () => {
    const named = await createGroup(env, 'iago');
    expectJsonError(
      await patchRealm('iago', { can_create_web_public_channel_group: { new: named } }),
      400,
      "'can_create_web_public_channel_group' must be a system user group.",
      'SYSTEM_GROUP_REQUIRED',
    );
    expectJsonError(
      await patchRealm('iago', { can_create_web_public_channel_group: { new: sys['role:everyone'] } }),
      400,
      "'can_create_web_public_channel_group' setting cannot be set to 'role:everyone' group.",
      'BAD_REQUEST',
    );
    try {
      expect((await patchRealm('iago', { can_create_web_public_channel_group: { new: sys['role:moderators'] } })).response.status).toBe(200);
      expect(await realmSettingGroupId('canCreateWebPublicChannelGroupId')).toBe(sys['role:moderators']);
    } finally {
      await patchRealm('iago', { can_create_web_public_channel_group: { new: sys['role:owners'] } });
    }
  });

  describe('who may change organization settings', () => {
    it('non-administrators are refused, even those holding can_manage_all_groups', async () => {
      await patchRealm('desdemona', { can_manage_all_groups: { new: anon([uid('cordelia')], [sys['role:administrators']]) } });
      try {
        for (const person of ['shiva', 'hamlet', 'cordelia', 'polonius'] as const) {
          expectJsonError(
            await patchRealm(person, { can_create_public_channel_group: { new: sys['role:moderators'] } }),
            400,
            'Must be an organization administrator',
            'UNAUTHORIZED_PRINCIPAL',
          );
        }
        expect(await realmSettingGroupId('canCreatePublicChannelGroupId')).toBe(sys['role:members']);
      } finally {
        await patchRealm('desdemona', { can_manage_all_groups: { new: sys['role:administrators'] } });
      }
    });

    it('administrators change ordinary settings; can_create_groups, can_invite_users_group and can_manage_all_groups need an owner', async () => {
      for (const body of [
        { can_create_groups: { new: sys['role:moderators'] } },
        { can_invite_users_group: { new: sys['role:moderators'] } },
        { can_manage_all_groups: { new: sys['role:moderators'] } },
      ] as RealmBody[]) {
        expectJsonError(await patchRealm('iago', body), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
      }
      expect(await realmSettingGroupId('canCreateGroupsId')).toBe(sys['role:members']);
      expect(await realmSettingGroupId('canManageAllGroupsId')).toBe(sys['role:administrators']);
      try {
        const ok = await patchRealm('desdemona', { can_create_groups: { new: sys['role:moderators'], old: sys['role:members'] } });
        expect(ok.data).toEqual({ result: 'success', msg: '', can_create_groups: sys['role:moderators'] });
        expect(await realmSettingGroupId('canCreateGroupsId')).toBe(sys['role:moderators']);
      } finally {
        await patchRealm('desdemona', { can_create_groups: { new: sys['role:members'] } });
      }
    });

    it('a request without parameters succeeds for an administrator', async () => {
      const { data, response } = await patchRealm('iago', {});
      expect(response.status).toBe(200);
      expect(data).toEqual({ result: 'success', msg: '' });
    });
  });

  it('the new value takes effect at once: can_manage_all_groups given to a member through a group', async () => {
    const managers = await createGroup(env, 'iago', { members: [uid('cordelia')] });
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(await patch('cordelia', groupId, { description: 'by cordelia' }), 400, 'Insufficient permission', 'BAD_REQUEST');
    await patchRealm('desdemona', { can_manage_all_groups: { new: anon([], [managers, sys['role:administrators']]) } });
    try {
      expect((await patch('cordelia', groupId, { description: 'by cordelia' })).response.status).toBe(200);
      expect((await readGroup(env, groupId)).description).toBe('by cordelia');
    } finally {
      await patchRealm('desdemona', { can_manage_all_groups: { new: sys['role:administrators'] } });
    }
    expectJsonError(await patch('cordelia', groupId, { description: 'again' }), 400, 'Insufficient permission', 'BAD_REQUEST');
  });
});
