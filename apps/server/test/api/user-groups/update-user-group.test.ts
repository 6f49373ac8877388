// PATCH /user_groups/{user_group_id} (seed op 6): name, description, reactivation (feature level 386),
// the errors in Zulip's order, and who may edit a group (organization can_manage_all_groups or the
// group's can_manage_group, held directly, through a named group or through nesting). Group-setting
// values, compare-and-swap and restrictions are in group-settings.test.ts.
import { describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { createGroup, deactivateGroup, readGroup, setRealmGroupSetting, uniqueName, useSystemGroupIds, type CreateGroupBody } from '../../helpers/groups.ts';

type PatchBody = NonNullable<paths['/user_groups/{user_group_id}']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];

const env = useTestServer();
const sys = useSystemGroupIds(env);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;
/** A new group whose description is 'original' (the tests of failed edits check that it is kept). */
const newGroup = (as: Person, body: Partial<CreateGroupBody> = {}) => createGroup(env, as, { description: 'original', ...body });

const patch = (as: Person, groupId: number, body: PatchBody) =>
  env.client(as).PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: groupId } }, body });

// ---------------------------------------------------------------------------------------------

describe('PATCH /user_groups/{user_group_id}: name and description', () => {
  it('renames and redescribes the group and stores one user_group update event', async () => {
    const groupId = await newGroup('hamlet');
    const name = uniqueName('renamed');
    const before = await markEvents(env);
    const { data, response } = await patch('hamlet', groupId, { name, description: 'The new description' });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(await readGroup(env, groupId)).toMatchObject({ name, description: 'The new description' });
    expect(await eventPayloadsSince(env, before)).toEqual([
      { type: 'user_group', op: 'update', group_id: groupId, data: { name, description: 'The new description' } },
    ]);
  });

  it('accepts an empty description', async () => {
    const groupId = await newGroup('hamlet');
    const { response } = await patch('hamlet', groupId, { description: '' });
    expect(response.status).toBe(200);
    expect((await readGroup(env, groupId)).description).toBe('');
  });

  it('treats the current name and description as no change: success, no event', async () => {
    const groupId = await newGroup('hamlet');
    const { name, description } = await readGroup(env, groupId);
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, { name, description });
    expect(response.status).toBe(200);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
    expect(await readGroup(env, groupId)).toMatchObject({ name, description });
  });

  it('answers "No new data supplied" when no parameter is given', async () => {
    const groupId = await newGroup('hamlet');
    expectJsonError(await patch('hamlet', groupId, {}), 400, 'No new data supplied', 'BAD_REQUEST');
  });

  it('answers "Invalid user group" for unknown groups and for anonymous setting groups', async () => {
    expectJsonError(await patch('iago', 999999, { description: 'x' }), 400, 'Invalid user group', 'BAD_REQUEST');
    const anonymous = await env.running.deps.db.userGroup.findFirstOrThrow({ where: { name: null } });
    expectJsonError(await patch('iago', anonymous.id, { description: 'x' }), 400, 'Invalid user group', 'BAD_REQUEST');
  });

  it('refuses to edit system groups, even for the owner', async () => {
    for (const name of ['role:members', 'role:administrators', 'role:nobody'] as const) {
      expectJsonError(await patch('desdemona', sys[name], { description: 'mine now' }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect((await readGroup(env, sys[name])).description).not.toBe('mine now');
    }
  });

  const badNames: Array<[string, string, string]> = [
    ['empty', '', "User group name can't be empty!"],
    ['blank', '  ', "User group name can't be empty!"],
    ['over 100 characters', 'z'.repeat(101), 'User group name cannot exceed 100 characters.'],
    ['starting with @', '@x', "User group name cannot start with '@'."],
    ['starting with role:', 'role:x', "User group name cannot start with 'role:'."],
    ['starting with user:', 'user:x', "User group name cannot start with 'user:'."],
    ['starting with stream:', 'stream:x', "User group name cannot start with 'stream:'."],
    ['starting with channel:', 'channel:x', "User group name cannot start with 'channel:'."],
  ];
  it.each(badNames)('rejects a new name that is %s and keeps the old one', async (_label, name, msg) => {
    const groupId = await newGroup('hamlet');
    const old = await readGroup(env, groupId);
    expectJsonError(await patch('hamlet', groupId, { name, description: 'changed too' }), 400, msg, 'BAD_REQUEST');
    // All or nothing: the description sent along was not applied either.
    expect(await readGroup(env, groupId)).toMatchObject({ name: old.name, description: old.description });
  });

  it("rejects another group's name", async () => {
    const taken = uniqueName('taken');
    await newGroup('othello', { name: taken });
    const groupId = await newGroup('hamlet');
    expectJsonError(await patch('hamlet', groupId, { name: taken }), 400, `User group '${taken}' already exists.`, 'BAD_REQUEST');
  });

  it('reports parameters it does not know in ignored_parameters_unsupported', async () => {
    const groupId = await newGroup('hamlet');
    const res = await env.raw(`/user_groups/${groupId}`, { method: 'PATCH', as: 'hamlet', body: new URLSearchParams({ description: 'd2', colour: 'red' }) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['colour'] });
    expect((await readGroup(env, groupId)).description).toBe('d2');
  });
});

describe('PATCH /user_groups/{user_group_id}: deactivated groups (feature level 386)', () => {
  it('reactivates a deactivated group with deactivated=false and stores the event', async () => {
    const groupId = await newGroup('hamlet');
    await deactivateGroup(env, groupId);
    expect((await readGroup(env, groupId)).deactivated).toBe(true);
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, { deactivated: false });
    expect(response.status).toBe(200);
    expect((await readGroup(env, groupId)).deactivated).toBe(false);
    expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'user_group', op: 'update', group_id: groupId, data: { deactivated: false } }]);
    // Listed again by default.
    const { data } = await env.client('hamlet').GET('/user_groups', { params: { query: {} } });
    expect(data!.user_groups.map((g) => g.id)).toContain(groupId);
  });

  it('does nothing for deactivated=true (deactivation has its own endpoint)', async () => {
    const groupId = await newGroup('hamlet');
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, { deactivated: true });
    expect(response.status).toBe(200);
    expect((await readGroup(env, groupId)).deactivated).toBe(false);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('does nothing for deactivated=false on an active group', async () => {
    const groupId = await newGroup('hamlet');
    const before = await markEvents(env);
    const { response } = await patch('hamlet', groupId, { deactivated: false });
    expect(response.status).toBe(200);
    expect((await readGroup(env, groupId)).deactivated).toBe(false);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('edits name and description of a deactivated group, which stays deactivated', async () => {
    const groupId = await newGroup('hamlet');
    await deactivateGroup(env, groupId);
    const name = uniqueName('still gone');
    const { response } = await patch('hamlet', groupId, { name, description: 'edited while deactivated' });
    expect(response.status).toBe(200);
    expect(await readGroup(env, groupId)).toMatchObject({ name, description: 'edited while deactivated', deactivated: true });
  });

  it("lets the deactivated group's own can_manage_group decide who may edit or reactivate it", async () => {
    const groupId = await newGroup('iago', { can_manage_group: { direct_members: [uid('othello')], direct_subgroups: [] } });
    await deactivateGroup(env, groupId);
    expectJsonError(await patch('cordelia', groupId, { deactivated: false }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expectJsonError(await patch('shiva', groupId, { description: 'x' }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await readGroup(env, groupId)).deactivated).toBe(true);
    const { response } = await patch('othello', groupId, { deactivated: false });
    expect(response.status).toBe(200);
    expect((await readGroup(env, groupId)).deactivated).toBe(false);
  });
});

describe('PATCH /user_groups/{user_group_id}: who may edit a group', () => {
  // The group is created by hamlet, so can_manage_group = {hamlet}; realm can_manage_all_groups is
  // role:administrators (which contains the owners).
  const matrix: Array<[Person, 'ok' | 'denied' | 'guest']> = [
    ['desdemona', 'ok'],
    ['iago', 'ok'],
    ['shiva', 'denied'],
    ['hamlet', 'ok'],
    ['othello', 'denied'],
    ['polonius', 'guest'],
  ];
  it.each(matrix)('%s → %s', async (person, outcome) => {
    const groupId = await newGroup('hamlet');
    const description = `edited by ${person}`;
    const res = await patch(person, groupId, { description });
    if (outcome === 'ok') expect(res.response.status).toBe(200);
    else expectJsonError(res, 400, outcome === 'guest' ? 'Not allowed for guest users' : 'Insufficient permission', 'BAD_REQUEST');
    expect((await readGroup(env, groupId)).description).toBe(outcome === 'ok' ? description : 'original');
  });

  it('a member named directly in can_manage_group may edit it', async () => {
    const groupId = await newGroup('hamlet', { can_manage_group: { direct_members: [uid('cordelia')], direct_subgroups: [] } });
    expect((await patch('cordelia', groupId, { description: 'by cordelia' })).response.status).toBe(200);
    // The creator is not special once the setting no longer names him.
    expectJsonError(await patch('hamlet', groupId, { description: 'by hamlet' }), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await readGroup(env, groupId)).description).toBe('by cordelia');
  });

  it('a member holding can_manage_group through a named group nested three deep may edit it', async () => {
    const inner = await newGroup('iago', { members: [uid('cordelia')] });
    const middle = await newGroup('iago', { subgroups: [inner] });
    const outer = await newGroup('iago', { subgroups: [middle] });
    const groupId = await newGroup('hamlet', { can_manage_group: outer });
    expect((await patch('cordelia', groupId, { description: 'nested' })).response.status).toBe(200);
    expect((await readGroup(env, groupId)).description).toBe('nested');
    // Removing her from the innermost group removes the permission.
    const removed = await env.client('iago').POST('/user_groups/{user_group_id}/members', {
      params: { path: { user_group_id: inner } },
      body: { delete: [uid('cordelia')] },
    });
    expect(removed.response.status).toBe(200);
    expectJsonError(await patch('cordelia', groupId, { description: 'again' }), 400, 'Insufficient permission', 'BAD_REQUEST');
  });

  it('a guest named in can_manage_group is still refused', async () => {
    const groupId = await newGroup('hamlet', { can_manage_group: { direct_members: [uid('polonius'), uid('hamlet')], direct_subgroups: [] } });
    expectJsonError(await patch('polonius', groupId, { description: 'by a guest' }), 400, 'Not allowed for guest users', 'BAD_REQUEST');
    expect((await readGroup(env, groupId)).description).toBe('original');
  });

  it('the organization setting can_manage_all_groups decides for every group', async () => {
    const groupId = await newGroup('hamlet');
    await setRealmGroupSetting(env, 'can_manage_all_groups', { direct_members: [uid('othello')], direct_subgroups: [sys['role:moderators']] });
    try {
      expect((await patch('shiva', groupId, { description: 'by shiva' })).response.status).toBe(200);
      expect((await patch('othello', groupId, { description: 'by othello' })).response.status).toBe(200);
      expectJsonError(await patch('cordelia', groupId, { description: 'by cordelia' }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect((await readGroup(env, groupId)).description).toBe('by othello');
    } finally {
      await setRealmGroupSetting(env, 'can_manage_all_groups', sys['role:administrators']);
    }
    // Back to the default: the moderator lost the right again.
    expectJsonError(await patch('shiva', groupId, { description: 'later' }), 400, 'Insufficient permission', 'BAD_REQUEST');
  });

  it('checks the arguments before the group and the group before the permission (Zulip order)', async () => {
    // No data beats an unknown group; an unknown group beats missing permission.
    expectJsonError(await patch('othello', 999999, {}), 400, 'No new data supplied', 'BAD_REQUEST');
    expectJsonError(await patch('othello', 999999, { description: 'x' }), 400, 'Invalid user group', 'BAD_REQUEST');
  });
});
