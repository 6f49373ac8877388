// User groups, their direct members and subgroups, and the recursive membership queries. Effective
// membership is always computed in the database (recursive CTEs), never by loading the organization.
import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';
import type { UserGroup } from './models.ts';

export const findGroupById = (db: Db, realmId: number, id: number) => db.userGroup.findFirst({ where: { id, realmId } });

export const findGroupsByIds = async (db: RawSql, realmId: number, ids: number[]): Promise<UserGroup[]> =>
  db.$queryRaw<UserGroup[]>`SELECT ${modelColumns(Prisma.UserGroupScalarFieldEnum, 'g')} FROM user_group g WHERE g.realm_id = ${realmId}::int AND g.id = ANY(${ids}::int[])`;

export async function findNamedGroupByName(db: Db, realmId: number, name: string) {
  // lower() = lower(), never Prisma's case-insensitive `equals` (an ILIKE: `_` and `%` would match other names).
  const [row] = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM user_group WHERE realm_id = ${realmId}::int AND lower(name) = lower(${name}) LIMIT 1`;
  return row ? db.userGroup.findFirst({ where: { realmId, id: row.id } }) : null;
}

/** Locks a group row for the rest of the transaction (serialises edits of one group). */
export async function lockGroup(db: Db, groupId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM user_group WHERE id = ${groupId} FOR UPDATE`;
}

/** Share-locks groups (ordered, to avoid lock-order deadlocks) so they cannot be deactivated meanwhile. */
export async function lockGroupsShared(db: Db, groupIds: number[]): Promise<void> {
  const ids = [...new Set(groupIds)].sort((a, b) => a - b);
  if (ids.length) await db.$queryRaw`SELECT id FROM user_group WHERE id = ANY(${ids}::int[]) ORDER BY id FOR SHARE`;
}

/** Serialises changes of the subgroup graph of an organization (cycle checks must see a stable graph). */
export async function lockSubgroupGraph(db: Db, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(7265002, ${realmId})`;
}

/** Every group the user belongs to, directly or through subgroups (one query). */
export async function groupIdsContainingUser(db: RawSql, userId: number): Promise<Set<number>> {
  const rows = await db.$queryRaw<{ id: number }[]>`WITH RECURSIVE ${containingGroupsCte(userId)} SELECT id FROM containing`;
  return new Set(rows.map((r) => r.id));
}

/**
 * `containing(id)`: every group containing the user, directly or through subgroups, as a CTE of a
 * `WITH RECURSIVE` (for statements that read the user's groups along with something else).
 */
export const containingGroupsCte = (userId: number) => Prisma.sql`containing(id) AS (
      SELECT group_id FROM user_group_member WHERE user_id = ${userId}::int
      UNION
      SELECT s.supergroup_id FROM user_group_subgroup s JOIN containing c ON s.subgroup_id = c.id
    )`;

/** Is the user in the group, directly or through subgroups (one query)? */
export async function isUserInGroup(db: Db, userId: number, groupId: number, directOnly = false): Promise<boolean> {
  if (directOnly) {
    return (await db.userGroupMember.count({ where: { groupId, userId } })) > 0;
  }
  const rows = await db.$queryRaw<{ found: boolean }[]>`
    WITH RECURSIVE sub(id) AS (
      SELECT ${groupId}::int
      UNION
      SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
    )
    SELECT EXISTS (SELECT 1 FROM user_group_member m JOIN sub ON m.group_id = sub.id WHERE m.user_id = ${userId}) AS found`;
  return rows[0]?.found ?? false;
}

/** Active users in the group, directly or through subgroups. */
export async function recursiveMemberIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    WITH RECURSIVE sub(id) AS (
      SELECT ${groupId}::int
      UNION
      SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
    )
    SELECT DISTINCT u.id FROM sub JOIN user_group_member m ON m.group_id = sub.id JOIN "user" u ON u.id = m.user_id
    WHERE u.is_active ORDER BY u.id`;
  return rows.map((r) => r.id);
}

