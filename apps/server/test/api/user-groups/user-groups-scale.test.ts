// Scale: permission checks through a group nested 10 deep, in an organization of 5,000 users and 500
// groups, stay single recursive queries. We count SQL statements per request (never time): the count
// of a permission-checked request is the same for a permission held directly and one held through 10
// levels of nesting, and the same before and after the organization grows to 5,000 users and 500 groups
// (with the user inside hundreds of groups); the permission check itself is one recursive query.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createGroup, uniqueName, useSystemGroupIds } from '../../helpers/groups.ts';

const BULK_USERS = 5000;
const BULK_GROUPS = 500;
const DEPTH = 10;

const env = useTestServer({ emitQueryEvents: true });
const sys = useSystemGroupIds(env);
let statements: string[] | null = null;

/** chain[0] ⊃ chain[1] ⊃ … ⊃ chain[9]; hamlet is a direct member of chain[9] only. */
let chain: number[];
/** can_manage_group = chain[0]: hamlet holds it through 10 levels. */
let deepGroup: number;
/** can_manage_group = {hamlet}: held directly. */
let directGroup: number;

interface Measured {
  status: number;
  count: number;
  recursive: number;
}

/** Small-organization measurements, taken before the bulk data exists. */
const small: Record<string, Measured> = {};

beforeAll(async () => {
  env.running.deps.db.$on('query' as never, ((e: { query: string }) => statements?.push(e.query)) as never);

  // The 10-deep chain, built through the API.
  chain = [];
  for (let i = 0; i < DEPTH; i++) chain.push(await createGroup(env, 'iago', i === DEPTH - 1 ? { members: [uid('hamlet')] } : {}));
  for (let i = 0; i < DEPTH - 1; i++) {
    const { error } = await env.client('iago').POST('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: chain[i]! } }, body: { add: [chain[i + 1]!] } });
    if (error) throw new Error(`setup: chain link failed: ${JSON.stringify(error)}`);
  }
  deepGroup = await createGroup(env, 'iago', { can_manage_group: chain[0]!, can_add_members_group: chain[0]! });
  directGroup = await createGroup(env, 'hamlet');

  for (const name of Object.keys(REQUESTS)) small[name] = await measureRequest(name);
  await insertBulkData();
}, 120_000);

// ---------------------------------------------------------------------------------------------
// helpers

const uid = (person: Person) => env.users[person].id;
/** Runs one request and counts the SQL statements it issued (all of them, and the recursive ones). */
async function measure(request: () => Promise<{ response: Response }>): Promise<Measured> {
  // Every caller's credentials cached first (unmeasured): the lookup runs only on a process's first
  // request by a user, or after a change to them or the organization. The barrier first: an
  // invalidation from the previous request or reset that had not reached this process yet would
  // otherwise empty the cache between the warm-up and the measured request.
  await env.running.deps.listener.barrier();
  for (const person of ['desdemona', 'iago', 'hamlet', 'othello', 'cordelia'] as const) await env.client(person).GET('/users/me');
  statements = [];
  const { response } = await request();
  const seen = statements;
  statements = null;
  return { status: response.status, count: seen.length, recursive: seen.filter((q) => /WITH\s+RECURSIVE/i.test(q)).length };
}

let edits = 0;
const addOthello = (groupId: number) => async () => {
  // Unmeasured reset, so that every measured call does the same work: othello is not a member yet.
  const { data } = await env.client('iago').GET('/user_groups/{user_group_id}/members/{user_id}', {
    params: { path: { user_group_id: groupId, user_id: uid('othello') }, query: { direct_member_only: true } },
  });
  if (data?.is_user_group_member) {
    await env.client('iago').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: groupId } }, body: { delete: [uid('othello')] } });
  }
};

