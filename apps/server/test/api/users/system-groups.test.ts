// System groups: the eight role groups every organization is created with, Zulip's nesting
// (owners ⊂ administrators ⊂ moderators ⊂ full members ⊂ members ⊂ everyone ⊂ internet), effective
// membership by role, and membership kept in step with roles changed through PATCH /users/{user_id}
// (with the user_group membership events Zulip sends for those changes).
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { PEOPLE, type Person } from '../../helpers/fixtures.ts';
import { apiKeyOf, basicAuth } from '../../helpers/auth.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { allMembers, sorted, useSystemGroupIds, type SystemGroupName } from '../../helpers/groups.ts';
import { createUser, type Role } from '../../helpers/people.ts';

/** From the innermost to the outermost group. */
const CHAIN: SystemGroupName[] = ['role:owners', 'role:administrators', 'role:moderators', 'role:fullmembers', 'role:members', 'role:everyone', 'role:internet'];

/** The system groups a user of each role belongs to (recursively). */
const GROUPS_OF_ROLE: Record<Role, SystemGroupName[]> = {
  100: CHAIN,
  200: CHAIN.slice(1),
  300: CHAIN.slice(2),
  400: CHAIN.slice(3),
  600: ['role:everyone', 'role:internet'],
};
/** The system group Zulip places a user of each role in directly (besides role:fullmembers for members). */
const OWN_GROUP_OF_ROLE: Record<Role, SystemGroupName[]> = {
  100: ['role:owners'],
  200: ['role:administrators'],
  300: ['role:moderators'],
  // Zulip: members are direct members of role:members and (past the waiting period, 0 here) of role:fullmembers.
  400: ['role:members', 'role:fullmembers'],
  600: ['role:everyone'],
};

const env = useTestServer();
const sys = useSystemGroupIds(env);
let nameOf: Map<number, SystemGroupName>;

beforeAll(async () => {
  nameOf = new Map(Object.entries(sys).map(([name, id]) => [id, name as SystemGroupName]));
});

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;

async function listSystemGroups() {
  const { data, error } = await env.client('iago').GET('/user_groups', { params: { query: {} } });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return data.user_groups.filter((g) => g.is_system_group);
}

async function isMember(groupId: number, userId: number, direct = false): Promise<boolean> {
  const { data, error } = await env.client('iago').GET('/user_groups/{user_group_id}/members/{user_id}', {
    params: { path: { user_group_id: groupId, user_id: userId }, query: { direct_member_only: direct } },
  });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return data.is_user_group_member;
}

/** The system groups containing the user: recursively, and directly. */
async function systemMembershipOf(userId: number): Promise<{ recursive: SystemGroupName[]; direct: SystemGroupName[] }> {
  const recursive: SystemGroupName[] = [];
  const direct: SystemGroupName[] = [];
  for (const [name, id] of Object.entries(sys) as [SystemGroupName, number][]) {
    if (await isMember(id, userId)) recursive.push(name);
    if (await isMember(id, userId, true)) direct.push(name);
  }
  return { recursive: recursive.sort(), direct: direct.sort() };
}

async function expectMembershipOfRole(userId: number, role: Role): Promise<void> {
  const { recursive, direct } = await systemMembershipOf(userId);
  expect(recursive, `recursive system groups of user ${userId} with role ${role}`).toEqual([...GROUPS_OF_ROLE[role]].sort());
  // Directly in the role's own group, and in no system group of another role.
  expect(direct.length, `direct system groups of user ${userId}: ${direct}`).toBeGreaterThan(0);
  for (const name of direct) expect(OWN_GROUP_OF_ROLE[role], `user ${userId} (role ${role}) is a direct member of ${name}`).toContain(name);
  if (role !== 400) expect(direct).toEqual(OWN_GROUP_OF_ROLE[role]);
}

/** A new member, "Role Changer". */
const createRoleChanger = async () => (await createUser(env, { label: 'system', fullName: 'Role Changer' })).id;

