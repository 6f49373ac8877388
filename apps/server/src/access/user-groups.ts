// Permission questions about user groups, answered from group-setting values.
import type { Db } from '../data/db.ts';
import type { Realm, UserGroup } from '../data/models.ts';
import { findGroupById, lockGroup } from '../data/user-groups.repo.ts';
import { JsonableError, insufficientPermission } from '../errors.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { isGuest } from './roles.ts';

/**
 * A named group of the organization (system groups included); anonymous setting groups are not
 * addressable. With `lock`, the row is locked first (inside the caller's transaction) and read as
 * committed once the lock is granted, so the checks that follow see the state the change applies to.
 */
export async function accessUserGroup(db: Db, realm: Realm, groupId: number, options: { lock: boolean } = { lock: false }): Promise<UserGroup> {
  if (options.lock) await lockGroup(db, groupId);
  const group = await findGroupById(db, realm.id, groupId);
  if (!group || group.name === null) throw new JsonableError('Invalid user group');
  return group;
}

/** Guests never manage groups, whatever a setting names (as in Zulip); system groups are never managed. */
export const canManageGroup = (subject: PermissionSubject, realm: Realm, group: UserGroup) =>
  !group.isSystemGroup &&
  !isGuest(subject.user) &&
  (holds(subject, realm.canManageAllGroupsId) || holds(subject, group.canManageGroupId));

export function checkCanManageGroup(subject: PermissionSubject, realm: Realm, group: UserGroup): void {
  if (!canManageGroup(subject, realm, group)) throw insufficientPermission();
}

/** Adding users: can_add_members_group or manage; a user adding only themself may use can_join_group. */
export function checkCanAddMembers(subject: PermissionSubject, realm: Realm, group: UserGroup, userIds: number[]): void {
  if (group.isSystemGroup) throw insufficientPermission();
  if (canManageGroup(subject, realm, group) || holds(subject, group.canAddMembersGroupId)) return;
  const onlySelf = userIds.length > 0 && userIds.every((id) => id === subject.user.id);
  if (onlySelf && holds(subject, group.canJoinGroupId)) return;
  throw insufficientPermission();
}

/** Removing users: can_remove_members_group or manage; a user removing only themself may use can_leave_group. */
export function checkCanRemoveMembers(subject: PermissionSubject, realm: Realm, group: UserGroup, userIds: number[]): void {
  if (group.isSystemGroup) throw insufficientPermission();
  if (canManageGroup(subject, realm, group) || holds(subject, group.canRemoveMembersGroupId)) return;
  const onlySelf = userIds.length > 0 && userIds.every((id) => id === subject.user.id);
  if (onlySelf && holds(subject, group.canLeaveGroupId)) return;
  throw insufficientPermission();
}

export function checkCanAddSubgroups(subject: PermissionSubject, realm: Realm, group: UserGroup): void {
  if (group.isSystemGroup) throw insufficientPermission();
  if (!canManageGroup(subject, realm, group) && !holds(subject, group.canAddMembersGroupId)) throw insufficientPermission();
}

export const checkCanRemoveSubgroups = checkCanManageGroup;

export function checkCanCreateGroups(subject: PermissionSubject, realm: Realm): void {
  if (!holds(subject, realm.canCreateGroupsId) && !holds(subject, realm.canManageAllGroupsId)) throw insufficientPermission();
}
