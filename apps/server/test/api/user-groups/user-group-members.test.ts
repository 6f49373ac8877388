// POST /user_groups/{id}/members (seed op 7), POST /user_groups/{id}/subgroups (seed op 8), and the
// membership reads GET /user_groups/{id}/members, GET /user_groups/{id}/members/{user_id} and
// GET /user_groups/{id}/subgroups: errors, all-or-nothing transactions, who may add/remove/join/leave,
// cycles, recursive (effective) membership, deactivated groups (feature level 391) and stored events.
import { beforeAll, describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { allMembers, allSubgroups, createGroup, deactivateGroup, directMembers, directSubgroups, readGroup, sorted, useSystemGroupIds } from '../../helpers/groups.ts';
import { createUser, deactivateUser } from '../../helpers/people.ts';

type MembersBody = NonNullable<paths['/user_groups/{user_group_id}/members']['post']['requestBody']>['content']['application/x-www-form-urlencoded'];
type SubgroupsBody = NonNullable<paths['/user_groups/{user_group_id}/subgroups']['post']['requestBody']>['content']['application/x-www-form-urlencoded'];

const env = useTestServer();
const sys = useSystemGroupIds(env);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;
/** A new member, "Extra User". */
const createExtraUser = async () => (await createUser(env, { label: 'members', fullName: 'Extra User' })).id;

const members = (as: Person, groupId: number, body: MembersBody) =>
  env.client(as).POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId } }, body });

const subgroups = (as: Person, groupId: number, body: SubgroupsBody) =>
  env.client(as).POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: groupId } }, body });

const NOTHING_MEMBERS = 'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".';
const NOTHING_SUBGROUPS = 'Nothing to do. Specify at least one of "add" or "delete".';

// ---------------------------------------------------------------------------------------------