/** The measured requests, with an optional unmeasured reset run before each measurement. */
const REQUESTS: Record<string, { reset?: () => Promise<void>; run: () => Promise<{ response: Response }> }> = {
  // Permission through 10 levels of nesting (can_manage_group = chain[0]).
  'PATCH deep': {
    run: () => env.client('hamlet').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deepGroup } }, body: { description: `deep ${++edits}` } }),
  },
  // Permission held directly (can_manage_group = {hamlet}).
  'PATCH direct': {
    run: () => env.client('hamlet').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: directGroup } }, body: { description: `direct ${++edits}` } }),
  },
  // Adding a member through can_add_members_group = chain[0], and directly.
  'members deep': {
    reset: () => addOthello(deepGroup)(),
    run: () => env.client('hamlet').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: deepGroup } }, body: { add: [uid('othello')] } }),
  },
  'members direct': {
    reset: () => addOthello(directGroup)(),
    run: () => env.client('hamlet').POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: directGroup } }, body: { add: [uid('othello')] } }),
  },
  // A refused request is refused after the same single check.
  'PATCH refused': {
    run: () => env.client('cordelia').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deepGroup } }, body: { description: 'nope' } }),
  },
  // Recursive membership reads.
  'is member deep': {
    run: () =>
      env.client('othello').GET('/user_groups/{user_group_id}/members/{user_id}', { params: { path: { user_group_id: chain[0]!, user_id: uid('hamlet') }, query: {} } }),
  },
  'members of chain': { run: () => env.client('othello').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: chain[0]! }, query: {} } }) },
  'subgroups of chain': { run: () => env.client('othello').GET('/user_groups/{user_group_id}/subgroups', { params: { path: { user_group_id: chain[0]! }, query: {} } }) },
  // The listing: no query per group.
  'list groups': { run: () => env.client('othello').GET('/user_groups', { params: { query: {} } }) },
};

async function measureRequest(name: string): Promise<Measured> {
  const request = REQUESTS[name]!;
  if (request.reset) await request.reset();
  return measure(request.run);
}

/**
 * 5,000 users (members, in role:fullmembers) and 500 groups of 10 members each, arranged as 50 chains
 * 10 deep with hamlet a direct member of every chain's bottom group: hamlet is then in 500 more groups
 * recursively, and the permission query has real work to do. Inserted directly in the database.
 */
async function insertBulkData(): Promise<void> {
  const db = env.running.deps.db;
  const realm = await db.realm.findFirstOrThrow();
  const tag = randomBytes(4).toString('hex');
  await db.user.createMany({
    data: Array.from({ length: BULK_USERS }, (_, i) => {
      const email = `bulk-${tag}-${i}@parley.test`;
      return { realmId: realm.id, email, deliveryEmail: email, fullName: `Bulk User ${i}`, role: 400 };
    }),
  });
  const users = (await db.user.findMany({ where: { deliveryEmail: { startsWith: `bulk-${tag}-` } }, select: { id: true }, orderBy: { id: 'asc' } })).map((u) => u.id);
  await db.userGroupMember.createMany({ data: users.map((userId) => ({ groupId: sys['role:fullmembers'], userId })) });

  await db.userGroup.createMany({
    data: Array.from({ length: BULK_GROUPS }, (_, i) => ({
      realmId: realm.id,
      name: `bulk ${tag} ${i}`,
      description: 'bulk',
      creatorId: uid('iago'),
      canAddMembersGroupId: sys['role:administrators'],
      canJoinGroupId: sys['role:nobody'],
      canLeaveGroupId: sys['role:everyone'],
      canManageGroupId: sys['role:administrators'],
      canMentionGroupId: sys['role:everyone'],
      canRemoveMembersGroupId: sys['role:nobody'],
    })),
  });
  const groups = (await db.userGroup.findMany({ where: { name: { startsWith: `bulk ${tag} ` } }, select: { id: true }, orderBy: { id: 'asc' } })).map((g) => g.id);
  await db.userGroupMember.createMany({
    data: groups.flatMap((groupId, g) => Array.from({ length: 10 }, (_, k) => ({ groupId, userId: users[(g * 10 + k) % users.length]! }))),
  });
  const links: Array<{ supergroupId: number; subgroupId: number }> = [];
  for (let c = 0; c < BULK_GROUPS / DEPTH; c++) {
    for (let d = 0; d < DEPTH - 1; d++) links.push({ supergroupId: groups[c * DEPTH + d]!, subgroupId: groups[c * DEPTH + d + 1]! });
  }
  await db.userGroupSubgroup.createMany({ data: links });
  await db.userGroupMember.createMany({ data: Array.from({ length: BULK_GROUPS / DEPTH }, (_, c) => ({ groupId: groups[c * DEPTH + DEPTH - 1]!, userId: uid('hamlet') })) });

  const [userCount, groupCount] = await Promise.all([db.user.count(), db.userGroup.count({ where: { name: { not: null } } })]);
  if (userCount < BULK_USERS || groupCount < BULK_GROUPS) throw new Error(`setup: bulk data missing (${userCount} users, ${groupCount} groups)`);
}

