// POST /user_groups/create and GET /user_groups: creation with Zulip's defaults, name rules, members,
// subgroups and permission settings (ids or anonymous values, normalised), who may create groups
// (organization setting can_create_groups), and the listing (system groups, deactivated groups on
// request, anonymous setting groups never). Every change is read back through the API and its stored
// user_group event is checked.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { SYSTEM_GROUP_NAMES, createGroup, deactivateGroup, readGroup, setRealmGroupSetting, sorted, uniqueName, useSystemGroupIds, type CreateGroupBody } from '../../helpers/groups.ts';
import { createDeactivatedUser } from '../../helpers/people.ts';

const env = useTestServer();
const sys = useSystemGroupIds(env);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;

async function listGroups(includeDeactivated?: boolean) {
  const query = includeDeactivated === undefined ? {} : { include_deactivated_groups: includeDeactivated };
  const { data, error } = await env.client('iago').GET('/user_groups', { params: { query } });
  if (!data) throw new Error(`read-back: listing groups failed: ${JSON.stringify(error)}`);
  return data.user_groups;
}

async function findGroupByName(name: string) {
  return (await listGroups(true)).find((g) => g.name === name);
}

async function anonymousGroupIds(): Promise<number[]> {
  const rows = await env.running.deps.db.userGroup.findMany({ where: { name: null }, select: { id: true } });
  return rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------

describe('POST /user_groups/create', () => {
  it('compares names without wildcards: "a_c" is not taken by "abc", while another case of a name is', async () => {
    const stem = uniqueName('wild');
    expect((await env.client('hamlet').POST('/user_groups/create', { body: { name: `${stem}abc`, description: '', members: [] } })).response.status).toBe(200);
    const { data, response } = await env.client('hamlet').POST('/user_groups/create', { body: { name: `${stem}a_c`, description: '', members: [] } });
    expect(response.status).toBe(200);
    expect((await readGroup(env, data!.group_id)).name).toBe(`${stem}a_c`);
    const res = await env.client('hamlet').POST('/user_groups/create', { body: { name: `${stem}ABC`.toUpperCase(), description: '', members: [] } });
    expect(res.response.status).toBe(400);
  });

  it('creates a group with the default permission settings and stores one user_group add event', async () => {
    const before = await markEvents(env);
    const name = uniqueName('hamletcharacters');
    const { data, response } = await env.client('hamlet').POST('/user_groups/create', {
      body: { name, description: 'Characters of Hamlet', members: [uid('othello'), uid('hamlet')] },
    });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '', group_id: expect.any(Number) });
    const groupId = data!.group_id;

    const group = await readGroup(env, groupId);
    const creatorOnly = { direct_members: [uid('hamlet')], direct_subgroups: [] };
    expect(group).toEqual({
      id: groupId,
      name,
      description: 'Characters of Hamlet',
      members: sorted([uid('hamlet'), uid('othello')]),
      direct_subgroup_ids: [],
      is_system_group: false,
      date_created: expect.any(Number),
      creator_id: uid('hamlet'),
      deactivated: false,
      can_add_members_group: creatorOnly,
      can_join_group: sys['role:nobody'],
      can_leave_group: sys['role:everyone'],
      can_manage_group: creatorOnly,
      can_mention_group: sys['role:everyone'],
      can_remove_members_group: sys['role:nobody'],
    });
    expect(group.date_created).toBeGreaterThan(0);

    const events = await eventPayloadsSince(env, before);
    expect(events).toEqual([{ type: 'user_group', op: 'add', group }]);
  });

  it('takes subgroups and permission settings as group ids or anonymous values, normalised as Zulip does', async () => {
    const sub = await createGroup(env, 'iago', { members: [uid('cordelia')] });
    const groupId = await createGroup(env, 'iago', {
      members: [uid('hamlet')],
      subgroups: [sys['role:moderators'], sub],
      // {[], [X]} → X
      can_manage_group: { direct_members: [], direct_subgroups: [sub] },
      // {[], []} → role:nobody
      can_join_group: { direct_members: [], direct_subgroups: [] },
      // a real anonymous value: duplicates dropped, ids sorted
      can_add_members_group: { direct_members: [uid('othello'), uid('hamlet'), uid('othello')], direct_subgroups: [sys['role:administrators']] },
      can_leave_group: sys['role:nobody'],
      can_mention_group: sys['role:members'],
      can_remove_members_group: sub,
    });
    const group = await readGroup(env, groupId);
    expect(group).toMatchObject({
      members: [uid('hamlet')],
      direct_subgroup_ids: sorted([sys['role:moderators'], sub]),
      creator_id: uid('iago'),
      can_manage_group: sub,
      can_join_group: sys['role:nobody'],
      can_add_members_group: { direct_members: sorted([uid('hamlet'), uid('othello')]), direct_subgroups: [sys['role:administrators']] },
      can_leave_group: sys['role:nobody'],
      can_mention_group: sys['role:members'],
      can_remove_members_group: sub,
    });
  });

  it('accepts a name of exactly 100 characters', async () => {
    const name = `n${randomBytes(8).toString('hex')}`.padEnd(100, 'x');
    const groupId = await createGroup(env, 'hamlet', { name });
    expect((await readGroup(env, groupId)).name).toBe(name);
  });

  const badNames: Array<[string, () => string, string | ((name: string) => string)]> = [
    ['empty', () => '', "User group name can't be empty!"],
    ['blank', () => '   ', "User group name can't be empty!"],
    ['101 characters', () => 'y'.repeat(101), 'User group name cannot exceed 100 characters.'],
    ['starting with @', () => '@team', "User group name cannot start with '@'."],
    ['starting with role:', () => 'role:team', "User group name cannot start with 'role:'."],
    ['starting with user:', () => 'user:team', "User group name cannot start with 'user:'."],
    ['starting with stream:', () => 'stream:team', "User group name cannot start with 'stream:'."],
    ['starting with channel:', () => 'channel:team', "User group name cannot start with 'channel:'."],
  ];
  it.each(badNames)('rejects a name that is %s, creating nothing', async (_label, makeName, msg) => {
    const name = makeName();
    const groupsBefore = (await listGroups(true)).length;
    const before = await markEvents(env);
    const res = await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [uid('hamlet')] } });
    expectJsonError(res, 400, typeof msg === 'string' ? msg : msg(name), 'BAD_REQUEST');
    expect((await listGroups(true)).length).toBe(groupsBefore);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  it('rejects a name already in use, also when the holder is deactivated', async () => {
    const name = uniqueName('taken');
    const groupId = await createGroup(env, 'hamlet', { name });
    expectJsonError(
      await env.client('othello').POST('/user_groups/create', { body: { name, description: '', members: [] } }),
      400,
      `User group '${name}' already exists.`,
      'BAD_REQUEST',
    );
    await deactivateGroup(env, groupId);
    expectJsonError(
      await env.client('othello').POST('/user_groups/create', { body: { name, description: '', members: [] } }),
      400,
      `User group '${name}' already exists.`,
      'BAD_REQUEST',
    );
    expect((await listGroups(true)).filter((g) => g.name === name).map((g) => g.id)).toEqual([groupId]);
  });

  it('requires name, description and members', async () => {
    const form = (fields: Record<string, string>) => env.raw('/user_groups/create', { method: 'POST', as: 'hamlet', body: new URLSearchParams(fields) });
    const missingMembers = await form({ name: uniqueName('x'), description: '' });
    expectJsonError(missingMembers, 400, "Missing 'members' argument", 'REQUEST_VARIABLE_MISSING');
    expect(missingMembers.body.var_name).toBe('members');
    expectJsonError(await form({ description: '', members: '[]' }), 400, "Missing 'name' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await form({ name: uniqueName('x'), members: '[]' }), 400, "Missing 'description' argument", 'REQUEST_VARIABLE_MISSING');
  });

  it('accepts only active users of the organization as members', async () => {
    const gone = await createDeactivatedUser(env, 'groups');
    const name = uniqueName('members');
    expectJsonError(
      await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [uid('hamlet'), 999999] } }),
      400,
      'Invalid user ID: 999999',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [gone] } }),
      400,
      `Invalid user ID: ${gone}`,
      'BAD_REQUEST',
    );
    expect(await findGroupByName(name)).toBeUndefined();
  });

  it('accepts only existing, active, named groups as subgroups', async () => {
    const deactivated = await createGroup(env, 'iago');
    await deactivateGroup(env, deactivated);
    // An anonymous setting group (the creator-only default of can_manage_group) is not addressable.
    const before = new Set(await anonymousGroupIds());
    await createGroup(env, 'hamlet');
    const anonymous = (await anonymousGroupIds()).find((id) => !before.has(id))!;
    expect(anonymous).toBeDefined();

    const name = uniqueName('subgroups');
    const attempt = (subgroups: number[]) => env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [], subgroups } });
    expectJsonError(await attempt([999999]), 400, 'Invalid user group ID: 999999', 'BAD_REQUEST');
    expectJsonError(await attempt([anonymous]), 400, `Invalid user group ID: ${anonymous}`, 'BAD_REQUEST');
    expectJsonError(await attempt([deactivated]), 400, 'User group is deactivated.', 'BAD_REQUEST');
    expect(await findGroupByName(name)).toBeUndefined();
  });

  it('applies the per-setting restrictions and rejects unknown or deactivated groups, creating nothing', async () => {
    const deactivated = await createGroup(env, 'iago');
    await deactivateGroup(env, deactivated);
    const name = uniqueName('restricted');
    const cases: Array<[Partial<CreateGroupBody>, string]> = [
      [{ can_manage_group: sys['role:everyone'] }, "'can_manage_group' setting cannot be set to 'role:everyone' group."],
      [{ can_manage_group: sys['role:internet'] }, "'can_manage_group' setting cannot be set to 'role:internet' group."],
      [{ can_mention_group: sys['role:owners'] }, "'can_mention_group' setting cannot be set to 'role:owners' group."],
      [{ can_mention_group: sys['role:internet'] }, "'can_mention_group' setting cannot be set to 'role:internet' group."],
      [{ can_join_group: sys['role:internet'] }, "'can_join_group' setting cannot be set to 'role:internet' group."],
      [{ can_add_members_group: 999999 }, 'Invalid user group'],
      [{ can_leave_group: deactivated }, 'User group is deactivated.'],
      [{ can_remove_members_group: { direct_members: [uid('hamlet')], direct_subgroups: [deactivated] } }, 'User group is deactivated.'],
      [{ can_remove_members_group: { direct_members: [999999], direct_subgroups: [] } }, 'Invalid user ID: 999999'],
    ];
    const anonymousBefore = (await anonymousGroupIds()).length;
    const before = await markEvents(env);
    for (const [settings, msg] of cases) {
      const res = await env.client('hamlet').POST('/user_groups/create', { body: { name, description: '', members: [uid('hamlet')], ...settings } });
      expectJsonError(res, 400, msg, 'BAD_REQUEST');
    }
    expect(await findGroupByName(name)).toBeUndefined();
    // Nothing was left behind: no anonymous setting groups, no events.
    expect((await anonymousGroupIds()).length).toBe(anonymousBefore);
    expect(await eventPayloadsSince(env, before)).toEqual([]);
  });

  describe('who may create groups (organization setting can_create_groups)', () => {
    const everyone: Person[] = ['desdemona', 'iago', 'shiva', 'hamlet', 'othello', 'cordelia'];

    it.each(everyone)('with the default (role:members), %s may create a group', async (person) => {
      const name = uniqueName(`by ${person}`);
      const { response } = await env.client(person).POST('/user_groups/create', { body: { name, description: '', members: [] } });
      expect(response.status).toBe(200);
      expect((await findGroupByName(name))?.creator_id).toBe(uid(person));
    });

    it('guests may never create groups', async () => {
      const name = uniqueName('by polonius');
      expectJsonError(
        await env.client('polonius').POST('/user_groups/create', { body: { name, description: '', members: [] } }),
        400,
        'Not allowed for guest users',
        'BAD_REQUEST',
      );
      expect(await findGroupByName(name)).toBeUndefined();
    });

    it('follows the setting: moderators and above, plus a member named in it', async () => {
      await setRealmGroupSetting(env, 'can_create_groups', { direct_members: [uid('cordelia')], direct_subgroups: [sys['role:moderators']] });
      try {
        const expected: Array<[Person, boolean]> = [
          ['desdemona', true],
          ['iago', true],
          ['shiva', true],
          ['cordelia', true],
          ['hamlet', false],
          ['othello', false],
        ];
        for (const [person, allowed] of expected) {
          const name = uniqueName(`matrix ${person}`);
          const res = await env.client(person).POST('/user_groups/create', { body: { name, description: '', members: [] } });
          if (allowed) expect(res.response.status, person).toBe(200);
          else expectJsonError(res, 400, 'Insufficient permission', 'BAD_REQUEST');
          expect(Boolean(await findGroupByName(name)), person).toBe(allowed);
        }
        expectJsonError(
          await env.client('polonius').POST('/user_groups/create', { body: { name: uniqueName('g'), description: '', members: [] } }),
          400,
          'Not allowed for guest users',
          'BAD_REQUEST',
        );
      } finally {
        await setRealmGroupSetting(env, 'can_create_groups', sys['role:members']);
      }
    });

    it('a member who holds can_create_groups through a named group (nested) may create groups', async () => {
      const inner = await createGroup(env, 'iago', { members: [uid('othello')] });
      const outer = await createGroup(env, 'iago', { subgroups: [inner] });
      await setRealmGroupSetting(env, 'can_create_groups', outer);
      try {
        const name = uniqueName('by othello');
        const ok = await env.client('othello').POST('/user_groups/create', { body: { name, description: '', members: [] } });
        expect(ok.response.status).toBe(200);
        expectJsonError(
          await env.client('hamlet').POST('/user_groups/create', { body: { name: uniqueName('by hamlet'), description: '', members: [] } }),
          400,
          'Insufficient permission',
          'BAD_REQUEST',
        );
      } finally {
        await setRealmGroupSetting(env, 'can_create_groups', sys['role:members']);
      }
    });
  });
});

