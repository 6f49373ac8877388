// Loading a user a request names, and checking the caller may act on them; and which of a user's
// e-mail addresses another user sees (the one home of email_address_visibility).
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserByDeliveryEmailVisibleAs, findUserById, lockUser } from '../data/users.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { checkCanAdministerUser, isAdmin, isGuest, isModeratorRole } from './roles.ts';

export async function accessUserById(db: Db, realm: Realm, userId: number, options: { allowDeactivated: boolean }): Promise<User> {
  const user = await findUserById(db, realm.id, userId);
  if (!user || (!options.allowDeactivated && !user.isActive)) throw new JsonableError('No such user');
  return user;
}

/**
 * Zulip's access_user_by_id_including_cross_realm + for-administration check. With `lock`, the target's
 * row is locked first (inside the caller's transaction) and the checks run on it as committed then.
 */
export async function accessUserForAdministration(db: Db, realm: Realm, actor: User, userId: number, options: { lock: boolean }): Promise<User> {
  const target = options.lock ? await lockUser(db, realm.id, userId) : await findUserById(db, realm.id, userId);
  if (!target) throw new JsonableError('No such user');
  checkCanAdministerUser(actor, target);
  return target;
}

/**
 * The caller's row as committed now. Actions that hold the organization lock (which every role change
 * takes) check roles on this, not on the row read when the request was authenticated.
 */
export async function reloadActor(db: Db, realm: Realm, actor: User): Promise<User> {
  return (await findUserById(db, realm.id, actor.id)) ?? actor;
}

/** Zulip's name_changes_disabled: when set, only administrators may change their own name. */
export function mayChangeOwnName(realm: Pick<Realm, 'nameChangesDisabled'>, user: Pick<User, 'role'>): boolean {
  return !realm.nameChangesDisabled || isAdmin(user);
}

/** Zulip's email_changes_disabled: when set, only administrators may change their own address. */
export function checkCanChangeOwnEmail(realm: Pick<Realm, 'emailChangesDisabled'>, user: Pick<User, 'role'>): void {
  if (realm.emailChangesDisabled && !isAdmin(user)) throw new JsonableError('Email address changes are disabled in this organization.');
}

/** Spectators (no credentials) may read public data only where the organization allows it. */
export function checkSpectatorAccess(realm: Realm): void {
  if (!realm.enableSpectatorAccess) {
    throw new UnauthorizedError('Missing authorization header for basic auth');
  }
}

// ---------------------------------------------------------------------------------------------
// E-mail addresses: which of a user's addresses another user sees. Every address that leaves the
// server (user objects, messages, typing events, pushes, error messages) and every address a request
// names (direct-message recipients, narrows) goes through these functions.

/** email_address_visibility values (Zulip's EMAIL_ADDRESS_VISIBILITY_*). */
export const EmailVisibility = { EVERYONE: 1, MEMBERS: 2, ADMINS: 3, NOBODY: 4, MODERATORS: 5 } as const;

/** The user an address belongs to. */
export interface AddressOwner {
  id: number;
  isBot: boolean;
  /** The real address (Zulip's delivery_email). */
  deliveryEmail: string;
}

const hostnames = new Map<string, string>();
/** The host name of an organization URL (parsed once per URL): the domain of `user{id}@{host}` addresses. */
export function hostnameOf(url: string): string {
  let host = hostnames.get(url);
  if (host === undefined) {
    host = new URL(url).hostname;
    if (hostnames.size > 1_000) hostnames.clear();
    hostnames.set(url, host);
  }
  return host;
}

/** Zulip's email_address_is_realm_public: the real address is everyone's to see (bots' always are). */
const addressIsPublic = (target: Pick<AddressOwner, 'isBot'>, visibility: number) => visibility === EmailVisibility.EVERYONE || target.isBot;

/**
 * Zulip's `email` field (get_display_email_address): the address every user sees for `target`, the
 * same for every viewer. The real address when it is visible to everyone, else `user{id}@{host}`.
 * Messages (sender_email, display_recipient), typing events and push payloads show this one.
 */
export function publicEmailOf(realm: Pick<Realm, 'url'>, target: AddressOwner, visibility: number): string {
  return addressIsPublic(target, visibility) ? target.deliveryEmail : `user${target.id}@${hostnameOf(realm.url)}`;
}

/**
 * Zulip's can_access_delivery_email: may `viewer` see `target`'s real address (user objects'
 * `delivery_email`)? Themselves and bots always; otherwise by the target's visibility: everyone,
 * members (not guests), administrators, moderators (and administrators), nobody. Spectators never.
 */
export function deliveryEmailVisibleTo(viewer: Pick<User, 'id' | 'role'> | null, target: Pick<AddressOwner, 'id' | 'isBot'>, visibility: number): boolean {
  if (!viewer) return false;
  if (viewer.id === target.id || target.isBot) return true;
  switch (visibility) {
    case EmailVisibility.EVERYONE:
      return true;
    case EmailVisibility.MEMBERS:
      return !isGuest(viewer);
    case EmailVisibility.ADMINS:
      return isAdmin(viewer);
    case EmailVisibility.MODERATORS:
      return isAdmin(viewer) || isModeratorRole(viewer);
    default:
      return false;
  }
}