describe('POST /user_groups/{user_group_id}/members', () => {
  it('adds and removes direct members in one request and stores add_members and remove_members events', async () => {
    const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')] });
    const before = await markEvents(env);
    const { data, response } = await members('iago', groupId, { add: [uid('othello'), uid('cordelia')], delete: [uid('hamlet')] });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await directMembers(env, groupId)).toEqual(sorted([uid('othello'), uid('cordelia')]));
    expect((await readGroup(env, groupId)).members).toEqual(sorted([uid('othello'), uid('cordelia')]));

    const events = await eventPayloadsSince(env, before);
    expect(events.map((e) => ({ ...e, user_ids: sorted(e.user_ids) }))).toEqual([
      { type: 'user_group', op: 'add_members', group_id: groupId, user_ids: sorted([uid('othello'), uid('cordelia')]) },
      { type: 'user_group', op: 'remove_members', group_id: groupId, user_ids: [uid('hamlet')] },
    ]);
  });

  it('adds and removes subgroups through add_subgroups and delete_subgroups', async () => {
    const a = await createGroup(env, 'iago');
    const b = await createGroup(env, 'iago');
    const groupId = await createGroup(env, 'iago', { subgroups: [a] });
    const before = await markEvents(env);
    const { response } = await members('iago', groupId, { add_subgroups: [b], delete_subgroups: [a] });
    expect(response.status).toBe(200);
    expect(await directSubgroups(env, groupId)).toEqual([b]);
    expect(await eventPayloadsSince(env, before)).toEqual([
      { type: 'user_group', op: 'add_subgroups', group_id: groupId, direct_subgroup_ids: [b] },
      { type: 'user_group', op: 'remove_subgroups', group_id: groupId, direct_subgroup_ids: [a] },
    ]);
  });

  it('needs at least one non-empty list', async () => {
    const groupId = await createGroup(env, 'iago');
    expectJsonError(await members('iago', groupId, {}), 400, NOTHING_MEMBERS, 'BAD_REQUEST');
    expectJsonError(await members('iago', groupId, { add: [], delete: [], add_subgroups: [], delete_subgroups: [] }), 400, NOTHING_MEMBERS, 'BAD_REQUEST');
  });

  it('answers "Invalid user group" for unknown groups and "Insufficient permission" for system groups', async () => {
    expectJsonError(await members('iago', 999999, { add: [uid('hamlet')] }), 400, 'Invalid user group', 'BAD_REQUEST');
    expectJsonError(await members('desdemona', sys['role:members'], { add: [uid('polonius')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expectJsonError(await members('desdemona', sys['role:moderators'], { delete: [uid('shiva')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect(await allMembers(env, sys['role:members'])).not.toContain(uid('polonius'));
    expect(await allMembers(env, sys['role:moderators'])).toContain(uid('shiva'));
  });

  it('accepts only active users', async () => {
    const gone = await createExtraUser();
    const groupId = await createGroup(env, 'iago', { members: [gone] });
    await deactivateUser(env, gone);
    expectJsonError(await members('iago', groupId, { add: [999999] }), 400, 'Invalid user ID: 999999', 'BAD_REQUEST');
    expectJsonError(await members('iago', groupId, { add: [gone] }), 400, `Invalid user ID: ${gone}`, 'BAD_REQUEST');
    expectJsonError(await members('iago', groupId, { delete: [999999] }), 400, 'Invalid user ID: 999999', 'BAD_REQUEST');
  });

  it('refuses to add a direct member twice or to remove a non-member', async () => {
    const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')] });
    expectJsonError(await members('iago', groupId, { add: [uid('hamlet')] }), 400, `User ${uid('hamlet')} is already a member of this group`, 'BAD_REQUEST');
    expectJsonError(await members('iago', groupId, { delete: [uid('othello')] }), 400, `There is no member '${uid('othello')}' in this user group`, 'BAD_REQUEST');
    expect(await directMembers(env, groupId)).toEqual([uid('hamlet')]);
  });

  it('a member only through a subgroup is not a direct member: adding them directly works, deleting them does not', async () => {
    const sub = await createGroup(env, 'iago', { members: [uid('cordelia')] });
    const groupId = await createGroup(env, 'iago', { subgroups: [sub] });
    expectJsonError(await members('iago', groupId, { delete: [uid('cordelia')] }), 400, `There is no member '${uid('cordelia')}' in this user group`, 'BAD_REQUEST');
    expect((await members('iago', groupId, { add: [uid('cordelia')] })).response.status).toBe(200);
    expect(await directMembers(env, groupId)).toEqual([uid('cordelia')]);
  });

  describe('all or nothing: one failing part rolls every part back', () => {
    it('a valid and an unknown user', async () => {
      const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')] });
      const before = await markEvents(env);
      expectJsonError(await members('iago', groupId, { add: [uid('othello'), 999999] }), 400, 'Invalid user ID: 999999', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual([uid('hamlet')]);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('a valid addition and a removal of a non-member', async () => {
      const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')] });
      const before = await markEvents(env);
      expectJsonError(
        await members('iago', groupId, { add: [uid('othello')], delete: [uid('cordelia')] }),
        400,
        `There is no member '${uid('cordelia')}' in this user group`,
        'BAD_REQUEST',
      );
      expect(await directMembers(env, groupId)).toEqual([uid('hamlet')]);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('member changes and a subgroup change that would create a cycle', async () => {
      const child = await createGroup(env, 'iago');
      const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')], subgroups: [child] });
      const before = await markEvents(env);
      // Adding groupId below its own child is a cycle; the member changes must not survive it.
      expectJsonError(
        await members('iago', child, { add: [uid('othello')], add_subgroups: [groupId] }),
        400,
        `User group ${child} is already a subgroup of one of the passed subgroups.`,
        'BAD_REQUEST',
      );
      expect(await directMembers(env, child)).toEqual([]);
      expect(await directSubgroups(env, child)).toEqual([]);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('member changes and a removal of a group that is not a subgroup', async () => {
      const other = await createGroup(env, 'iago');
      const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')] });
      expectJsonError(
        await members('iago', groupId, { delete: [uid('hamlet')], delete_subgroups: [other] }),
        400,
        `User group ${other} is not a subgroup of this group.`,
        'BAD_REQUEST',
      );
      expect(await directMembers(env, groupId)).toEqual([uid('hamlet')]);
    });
  });

  describe('who may add someone else (can_add_members_group, or managing the group)', () => {
    // Groups are created by hamlet: can_manage_group = can_add_members_group = {hamlet}.
    const matrix: Array<[Person, 'ok' | 'denied' | 'guest']> = [
      ['desdemona', 'ok'],
      ['iago', 'ok'],
      ['shiva', 'denied'],
      ['hamlet', 'ok'],
      ['cordelia', 'denied'],
      ['polonius', 'guest'],
    ];
    it.each(matrix)('%s → %s', async (person, outcome) => {
      const groupId = await createGroup(env, 'hamlet');
      const res = await members(person, groupId, { add: [uid('othello')] });
      if (outcome === 'ok') expect(res.response.status).toBe(200);
      else expectJsonError(res, 400, outcome === 'guest' ? 'Not allowed for guest users' : 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual(outcome === 'ok' ? [uid('othello')] : []);
    });

    it('a member holding can_add_members_group through a named group may add, but not remove', async () => {
      const holders = await createGroup(env, 'iago', { members: [uid('cordelia')] });
      const groupId = await createGroup(env, 'hamlet', { can_add_members_group: holders, members: [uid('hamlet')] });
      expect((await members('cordelia', groupId, { add: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await members('cordelia', groupId, { delete: [uid('hamlet')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual(sorted([uid('hamlet'), uid('othello')]));
    });

    it('a moderator holds the permission when it is role:moderators', async () => {
      const groupId = await createGroup(env, 'hamlet', { can_add_members_group: sys['role:moderators'] });
      expect((await members('shiva', groupId, { add: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await members('cordelia', groupId, { add: [uid('cordelia'), uid('othello')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
    });
  });

  describe('who may remove someone else (can_remove_members_group, or managing the group)', () => {
    const matrix: Array<[Person, 'ok' | 'denied' | 'guest']> = [
      ['desdemona', 'ok'],
      ['iago', 'ok'],
      ['shiva', 'denied'],
      ['hamlet', 'ok'],
      ['cordelia', 'denied'],
      ['polonius', 'guest'],
    ];
    it.each(matrix)('%s → %s', async (person, outcome) => {
      const groupId = await createGroup(env, 'hamlet', { members: [uid('othello')] });
      const res = await members(person, groupId, { delete: [uid('othello')] });
      if (outcome === 'ok') expect(res.response.status).toBe(200);
      else expectJsonError(res, 400, outcome === 'guest' ? 'Not allowed for guest users' : 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual(outcome === 'ok' ? [] : [uid('othello')]);
    });

    it('a member holding can_remove_members_group through a named group may remove, but not add', async () => {
      const holders = await createGroup(env, 'iago', { members: [uid('cordelia')] });
      const groupId = await createGroup(env, 'hamlet', { can_remove_members_group: holders, members: [uid('othello')] });
      expect((await members('cordelia', groupId, { delete: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await members('cordelia', groupId, { add: [uid('othello')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual([]);
    });
  });

  describe('joining and leaving oneself (can_join_group, can_leave_group)', () => {
    it('nobody may join by default; with can_join_group = role:members a member may add only themself', async () => {
      const groupId = await createGroup(env, 'hamlet');
      expectJsonError(await members('othello', groupId, { add: [uid('othello')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      const set = await env.client('hamlet').PATCH('/user_groups/{user_group_id}', {
        params: { path: { user_group_id: groupId } },
        body: { can_join_group: { new: sys['role:members'] } },
      });
      expect(set.response.status).toBe(200);
      expect((await members('othello', groupId, { add: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await members('othello', groupId, { add: [uid('cordelia')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expectJsonError(await members('cordelia', groupId, { add: [uid('cordelia'), uid('othello')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual([uid('othello')]);
    });

    it('a guest cannot join even when can_join_group is role:everyone', async () => {
      const groupId = await createGroup(env, 'hamlet', { can_join_group: sys['role:everyone'] });
      expectJsonError(await members('polonius', groupId, { add: [uid('polonius')] }), 400, 'Not allowed for guest users', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual([]);
    });

    it('everyone may leave by default; with can_leave_group = role:nobody only managers may remove', async () => {
      const groupId = await createGroup(env, 'hamlet', { members: [uid('othello'), uid('cordelia')] });
      expect((await members('othello', groupId, { delete: [uid('othello')] })).response.status).toBe(200);
      expectJsonError(await members('cordelia', groupId, { delete: [uid('hamlet'), uid('cordelia')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      const set = await env.client('hamlet').PATCH('/user_groups/{user_group_id}', {
        params: { path: { user_group_id: groupId } },
        body: { can_leave_group: { new: sys['role:nobody'] } },
      });
      expect(set.response.status).toBe(200);
      expectJsonError(await members('cordelia', groupId, { delete: [uid('cordelia')] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await directMembers(env, groupId)).toEqual([uid('cordelia')]);
      expect((await members('hamlet', groupId, { delete: [uid('cordelia')] })).response.status).toBe(200);
      expect(await directMembers(env, groupId)).toEqual([]);
    });
  });

  it('edits members and subgroups of a deactivated group (feature level 391)', async () => {
    const sub = await createGroup(env, 'iago');
    const groupId = await createGroup(env, 'hamlet', { members: [uid('hamlet')] });
    await deactivateGroup(env, groupId);
    const { response } = await members('hamlet', groupId, { add: [uid('othello')], delete: [uid('hamlet')], add_subgroups: [sub] });
    expect(response.status).toBe(200);
    const group = await readGroup(env, groupId);
    expect(group).toMatchObject({ deactivated: true, members: [uid('othello')], direct_subgroup_ids: [sub] });
    const viaSubgroups = await subgroups('hamlet', groupId, { delete: [sub] });
    expect(viaSubgroups.response.status).toBe(200);
    expect(await directSubgroups(env, groupId)).toEqual([]);
  });
});

describe('POST /user_groups/{user_group_id}/subgroups', () => {
  it('adds and removes direct subgroups and stores add_subgroups and remove_subgroups events', async () => {
    const a = await createGroup(env, 'iago');
    const b = await createGroup(env, 'iago');
    const groupId = await createGroup(env, 'hamlet');
    const before = await markEvents(env);
    const added = await subgroups('hamlet', groupId, { add: [b, a] });
    expect(added.response.status).toBe(200);
    expect(added.data).toEqual({ result: 'success', msg: '' });
    expect(await directSubgroups(env, groupId)).toEqual(sorted([a, b]));
    expect((await readGroup(env, groupId)).direct_subgroup_ids).toEqual(sorted([a, b]));
    const removed = await subgroups('hamlet', groupId, { delete: [a] });
    expect(removed.response.status).toBe(200);
    expect(await directSubgroups(env, groupId)).toEqual([b]);

    const events = await eventPayloadsSince(env, before);
    expect(events.map((e) => ({ ...e, direct_subgroup_ids: sorted(e.direct_subgroup_ids) }))).toEqual([
      { type: 'user_group', op: 'add_subgroups', group_id: groupId, direct_subgroup_ids: sorted([a, b]) },
      { type: 'user_group', op: 'remove_subgroups', group_id: groupId, direct_subgroup_ids: [a] },
    ]);
  });

  it('accepts system groups as subgroups; their members become members recursively', async () => {
    const groupId = await createGroup(env, 'hamlet', { members: [uid('hamlet')] });
    expect((await subgroups('hamlet', groupId, { add: [sys['role:moderators']] })).response.status).toBe(200);
    expect(await allMembers(env, groupId)).toEqual(sorted([...(await allMembers(env, sys['role:moderators'])), uid('hamlet')]));
    expect(await allMembers(env, groupId)).toEqual(expect.arrayContaining([uid('desdemona'), uid('iago'), uid('shiva'), uid('hamlet')]));
    expect(await allMembers(env, groupId)).not.toContain(uid('othello'));
  });

  it('needs at least one non-empty list', async () => {
    const groupId = await createGroup(env, 'hamlet');
    expectJsonError(await subgroups('hamlet', groupId, {}), 400, NOTHING_SUBGROUPS, 'BAD_REQUEST');
    expectJsonError(await subgroups('hamlet', groupId, { add: [], delete: [] }), 400, NOTHING_SUBGROUPS, 'BAD_REQUEST');
  });

  it('answers "Invalid user group" for an unknown group and "Insufficient permission" for a system group', async () => {
    const sub = await createGroup(env, 'iago');
    expectJsonError(await subgroups('iago', 999999, { add: [sub] }), 400, 'Invalid user group', 'BAD_REQUEST');
    expectJsonError(await subgroups('desdemona', sys['role:members'], { add: [sub] }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect(await directSubgroups(env, sys['role:members'])).toEqual([sys['role:fullmembers']]);
  });

  it('accepts only existing, named, active groups', async () => {
    const groupId = await createGroup(env, 'hamlet');
    const gone = await createGroup(env, 'iago');
    await deactivateGroup(env, gone);
    const anonymous = await env.running.deps.db.userGroup.findFirstOrThrow({ where: { name: null } });
    expectJsonError(await subgroups('hamlet', groupId, { add: [999999] }), 400, 'Invalid user group ID: 999999', 'BAD_REQUEST');
    expectJsonError(await subgroups('hamlet', groupId, { add: [anonymous.id] }), 400, `Invalid user group ID: ${anonymous.id}`, 'BAD_REQUEST');
    expectJsonError(await subgroups('hamlet', groupId, { add: [gone] }), 400, 'User group is deactivated.', 'BAD_REQUEST');
    expectJsonError(await subgroups('hamlet', groupId, { delete: [999999] }), 400, 'Invalid user group ID: 999999', 'BAD_REQUEST');
    expect(await directSubgroups(env, groupId)).toEqual([]);
  });

  it('refuses to add a direct subgroup twice or to remove a group that is not a direct subgroup', async () => {
    const child = await createGroup(env, 'iago');
    const grandchild = await createGroup(env, 'iago');
    await subgroups('iago', child, { add: [grandchild] });
    const groupId = await createGroup(env, 'hamlet', { subgroups: [child] });
    expectJsonError(await subgroups('hamlet', groupId, { add: [child] }), 400, `User group ${child} is already a subgroup of this group.`, 'BAD_REQUEST');
    // A subgroup of a subgroup is not a direct subgroup.
    expectJsonError(await subgroups('hamlet', groupId, { delete: [grandchild] }), 400, `User group ${grandchild} is not a subgroup of this group.`, 'BAD_REQUEST');
    expect(await directSubgroups(env, groupId)).toEqual([child]);
  });

  describe('cycles are impossible', () => {
    it('a group cannot be its own subgroup', async () => {
      const groupId = await createGroup(env, 'hamlet');
      expectJsonError(await subgroups('hamlet', groupId, { add: [groupId] }), 400, `User group ${groupId} is already a subgroup of one of the passed subgroups.`, 'BAD_REQUEST');
      expect(await directSubgroups(env, groupId)).toEqual([]);
    });

    it('a group cannot go below its direct subgroup', async () => {
      const child = await createGroup(env, 'iago');
      const parent = await createGroup(env, 'iago', { subgroups: [child] });
      expectJsonError(await subgroups('iago', child, { add: [parent] }), 400, `User group ${child} is already a subgroup of one of the passed subgroups.`, 'BAD_REQUEST');
      expect(await directSubgroups(env, child)).toEqual([]);
    });

    it('a group cannot go below a group nested three levels under it', async () => {
      const c = await createGroup(env, 'iago');
      const b = await createGroup(env, 'iago', { subgroups: [c] });
      const a = await createGroup(env, 'iago', { subgroups: [b] });
      const other = await createGroup(env, 'iago');
      // One harmless and one cycle-making subgroup in the same request: nothing is added.
      expectJsonError(await subgroups('iago', c, { add: [other, a] }), 400, `User group ${c} is already a subgroup of one of the passed subgroups.`, 'BAD_REQUEST');
      expect(await directSubgroups(env, c)).toEqual([]);
      expect(await allSubgroups(env, a)).toEqual(sorted([b, c]));
    });

    it('a diamond is not a cycle', async () => {
      const bottom = await createGroup(env, 'iago');
      const left = await createGroup(env, 'iago', { subgroups: [bottom] });
      const right = await createGroup(env, 'iago', { subgroups: [bottom] });
      const top = await createGroup(env, 'iago', { subgroups: [left] });
      expect((await subgroups('iago', top, { add: [right] })).response.status).toBe(200);
      expect(await allSubgroups(env, top)).toEqual(sorted([left, right, bottom]));
    });
  });

  describe('who may add and remove subgroups', () => {
    const matrix: Array<[Person, 'ok' | 'denied' | 'guest']> = [
      ['desdemona', 'ok'],
      ['iago', 'ok'],
      ['shiva', 'denied'],
      ['hamlet', 'ok'],
      ['othello', 'denied'],
      ['polonius', 'guest'],
    ];
    it.each(matrix)('%s adding → %s', async (person, outcome) => {
      const sub = await createGroup(env, 'iago');
      const groupId = await createGroup(env, 'hamlet');
      const res = await subgroups(person, groupId, { add: [sub] });
      if (outcome === 'ok') expect(res.response.status).toBe(200);
      else expectJsonError(res, 400, outcome === 'guest' ? 'Not allowed for guest users' : 'Insufficient permission', 'BAD_REQUEST');
      expect(await directSubgroups(env, groupId)).toEqual(outcome === 'ok' ? [sub] : []);
    });

    it('can_add_members_group lets a member add subgroups but removing them needs can_manage_group', async () => {
      const sub = await createGroup(env, 'iago');
      const groupId = await createGroup(env, 'hamlet', { can_add_members_group: { direct_members: [uid('cordelia')], direct_subgroups: [] } });
      expect((await subgroups('cordelia', groupId, { add: [sub] })).response.status).toBe(200);
      expectJsonError(await subgroups('cordelia', groupId, { delete: [sub] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expectJsonError(await members('cordelia', groupId, { delete_subgroups: [sub] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await directSubgroups(env, groupId)).toEqual([sub]);
      expect((await subgroups('hamlet', groupId, { delete: [sub] })).response.status).toBe(200);
      expect(await directSubgroups(env, groupId)).toEqual([]);
    });
  });
});

/** Three named groups nested top ⊃ middle ⊃ bottom, with hamlet directly in top, othello in middle and cordelia in bottom. */
async function createNesting(): Promise<{ top: number; middle: number; bottom: number }> {
  const bottom = await createGroup(env, 'iago', { members: [uid('cordelia')] });
  const middle = await createGroup(env, 'iago', { members: [uid('othello')], subgroups: [bottom] });
  const top = await createGroup(env, 'iago', { members: [uid('hamlet')], subgroups: [middle] });
  return { top, middle, bottom };
}

describe('GET /user_groups/{user_group_id}/members', () => {
  let top: number;

  beforeAll(async () => {
    ({ top } = await createNesting());
  });

  it('lists members recursively, or only direct ones with direct_member_only', async () => {
    const recursive = await env.client('hamlet').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: top }, query: {} } });
    expect(recursive.response.status).toBe(200);
    expect(sorted(recursive.data!.members)).toEqual(sorted([uid('hamlet'), uid('othello'), uid('cordelia')]));
    const explicitFalse = await env.client('hamlet').GET('/user_groups/{user_group_id}/members', {
      params: { path: { user_group_id: top }, query: { direct_member_only: false } },
    });
    expect(sorted(explicitFalse.data!.members)).toEqual(sorted([uid('hamlet'), uid('othello'), uid('cordelia')]));
    const direct = await env.client('hamlet').GET('/user_groups/{user_group_id}/members', {
      params: { path: { user_group_id: top }, query: { direct_member_only: true } },
    });
    expect(direct.data!.members).toEqual([uid('hamlet')]);
  });

  it('leaves deactivated users out of member lists', async () => {
    const user = await createExtraUser();
    const groupId = await createGroup(env, 'iago', { members: [user, uid('hamlet')] });
    const outer = await createGroup(env, 'iago', { subgroups: [groupId] });
    await deactivateUser(env, user);
    expect(await directMembers(env, groupId)).toEqual([uid('hamlet')]);
    expect(await allMembers(env, outer)).toEqual([uid('hamlet')]);
    expect((await readGroup(env, groupId)).members).toEqual([uid('hamlet')]);
  });
});

describe('GET /user_groups/{user_group_id}/members/{user_id}', () => {
  let top: number;
  let middle: number;

  beforeAll(async () => {
    ({ top, middle } = await createNesting());
  });

  it('answers recursively or directly', async () => {
    const ask = async (groupId: number, userId: number, direct?: boolean) => {
      const { data, error } = await env.client('othello').GET('/user_groups/{user_group_id}/members/{user_id}', {
        params: { path: { user_group_id: groupId, user_id: userId }, query: direct === undefined ? {} : { direct_member_only: direct } },
      });
      if (!data) throw new Error(JSON.stringify(error));
      return data.is_user_group_member;
    };
    expect(await ask(top, uid('cordelia'))).toBe(true);
    expect(await ask(top, uid('cordelia'), true)).toBe(false);
    expect(await ask(top, uid('hamlet'), true)).toBe(true);
    expect(await ask(middle, uid('hamlet'))).toBe(false);
    expect(await ask(top, uid('desdemona'))).toBe(false);
    // System groups: iago is a direct administrator and a moderator only through nesting.
    expect(await ask(sys['role:administrators'], uid('iago'), true)).toBe(true);
    expect(await ask(sys['role:moderators'], uid('iago'))).toBe(true);
    expect(await ask(sys['role:moderators'], uid('iago'), true)).toBe(false);
  });

  it('rejects unknown groups and users', async () => {
    expectJsonError(
      await env.client('othello').GET('/user_groups/{user_group_id}/members/{user_id}', { params: { path: { user_group_id: 999999, user_id: uid('hamlet') }, query: {} } }),
      400,
      'Invalid user group',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.client('othello').GET('/user_groups/{user_group_id}/members/{user_id}', { params: { path: { user_group_id: top, user_id: 999999 }, query: {} } }),
      400,
      'No such user',
      'BAD_REQUEST',
    );
  });
});

describe('GET /user_groups/{user_group_id}/subgroups', () => {
  let top: number;
  let middle: number;
  let bottom: number;

  beforeAll(async () => {
    ({ top, middle, bottom } = await createNesting());
  });

  it('lists subgroups recursively, or only direct ones with direct_subgroup_only', async () => {
    const recursive = await env.client('hamlet').GET('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: top }, query: {} } });
    expect(recursive.response.status).toBe(200);
    expect(sorted(recursive.data!.subgroups)).toEqual(sorted([middle, bottom]));
    const direct = await env.client('hamlet').GET('/user_groups/{user_group_id}/subgroups', {
      params: { path: { user_group_id: top }, query: { direct_subgroup_only: true } },
    });
    expect(direct.data!.subgroups).toEqual([middle]);
    expect(await allSubgroups(env, bottom)).toEqual([]);
  });
});

// What the three reads share.
describe('membership reads', () => {
  let top: number;

  beforeAll(async () => {
    ({ top } = await createNesting());
  });

  it('works for deactivated groups', async () => {
    const child = await createGroup(env, 'iago', { members: [uid('othello')] });
    const groupId = await createGroup(env, 'iago', { members: [uid('hamlet')], subgroups: [child] });
    await deactivateGroup(env, groupId);
    expect(await allMembers(env, groupId)).toEqual(sorted([uid('hamlet'), uid('othello')]));
    expect(await allSubgroups(env, groupId)).toEqual([child]);
  });

  it('rejects unknown groups, anonymous setting groups and guests', async () => {
    const anonymous = await env.running.deps.db.userGroup.findFirstOrThrow({ where: { name: null } });
    for (const groupId of [999999, anonymous.id]) {
      expectJsonError(
        await env.client('hamlet').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId }, query: {} } }),
        400,
        'Invalid user group',
        'BAD_REQUEST',
      );
      expectJsonError(
        await env.client('hamlet').GET('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: groupId }, query: {} } }),
        400,
        'Invalid user group',
        'BAD_REQUEST',
      );
    }
    expectJsonError(
      await env.client('polonius').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: top }, query: {} } }),
      400,
      'Not allowed for guest users',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.client('polonius').GET('/user_groups/{user_group_id}/members/{user_id}', { params: { path: { user_group_id: top, user_id: uid('hamlet') }, query: {} } }),
      400,
      'Not allowed for guest users',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.client('polonius').GET('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: top }, query: {} } }),
      400,
      'Not allowed for guest users',
      'BAD_REQUEST',
    );
  });
});
