// The organization: creating one (its realm, system groups and organization-level permissions), its
// settings (PATCH /realm: every setting of lib/realm-settings.ts and the permission settings of
// lib/group-settings.ts, changed all together or not at all under a lock on the realm row), and the
// full-member system group as the waiting period shapes it. The caller's role is checked after the
// lock, on their row as committed: role changes take the same lock, so a concurrent demotion is either
// seen or waits for this change.
import type { RequestParams, SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { lockRealm } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { createRealm, setRealmGroupSettings, updateRealm } from '../data/realms-admin.repo.ts';
import { realmsWithWaitingPeriod, syncFullMembers } from '../data/realm-settings.repo.ts';
import { groupSettingParams, settingsOf, type GroupSettingName } from '../lib/group-settings.ts';
import {
  echoValue,
  parseRealmSettingValue,
  realmSettingEvent,
  realmSettingParams,
  storedValue,
  type RealmSettingDefinition,
  type StoredRealmValue,
} from '../lib/realm-settings.ts';
import { requireAdmin, Role } from '../access/roles.ts';
import { checkCanChangeAuthenticationMethods, checkCanChangeRealmSettings, fullMemberCutoff } from '../access/realm.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { accessChannelById } from '../access/channels.ts';
import { reloadActor } from '../access/users.ts';
import { formatGroupSettingValues } from '../queries/group-settings.ts';
import { releaseGroupSettingValue, resolveGroupSettingUpdate, type GroupSettingUpdate, type GroupSettingValue } from './group-settings.ts';
import type { Db, PrismaClient } from '../data/db.ts';
import { createSystemGroups, systemGroupIds } from '../data/system-groups.repo.ts';
import { JsonableError } from '../errors.ts';

export type RealmUpdateParams = RequestParams<'update-realm'>;
/** The changed settings as Zulip echoes them (strings as "updated"). */
export type RealmUpdateResult = SuccessData<'update-realm'>;

/** The authentication methods Parley has (Zulip's AUTH_BACKEND_NAME_MAP entries this server supports). */
const AUTHENTICATION_METHODS = ['Email'] as const;

/** Settings Zulip checks before the owner-only ones (its update_realm's order). */
const CHECKED_BEFORE_OWNERSHIP: ReadonlySet<string> = new Set(['default_language', 'video_chat_provider', 'giphy_rating']);

/** Zulip's validate_authentication_methods_dict_from_api and the at-least-one rule. */
function checkAuthenticationMethods(methods: Record<string, boolean>): void {
  for (const name of Object.keys(methods)) {
    if (!(AUTHENTICATION_METHODS as readonly string[]).includes(name)) {
      throw new JsonableError(`Invalid authentication method: ${name}. Valid methods are: [${[...AUTHENTICATION_METHODS].sort().map((m) => `'${m}'`).join(', ')}]`);
    }
  }
  if (!Object.values(methods).includes(true)) throw new JsonableError('At least one authentication method must be enabled.');
}

/**
 * PATCH /realm: administrators; some settings owners only. Every value is checked (Zulip's checks, in
 * its order) before the row changes, and everything changes in one transaction: a bad value anywhere
 * leaves every setting as it was. Each change sends its `realm` event in Zulip's form.
 */
export async function doUpdateRealm(deps: AppDeps, realm: Realm, actor: User, params: RealmUpdateParams): Promise<RealmUpdateResult> {
  const sent = realmSettingParams(params as Record<string, unknown>);
  const groupChanges = groupSettingParams<'realm', GroupSettingUpdate>('realm', params);
  const groupNames = Object.keys(groupChanges) as GroupSettingName<'realm'>[];
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const caller = await reloadActor(tx, realm, actor);
    const current = (await findRealmById(tx, realm.id))!;

    // 1. Checks that come before the owner-only ones, then who may change what.
    const parsed = new Map<RealmSettingDefinition, StoredRealmValue>();
    const parse = ({ setting, value }: { setting: RealmSettingDefinition; value: unknown }) => parsed.set(setting, parseRealmSettingValue(setting, value));
    requireAdmin(caller);
    for (const entry of sent) if (CHECKED_BEFORE_OWNERSHIP.has(entry.setting.name)) parse(entry);
    if (params.authentication_methods !== undefined) {
      checkCanChangeAuthenticationMethods(caller);
      checkAuthenticationMethods(params.authentication_methods);
    }
    checkCanChangeRealmSettings(caller, { settings: sent.map((s) => s.setting), groupSettings: groupNames, ownerParameters: params.string_id !== undefined });
    // 2. Every other value.
    for (const entry of sent) if (!parsed.has(entry.setting)) parse(entry);

    // 3. The changes, their echo and their events.
    const data: Record<string, unknown> = {};
    const changed: Record<string, unknown> = {};
    const events: Record<string, unknown>[] = [];
    for (const [setting, next] of parsed) {
      if (next === storedValue(setting, current)) continue;
      data[setting.column] = next;
      changed[setting.name] = echoValue(setting, next);
      events.push(realmSettingEvent(setting, next));
    }

    // 4. Permission settings (their values are checked here; an anonymous value's group is made in
    // this transaction, so a later failure leaves none behind).
    // One update_dict event per setting, as Zulip's do_change_realm_permission_group_setting sends them.
    const released: number[] = [];
    for (const setting of settingsOf('realm')) {
      const change = groupChanges[setting.name];
      if (!change) continue;
      const currentGroup = current[setting.column]!;
      const next = await resolveGroupSettingUpdate(tx, realm.id, setting, currentGroup, change);
      if (next === null) continue;
      data[setting.column] = next;
      released.push(currentGroup);
      const value: GroupSettingValue = (await formatGroupSettingValues(tx, realm.id, [next])).get(next)!;
      changed[setting.name] = value;
      events.push({ type: 'realm', op: 'update_dict', property: 'default', data: { [setting.name]: value } });
    }

    // 5. Channel settings: a channel the caller can see (and, for reports, a private one).
    const subject = await loadPermissionSubject(tx, caller);
    for (const [setting, next] of parsed) {
      if (setting.type !== 'channel' || next === null || data[setting.column] === undefined) continue;
      const { channel } = await accessChannelById(tx, current, subject, next as number, { requireContentAccess: false, allowArchived: false });
      if (setting.privateOnly && !channel.inviteOnly) throw new JsonableError(setting.privateOnly);
    }

    // 6. The subdomain of demo organizations, which Parley does not have.
    if (params.string_id !== undefined) throw new JsonableError('Must be a demo organization.');

    if (Object.keys(data).length === 0) return changed as RealmUpdateResult;
    const updated = await updateRealm(tx, realm.id, data);
    for (const old of released) await releaseGroupSettingValue(tx, realm.id, old);
    // A new waiting period moves members in and out of role:fullmembers at once (Zulip's
    // update_users_in_full_members_system_group), after the setting's own event.
    if (data.waitingPeriodThreshold !== undefined) events.push(...(await syncFullMembersOf(tx, updated)));
    await deps.events.publish(tx, afterCommit, realm.id, events.map((payload) => ({ realmWide: true as const, payload })));
    return changed as RealmUpdateResult;
  });
}

