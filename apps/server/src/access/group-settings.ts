// Every permission question answered from group-setting values: "may this user …?" reduces to "is the
// user in the group stored for that setting?". One recursive query gives all groups containing the
// user; the answer for any number of settings is then a set lookup.
import type { RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { groupIdsContainingUser } from '../data/user-groups.repo.ts';

export interface PermissionSubject {
  user: User;
  /** Every group (named, system or anonymous) containing the user, directly or through subgroups. */
  groups: Set<number>;
}

export async function loadPermissionSubject(db: RawSql, user: User): Promise<PermissionSubject> {
  return { user, groups: user.isActive ? await groupIdsContainingUser(db, user.id) : new Set() };
}

/** The subject of loadPermissionSubject from the user's groups read along with something else (the same statement's answer). */
export const permissionSubjectOf = (user: User, groupIds: Iterable<number>): PermissionSubject => ({ user, groups: user.isActive ? new Set(groupIds) : new Set() });

/** Does the user hold the permission stored as `groupId`? */
export const holds = (subject: PermissionSubject, groupId: number | null | undefined) =>
  groupId !== null && groupId !== undefined && subject.groups.has(groupId);
