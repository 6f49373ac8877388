// Who may change which organization settings, and who is a full member: the permission decisions of
// the realm area. The settings themselves are data (lib/realm-settings.ts, lib/group-settings.ts).
import type { Realm, User } from '../data/models.ts';
import type { GroupSettingName } from '../lib/group-settings.ts';
import type { RealmSettingDefinition } from '../lib/realm-settings.ts';
import { requireAdmin, requireOwner } from './roles.ts';

/** Permission settings only organization owners may change (Zulip's update_realm). */
export const OWNER_ONLY_GROUP_SETTINGS: ReadonlySet<GroupSettingName<'realm'>> = new Set([
  'create_multiuse_invite_group',
  'can_create_groups',
  'can_invite_users_group',
  'can_manage_all_groups',
  'can_manage_billing_group',
]);

/** What a PATCH /realm request changes, for the permission check. */
export interface RealmChangeRequest {
  settings: readonly RealmSettingDefinition[];
  groupSettings: readonly GroupSettingName<'realm'>[];
  /** `authentication_methods` or `string_id` was sent (owners only). */
  ownerParameters: boolean;
}

/** PATCH /realm: administrators; owners for the owner-only settings (`Must be an organization owner`). */
export function checkCanChangeRealmSettings(actor: User, request: RealmChangeRequest): void {
  requireAdmin(actor);
  const ownerOnly = request.ownerParameters || request.settings.some((s) => s.changedBy === 'owners') || request.groupSettings.some((name) => OWNER_ONLY_GROUP_SETTINGS.has(name));
  if (ownerOnly) requireOwner(actor);
}

/** `authentication_methods` of PATCH /realm: owners (checked before the other owner-only settings, as Zulip does). */
export function checkCanChangeAuthenticationMethods(actor: User): void {
  requireOwner(actor);
}

/** PATCH /realm/user_settings_defaults: administrators. */
export function checkCanChangeNewUserDefaults(actor: User): void {
  requireAdmin(actor);
}

const DAY_MS = 86_400_000;

/**
 * Zulip's waiting period (is_provisional_member): a member becomes a full member once their account
 * is `waiting_period_threshold` whole days old. Accounts that joined at or before the cutoff are full.
 */
export const fullMemberCutoff = (realm: Pick<Realm, 'waitingPeriodThreshold'>, now: Date = new Date()): Date => new Date(now.getTime() - realm.waitingPeriodThreshold * DAY_MS);

/** Has a member's waiting period ended (always, with no waiting period)? Other roles have their own groups. */
export const waitingPeriodOver = (realm: Pick<Realm, 'waitingPeriodThreshold'>, user: Pick<User, 'dateJoined'>, now: Date = new Date()): boolean =>
  user.dateJoined.getTime() <= fullMemberCutoff(realm, now).getTime();
