// Role questions of the read models (the /register state above all): what a user is told about their
// own role and abilities, and which parts of the organization their role lets them see. Each answer
// is named for what it decides and built on access/roles.ts and the group-setting checks, so that no
// read model compares roles itself (issue 20).
import type { Realm, User } from '../data/models.ts';
import { canAddSubscribersAnywhere, canCreatePrivateChannels, canCreatePublicChannels, canCreateWebPublicChannels } from './channels.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { isGuest } from './roles.ts';

type WithRole = Pick<User, 'role'>;

/**
 * The organization's default channels (`realm_default_streams`): not for guests, who could not see
 * most of them; Zulip answers them an empty list, and default-channel events never reach them.
 */
export const seesDefaultChannels = (user: WithRole) => !isGuest(user);

/** `can_create_streams` (Zulip's legacy flag): may create channels of at least one kind. */
export const canCreateSomeChannel = (subject: PermissionSubject, realm: Realm) =>
  canCreatePublicChannels(subject, realm) || canCreatePrivateChannels(subject, realm) || canCreateWebPublicChannels(subject, realm);

/** `can_subscribe_other_users` (Zulip's legacy flag): access/channels.ts canAddSubscribersAnywhere. */
export const canSubscribeOthersToChannels = canAddSubscribersAnywhere;

/**
 * `can_invite_others_to_realm`: the organization's can_invite_users_group, for humans who are not
 * guests (the invitation endpoints refuse guests and bots first, as Zulip's require_member_or_admin).
 */
export const canInviteOthersToRealm = (subject: PermissionSubject, realm: Realm) =>
  !subject.user.isBot && !isGuest(subject.user) && holds(subject, realm.canInviteUsersGroupId);
