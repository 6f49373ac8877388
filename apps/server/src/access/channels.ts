// Every channel permission question: content and metadata access, administering a channel, creating
// channels, adding and removing subscribers, and who may see a channel (event audiences). Answers come
// from the organization role and group-setting values (one recursive membership query per caller,
// then set lookups, see access/group-settings.ts). Organization administrators may always administer.
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { findChannelById, findChannelsByNames, lockChannelForUser } from '../data/channels.repo.ts';
import { audienceUserIds, type Audience } from '../data/events.repo.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { JsonableError, OrganizationOwnerRequiredError, insufficientPermission } from '../errors.ts';
import { holds, loadPermissionSubject, type PermissionSubject } from './group-settings.ts';
import { isAdmin, isGuest, isOwner, Role } from './roles.ts';

export type { PermissionSubject };
export const loadChannelViewer = loadPermissionSubject;

export type ChannelPermissionFields = Pick<
  Channel,
  'inviteOnly' | 'isWebPublic' | 'canAdministerChannelGroupId' | 'canAddSubscribersGroupId' | 'canSubscribeGroupId' | 'canRemoveSubscribersGroupId'
>;

export class CannotAdministerChannelError extends JsonableError {
  constructor() {
    super('You do not have permission to administer this channel.', { code: 'CANNOT_ADMINISTER_CHANNEL' });
  }
}

export class CannotManageDefaultChannelError extends JsonableError {
  constructor() {
    super('You do not have permission to change default channels.', { code: 'CANNOT_MANAGE_DEFAULT_CHANNEL' });
  }
}

export class ChannelDoesNotExistError extends JsonableError {
  constructor(name: string) {
    super(`Channel '${name}' does not exist`, { code: 'STREAM_DOES_NOT_EXIST', data: { stream: name } });
  }
}

const invalidChannelId = () => new JsonableError('Invalid channel ID');

/**
 * Settings whose groups can never include guests (Zulip's allow_everyone_group=False): a guest holds
 * them neither directly nor through a group, whatever the stored value says.
 */
const holdsAsNonGuest = (subject: PermissionSubject, groupId: number | null | undefined) => !isGuest(subject.user) && holds(subject, groupId);

/** Zulip's user_has_content_access: may read the channel's messages. */
export function hasContentAccess(subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean): boolean {
  if (channel.isWebPublic || subscribed) return true;
  if (isGuest(subject.user)) return false;
  if (!channel.inviteOnly) return true;
  return holdsAsNonGuest(subject, channel.canSubscribeGroupId) || holdsAsNonGuest(subject, channel.canAddSubscribersGroupId);
}

/** Zulip's user_has_metadata_access: may see that the channel exists, its settings and subscribers. */
export function hasMetadataAccess(subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean): boolean {
  if (channel.isWebPublic || subscribed) return true;
  if (isGuest(subject.user)) return false;
  if (!channel.inviteOnly) return true;
  if (isAdmin(subject.user)) return true;
  return (
    holdsAsNonGuest(subject, channel.canAdministerChannelGroupId) ||
    holdsAsNonGuest(subject, channel.canAddSubscribersGroupId) ||
    holdsAsNonGuest(subject, channel.canSubscribeGroupId)
  );
}

/**
 * The channels a message of `subject` may link to (#**name**, #**name>topic**): those whose content the
 * sender may access, as Zulip's Markdown decides with the sender as acting user (mention.py
 * get_stream_name_map → streams.py get_content_access_streams). The others are rendered as text, so a
 * link reveals neither that a private channel exists nor its id.
 */
export function channelsLinkableBy<C extends ChannelPermissionFields & { subscribed: boolean }>(subject: PermissionSubject, channels: readonly C[]): C[] {
  return channels.filter((channel) => hasContentAccess(subject, channel, channel.subscribed));
}

/** Organization administrators, and members of the channel's can_administer_channel_group. */
export function isChannelAdministrator(subject: PermissionSubject, channel: ChannelPermissionFields): boolean {
  return isAdmin(subject.user) || holdsAsNonGuest(subject, channel.canAdministerChannelGroupId);
}

async function isSubscribed(db: Db, user: User, channelId: number): Promise<boolean> {
  return (await subscribedChannelIds(db, user.id, [channelId])).has(channelId);
}

/**
 * Zulip's access_stream_for_delete_or_update_requiring_metadata_access: the channel (locked when asked,
 * inside the caller's transaction) if the caller may administer it; `Invalid channel ID` when the caller
 * cannot see it, CANNOT_ADMINISTER_CHANNEL when they can read it but not administer it. Archived
 * channels are included (they can be edited and unarchived).
 */
