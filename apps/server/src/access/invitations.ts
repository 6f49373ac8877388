// Who may invite, with which role, to which channels and groups, and who may manage an invitation
// (Zulip's zerver/views/invite.py checks, in its order).
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User, UserGroup } from '../data/models.ts';
import { InvitationError, JsonableError, OrganizationOwnerRequiredError, insufficientPermission } from '../errors.ts';
import { accessChannelById, canAddSubscribers } from './channels.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { isAdmin, isOwner, Role } from './roles.ts';
import { accessUserGroup, checkCanAddMembers } from './user-groups.ts';

/** Zulip's INVITES_MIN_USER_AGE_DAYS: when invitations are not required, newer members cannot invite. */
const MIN_ACCOUNT_AGE_DAYS = 3;

/** Where invitations are not required, members (not administrators) must have joined days ago. */
export function checkAccountOldEnoughToInvite(realm: Realm, caller: User, now = Date.now()): void {
  if (realm.inviteRequired || isAdmin(caller)) return;
  if (caller.dateJoined.getTime() <= now - MIN_ACCOUNT_AGE_DAYS * 86_400_000) return;
  throw new InvitationError('Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.', [], {
    sentInvitations: false,
  });
}

/** Administrators see and manage every invitation; others their own. */
export const seesEveryInvitation = (user: User) => isAdmin(user);

/** The organization's can_invite_users_group (guests and bots were refused before). */
export function checkCanInviteByEmail(subject: PermissionSubject, realm: Realm): void {
  if (!holds(subject, realm.canInviteUsersGroupId)) throw insufficientPermission();
}

/** The organization's create_multiuse_invite_group. */
export function checkCanCreateReusableLink(subject: PermissionSubject, realm: Realm): void {
  if (!holds(subject, realm.createMultiuseInviteGroupId)) throw insufficientPermission();
}

/**
 * Zulip's check_role_based_permissions: only owners invite owners (UNAUTHORIZED_PRINCIPAL); with
 * `requireAdmin`, everyone else needs to be an administrator (a plain BAD_REQUEST, as in Zulip).
 */
export function checkRoleBasedPermissions(user: User, invitedAs: number, options: { requireAdmin: boolean }): void {
  if (invitedAs === Role.OWNER && !isOwner(user)) throw new OrganizationOwnerRequiredError();
  if (options.requireAdmin && !isAdmin(user)) throw new JsonableError('Must be an organization administrator');
}

/**
 * The seed: "a user can invite only to roles equal or stricter than their own" (Zulip's API
 * documentation says the same: a moderator may invite moderators). Owners are invited by owners
 * (`Must be an organization owner`); administrators, and moderators by anyone below a moderator, need
 * `Must be an organization administrator`, Zulip's text. (Zulip's code asks an administrator even for
 * moderator invitations; the seed is explicit, so Parley follows it.)
 */
export function checkCanInviteAs(user: User, invitedAs: number): void {
  const atLeastAsStrict = invitedAs === Role.OWNER ? isOwner(user) : invitedAs === Role.ADMINISTRATOR ? isAdmin(user) : invitedAs === Role.MODERATOR ? isAdmin(user) || user.role === Role.MODERATOR : true;
  checkRoleBasedPermissions(user, invitedAs, { requireAdmin: !atLeastAsStrict });
}

/** Revoking or resending someone else's invitation needs an administrator (an owner for owner invitations). */
export function checkCanManageInvitation(user: User, invitation: { referredById: number; invitedAs: number }): void {
  if (invitation.referredById === user.id) return;
  checkRoleBasedPermissions(user, invitation.invitedAs, { requireAdmin: true });
}

/** Only administrators choose the welcome message of the people they invite. */
export function checkCanSetWelcomeMessage(user: User, text: string | undefined): void {
  if (text !== undefined && !isAdmin(user)) throw new JsonableError('Must be an organization administrator');
}

/**
 * Zulip's access_streams_for_invite: every channel must be readable by the inviter (else
 * `Invalid channel ID <id>. No invites were sent.`), and each must be a default channel or one the
 * inviter may add subscribers to.
 */
export async function accessChannelsForInvite(db: Db, realm: Realm, subject: PermissionSubject, channelIds: number[]): Promise<Channel[]> {
  const channels: Channel[] = [];
  for (const id of [...new Set(channelIds)]) {
    try {
      channels.push((await accessChannelById(db, realm, subject, id, { requireContentAccess: true, allowArchived: false })).channel);
    } catch (error) {
      if (error instanceof JsonableError) throw new JsonableError(`Invalid channel ID ${id}. No invites were sent.`);
      throw error;
    }
  }
  if (channels.some((c) => !c.isDefault && !canAddSubscribers(subject, realm, c))) {
    throw new JsonableError('You do not have permission to subscribe other users to channels.');
  }
  return channels;
}

/** Zulip's access_user_groups_for_invite: each group as for adding members to it (can_add_members_group). */
export async function accessGroupsForInvite(db: Db, realm: Realm, subject: PermissionSubject, groupIds: number[]): Promise<UserGroup[]> {
  const groups: UserGroup[] = [];
  for (const id of [...new Set(groupIds)]) {
    const group = await accessUserGroup(db, realm, id);
    if (group.deactivated) throw new JsonableError('User group is deactivated.');
    checkCanAddMembers(subject, realm, group, []);
    groups.push(group);
  }
  return groups;
}