const changeRole = (as: Person, userId: number, role: Role) => env.client(as).PATCH('/users/{user_id}', { params: { path: { user_id: userId } }, body: { role } });

// ---------------------------------------------------------------------------------------------

describe('the system groups of an organization', () => {
  it('are the eight role groups, active, not editable, created by nobody', async () => {
    const groups = await listSystemGroups();
    expect(groups.map((g) => g.name).sort()).toEqual([...CHAIN, 'role:nobody'].sort());
    for (const g of groups) {
      expect(g, g.name).toMatchObject({ is_system_group: true, deactivated: false, creator_id: null });
      expect(g.description.length, g.name).toBeGreaterThan(0);
    }
  });

  it("nest as Zulip's: each role group is the only direct subgroup of the next", async () => {
    const groups = await listSystemGroups();
    const byName = new Map(groups.map((g) => [g.name as SystemGroupName, g]));
    for (let i = 1; i < CHAIN.length; i++) {
      expect(byName.get(CHAIN[i]!)!.direct_subgroup_ids, CHAIN[i]).toEqual([sys[CHAIN[i - 1]!]]);
    }
    expect(byName.get('role:owners')!.direct_subgroup_ids).toEqual([]);
    expect(byName.get('role:nobody')!.direct_subgroup_ids).toEqual([]);
  });

  it('GET …/subgroups gives the whole chain below each group', async () => {
    for (let i = 0; i < CHAIN.length; i++) {
      const { data } = await env.client('hamlet').GET('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: sys[CHAIN[i]!] }, query: {} } });
      expect(sorted(data!.subgroups), CHAIN[i]).toEqual(sorted(CHAIN.slice(0, i).map((n) => sys[n])));
    }
  });

  it('contain the test people by role, recursively', async () => {
    const people = Object.keys(PEOPLE) as Person[];
    const owner = (await env.running.deps.db.user.findFirstOrThrow({ where: { deliveryEmail: 'owner@parley.test' } })).id;
    const expectedMembers = (name: SystemGroupName) =>
      sorted([
        ...people.filter((p) => GROUPS_OF_ROLE[PEOPLE[p].role as Role].includes(name)).map(uid),
        ...(GROUPS_OF_ROLE[100].includes(name) ? [owner] : []),
      ]);
    for (const name of CHAIN) expect(await allMembers(env, sys[name]), name).toEqual(expectedMembers(name));
    expect(await allMembers(env, sys['role:nobody'])).toEqual([]);
    // Spot checks of the nesting, as the people of the issue see it.
    expect(await allMembers(env, sys['role:owners'])).toEqual(sorted([owner, uid('desdemona')]));
    expect(await allMembers(env, sys['role:everyone'])).toContain(uid('polonius'));
    expect(await allMembers(env, sys['role:members'])).not.toContain(uid('polonius'));
  });

  it.each(Object.keys(PEOPLE) as Person[])('%s is directly in the group of their role only', async (person) => {
    await expectMembershipOfRole(uid(person), PEOPLE[person].role as Role);
  });

  it('cannot be deactivated, edited or have members changed through the API', async () => {
    for (const name of [...CHAIN, 'role:nobody'] as SystemGroupName[]) {
      const id = sys[name];
      expectJsonError(await env.client('desdemona').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: id } } }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expectJsonError(
        await env.client('desdemona').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: id } }, body: { name: `x ${name.slice(5)}` } }),
        400,
        'Insufficient permission',
        'BAD_REQUEST',
      );
      expectJsonError(
        await env.client('desdemona').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: id } }, body: { add: [uid('polonius')] } }),
        400,
        'Insufficient permission',
        'BAD_REQUEST',
      );
    }
    expect((await listSystemGroups()).map((g) => g.name).sort()).toEqual([...CHAIN, 'role:nobody'].sort());
  });
});

