// The group-permission settings as data: which object holds them, the column storing the group, the
// default for new objects, and which system groups each may (not) be set to. Every rule about a
// setting's allowed values lives in this table, not in scattered ifs. Setting names are typed from the
// spec (the API objects' group-setting fields) and columns from the stored rows, so the table cannot
// name a setting the contract lacks or a column the schema lacks.
import type { RequestParams, Schema } from '@parley/api-types';
import type { Channel, Realm, UserGroup } from '../data/models.ts';
import type { SystemGroupName } from '../data/system-groups.repo.ts';

export type SettingOwner = 'user_group' | 'channel' | 'realm';

/** Keys of `T` whose type is exactly `V` (optional keys included). */
type KeysOfExactly<T, V> = { [K in keyof T]-?: [Exclude<T[K], undefined>] extends [V] ? ([V] extends [Exclude<T[K], undefined>] ? K : never) : never }[keyof T];

/** Each owner's API object (where the settings' names come from) and stored row (their columns). */
interface OwnerTypes {
  user_group: { names: KeysOfExactly<Schema<'UserGroup'>, Schema<'GroupSettingValue'>>; row: UserGroup };
  channel: { names: KeysOfExactly<Schema<'Channel'>, Schema<'GroupSettingValue'>>; row: Channel };
  // The organization object is not in the spec yet; its settings are the ones update-realm changes.
  realm: { names: KeysOfExactly<RequestParams<'update-realm'>, Schema<'GroupSettingUpdate'>>; row: Realm };
}

/** The API names of an owner's group settings, e.g. `can_manage_group`. */
export type GroupSettingName<O extends SettingOwner> = OwnerTypes[O]['names'];

/** Columns of an owner's row that hold a permission group's id. */
export type GroupSettingColumn<O extends SettingOwner> = {
  [K in keyof OwnerTypes[O]['row']]-?: K extends `can${string}` | `${string}GroupId` ? (OwnerTypes[O]['row'][K] extends number | null ? K : never) : never;
}[keyof OwnerTypes[O]['row']];

export interface OwnedGroupSettingDefinition<O extends SettingOwner> {
  name: GroupSettingName<O>;
  owner: O;
  /** Prisma field holding the group id on the owning row. */
  column: GroupSettingColumn<O>;
  /** Default for new objects: a system group, or the creator as an anonymous group. */
  defaultValue: SystemGroupName | 'creator';
  /** System groups this setting may never be set to (also not as a subgroup of an anonymous value). */
  disallowedSystemGroups: readonly SystemGroupName[];
  /** Only system groups allowed (and then only `allowedSystemGroups` if given). */
  requireSystemGroup?: boolean;
  allowedSystemGroups?: readonly SystemGroupName[];
}

/** A setting of any owner. */
export type GroupSettingDefinition = { [O in SettingOwner]: OwnedGroupSettingDefinition<O> }[SettingOwner];

const NO_INTERNET = ['role:internet'] as const;

const define = <O extends SettingOwner>(owner: O, rows: Array<Omit<OwnedGroupSettingDefinition<O>, 'owner'>>): OwnedGroupSettingDefinition<O>[] =>
  rows.map((r) => ({ ...r, owner }));

const USER_GROUP_SETTINGS = define('user_group', [
  { name: 'can_add_members_group', column: 'canAddMembersGroupId', defaultValue: 'creator', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_join_group', column: 'canJoinGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_leave_group', column: 'canLeaveGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_manage_group', column: 'canManageGroupId', defaultValue: 'creator', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_mention_group', column: 'canMentionGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet', 'role:owners'] },
  { name: 'can_remove_members_group', column: 'canRemoveMembersGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
]);

const CHANNEL_SETTINGS = define('channel', [
  { name: 'can_add_subscribers_group', column: 'canAddSubscribersGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_administer_channel_group', column: 'canAdministerChannelGroupId', defaultValue: 'creator', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_delete_any_message_group', column: 'canDeleteAnyMessageGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_delete_own_message_group', column: 'canDeleteOwnMessageGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_move_messages_out_of_channel_group', column: 'canMoveMessagesOutOfChannelGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_move_messages_within_channel_group', column: 'canMoveMessagesWithinChannelGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_remove_subscribers_group', column: 'canRemoveSubscribersGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_resolve_topics_group', column: 'canResolveTopicsGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_send_message_group', column: 'canSendMessageGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: NO_INTERNET },
  { name: 'can_subscribe_group', column: 'canSubscribeGroupId', defaultValue: 'role:nobody', disallowedSystemGroups: NO_INTERNET },
]);

