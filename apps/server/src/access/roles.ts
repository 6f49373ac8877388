// Organization roles and the checks on them. Every role question is answered here.
import { JsonableError, OrganizationAdministratorRequiredError, OrganizationOwnerRequiredError } from '../errors.ts';
import type { User } from '../data/models.ts';

export const Role = { OWNER: 100, ADMINISTRATOR: 200, MODERATOR: 300, MEMBER: 400, GUEST: 600 } as const;
export type RoleValue = (typeof Role)[keyof typeof Role];
export const ALL_ROLES: readonly number[] = Object.values(Role);

export const isOwner = (user: Pick<User, 'role'>) => user.role === Role.OWNER;
export const isAdmin = (user: Pick<User, 'role'>) => user.role === Role.OWNER || user.role === Role.ADMINISTRATOR;
/** `is_moderator` of /register: the moderator role itself (administrators are not reported as moderators, as in Zulip). */
export const isModeratorRole = (user: Pick<User, 'role'>) => user.role === Role.MODERATOR;
export const isGuest = (user: Pick<User, 'role'>) => user.role === Role.GUEST;

/** The role flags of user objects (`is_admin`, `is_owner`, `is_guest`; owners count as administrators). */
export function roleFlagsOf(user: Pick<User, 'role'>): { is_admin: boolean; is_owner: boolean; is_guest: boolean } {
  return { is_admin: isAdmin(user), is_owner: isOwner(user), is_guest: isGuest(user) };
}

/** A human owner: the organization must keep at least one active (role changes, deactivation). */
export const countsAsHumanOwner = (user: Pick<User, 'role' | 'isBot'>) => isOwner(user) && !user.isBot;

export function requireAdmin(user: User): void {
  if (!isAdmin(user)) throw new OrganizationAdministratorRequiredError();
}

export function requireOwner(user: User): void {
  if (!isOwner(user)) throw new OrganizationOwnerRequiredError();
}

/** Zulip's require_member_or_admin: guests and bots are refused. */
export function requireMemberOrAdmin(user: User): void {
  if (user.isBot) throw new JsonableError('This endpoint does not accept bot requests.');
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
}

/** Zulip's human_users_only. */
export function requireHuman(user: User): void {
  if (user.isBot) throw new JsonableError('This endpoint does not accept bot requests.');
}

/**
 * May `actor` change `target`'s role from its current value to `newRole`? Owner role changes need an
 * owner; everything else an administrator.
 */
export function checkCanChangeRole(actor: User, target: User, newRole: number): void {
  if ((newRole === Role.OWNER || target.role === Role.OWNER) && !isOwner(actor)) throw new OrganizationOwnerRequiredError();
  if (!isAdmin(actor)) throw new OrganizationAdministratorRequiredError();
}

/**
 * Who may administer (edit, deactivate, reactivate) another user: organization administrators, and a
 * bot's owner for their own bot. Changes touching the owner role need an owner (checkCanChangeRole,
 * checkCanDeactivateUser).
 */
export function checkCanAdministerUser(actor: User, target: User): void {
  if (isAdmin(actor)) return;
  if (target.isBot && target.botOwnerId === actor.id) return;
  throw new JsonableError('Insufficient permission');
}

/** Changing another user's address: owners holding the server-granted can_change_user_emails permission. */
export function checkCanChangeUserEmail(actor: User): void {
  requireOwner(actor);
  if (!actor.canChangeUserEmails) throw new JsonableError('User not authorized to change user emails');
}

/** Deactivating an owner needs an owner. */
export function checkCanDeactivateUser(actor: User, target: User): void {
  if (isOwner(target) && !isOwner(actor)) throw new OrganizationOwnerRequiredError();
}
