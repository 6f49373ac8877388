// User-group operations: thin handlers mapping decoded parameters to a read model
// (queries/user-groups.ts) or to an action, which checks permissions on the group it locks.
import type { Handler } from '../http/handler.ts';
import { isUserGroupMember, listUserGroups, userGroupMemberIds, userGroupSubgroupIds } from '../queries/user-groups.ts';
import { doCreateUserGroup, doDeactivateUserGroup, doUpdateUserGroup, doUpdateUserGroupMembers, doUpdateUserGroupSubgroups } from '../actions/user-groups.ts';
import type { GroupSettingUpdate, GroupSettingValue } from '../actions/group-settings.ts';
import { groupSettingParams } from '../lib/group-settings.ts';

export const getUserGroups: Handler<'get-user-groups'> = async ({ params, realm, user, deps }) => ({
  user_groups: await listUserGroups(deps.db, realm, user, { includeDeactivated: params.include_deactivated_groups ?? false }),
});

export const createUserGroup: Handler<'create-user-group'> = async ({ params, realm, user, deps }) => ({
  group_id: await doCreateUserGroup(deps, realm, user, {
    name: params.name,
    description: params.description,
    members: params.members,
    subgroups: params.subgroups ?? [],
    settings: groupSettingParams<'user_group', GroupSettingValue>('user_group', params),
  }),
});

export const updateUserGroup: Handler<'update-user-group'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateUserGroup(deps, realm, user, path.user_group_id, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.description !== undefined ? { description: params.description } : {}),
    ...(params.deactivated !== undefined ? { deactivated: params.deactivated } : {}),
    settings: groupSettingParams<'user_group', GroupSettingUpdate>('user_group', params),
  });
  return {};
};

export const updateUserGroupMembers: Handler<'update-user-group-members'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateUserGroupMembers(deps, realm, user, path.user_group_id, {
    add: params.add ?? [],
    delete: params.delete ?? [],
    addSubgroups: params.add_subgroups ?? [],
    deleteSubgroups: params.delete_subgroups ?? [],
  });
  return {};
};

export const updateUserGroupSubgroups: Handler<'update-user-group-subgroups'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateUserGroupSubgroups(deps, realm, user, path.user_group_id, { add: params.add ?? [], delete: params.delete ?? [] });
  return {};
};

export const deactivateUserGroup: Handler<'deactivate-user-group'> = async ({ path, realm, user, deps }) => {
  await doDeactivateUserGroup(deps, realm, user, path.user_group_id);
  return {};
};

export const getUserGroupMembers: Handler<'get-user-group-members'> = async ({ params, path, realm, user, deps }) => ({
  members: await userGroupMemberIds(deps.db, realm, user, path.user_group_id, { directOnly: params.direct_member_only ?? false }),
});

export const getIsUserGroupMember: Handler<'get-is-user-group-member'> = async ({ params, path, realm, user, deps }) => ({
  is_user_group_member: await isUserGroupMember(deps.db, realm, user, path.user_group_id, path.user_id, { directOnly: params.direct_member_only ?? false }),
});

export const getUserGroupSubgroups: Handler<'get-user-group-subgroups'> = async ({ params, path, realm, user, deps }) => ({
  subgroups: await userGroupSubgroupIds(deps.db, realm, user, path.user_group_id, { directOnly: params.direct_subgroup_only ?? false }),
});