describe('membership follows the role (PATCH /users/{user_id} role)', () => {
  it('a new member is placed at once', async () => {
    const userId = await createRoleChanger();
    await expectMembershipOfRole(userId, 400);
  });

  it('walks one user through every role; membership follows each change', async () => {
    const userId = await createRoleChanger();
    for (const role of [600, 300, 200, 100, 400, 200, 600, 100, 300, 400] as Role[]) {
      const res = await changeRole('desdemona', userId, role);
      expect(res.response.status, `role ${role}`).toBe(200);
      await expectMembershipOfRole(userId, role);
    }
  });

  it('stores user_group remove_members / add_members events for the system groups that changed (as Zulip does)', async () => {
    const userId = await createRoleChanger();
    const before = await markEvents(env);
    expect((await changeRole('iago', userId, 300)).response.status).toBe(200);
    const events = await eventPayloadsSince(env, before);
    expect(events).toContainEqual({ type: 'realm_user', op: 'update', person: { user_id: userId, role: 300 } });
    const groupEvents = events.filter((e) => e.type === 'user_group');
    expect(groupEvents).toContainEqual({ type: 'user_group', op: 'add_members', group_id: sys['role:moderators'], user_ids: [userId] });
    const removedFrom = groupEvents.filter((e) => e.op === 'remove_members').map((e) => nameOf.get(e.group_id));
    expect(removedFrom.length).toBeGreaterThan(0);
    for (const e of groupEvents.filter((g) => g.op === 'remove_members')) expect(e.user_ids).toEqual([userId]);
    expect(removedFrom.every((name) => name === 'role:members' || name === 'role:fullmembers')).toBe(true);
  });

  it('a refused role change leaves the memberships alone', async () => {
    const userId = await createRoleChanger();
    // Only owners may grant the owner role.
    expectJsonError(await changeRole('iago', userId, 100), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    await expectMembershipOfRole(userId, 400);
    expectJsonError(await changeRole('hamlet', userId, 200), 400, 'Insufficient permission', 'BAD_REQUEST');
    await expectMembershipOfRole(userId, 400);
  });

  it('permissions held through a system group follow the role change', async () => {
    const userId = await createRoleChanger();
    const email = (await env.running.deps.db.user.findUniqueOrThrow({ where: { id: userId } })).deliveryEmail;
    const auth = basicAuth(email, await apiKeyOf(env, userId));
    // A group only moderators (and above) may manage.
    const created = await env.client('hamlet').POST('/user_groups/create', {
      body: { name: `mods only ${randomBytes(3).toString('hex')}`, description: '', members: [], can_manage_group: sys['role:moderators'] },
    });
    const groupId = created.data!.group_id;
    const edit = (description: string) =>
      env.raw(`/user_groups/${groupId}`, { method: 'PATCH', headers: { Authorization: auth }, body: new URLSearchParams({ description }) });
    expectJsonError(await edit('as member'), 400, 'Insufficient permission', 'BAD_REQUEST');
    expect((await changeRole('iago', userId, 300)).response.status).toBe(200);
    expect((await edit('as moderator')).status).toBe(200);
    expect((await changeRole('iago', userId, 400)).response.status).toBe(200);
    expectJsonError(await edit('as member again'), 400, 'Insufficient permission', 'BAD_REQUEST');
    const { data } = await env.client('iago').GET('/user_groups', { params: { query: {} } });
    expect(data!.user_groups.find((g) => g.id === groupId)!.description).toBe('as moderator');
  });

  it('a deactivated user drops out of effective membership and returns on reactivation', async () => {
    const userId = await createRoleChanger();
    expect((await env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: userId } } })).response.status).toBe(200);
    expect(await allMembers(env, sys['role:members'])).not.toContain(userId);
    expect(await allMembers(env, sys['role:everyone'])).not.toContain(userId);
    expect((await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: userId } } })).response.status).toBe(200);
    expect(await allMembers(env, sys['role:members'])).toContain(userId);
    await expectMembershipOfRole(userId, 400);
  });
});