export async function accessChannelForAdministration(
  db: Db,
  realm: Realm,
  subject: PermissionSubject,
  channelId: number,
  options: { lock: boolean },
): Promise<{ channel: Channel; subscribed: boolean }> {
  let found: { channel: Channel; subscribed: boolean } | null;
  if (options.lock) {
    found = await lockChannelForUser(db, realm.id, channelId, subject.user.id);
  } else {
    const row = await findChannelById(db, realm.id, channelId);
    found = row ? { channel: row, subscribed: await isSubscribed(db, subject.user, row.id) } : null;
  }
  if (!found) throw invalidChannelId();
  const { channel, subscribed } = found;
  if (isChannelAdministrator(subject, channel)) return { channel, subscribed };
  if (hasContentAccess(subject, channel, subscribed)) throw new CannotAdministerChannelError();
  throw invalidChannelId();
}

/**
 * Zulip's access_stream_by_id. Reads (GET /streams/{id}, members) need metadata access only; archived
 * channels stay readable there (Parley decision: their settings and subscribers are kept and can be
 * changed since feature level 362, so clients can show them).
 */
export async function accessChannelById(
  db: Db,
  realm: Realm,
  subject: PermissionSubject,
  channelId: number,
  options: { requireContentAccess: boolean; allowArchived: boolean },
): Promise<{ channel: Channel; subscribed: boolean }> {
  const channel = await findChannelById(db, realm.id, channelId);
  if (!channel || (channel.isArchived && !options.allowArchived)) throw invalidChannelId();
  const subscribed = await isSubscribed(db, subject.user, channel.id);
  const allowed = options.requireContentAccess ? hasContentAccess(subject, channel, subscribed) : hasMetadataAccess(subject, channel, subscribed);
  if (!allowed) throw invalidChannelId();
  return { channel, subscribed };
}

/** Zulip's access_stream_by_name (content access, active channels, case-insensitive name). */
export async function accessChannelByName(db: Db, realm: Realm, subject: PermissionSubject, name: string): Promise<Channel> {
  const error = new JsonableError(`Invalid channel name '${name}'`);
  const [channel] = await findChannelsByNames(db, realm.id, [name]);
  if (!channel || channel.isArchived) throw error;
  if (!hasContentAccess(subject, channel, await isSubscribed(db, subject.user, channel.id))) throw error;
  return channel;
}

/** Web-public channels need the organization to allow spectators (the server always allows them). */
export const webPublicChannelsEnabled = (realm: Realm) => realm.enableSpectatorAccess;

export const canCreatePublicChannels = (subject: PermissionSubject, realm: Realm) => holdsAsNonGuest(subject, realm.canCreatePublicChannelGroupId);
export const canCreatePrivateChannels = (subject: PermissionSubject, realm: Realm) => holdsAsNonGuest(subject, realm.canCreatePrivateChannelGroupId);
export const canCreateWebPublicChannels = (subject: PermissionSubject, realm: Realm) => holdsAsNonGuest(subject, realm.canCreateWebPublicChannelGroupId);

/** Zulip's can_manage_default_streams: organization administrators. */
export const canManageDefaultChannels = (subject: PermissionSubject) => isAdmin(subject.user);

/** Organization permission to set channel topics policies (can_set_topics_policy_group). */
export const canSetTopicsPolicy = (subject: PermissionSubject, realm: Realm) => holdsAsNonGuest(subject, realm.canSetTopicsPolicyGroupId);

/** Web-public requested (on creation or update): enabled in the organization, and the caller allowed. */
export function checkCanMakeWebPublic(subject: PermissionSubject, realm: Realm): void {
  if (!webPublicChannelsEnabled(realm)) throw new JsonableError('Web-public channels are not enabled.');
  if (!canCreateWebPublicChannels(subject, realm)) throw insufficientPermission();
}

/** Zulip's check_channel_creation_permissions, in Zulip's order. */
export function checkCanCreateChannel(
  subject: PermissionSubject,
  realm: Realm,
  request: { inviteOnly: boolean; isWebPublic: boolean; isDefault: boolean; messageRetentionDays: number | null },
): void {
  if (request.inviteOnly && !canCreatePrivateChannels(subject, realm)) throw insufficientPermission();
  if (!request.inviteOnly && !canCreatePublicChannels(subject, realm)) throw insufficientPermission();
  if (request.isDefault && !isAdmin(subject.user)) throw insufficientPermission();
  if (request.inviteOnly && request.isDefault) throw new JsonableError('A default channel cannot be private.');
  if (request.isWebPublic) checkCanMakeWebPublic(subject, realm);
  if (request.messageRetentionDays !== null && !isOwner(subject.user)) throw new OrganizationOwnerRequiredError();
}

