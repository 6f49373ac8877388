// The organization: creating one (its realm, system groups and organization-level permissions), and
// its settings, including the organization-level group settings (compare-and-swap under a
// lock on the realm row). The caller's role is checked after the lock, on their row as committed: role
// changes take the same lock, so a concurrent demotion is either seen or waits for this change.
import type { SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { lockRealm } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { createRealm, setRealmGroupSettings, updateRealm } from '../data/realms-admin.repo.ts';
import { settingsOf, type GroupSettingName } from '../lib/group-settings.ts';
import { requireAdmin, requireOwner } from '../access/roles.ts';
import { reloadActor } from '../access/users.ts';
import { formatGroupSettingValues } from '../queries/group-settings.ts';
import { releaseGroupSettingValue, resolveGroupSettingUpdate, type GroupSettingUpdate, type GroupSettingValue } from './group-settings.ts';
import type { Db, PrismaClient } from '../data/db.ts';
import { createSystemGroups } from '../data/system-groups.repo.ts';
import { JsonableError } from '../errors.ts';

type RealmFlag = 'enableSpectatorAccess' | 'emailChangesDisabled' | 'nameChangesDisabled' | 'inviteRequired' | 'allowMessageEditing' | 'enableReadReceipts';
type TimeLimit = 'messageContentEditLimitSeconds' | 'moveMessagesWithinStreamLimitSeconds' | 'moveMessagesBetweenStreamsLimitSeconds' | 'messageContentDeleteLimitSeconds';
export type EditHistoryPolicy = 'all' | 'moves' | 'none';

export interface RealmUpdate {
  name?: string;
  description?: string;
  flags: Partial<Record<RealmFlag, boolean>>;
  /** Message time limits as sent: a positive integer of seconds or "unlimited" (checked by the action, after the role checks, as Zulip does). */
  timeLimits?: Partial<Record<TimeLimit, number | string>>;
  editHistoryPolicy?: EditHistoryPolicy;
  settings: { [K in GroupSettingName<'realm'>]?: GroupSettingUpdate };
}

const FLAG_NAMES = {
  enableSpectatorAccess: 'enable_spectator_access',
  emailChangesDisabled: 'email_changes_disabled',
  nameChangesDisabled: 'name_changes_disabled',
  inviteRequired: 'invite_required',
  allowMessageEditing: 'allow_message_editing',
  enableReadReceipts: 'enable_read_receipts',
} as const satisfies Record<RealmFlag, string>;

const TIME_LIMIT_NAMES = {
  messageContentEditLimitSeconds: 'message_content_edit_limit_seconds',
  moveMessagesWithinStreamLimitSeconds: 'move_messages_within_stream_limit_seconds',
  moveMessagesBetweenStreamsLimitSeconds: 'move_messages_between_streams_limit_seconds',
  messageContentDeleteLimitSeconds: 'message_content_delete_limit_seconds',
} as const satisfies Record<TimeLimit, string>;

/** The policy's number, which Zulip's PATCH /realm echoes (its events and /register use the name). */
const EDIT_HISTORY_POLICY_CODES = { all: 1, moves: 2, none: 3 } as const satisfies Record<EditHistoryPolicy, number>;

/** Settings Zulip announces as `update_dict` rather than `update` (a matter of their history). */
const DICT_EVENT_SETTINGS: ReadonlySet<string> = new Set(['allow_message_editing', 'message_content_edit_limit_seconds']);

/** The event announcing a changed plain setting, in the form Zulip sends for it. */
const settingEvent = (name: string, value: unknown): Record<string, unknown> =>
  DICT_EVENT_SETTINGS.has(name) ? { type: 'realm', op: 'update_dict', property: 'default', data: { [name]: value } } : { type: 'realm', op: 'update', property: name, value };

/** Zulip's parse_message_time_limit_setting: "unlimited" is null; anything but a positive integer is refused. */
function parseTimeLimit(name: string, value: number | string): number | null {
  if (value === 'unlimited') return null;
  if (typeof value === 'string' || !Number.isInteger(value) || value <= 0) {
    throw new JsonableError(`Bad value for '${name}': ${value}`, { code: 'REQUEST_VARIABLE_INVALID', data: { var_name: name, bad_value: value } });
  }
  return value;
}

/** Settings only organization owners may change (as in Zulip). */
const OWNER_ONLY_FLAGS: readonly RealmFlag[] = ['inviteRequired'];
const OWNER_ONLY_SETTINGS: readonly GroupSettingName<'realm'>[] = ['can_create_groups', 'can_invite_users_group', 'can_manage_all_groups'];

/** The changed settings as Zulip echoes them (strings as "updated"). */
export type RealmUpdateResult = SuccessData<'update-realm'>;

/** PATCH /realm: administrators; some settings owners only. */
export async function doUpdateRealm(deps: AppDeps, realm: Realm, actor: User, update: RealmUpdate): Promise<RealmUpdateResult> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const caller = await reloadActor(tx, realm, actor);
    requireAdmin(caller);
    const ownerOnly =
      OWNER_ONLY_FLAGS.some((flag) => update.flags[flag] !== undefined) || OWNER_ONLY_SETTINGS.some((name) => update.settings[name] !== undefined);
    if (ownerOnly) requireOwner(caller);
    const timeLimits = (Object.entries(update.timeLimits ?? {}) as [TimeLimit, number | string | undefined][])
      .filter((entry): entry is [TimeLimit, number | string] => entry[1] !== undefined)
      .map(([field, raw]) => [field, parseTimeLimit(TIME_LIMIT_NAMES[field], raw)] as const);

    const current = (await findRealmById(tx, realm.id))!;
    const data: Record<string, unknown> = {};
    const changed: RealmUpdateResult = {};
    const events: Record<string, unknown>[] = [];
    if (update.name !== undefined && update.name !== current.name) {
      data.name = update.name;
      changed.name = 'updated';
      events.push({ type: 'realm', op: 'update', property: 'name', value: update.name });
    }
    if (update.description !== undefined && update.description !== current.description) {
      data.description = update.description;
      changed.description = 'updated';
      events.push({ type: 'realm', op: 'update', property: 'description', value: update.description });
    }
    for (const [field, name] of Object.entries(FLAG_NAMES) as [RealmFlag, (typeof FLAG_NAMES)[RealmFlag]][]) {
      const value = update.flags[field];
      if (value === undefined || value === current[field]) continue;
      data[field] = value;
      changed[name] = value;
      events.push(settingEvent(name, value));
    }
    for (const [field, value] of timeLimits) {
      if (value === current[field]) continue;
      const name = TIME_LIMIT_NAMES[field];
      data[field] = value;
      changed[name] = value;
      events.push(settingEvent(name, value));
    }
    const policy = update.editHistoryPolicy;
    if (policy !== undefined && policy !== current.messageEditHistoryVisibilityPolicy) {
      data.messageEditHistoryVisibilityPolicy = policy;
      changed.message_edit_history_visibility_policy = EDIT_HISTORY_POLICY_CODES[policy];
      events.push({ type: 'realm', op: 'update', property: 'message_edit_history_visibility_policy', value: policy });
    }
    const released: number[] = [];
    const groupData: { [K in GroupSettingName<'realm'>]?: GroupSettingValue } = {};
    for (const setting of settingsOf('realm')) {
      const change = update.settings[setting.name];
      if (!change) continue;
      const currentGroup = current[setting.column]!;
      const next = await resolveGroupSettingUpdate(tx, realm.id, setting, currentGroup, change);
      if (next === null) continue;
      data[setting.column] = next;
      released.push(currentGroup);
      groupData[setting.name] = changed[setting.name] = (await formatGroupSettingValues(tx, realm.id, [next])).get(next)!;
    }
    if (Object.keys(groupData).length) events.push({ type: 'realm', op: 'update_dict', property: 'default', data: groupData });
    if (Object.keys(data).length === 0) return changed;
    await updateRealm(tx, realm.id, data);
    for (const old of released) await releaseGroupSettingValue(tx, realm.id, old);
    await deps.events.publish(tx, afterCommit, realm.id, events.map((payload) => ({ realmWide: true as const, payload })));
    return changed;
  });
}