/** All groups below `groupId` (excluding itself). */
export async function recursiveSubgroupIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    WITH RECURSIVE sub(id) AS (
      SELECT subgroup_id FROM user_group_subgroup WHERE supergroup_id = ${groupId}
      UNION
      SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
    )
    SELECT id FROM sub ORDER BY id`;
  return rows.map((r) => r.id);
}

export async function directMemberIds(db: Db, groupId: number, activeOnly = true): Promise<number[]> {
  const rows = await db.userGroupMember.findMany({
    where: { groupId, ...(activeOnly ? { user: { isActive: true } } : {}) },
    select: { userId: true },
    orderBy: { userId: 'asc' },
  });
  return rows.map((r) => r.userId);
}

export async function directSubgroupIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db.userGroupSubgroup.findMany({ where: { supergroupId: groupId }, select: { subgroupId: true }, orderBy: { subgroupId: 'asc' } });
  return rows.map((r) => r.subgroupId);
}

/** Direct members and subgroups of many groups at once (for listings and anonymous setting values). */
export async function membershipOfGroups(db: RawSql, groupIds: number[]): Promise<Map<number, { members: number[]; subgroups: number[] }>> {
  const result = new Map<number, { members: number[]; subgroups: number[] }>(groupIds.map((id) => [id, { members: [], subgroups: [] }]));
  if (groupIds.length === 0) return result;
  // One row per group with its lists (an organization's system groups hold every user: thousands of
  // rows as objects otherwise).
  // Set-based: a subquery per group joined to "user" may hash the whole user table once per group.
  const ids = [...new Set(groupIds)];
  const rows = await db.$queryRaw<Array<{ id: number; members: number[] | null; subgroups: number[] | null }>>`
    SELECT g.id, mm.members, ss.subgroups
    FROM unnest(${ids}::int[]) AS g(id)
    LEFT JOIN (
      SELECT m.group_id, array_agg(m.user_id ORDER BY m.user_id) AS members
      FROM user_group_member m JOIN "user" u ON u.id = m.user_id AND u.is_active
      WHERE m.group_id = ANY(${ids}::int[]) GROUP BY m.group_id
    ) mm ON mm.group_id = g.id
    LEFT JOIN (
      SELECT s.supergroup_id, array_agg(s.subgroup_id ORDER BY s.subgroup_id) AS subgroups
      FROM user_group_subgroup s WHERE s.supergroup_id = ANY(${ids}::int[]) GROUP BY s.supergroup_id
    ) ss ON ss.supergroup_id = g.id`;
  for (const r of rows) result.set(r.id, { members: r.members ?? [], subgroups: r.subgroups ?? [] });
  return result;
}

export async function createGroup(
  db: Db,
  data: { realmId: number; name: string | null; description?: string; creatorId?: number | null; settings?: Partial<Record<GroupSettingColumn, number>> },
) {
  return db.userGroup.create({
    data: { realmId: data.realmId, name: data.name, description: data.description ?? '', creatorId: data.creatorId ?? null, ...(data.settings ?? {}) },
  });
}

export type GroupSettingColumn =
  | 'canAddMembersGroupId'
  | 'canJoinGroupId'
  | 'canLeaveGroupId'
  | 'canManageGroupId'
  | 'canMentionGroupId'
  | 'canRemoveMembersGroupId';

export const updateGroup = (db: Db, id: number, data: Prisma.UserGroupUpdateInput) => db.userGroup.update({ where: { id }, data });

export async function addMembers(db: Db, groupId: number, userIds: number[]): Promise<void> {
  if (userIds.length) await db.userGroupMember.createMany({ data: userIds.map((userId) => ({ groupId, userId })), skipDuplicates: true });
}

export async function removeMembers(db: Db, groupId: number, userIds: number[]): Promise<void> {
  if (userIds.length) await db.userGroupMember.deleteMany({ where: { groupId, userId: { in: userIds } } });
}

export async function addSubgroups(db: Db, groupId: number, subgroupIds: number[]): Promise<void> {
  if (subgroupIds.length) {
    await db.userGroupSubgroup.createMany({ data: subgroupIds.map((subgroupId) => ({ supergroupId: groupId, subgroupId })), skipDuplicates: true });
  }
}

export async function removeSubgroups(db: Db, groupId: number, subgroupIds: number[]): Promise<void> {
  if (subgroupIds.length) await db.userGroupSubgroup.deleteMany({ where: { supergroupId: groupId, subgroupId: { in: subgroupIds } } });
}

export const deleteGroup = (db: Db, id: number) => db.userGroup.delete({ where: { id } });

export const listNamedGroups = async (db: RawSql, realmId: number, includeDeactivated: boolean): Promise<UserGroup[]> =>
  db.$queryRaw<UserGroup[]>`
    SELECT ${modelColumns(Prisma.UserGroupScalarFieldEnum, 'g')} FROM user_group g
    WHERE g.realm_id = ${realmId}::int AND g.name IS NOT NULL ${includeDeactivated ? Prisma.empty : Prisma.sql`AND NOT g.deactivated`}
    ORDER BY g.id`;

/** Supergroups (named, active) that directly contain the group. */
export async function activeSupergroupIds(db: Db, groupId: number): Promise<number[]> {
  const rows = await db.userGroupSubgroup.findMany({
    where: { subgroupId: groupId, supergroup: { deactivated: false, name: { not: null } } },
    select: { supergroupId: true },
    orderBy: { supergroupId: 'asc' },
  });
  return rows.map((r) => r.supergroupId);
}

/** Anonymous setting groups that list the group as a direct subgroup. */
export async function anonymousGroupsContaining(db: Db, groupId: number): Promise<number[]> {
  const rows = await db.userGroupSubgroup.findMany({ where: { subgroupId: groupId, supergroup: { name: null } }, select: { supergroupId: true } });
  return rows.map((r) => r.supergroupId);
}

/** Whether any of the users is in the group, directly or through subgroups. */
export async function anyInGroup(db: Db, groupId: number, userIds: number[]): Promise<boolean> {
  if (userIds.length === 0) return false;
  const rows = await db.$queryRaw<unknown[]>`
    WITH RECURSIVE sub(id) AS (
      SELECT ${groupId}::int
      UNION
      SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
    )
    SELECT 1 FROM user_group_member m JOIN sub ON m.group_id = sub.id WHERE m.user_id = ANY(${userIds}::int[]) LIMIT 1`;
  return rows.length > 0;
}

/** The group's name (null for anonymous setting groups). */
export async function groupName(db: Db, groupId: number): Promise<string | null> {
  const row = await db.userGroup.findUnique({ where: { id: groupId }, select: { name: true } });
  return row?.name ?? null;
}

/**
 * A digest of every row the organization's group objects are made of (its groups' rows, their members
 * with whether each is active, their subgroups), as the statement's snapshot sees them: POST /register
 * keeps its realm_user_groups while it is unchanged (data/digest-cache.ts keptWhileDigestUnchanged).
 */
export const groupsOfRealmDigestSql = (realmId: number) => Prisma.sql`
  SELECT md5(
    (SELECT COALESCE(string_agg(g::text, E'\n' ORDER BY g.id), '') FROM user_group g WHERE g.realm_id = ${realmId}::int)
    || '|' || (SELECT COALESCE(string_agg(m.group_id::text || ':' || m.user_id::text || (CASE WHEN u.is_active THEN '+' ELSE '-' END), ',' ORDER BY m.group_id, m.user_id), '')
      FROM user_group_member m JOIN user_group g ON g.id = m.group_id JOIN "user" u ON u.id = m.user_id WHERE g.realm_id = ${realmId}::int)
    || '|' || (SELECT COALESCE(string_agg(s.supergroup_id::text || ':' || s.subgroup_id::text, ',' ORDER BY s.supergroup_id, s.subgroup_id), '')
      FROM user_group_subgroup s JOIN user_group g ON g.id = s.supergroup_id WHERE g.realm_id = ${realmId}::int)
  ) AS digest`;