/**
 * Changing a channel's privacy (PATCH /streams/{id}): `is_private` needs content access on top of
 * administering (an organization administrator not subscribed to a private channel cannot make it
 * public) and the organization permission to create channels of the target kind; `is_web_public=true`
 * needs web-public channels enabled and the web-public creation permission.
 */
export function checkCanChangePrivacy(
  subject: PermissionSubject,
  realm: Realm,
  channel: ChannelPermissionFields,
  subscribed: boolean,
  requested: { isPrivate?: boolean | undefined; isWebPublic?: boolean | undefined },
): void {
  if (requested.isPrivate !== undefined) {
    if (!hasContentAccess(subject, channel, subscribed)) throw new JsonableError('Channel content access is required.');
    if (requested.isPrivate && !canCreatePrivateChannels(subject, realm)) throw insufficientPermission();
    if (!requested.isPrivate && !canCreatePublicChannels(subject, realm)) throw insufficientPermission();
  }
  if (requested.isWebPublic === true) checkCanMakeWebPublic(subject, realm);
}

/** Adding or removing default channels. */
export function checkCanChangeDefaultChannels(subject: PermissionSubject): void {
  if (!canManageDefaultChannels(subject)) throw new CannotManageDefaultChannelError();
}

/** Setting a topics policy; going back to `inherit` needs no permission (Zulip's validate_topics_policy). */
export function checkCanSetTopicsPolicy(subject: PermissionSubject, realm: Realm, policy: string): void {
  if (policy !== 'inherit' && !canSetTopicsPolicy(subject, realm)) throw insufficientPermission();
}

/** Group settings that grant content access can only be changed by someone with content access (Zulip's list). */
const SETTINGS_REQUIRING_CONTENT_ACCESS: readonly string[] = ['can_add_subscribers_group', 'can_subscribe_group'];

export function checkCanChangeGroupSetting(subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean, setting: string): void {
  if (SETTINGS_REQUIRING_CONTENT_ACCESS.includes(setting) && !hasContentAccess(subject, channel, subscribed)) {
    throw new JsonableError('Channel content access is required.');
  }
}

/** Subscribing others to channels the caller can read: each needs canAddSubscribers. */
export function checkCanSubscribeOthers(subject: PermissionSubject, realm: Realm, channels: ChannelPermissionFields[]): void {
  if (channels.some((c) => !canAddSubscribers(subject, realm, c))) throw insufficientPermission();
}

/**
 * The seed's three ways to remove others: organization administrators (any user, any channel); one's
 * own bots from channels one can access; members of the channel's can_remove_subscribers_group who can
 * access the channel (channel administrators too, as in Zulip). Removing oneself needs nothing.
 */
export function checkCanUnsubscribe(
  subject: PermissionSubject,
  targets: Array<Pick<User, 'id' | 'isBot' | 'botOwnerId'>>,
  channels: Array<ChannelPermissionFields & { id: number }>,
  callerSubscribed: Set<number>,
): void {
  for (const target of targets) {
    if (target.id === subject.user.id) continue;
    const ownBot = directlyControls(subject.user, target);
    for (const channel of channels) {
      const subscribed = callerSubscribed.has(channel.id);
      const allowed = ownBot ? canRemoveOwnBot(subject, channel, subscribed) : canRemoveSubscribers(subject, channel, subscribed);
      if (!allowed) throw insufficientPermission();
    }
  }
}

/** Changing a channel's retention: organization owners only. */
export function checkCanChangeRetention(subject: PermissionSubject): void {
  if (!isOwner(subject.user)) throw new OrganizationOwnerRequiredError();
}

/**
 * The organization-level part of canAddSubscribers (Zulip's legacy `can_subscribe_other_users`): the
 * organization's can_add_subscribers_group, which guests never hold, or an organization administrator.
 */
export const canAddSubscribersAnywhere = (subject: PermissionSubject, realm: Realm) => holdsAsNonGuest(subject, realm.canAddSubscribersGroupId) || isAdmin(subject.user);

/**
 * May the caller subscribe other users to a channel they can read? The organization's
 * can_add_subscribers_group, organization administrators, channel administrators, or the channel's
 * can_add_subscribers_group.
 */
export function canAddSubscribers(subject: PermissionSubject, realm: Realm, channel: ChannelPermissionFields): boolean {
  if (canAddSubscribersAnywhere(subject, realm)) return true;
  if (isGuest(subject.user)) return false;
  return holds(subject, channel.canAdministerChannelGroupId) || holds(subject, channel.canAddSubscribersGroupId);
}

