// System groups of an organization and users' direct memberships in them.
import type { Db, RawSql } from './db.ts';
import { databaseCache } from '../lib/process-caches.ts';

export const SYSTEM_GROUP_NAMES = [
  'role:internet',
  'role:everyone',
  'role:members',
  'role:fullmembers',
  'role:moderators',
  'role:administrators',
  'role:owners',
  'role:nobody',
] as const;
export type SystemGroupName = (typeof SYSTEM_GROUP_NAMES)[number];

export async function createSystemGroups(db: Db, realmId: number): Promise<Record<SystemGroupName, number>> {
  const ids = {} as Record<SystemGroupName, number>;
  for (const name of SYSTEM_GROUP_NAMES) {
    const group = await db.userGroup.create({ data: { realmId, name, isSystemGroup: true, description: systemGroupDescription(name) } });
    ids[name] = group.id;
  }
  // owners ⊂ administrators ⊂ moderators ⊂ full members ⊂ members ⊂ everyone ⊂ internet
  const chain: SystemGroupName[] = ['role:owners', 'role:administrators', 'role:moderators', 'role:fullmembers', 'role:members', 'role:everyone', 'role:internet'];
  await db.userGroupSubgroup.createMany({
    data: chain.slice(0, -1).map((sub, i) => ({ subgroupId: ids[sub], supergroupId: ids[chain[i + 1]!] })),
  });
  // Group settings of system groups: managed by nobody (system groups cannot be edited through the API).
  const nobody = ids['role:nobody'];
  const everyone = ids['role:everyone'];
  await db.userGroup.updateMany({
    where: { realmId, isSystemGroup: true },
    data: {
      canAddMembersGroupId: nobody,
      canJoinGroupId: nobody,
      canLeaveGroupId: nobody,
      canManageGroupId: nobody,
      canMentionGroupId: everyone,
      canRemoveMembersGroupId: nobody,
    },
  });
  return ids;
}

function systemGroupDescription(name: SystemGroupName): string {
  return {
    'role:internet': 'Everyone on the Internet',
    'role:everyone': 'Everyone including guests',
    'role:members': 'Everyone except guests',
    'role:fullmembers': 'Members who can do everything members can',
    'role:moderators': 'Moderators',
    'role:administrators': 'Administrators',
    'role:owners': 'Owners',
    'role:nobody': 'Nobody',
  }[name];
}

/**
 * System groups are created with their organization and never change, so their ids are cached per
 * process (a process serves one database). Permission and setting code asks for them often.
 */
const systemGroupCache = databaseCache<number, Record<SystemGroupName, number>>();

export async function systemGroupIds(db: RawSql, realmId: number): Promise<Record<SystemGroupName, number>> {
  const cached = systemGroupCache.get(realmId);
  if (cached) return cached;
  const rows = await db.$queryRaw<Array<{ id: number; name: string }>>`SELECT id, name FROM user_group WHERE realm_id = ${realmId}::int AND is_system_group`;
  const ids = Object.fromEntries(rows.map((r) => [r.name, r.id])) as Record<SystemGroupName, number>;
  // Cache only a complete set (a realm being created inside an open transaction is not complete yet).
  if (rows.length === SYSTEM_GROUP_NAMES.length) systemGroupCache.set(realmId, ids);
  return ids;
}

/**
 * The system groups a role places its holder in directly. Members are in role:members, and in
 * role:fullmembers too once their waiting period is over (as in Zulip; access/realm.ts decides it);
 * every other role is in its own group only.
 */
export function systemGroupsForRole(role: number, fullMember: boolean): SystemGroupName[] {
  switch (role) {
    case 100:
      return ['role:owners'];
    case 200:
      return ['role:administrators'];
    case 300:
      return ['role:moderators'];
    case 400:
      return fullMember ? ['role:members', 'role:fullmembers'] : ['role:members'];
    default:
      return ['role:everyone'];
  }
}

/**
 * Keeps a user's direct system-group memberships in step with their role (and, for members, their
 * waiting period). Returns the groups the user left and joined, for user_group events.
 */
export async function syncSystemGroupMembership(
  db: Db,
  realmId: number,
  userId: number,
  role: number,
  fullMember = true,
): Promise<{ removedFrom: number[]; addedTo: number[] }> {
  const ids = await systemGroupIds(db, realmId);
  const targets = systemGroupsForRole(role, fullMember).map((name) => ids[name]);
  const current = await db.userGroupMember.findMany({
    where: { userId, group: { realmId, isSystemGroup: true } },
    select: { groupId: true },
  });
  const removedFrom = current.map((m) => m.groupId).filter((id) => !targets.includes(id));
  if (removedFrom.length) await db.userGroupMember.deleteMany({ where: { userId, groupId: { in: removedFrom } } });
  const addedTo = targets.filter((id) => !current.some((m) => m.groupId === id));
  if (addedTo.length) await db.userGroupMember.createMany({ data: addedTo.map((groupId) => ({ groupId, userId })) });
  return { removedFrom, addedTo };
}

/** user_group events describing a system-group membership change. */
export function systemGroupEvents(userId: number, change: { removedFrom: number[]; addedTo: number[] }): Record<string, unknown>[] {
  return [
    ...change.removedFrom.map((groupId) => ({ type: 'user_group', op: 'remove_members', group_id: groupId, user_ids: [userId] })),
    ...change.addedTo.map((groupId) => ({ type: 'user_group', op: 'add_members', group_id: groupId, user_ids: [userId] })),
  ];
}