/** Both addresses of `target` as `viewer` sees them: `email` (the public one) and `delivery_email` (null when hidden). */
export function addressesSeenBy(
  realm: Pick<Realm, 'url'>,
  viewer: Pick<User, 'id' | 'role'> | null,
  target: AddressOwner,
  visibility: number,
): { email: string; deliveryEmail: string | null } {
  return {
    email: publicEmailOf(realm, target, visibility),
    deliveryEmail: deliveryEmailVisibleTo(viewer, target, visibility) ? target.deliveryEmail : null,
  };
}

const normalizedAddress = (address: string) => address.trim().toLowerCase();

/** The user id an address of the form `user{id}@{host}` names in the organization, or null. */
export function userIdOfHiddenAddress(realm: Pick<Realm, 'url'>, address: string): number | null {
  const a = normalizedAddress(address);
  const suffix = `@${hostnameOf(realm.url).toLowerCase()}`;
  if (!a.startsWith('user') || !a.endsWith(suffix)) return null;
  const digits = a.slice('user'.length, a.length - suffix.length);
  return /^[0-9]{1,9}$/.test(digits) ? Number(digits) : null;
}

/**
 * Does `address` name `target` when `viewer` writes it (direct-message recipients, narrows)? Their
 * public address always (Zulip's lookup by `email`); their real address only when the viewer may see
 * it, so that an address cannot be confirmed by those it is hidden from (Zulip resolves the public
 * form only; a viewer who sees the real address learns nothing from it resolving). Without a viewer,
 * only the public address. Case-insensitive.
 */
export function addressNames(realm: Pick<Realm, 'url'>, viewer: Pick<User, 'id' | 'role'> | null, target: AddressOwner, visibility: number, address: string): boolean {
  const a = normalizedAddress(address);
  if (a === publicEmailOf(realm, target, visibility).toLowerCase()) return true;
  return a === target.deliveryEmail.toLowerCase() && deliveryEmailVisibleTo(viewer, target, visibility);
}

// ---------------------------------------------------------------------------------------------
// Reading another user (Zulip's access_user_by_id / access_user_by_email with for_admin false, or
// true for changes an administrator makes on someone's behalf).

export interface UserAccessRules {
  /** Bots may be named (otherwise a bot is `No such user`). */
  allowBots: boolean;
  /** Deactivated users may be named (otherwise `User is deactivated`). */
  allowDeactivated: boolean;
  /** The caller must be able to administer the user (`Insufficient permission`). */
  forAdmin: boolean;
}

/** Zulip's access_user_common: the checks on a user found, in Zulip's order. */
export function checkUserAccess(actor: User, target: User, rules: UserAccessRules): User {
  if (target.isBot && !rules.allowBots) throw new JsonableError('No such user');
  if (!target.isActive && !rules.allowDeactivated) throw new JsonableError('User is deactivated');
  // Reading needs no right of its own: every user sees every other (Parley does not apply
  // can_access_all_users_group yet, see README).
  if (rules.forAdmin) checkCanAdministerUser(actor, target);
  return target;
}

/** Zulip's access_user_by_id: the user with this id in the organization, checked by `rules`. */
export async function accessUser(db: Db, realm: Realm, actor: User, userId: number, rules: UserAccessRules): Promise<User> {
  const target = await findUserById(db, realm.id, userId);
  if (!target) throw new JsonableError('No such user');
  return checkUserAccess(actor, target, rules);
}

/**
 * Zulip's ROLE_TO_ACCESSIBLE_EMAIL_ADDRESS_VISIBILITY_IDS: the email_address_visibility values under
 * which `viewer` may see another (human) user's real address.
 */
export function emailVisibilitiesOpenTo(viewer: Pick<User, 'id' | 'role'>): number[] {
  const someoneElse = { id: 0, isBot: false };
  return Object.values(EmailVisibility).filter((visibility) => deliveryEmailVisibleTo(viewer, someoneElse, visibility));
}

/**
 * Zulip's access_user_by_email (feature level 302): the user an address names for `actor`. The fake
 * `user{id}@{host}` form names the user with that id; a real address names its owner only when the
 * actor's role may see it under the owner's email_address_visibility (bots' always: they are public),
 * so that nobody can confirm an address hidden from them. As in Zulip, this holds for the owner too:
 * a user whose visibility is "nobody" cannot be named by their real address, even by themselves.
 */
export async function accessUserByAddress(db: Db, realm: Realm, actor: User, address: string, rules: UserAccessRules): Promise<User> {
  const fakeId = userIdOfFakeAddress(realm, address);
  if (fakeId !== null) return accessUser(db, realm, actor, fakeId, rules);
  const target = await findUserByDeliveryEmailVisibleAs(db, realm.id, address.trim(), emailVisibilitiesOpenTo(actor));
  if (!target) throw new JsonableError('No such user');
  return checkUserAccess(actor, target, rules);
}

/**
 * The id in an address of exactly the fake form `user{id}@{host}` (Zulip's dummy address regex: as
 * sent, letter case and spaces included), or null.
 */
function userIdOfFakeAddress(realm: Pick<Realm, 'url'>, address: string): number | null {
  const at = address.indexOf('@');
  if (at < 0 || address.slice(at + 1) !== hostnameOf(realm.url)) return null;
  const m = /^user([0-9]+)$/.exec(address.slice(0, at));
  if (!m) return null;
  const id = Number(m[1]);
  return id <= 2_147_483_647 ? id : -1;
}