const REALM_SETTINGS = define('realm', [
  { name: 'can_add_subscribers_group', column: 'canAddSubscribersGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_groups', column: 'canCreateGroupsId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_public_channel_group', column: 'canCreatePublicChannelGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_private_channel_group', column: 'canCreatePrivateChannelGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_web_public_channel_group', column: 'canCreateWebPublicChannelGroupId', defaultValue: 'role:owners', disallowedSystemGroups: ['role:internet', 'role:everyone'], requireSystemGroup: true, allowedSystemGroups: ['role:nobody', 'role:owners', 'role:administrators', 'role:moderators'] },
  { name: 'can_invite_users_group', column: 'canInviteUsersGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_manage_all_groups', column: 'canManageAllGroupsId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet', 'role:everyone', 'role:nobody'] },
  { name: 'can_mention_many_users_group', column: 'canMentionManyUsersGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet'] },
  { name: 'can_access_all_users_group', column: 'canAccessAllUsersGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'], requireSystemGroup: true, allowedSystemGroups: ['role:everyone', 'role:members'] },
  // Editing, moving and deleting messages (Zulip's REALM_PERMISSION_GROUP_SETTINGS).
  { name: 'can_move_messages_between_topics_group', column: 'canMoveMessagesBetweenTopicsGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
  { name: 'can_move_messages_between_channels_group', column: 'canMoveMessagesBetweenChannelsGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_resolve_topics_group', column: 'canResolveTopicsGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
  { name: 'can_delete_any_message_group', column: 'canDeleteAnyMessageGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_delete_own_message_group', column: 'canDeleteOwnMessageGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
  // The rest of Zulip's REALM_PERMISSION_GROUP_SETTINGS (issue 25; allow_everyone_group / allow_nobody_group as Zulip declares them).
  { name: 'can_add_custom_emoji_group', column: 'canAddCustomEmojiGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_bots_group', column: 'canCreateBotsGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_create_write_only_bots_group', column: 'canCreateWriteOnlyBotsGroupId', defaultValue: 'role:members', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_manage_billing_group', column: 'canManageBillingGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet', 'role:everyone', 'role:nobody'] },
  { name: 'can_set_delete_message_policy_group', column: 'canSetDeleteMessagePolicyGroupId', defaultValue: 'role:moderators', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'can_set_topics_policy_group', column: 'canSetTopicsPolicyGroupId', defaultValue: 'role:moderators', disallowedSystemGroups: ['role:internet'] },
  { name: 'can_summarize_topics_group', column: 'canSummarizeTopicsGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
  { name: 'create_multiuse_invite_group', column: 'createMultiuseInviteGroupId', defaultValue: 'role:administrators', disallowedSystemGroups: ['role:internet', 'role:everyone'] },
  { name: 'direct_message_initiator_group', column: 'directMessageInitiatorGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
  { name: 'direct_message_permission_group', column: 'directMessagePermissionGroupId', defaultValue: 'role:everyone', disallowedSystemGroups: ['role:internet'] },
]);

const BY_OWNER: { [O in SettingOwner]: readonly OwnedGroupSettingDefinition<O>[] } = {
  user_group: USER_GROUP_SETTINGS,
  channel: CHANNEL_SETTINGS,
  realm: REALM_SETTINGS,
};

export const GROUP_SETTINGS: readonly GroupSettingDefinition[] = [...USER_GROUP_SETTINGS, ...CHANNEL_SETTINGS, ...REALM_SETTINGS];

export function settingsOf<O extends SettingOwner>(owner: O): OwnedGroupSettingDefinition<O>[] {
  return [...BY_OWNER[owner]];
}

/** The column storing the named setting of `owner`. */
export function columnOf<O extends SettingOwner>(owner: O, name: GroupSettingName<O>): GroupSettingColumn<O> {
  const setting = BY_OWNER[owner].find((s) => s.name === name);
  if (!setting) throw new Error(`Unknown ${owner} group setting: ${String(name)}`);
  return setting.column;
}

/** The owner's group settings present in decoded request parameters (values as sent: a value or `{new, old}`). */
export function groupSettingParams<O extends SettingOwner, V>(owner: O, params: { [K in GroupSettingName<O>]?: V | undefined }): { [K in GroupSettingName<O>]?: V } {
  const out: { [K in GroupSettingName<O>]?: V } = {};
  for (const setting of settingsOf(owner)) {
    const value = params[setting.name];
    if (value !== undefined) out[setting.name] = value;
  }
  return out;
}
