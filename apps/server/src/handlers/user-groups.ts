import type { Handler, HandlerTable } from '../http/handler.ts';
import { accessUserGroup, checkCanAddMembers, checkCanAddSubgroups, checkCanCreateGroups, checkCanManageGroup, checkCanRemoveMembers, checkCanRemoveSubgroups } from '../access/user-groups.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { accessUserById } from '../access/users.ts';
import { directMemberIds, directSubgroupIds, isUserInGroup, listNamedGroups, recursiveMemberIds, recursiveSubgroupIds } from '../data/user-groups.repo.ts';
import { doCreateUserGroup, doDeactivateUserGroup, doUpdateUserGroup, doUpdateUserGroupMembership, formatUserGroups } from '../actions/user-groups.ts';
import { JsonableError } from '../errors.ts';
import { settingsOf } from '../lib/group-settings.ts';

const SETTING_NAMES = settingsOf('user_group').map((s) => s.name);

const getUserGroups: Handler<'get-user-groups'> = async ({ params, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const groups = await listNamedGroups(deps.db, realm.id, params.include_deactivated_groups ?? false);
  return { user_groups: await formatUserGroups(deps.db, realm.id, groups) };
};

const createUserGroup: Handler<'create-user-group'> = async ({ params, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  checkCanCreateGroups(await loadPermissionSubject(deps.db, user), realm);
  const settings = Object.fromEntries(SETTING_NAMES.map((name) => [name, (params as Record<string, unknown>)[name]])) as Record<string, any>;
  const groupId = await doCreateUserGroup(deps, realm, user, {
    name: params.name,
    description: params.description,
    members: params.members,
    subgroups: params.subgroups ?? [],
    settings,
  });
  return { group_id: groupId };
};

const updateUserGroup: Handler<'update-user-group'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const settings = Object.fromEntries(SETTING_NAMES.map((name) => [name, (params as Record<string, unknown>)[name]])) as Record<string, any>;
  const nothing = params.name === undefined && params.description === undefined && params.deactivated === undefined && Object.values(settings).every((v) => v === undefined);
  if (nothing) throw new JsonableError('No new data supplied');
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  checkCanManageGroup(await loadPermissionSubject(deps.db, user), realm, group);
  await doUpdateUserGroup(deps, realm, group.id, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.description !== undefined ? { description: params.description } : {}),
    ...(params.deactivated !== undefined ? { deactivated: params.deactivated } : {}),
    settings,
  });
  return {};
};

const updateUserGroupMembers: Handler<'update-user-group-members'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const change = { add: params.add ?? [], delete: params.delete ?? [], addSubgroups: params.add_subgroups ?? [], deleteSubgroups: params.delete_subgroups ?? [] };
  if (!change.add.length && !change.delete.length && !change.addSubgroups.length && !change.deleteSubgroups.length) {
    throw new JsonableError('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
  }
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  const subject = await loadPermissionSubject(deps.db, user);
  if (change.add.length) checkCanAddMembers(subject, realm, group, change.add);
  if (change.delete.length) checkCanRemoveMembers(subject, realm, group, change.delete);
  if (change.addSubgroups.length) checkCanAddSubgroups(subject, realm, group);
  if (change.deleteSubgroups.length) checkCanRemoveSubgroups(subject, realm, group);
  await doUpdateUserGroupMembership(deps, realm, group.id, change);
  return {};
};

const updateUserGroupSubgroups: Handler<'update-user-group-subgroups'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const change = { add: [], delete: [], addSubgroups: params.add ?? [], deleteSubgroups: params.delete ?? [] };
  if (!change.addSubgroups.length && !change.deleteSubgroups.length) throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  const subject = await loadPermissionSubject(deps.db, user);
  if (change.addSubgroups.length) checkCanAddSubgroups(subject, realm, group);
  if (change.deleteSubgroups.length) checkCanRemoveSubgroups(subject, realm, group);
  await doUpdateUserGroupMembership(deps, realm, group.id, change);
  return {};
};

const deactivateUserGroup: Handler<'deactivate-user-group'> = async ({ path, realm, user, deps }) => {
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  if (group.deactivated) throw new JsonableError('User group is deactivated.');
  checkCanManageGroup(await loadPermissionSubject(deps.db, user), realm, group);
  await doDeactivateUserGroup(deps, realm, group.id);
  return {};
};

const getUserGroupMembers: Handler<'get-user-group-members'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  const members = params.direct_member_only ? await directMemberIds(deps.db, group.id) : await recursiveMemberIds(deps.db, group.id);
  return { members };
};

const getIsUserGroupMember: Handler<'get-is-user-group-member'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  const target = await accessUserById(deps.db, realm, path.user_id, { allowDeactivated: false });
  return { is_user_group_member: await isUserInGroup(deps.db, target.id, group.id, params.direct_member_only ?? false) };
};

const getUserGroupSubgroups: Handler<'get-user-group-subgroups'> = async ({ params, path, realm, user, deps }) => {
  requireMemberOrAdmin(user);
  const group = await accessUserGroup(deps.db, realm, path.user_group_id);
  const subgroups = params.direct_subgroup_only ? await directSubgroupIds(deps.db, group.id) : await recursiveSubgroupIds(deps.db, group.id);
  return { subgroups };
};

export const userGroupHandlers: HandlerTable = {
  'get-user-groups': getUserGroups,
  'create-user-group': createUserGroup,
  'update-user-group': updateUserGroup,
  'update-user-group-members': updateUserGroupMembers,
  'update-user-group-subgroups': updateUserGroupSubgroups,
  'deactivate-user-group': deactivateUserGroup,
  'get-user-group-members': getUserGroupMembers,
  'get-is-user-group-member': getIsUserGroupMember,
  'get-user-group-subgroups': getUserGroupSubgroups,
};