describe('GET /user_groups', () => {
  it('lists the eight system groups of the organization', async () => {
    const groups = await listGroups();
    const system = groups.filter((g) => g.is_system_group);
    expect(system.map((g) => g.name).sort()).toEqual([...SYSTEM_GROUP_NAMES].sort());
    for (const g of system) {
      expect(g, g.name).toMatchObject({ is_system_group: true, creator_id: null, deactivated: false });
    }
    // Only system groups have names starting with role:.
    expect(groups.filter((g) => g.name.startsWith('role:')).every((g) => g.is_system_group)).toBe(true);
  });

  it('never lists anonymous setting groups', async () => {
    await createGroup(env, 'hamlet'); // creates anonymous creator-only values for two settings
    const anonymous = await anonymousGroupIds();
    expect(anonymous.length).toBeGreaterThan(0);
    const listed = new Set((await listGroups(true)).map((g) => g.id));
    for (const id of anonymous) expect(listed.has(id), `anonymous group ${id}`).toBe(false);
  });

  it('leaves deactivated groups out unless include_deactivated_groups is true', async () => {
    const active = await createGroup(env, 'hamlet');
    const gone = await createGroup(env, 'hamlet');
    await deactivateGroup(env, gone);

    const byDefault = (await listGroups()).map((g) => g.id);
    expect(byDefault).toContain(active);
    expect(byDefault).not.toContain(gone);
    const explicitFalse = (await listGroups(false)).map((g) => g.id);
    expect(explicitFalse).toContain(active);
    expect(explicitFalse).not.toContain(gone);

    const all = await listGroups(true);
    expect(all.find((g) => g.id === active)?.deactivated).toBe(false);
    expect(all.find((g) => g.id === gone)?.deactivated).toBe(true);
  });

  it('is available to every non-guest role and refused to guests', async () => {
    for (const person of ['desdemona', 'iago', 'shiva', 'hamlet'] as const) {
      const { data, response } = await env.client(person).GET('/user_groups', { params: { query: {} } });
      expect(response.status, person).toBe(200);
      expect(data?.user_groups.length, person).toBeGreaterThanOrEqual(8);
    }
    expectJsonError(await env.client('polonius').GET('/user_groups', { params: { query: {} } }), 400, 'Not allowed for guest users', 'BAD_REQUEST');
  });
});
