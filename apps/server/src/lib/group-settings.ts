// The group-permission settings as data: which object holds them, the column storing the group, the
// default for new objects, and which system groups each may (not) be set to. Every rule about a
// setting's allowed values lives in this table, not in scattered ifs.
import type { SystemGroupName } from '../data/system-groups.repo.ts';

export type SettingOwner = 'user_group' | 'channel' | 'realm';

export interface GroupSettingDefinition {
  name: string;
  owner: SettingOwner;
  /** Prisma field holding the group id on the owning row. */
  column: string;
  /** Default for new objects: a system group, or the creator as an anonymous group. */
  defaultValue: SystemGroupName | 'creator';
  /** System groups this setting may never be set to (also not as a subgroup of an anonymous value). */
  disallowedSystemGroups: readonly SystemGroupName[];
  /** Only system groups allowed (and then only `allowedSystemGroups` if given). */
  requireSystemGroup?: boolean;
  allowedSystemGroups?: readonly SystemGroupName[];
}

const NO_INTERNET = ['role:internet'] as const;

const define = (owner: SettingOwner, rows: Array<Omit<GroupSettingDefinition, 'owner'>>) => rows.map((r) => ({ ...r, owner }));

export const GROUP_SETTINGS: readonly GroupSettingDefinition[] = [
  ...define('user_group', [
    { name: 'can_add_members_group', column: 'canAddMembersGroupId', defaultValue: 'creator', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_join_group', column: 'canJoinGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_leave_group', column: 'canLeaveGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_manage_group', column: 'canManageGroupId', defaultValue: 'creator', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_mention_group', column: 'canMentionGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet', 'role:owners'] },
    { name: 'can_remove_members_group', column: 'canRemoveMembersGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  ]),
  ...define('channel', [
    { name: 'can_add_subscribers_group', column: 'canAddSubscribersGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_administer_channel_group', column: 'canAdministerChannelGroupId', defaultValue: 'creator', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_delete_any_message_group', column: 'canDeleteAnyMessageGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_delete_own_message_group', column: 'canDeleteOwnMessageGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_move_messages_out_of_channel_group', column: 'canMoveMessagesOutOfChannelGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_move_messages_within_channel_group', column: 'canMoveMessagesWithinChannelGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_remove_subscribers_group', column: 'canRemoveSubscribersGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_resolve_topics_group', column: 'canResolveTopicsGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_send_message_group', column: 'canSendMessageGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: NO_INTERNET },
    { name: 'can_subscribe_group', column: 'canSubscribeGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  ]),
  ...define('realm', [
    { name: 'can_add_subscribers_group', column: 'canAddSubscribersGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet'] },
    { name: 'can_create_groups', column: 'canCreateGroupsId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_create_public_channel_group', column: 'canCreatePublicChannelGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_create_private_channel_group', column: 'canCreatePrivateChannelGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_create_web_public_channel_group', column: 'canCreateWebPublicChannelGroupId', defaultValue: 'role:owners', disallowedSystemGroups: ['role:internet', 'role:everyone'], requireSystemGroup: true, allowedSystemGroups: ['role:nobody', 'role:owners', 'role:administrators', 'role:moderators', 'role:fullmembers', 'role:members'] },
    { name: 'can_invite_users_group', column: 'canInviteUsersGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_manage_all_groups', column: 'canManageAllGroupsId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
    { name: 'can_mention_many_users_group', column: 'canMentionManyUsersGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet'] },
    { name: 'can_access_all_users_group', column: 'canAccessAllUsersGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'], requireSystemGroup: true, allowedSystemGroups: ['role:everyone', 'role:members'] },
  ]),
];

export function settingsOf(owner: SettingOwner): GroupSettingDefinition[] {
  return GROUP_SETTINGS.filter((s) => s.owner === owner);
}