export async function doCreateRealm(db: PrismaClient, input: { name: string; url: string }) {
  return inTransaction(db, (tx) => createRealmInTransaction(tx, input));
}

export async function createRealmInTransaction(tx: Db, input: { name: string; url: string }) {
    const realm = await createRealm(tx, input);
    const g = await createSystemGroups(tx, realm.id);
    // Zulip's defaults for a new organization.
    return setRealmGroupSettings(tx, realm.id, {
      canAddSubscribersGroupId: g['role:members'],
      canCreateGroupsId: g['role:members'],
      canCreatePublicChannelGroupId: g['role:members'],
      canCreatePrivateChannelGroupId: g['role:members'],
      canCreateWebPublicChannelGroupId: g['role:owners'],
      canInviteUsersGroupId: g['role:members'],
      canManageAllGroupsId: g['role:administrators'],
      canMentionManyUsersGroupId: g['role:administrators'],
      canAccessAllUsersGroupId: g['role:everyone'],
      canSetTopicsPolicyGroupId: g['role:moderators'],
      directMessagePermissionGroupId: g['role:everyone'],
      createMultiuseInviteGroupId: g['role:administrators'],
      canMoveMessagesBetweenTopicsGroupId: g['role:everyone'],
      canMoveMessagesBetweenChannelsGroupId: g['role:members'],
      canResolveTopicsGroupId: g['role:everyone'],
      canDeleteAnyMessageGroupId: g['role:administrators'],
      canDeleteOwnMessageGroupId: g['role:everyone'],
    });
}
