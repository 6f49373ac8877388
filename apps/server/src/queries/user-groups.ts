// Read models of user groups: the UserGroup object of responses and events, the group reads of the
// API (guests and bots are refused, as Zulip's require_member_or_admin does), and /register's groups
// (for everyone: Zulip's fetch_initial_state_data sends them to guests and bots too).
import type { Schema } from '@parley/api-types';
import type { Db, RawSql } from '../data/db.ts';
import type { Realm, User, UserGroup } from '../data/models.ts';
import { directMemberIds, directSubgroupIds, groupsOfRealmDigestSql, isUserInGroup, listNamedGroups, membershipOfGroups, recursiveMemberIds, recursiveSubgroupIds } from '../data/user-groups.repo.ts';
import { accessUserGroup } from '../access/user-groups.ts';
import { accessUserById } from '../access/users.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { columnOf, settingsOf, type GroupSettingName } from '../lib/group-settings.ts';
import { unixSeconds } from '../lib/timestamps.ts';
import { formatGroupSettingValues } from './group-settings.ts';
import { keptWhileDigestUnchanged } from '../data/digest-cache.ts';
import { RawJson } from '../lib/raw-json.ts';

const GROUP_SETTINGS = settingsOf('user_group');

/** The UserGroup objects of the API, in one batch of queries. */
export async function formatUserGroups(db: RawSql, realmId: number, groups: UserGroup[]): Promise<Schema<'UserGroup'>[]> {
  const ids = groups.map((g) => g.id);
  const membership = await membershipOfGroups(db, ids);
  const settingGroupIds = groups.flatMap((g) => GROUP_SETTINGS.map((s) => g[s.column]!));
  const values = await formatGroupSettingValues(db, realmId, settingGroupIds);
  return groups.map((g) => {
    const value = (name: GroupSettingName<'user_group'>) => values.get(g[columnOf('user_group', name)]!)!;
    return {
      id: g.id,
      name: g.name!,
      description: g.description,
      members: membership.get(g.id)!.members,
      direct_subgroup_ids: membership.get(g.id)!.subgroups,
      is_system_group: g.isSystemGroup,
      date_created: g.isSystemGroup ? null : unixSeconds(g.createdAt),
      creator_id: g.creatorId,
      deactivated: g.deactivated,
      can_add_members_group: value('can_add_members_group'),
      can_join_group: value('can_join_group'),
      can_leave_group: value('can_leave_group'),
      can_manage_group: value('can_manage_group'),
      can_mention_group: value('can_mention_group'),
      can_remove_members_group: value('can_remove_members_group'),
    };
  });
}

/** The organization's named groups (deactivated ones only when asked): /register's realm_user_groups, for every user. */
export async function userGroupsOfRealm(db: RawSql, realm: Realm, options: { includeDeactivated: boolean }): Promise<Schema<'UserGroup'>[]> {
  return formatUserGroups(db, realm.id, await listNamedGroups(db, realm.id, options.includeDeactivated));
}

/**
 * userGroupsOfRealm for POST /register's repeatable-read transaction, as JSON text kept in this process
 * while a digest of every row it is made of is unchanged (one statement instead of four, nothing
 * formatted; data/digest-cache.ts). The same for every viewer, as userGroupsOfRealm is.
 */
export async function userGroupsOfRealmKept(db: RawSql, realm: Realm, options: { includeDeactivated: boolean }): Promise<RawJson> {
  return keptWhileDigestUnchanged(db, `register-groups|${realm.id}|${options.includeDeactivated}`, groupsOfRealmDigestSql(realm.id), async () => {
    const groups = await formatUserGroups(db, realm.id, await listNamedGroups(db, realm.id, options.includeDeactivated));
    return new RawJson(JSON.stringify(groups));
  });
}

/** GET /user_groups: the same, for members and administrators only (Zulip's endpoint is require_member_or_admin). */
export async function listUserGroups(db: Db, realm: Realm, user: User, options: { includeDeactivated: boolean }): Promise<Schema<'UserGroup'>[]> {
  requireMemberOrAdmin(user);
  return userGroupsOfRealm(db, realm, options);
}

/** GET /user_groups/{id}/members: direct or recursive active members. */
export async function userGroupMemberIds(db: Db, realm: Realm, user: User, groupId: number, options: { directOnly: boolean }): Promise<number[]> {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(db, realm, groupId);
  return options.directOnly ? directMemberIds(db, group.id) : recursiveMemberIds(db, group.id);
}

/** GET /user_groups/{id}/members/{user_id}: is an active user in the group (directly or not)? */
export async function isUserGroupMember(db: Db, realm: Realm, user: User, groupId: number, userId: number, options: { directOnly: boolean }): Promise<boolean> {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(db, realm, groupId);
  const target = await accessUserById(db, realm, userId, { allowDeactivated: false });
  return isUserInGroup(db, target.id, group.id, options.directOnly);
}

/** GET /user_groups/{id}/subgroups: direct or recursive subgroups. */
export async function userGroupSubgroupIds(db: Db, realm: Realm, user: User, groupId: number, options: { directOnly: boolean }): Promise<number[]> {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(db, realm, groupId);
  return options.directOnly ? directSubgroupIds(db, group.id) : recursiveSubgroupIds(db, group.id);
}