/**
 * role:fullmembers brought in step with the organization's waiting period (for `userIds`, or every
 * member), inside `tx`: the user_group events of who joined and who left.
 */
export async function syncFullMembersOf(tx: Db, realm: Realm, userIds?: number[], now = new Date()): Promise<Record<string, unknown>[]> {
  const groups = await systemGroupIds(tx, realm.id);
  const { added, removed } = await syncFullMembers(tx, {
    fullMembersGroupId: groups['role:fullmembers'],
    membersGroupId: groups['role:members'],
    memberRole: Role.MEMBER,
    cutoff: fullMemberCutoff(realm, now),
    ...(userIds ? { userIds } : {}),
  });
  return [
    ...(removed.length ? [{ type: 'user_group', op: 'remove_members', group_id: groups['role:fullmembers'], user_ids: removed }] : []),
    ...(added.length ? [{ type: 'user_group', op: 'add_members', group_id: groups['role:fullmembers'], user_ids: added }] : []),
  ];
}

/**
 * The periodic promotion (Zulip's promote_new_full_members): members whose waiting period ended join
 * role:fullmembers, in every organization that has one, an organization per transaction under its lock.
 */
export async function doPromoteFullMembers(deps: Pick<AppDeps, 'db' | 'events'>, now = new Date()): Promise<number> {
  let promoted = 0;
  for (const realmId of await realmsWithWaitingPeriod(deps.db)) {
    promoted += await inTransaction(deps.db, async (tx, afterCommit) => {
      await lockRealm(tx, realmId);
      const realm = await findRealmById(tx, realmId);
      if (!realm || realm.deactivated) return 0;
      const events = await syncFullMembersOf(tx, realm, undefined, now);
      await deps.events.publish(tx, afterCommit, realmId, events.map((payload) => ({ realmWide: true as const, payload })));
      return events.filter((e) => e.op === 'add_members').reduce((n, e) => n + (e.user_ids as number[]).length, 0);
    });
  }
  return promoted;
}

export async function doCreateRealm(db: PrismaClient, input: { name: string; url: string }) {
  return inTransaction(db, (tx) => createRealmInTransaction(tx, input));
}

export async function createRealmInTransaction(tx: Db, input: { name: string; url: string }) {
  const realm = await createRealm(tx, input);
  const g = await createSystemGroups(tx, realm.id);
  // Zulip's defaults for a new organization (its REALM_PERMISSION_GROUP_SETTINGS); the other settings
  // take the columns' defaults, which are Zulip's too (lib/realm-settings.ts).
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
    canAddCustomEmojiGroupId: g['role:members'],
    canCreateBotsGroupId: g['role:members'],
    canCreateWriteOnlyBotsGroupId: g['role:members'],
    canManageBillingGroupId: g['role:administrators'],
    canSetDeleteMessagePolicyGroupId: g['role:moderators'],
    canSummarizeTopicsGroupId: g['role:everyone'],
    directMessageInitiatorGroupId: g['role:everyone'],
  });
}