/**
 * May the caller unsubscribe other users from a channel? Organization administrators (any channel);
 * channel administrators; otherwise metadata access plus the channel's can_remove_subscribers_group.
 * Decided per channel (Zulip checks a request's channels as a whole; per channel is the seed's wording).
 */
export function canRemoveSubscribers(subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean): boolean {
  if (isAdmin(subject.user)) return true;
  if (isGuest(subject.user)) return false;
  if (holds(subject, channel.canAdministerChannelGroupId)) return true;
  return hasMetadataAccess(subject, channel, subscribed) && holds(subject, channel.canRemoveSubscribersGroupId);
}

/** Removing a bot one owns: from any channel one can access (seed, op 14). */
export function canRemoveOwnBot(subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean): boolean {
  return hasMetadataAccess(subject, channel, subscribed) || canRemoveSubscribers(subject, channel, subscribed);
}

/** Does the caller act only on themselves or their own bots (Zulip's user_directly_controls_user)? */
export const directlyControls = (actor: User, target: Pick<User, 'id' | 'isBot' | 'botOwnerId'>) =>
  actor.id === target.id || (target.isBot && target.botOwnerId === actor.id);

/**
 * Zulip's bulk_can_access_stream_metadata_user_ids as an audience (resolved in SQL when an event is
 * stored, see data/events.repo.ts): who can see the channel, hence receives its events. Web-public:
 * every active user; public: every non-guest plus subscribed guests; private: subscribers,
 * organization administrators and non-guest members of the groups granting metadata access (the same
 * rules as hasMetadataAccess). Without `subscribers`, subscriptions are left out (who could see the
 * channel without being subscribed).
 */
export function channelAudience(channel: ChannelPermissionFields & { id: number }, options: { subscribers: boolean } = { subscribers: true }): Audience {
  const subscribersOf = options.subscribers ? channel.id : undefined;
  if (channel.isWebPublic) return { everyone: true };
  if (!channel.inviteOnly) return { roleNotIn: [Role.GUEST], subscribersOf };
  return {
    subscribersOf,
    roleIn: [Role.OWNER, Role.ADMINISTRATOR],
    membersOf: { groupIds: [channel.canAdministerChannelGroupId, channel.canAddSubscribersGroupId, channel.canSubscribeGroupId], roleNotIn: [Role.GUEST] },
  };
}

/** Every non-guest user (e.g. the audience of default_streams). */
export const nonGuestAudience = (): Audience => ({ roleNotIn: [Role.GUEST] });

/** Organization owners and administrators (e.g. the audience of invites_changed). */
export const administratorsAudience = (): Audience => ({ roleIn: [Role.OWNER, Role.ADMINISTRATOR] });

/** Zulip's require_non_guest_user for subscribing oneself or others (bots may). */
export function checkCanSubscribe(actor: User): void {
  if (isGuest(actor)) throw new JsonableError('Not allowed for guest users');
}

/**
 * Of `users`, those who cannot see the channel unless subscribed (ascending ids): nobody for
 * web-public channels, guests for public ones; for private ones whoever is outside the channel's
 * audience without its subscribers (one statement).
 */
export async function usersWhoSeeChannelOnlySubscribed(
  /** Read only for private channels (the subscribe fast path has no Prisma transaction to give). */
  db: () => Db,
  realmId: number,
  channel: ChannelPermissionFields & { id: number },
  users: Pick<User, 'id' | 'role'>[],
): Promise<number[]> {
  if (channel.isWebPublic) return [];
  if (!channel.inviteOnly) return users.filter((u) => isGuest(u)).map((u) => u.id).sort((a, b) => a - b);
  const ids = users.map((u) => u.id);
  const seeing = new Set(await audienceUserIds(db(), realmId, { ...channelAudience(channel, { subscribers: false }), only: ids }));
  return ids.filter((id) => !seeing.has(id)).sort((a, b) => a - b);
}

/**
 * Of channels the user is no longer subscribed to, those they can no longer see at all (their client
 * drops them). Group memberships are read only when a private channel needs them.
 */
export async function channelsHiddenFromUnsubscribed<C extends ChannelPermissionFields>(db: Db, user: User, channels: C[]): Promise<C[]> {
  if (isAdmin(user)) return [];
  const needsGroups = !isGuest(user) && channels.some((c) => c.inviteOnly && !c.isWebPublic);
  const subject = needsGroups ? await loadPermissionSubject(db, user) : { user, groups: new Set<number>() };
  return channels.filter((c) => !hasMetadataAccess(subject, c, false));
}