// ---------------------------------------------------------------------------------------------

describe('permission checks at scale (query counts, not times)', () => {
  it('the organization really is large: 5,000+ users, 500+ groups, hamlet in 500+ groups', async () => {
    const db = env.running.deps.db;
    expect(await db.user.count({ where: { isActive: true } })).toBeGreaterThanOrEqual(BULK_USERS);
    expect(await db.userGroup.count({ where: { name: { not: null } } })).toBeGreaterThanOrEqual(BULK_GROUPS);
    const { data } = await env.client('iago').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: sys['role:members'] }, query: {} } });
    expect(data!.members.length).toBeGreaterThanOrEqual(BULK_USERS);
    const containing = await db.$queryRaw<{ n: bigint }[]>`
      WITH RECURSIVE c(id) AS (
        SELECT group_id FROM user_group_member WHERE user_id = ${uid('hamlet')}
        UNION SELECT s.supergroup_id FROM user_group_subgroup s JOIN c ON s.subgroup_id = c.id)
      SELECT count(*) AS n FROM c`;
    expect(Number(containing[0]!.n)).toBeGreaterThanOrEqual(BULK_GROUPS + DEPTH);
  });

  it('the small-organization measurements succeeded and each permission check was one recursive query', () => {
    for (const name of ['PATCH deep', 'PATCH direct', 'members deep', 'members direct']) {
      expect(small[name]!.status, name).toBe(200);
      expect(small[name]!.recursive, name).toBe(1);
    }
    expect(small['PATCH refused']!.status).toBe(400);
    expect(small['PATCH refused']!.recursive).toBe(1);
  });

  it('a permission held through 10 levels of nesting costs the same statements as one held directly', () => {
    expect(small['PATCH deep']!.count).toBe(small['PATCH direct']!.count);
    expect(small['members deep']!.count).toBe(small['members direct']!.count);
  });

  it.each(Object.keys(REQUESTS))('%s: same number of statements with 5,000 users and 500 groups as before', async (name) => {
    const large = await measureRequest(name);
    expect(large.status, name).toBe(small[name]!.status);
    expect(large, name).toEqual(small[name]);
  });

  it('a permission-checked edit through the 10-deep chain still works and is read back', async () => {
    const { response } = await env.client('hamlet').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deepGroup } }, body: { description: 'after growth' } });
    expect(response.status).toBe(200);
    const { data } = await env.client('iago').GET('/user_groups', { params: { query: {} } });
    expect(data!.user_groups.find((g) => g.id === deepGroup)!.description).toBe('after growth');
    expect(data!.user_groups.length).toBeGreaterThanOrEqual(BULK_GROUPS + DEPTH + 8);
  });

  it('organization-level permission through the chain (can_create_groups) is one recursive query too', async () => {
    const set = await env.client('desdemona').PATCH('/realm', { body: { can_create_groups: { new: { direct_members: [], direct_subgroups: [chain[0]!, sys['role:administrators']] } } } });
    expect(set.response.status).toBe(200);
    try {
      const ok = await measure(() => env.client('hamlet').POST('/user_groups/create', { body: { name: uniqueName('by hamlet'), description: '', members: [] } }));
      expect(ok.status).toBe(200);
      expect(ok.recursive).toBe(1);
      const refused = await measure(() => env.client('othello').POST('/user_groups/create', { body: { name: uniqueName('by othello'), description: '', members: [] } }));
      expect(refused.status).toBe(400);
      expect(refused.recursive).toBe(1);
    } finally {
      await env.client('desdemona').PATCH('/realm', { body: { can_create_groups: { new: sys['role:members'] } } });
    }
  });
});
