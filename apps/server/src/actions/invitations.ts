// Invitations: POST /invites, reusable links, revoking and resending, and the sign-up that consumes
// them (the pages of http/accounts.ts). Each action runs in one transaction: permissions are checked
// (access/invitations.ts) on the caller as read in it, the invitation rows are locked, the invitation
// e-mails are stored in the outbox and their jobs enqueued in the same transaction (mail/outbox.ts), and
// the events go out after commit.
import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import {
  createInvitation,
  InvitationStatus,
  invitationEmailsSentToday,
  lockInvitation,
  lockInvitationByKeyHash,
  lockInviteCounter,
  logInvitationEmails,
  revokePendingInvitationsOfEmail,
  updateInvitation,
  usersWithDeliveryEmails,
  type InvitationRow,
  type NewInvitation,
} from '../data/invitations.repo.ts';
import { audienceUserIds, type QueuedEvent } from '../data/events.repo.ts';
import { createUser, findUserById } from '../data/users.repo.ts';
import { syncSystemGroupMembership, systemGroupEvents } from '../data/system-groups.repo.ts';
import { addMembers, findGroupsByIds } from '../data/user-groups.repo.ts';
import { defaultChannelIds, shareLockChannels } from '../data/channels.repo.ts';
import { activateSubscriptions } from '../data/subscriptions.repo.ts';
import { InvitationError, JsonableError, type InvitationFailure } from '../errors.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { administratorsAudience, channelAudience, usersWhoSeeChannelOnlySubscribed } from '../access/channels.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { reloadActor } from '../access/users.ts';
import {
  accessChannelsForInvite,
  accessGroupsForInvite,
  checkCanCreateReusableLink,
  checkCanInviteAs,
  checkCanInviteByEmail,
  checkCanManageInvitation,
  checkCanSetWelcomeMessage,
  checkAccountOldEnoughToInvite,
} from '../access/invitations.ts';
import { channelDisplayData, channelFactsRequest } from '../queries/channels.ts';
import { invitationLinkState, invitationLinkStateByKey, invitationPath, isWellFormedInvitationKey, reusableLinkPath, type LinkProblem } from '../queries/invitations.ts';
import { formatChannel, formatSubscription, pickColors } from '../lib/channel-format.ts';
import { formatUser } from '../lib/user-format.ts';
import { checkPasswordStrength, isPlausibleEmail } from '../lib/validation.ts';
import { enqueueEmail } from '../mail/outbox.ts';
import { invitationEmail, signupConfirmationEmail } from '../mail/templates.ts';
import { sendNotificationMessage } from './system-bots.ts';
import { prepareNewUser, type PreparedUser } from './users.ts';
import { applyNewUserDefaults } from './realm-user-defaults.ts';
import { waitingPeriodOver } from '../access/realm.ts';
import { streamCreateEvent } from './channels.ts';

/** Zulip's INVITATION_LINK_VALIDITY_MINUTES default: ten days. */
export const DEFAULT_INVITE_EXPIRY_MINUTES = 14_400;
/** Invitation e-mails an organization may send in 24 hours (Zulip's INVITES_DEFAULT_REALM_DAILY_MAX). */
export const DAILY_INVITATION_EMAILS = 100;
/** Lifetime of the confirmation link sent to an address given on a reusable link's page (Zulip: one day). */
const SIGNUP_CONFIRMATION_MINUTES = 24 * 60;
/**
 * The addresses of `invitee_emails`: split on commas and newlines, `Name <address>` reduced to the
 * address, surrounding whitespace (line ends included) removed, empty entries dropped, duplicates merged
 * case-insensitively (first spelling kept). Whatever is left of a header-injection attempt
 * ("a@b.c\r\nBcc: …") is an entry of its own that fails validation.
 */
export function parseInviteeEmails(raw: string): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const part of raw.split(/[,\n]/)) {
    const named = /<(.*)>/.exec(part);
    const email = (named ? named[1]! : part).trim();
    if (!email || seen.has(email.toLowerCase())) continue;
    seen.add(email.toLowerCase());
    out.push(email);
  }
  return out;
}

/** A key for a link: 160 random bits as 40 hex digits; only its keyed hash is stored. */
function newKey(): string {
  return randomBytes(20).toString('hex');
}

/** A negative number of minutes (Zulip accepts them) makes an invitation that has already expired. */
const expiryOf = (minutes: number | null, from = Date.now()) => (minutes === null ? null : new Date(from + Math.max(0, minutes) * 60_000));

/** Everything an invitation grants, shared by e-mail invitations and reusable links. */
export interface InvitationGrant {
  inviteAs: number;
  /** Minutes until the link expires; null: never. */
  expiresInMinutes: number | null;
  channelIds: number[];
  groupIds: number[];
  includeRealmDefaultSubscriptions: boolean;
  /** Administrators only; undefined: the organization's default. */
  welcomeMessageCustomText: string | undefined;
}

/** The checks shared by POST /invites and POST /invites/multiuse after the permission to invite, in Zulip's order up to the addresses. */
async function checkGrant(tx: Db, realm: Realm, caller: User, subject: Awaited<ReturnType<typeof loadPermissionSubject>>, grant: InvitationGrant, emails?: { raw: string }) {
  checkCanInviteAs(caller, grant.inviteAs);
  let addresses: string[] = [];
  if (emails) {
    addresses = parseInviteeEmails(emails.raw);
    if (addresses.length === 0) throw new JsonableError('You must specify at least one email address.');
  }
  const channels = await accessChannelsForInvite(tx, realm, subject, grant.channelIds);
  const groups = await accessGroupsForInvite(tx, realm, subject, grant.groupIds);
  checkCanSetWelcomeMessage(caller, grant.welcomeMessageCustomText);
  return { addresses, channels, groups };
}

/** Refuses to send `count` more invitation e-mails beyond the organization's daily limit (call with the counter locked). */
async function checkDailyLimit(tx: Db, realmId: number, count: number): Promise<void> {
  if ((await invitationEmailsSentToday(tx, realmId)) + count > DAILY_INVITATION_EMAILS) {
    throw new InvitationError(
      'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
      [],
      { sentInvitations: false, dailyLimitReached: true },
    );
  }
}

/** Administrators and the inviter see the list change (Zulip's notify_invites_changed). */
async function notifyInvitesChanged(tx: Db, deps: Pick<AppDeps, 'events'>, afterCommit: AfterCommit, realm: Realm, referrerId: number): Promise<void> {
  const admins = await audienceUserIds(tx, realm.id, administratorsAudience());
  const referrer = await findUserById(tx, realm.id, referrerId);
  const userIds = [...new Set([...admins, ...(referrer?.isActive ? [referrer.id] : [])])].sort((a, b) => a - b);
  await deps.events.publish(tx, afterCommit, realm.id, [{ userIds, payload: { type: 'invites_changed' } }]);
}

/** Stores the invitation e-mail of `invitation` (whose link carries `key`) in the outbox. */
async function enqueueInvitationEmail(tx: Db, deps: Pick<AppDeps, 'jobs'>, realm: Realm, inviter: User, invitation: InvitationRow, key: string): Promise<void> {
  const content = invitationEmail({
    realmName: realm.name,
    realmUrl: realm.url,
    inviterName: inviter.fullName,
    inviterEmail: inviter.deliveryEmail,
    invitedAs: invitation.invitedAs,
    link: `${realm.url}${invitationPath(key)}`,
    expiresAt: invitation.expiresAt,
  });
  await enqueueEmail(tx, deps, { to: invitation.email!, ...content, ...(isPlausibleEmail(inviter.deliveryEmail) ? { replyTo: inviter.deliveryEmail } : {}) });
}

function newInvitationRow(realm: Realm, caller: User, grant: InvitationGrant, channels: Channel[], groupIds: number[], keyHash: string): Omit<NewInvitation, 'email' | 'notifyReferrerOnJoin'> {
  return {
    realmId: realm.id,
    referredById: caller.id,
    invitedAs: grant.inviteAs,
    expiresAt: expiryOf(grant.expiresInMinutes),
    channelIds: channels.map((c) => c.id),
    groupIds,
    includeRealmDefaultSubscriptions: grant.includeRealmDefaultSubscriptions,
    welcomeMessageCustomText: grant.welcomeMessageCustomText ?? null,
    confirmationKeyHash: keyHash,
  };
}

// ---------------------------------------------------------------------------------------------
// POST /invites

export interface SendInvitesRequest extends InvitationGrant {
  inviteeEmails: string;
  notifyReferrerOnJoin: boolean;
}

/**
 * POST /invites. Zulip's order: guests and bots; the organization's invite permission; the role; no
 * address; each channel; each group; the welcome text; then, with the organization's invitation
 * counter locked, the daily limit, the account age, malformed addresses (nothing is sent), addresses
 * that already have accounts (the others are invited, and the request answers INVITATION_FAILED with
 * `sent_invitations: true`).
 */
export async function doSendInvites(deps: AppDeps, realm: Realm, actor: User, request: SendInvitesRequest): Promise<void> {
  requireMemberOrAdmin(actor);
  const skipped = await inTransaction(deps.db, async (tx, afterCommit) => {
    const caller = await reloadActor(tx, realm, actor);
    const subject = await loadPermissionSubject(tx, caller);
    checkCanInviteByEmail(subject, realm);
    const { addresses, channels, groups } = await checkGrant(tx, realm, caller, subject, request, { raw: request.inviteeEmails });

    await lockInviteCounter(tx, realm.id);
    await checkDailyLimit(tx, realm.id, addresses.length);
    checkAccountOldEnoughToInvite(realm, caller);

    const invalid: InvitationFailure[] = addresses.filter((a) => !isPlausibleEmail(a)).map((a) => [a, 'Invalid address.', false]);
    const wellFormed = addresses.filter((a) => isPlausibleEmail(a));
    const accounts = new Map((await usersWithDeliveryEmails(tx, realm.id, wellFormed)).map((u) => [u.deliveryEmail.toLowerCase(), u]));
    const skipped: InvitationFailure[] = [];
    const invitees: string[] = [];
    for (const address of wellFormed) {
      const account = accounts.get(address.toLowerCase());
      if (!account) invitees.push(address);
      else skipped.push([address, account.isActive ? 'Already has an account.' : 'Account has been deactivated.', !account.isActive]);
    }
    if (invalid.length) throw new InvitationError("Some emails did not validate, so we didn't send any invitations.", [...invalid, ...skipped], { sentInvitations: false });
    if (invitees.length === 0) throw new InvitationError("We weren't able to invite anyone.", skipped, { sentInvitations: false });

    const groupIds = groups.map((g) => g.id);
    for (const email of invitees) {
      const key = newKey();
      const row = await createInvitation(tx, {
        ...newInvitationRow(realm, caller, request, channels, groupIds, deps.cipher.lookupHash(key)),
        email,
        notifyReferrerOnJoin: request.notifyReferrerOnJoin,
      });
      await enqueueInvitationEmail(tx, deps, realm, caller, row, key);
    }
    await logInvitationEmails(tx, realm.id, invitees.length);
    await notifyInvitesChanged(tx, deps, afterCommit, realm, caller.id);
    return skipped;
  });
  if (skipped.length) {
    throw new InvitationError(
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      skipped,
      { sentInvitations: true },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// POST /invites/multiuse, DELETE /invites/{id}, DELETE /invites/multiuse/{id}, POST /invites/{id}/resend

/** POST /invites/multiuse: the organization's create_multiuse_invite_group, then POST /invites' checks. Returns the link. */
export async function doCreateReusableInviteLink(deps: AppDeps, realm: Realm, actor: User, grant: InvitationGrant): Promise<string> {
  requireMemberOrAdmin(actor);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const caller = await reloadActor(tx, realm, actor);
    const subject = await loadPermissionSubject(tx, caller);
    checkCanCreateReusableLink(subject, realm);
    const { channels, groups } = await checkGrant(tx, realm, caller, subject, grant);
    const key = newKey();
    await createInvitation(tx, {
      ...newInvitationRow(realm, caller, grant, channels, groups.map((g) => g.id), deps.cipher.lookupHash(key)),
      email: null,
      // Zulip tells nobody about sign-ups through reusable links.
      notifyReferrerOnJoin: false,
      isMultiuse: true,
      keyCiphertext: deps.cipher.encrypt(key),
    });
    await notifyInvitesChanged(tx, deps, afterCommit, realm, caller.id);
    return `${realm.url}${reusableLinkPath(key)}`;
  });
}

const noSuchInvitation = () => new JsonableError('No such invitation');

/** A pending e-mail invitation of the organization, locked; `No such invitation` otherwise. */
async function lockEmailInvitation(tx: Db, realm: Realm, id: number): Promise<InvitationRow> {
  const invitation = await lockInvitation(tx, realm.id, id);
  if (!invitation || invitation.isMultiuse || invitation.multiuseId !== null || invitation.status !== InvitationStatus.PENDING) throw noSuchInvitation();
  return invitation;
}

/** DELETE /invites/{invite_id}: the inviter, or an administrator (an owner for invitations to become owner). */
export async function doRevokeInvite(deps: AppDeps, realm: Realm, actor: User, id: number): Promise<void> {
  requireMemberOrAdmin(actor);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const caller = await reloadActor(tx, realm, actor);
    const invitation = await lockEmailInvitation(tx, realm, id);
    checkCanManageInvitation(caller, invitation);
    await updateInvitation(tx, invitation.id, { status: InvitationStatus.REVOKED });
    await notifyInvitesChanged(tx, deps, afterCommit, realm, invitation.referredById);
  });
}

/** DELETE /invites/multiuse/{invite_id}: as revoking an e-mail invitation; a revoked link says so. */
export async function doRevokeReusableInviteLink(deps: AppDeps, realm: Realm, actor: User, id: number): Promise<void> {
  requireMemberOrAdmin(actor);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const caller = await reloadActor(tx, realm, actor);
    const link = await lockInvitation(tx, realm.id, id);
    if (!link || !link.isMultiuse) throw noSuchInvitation();
    checkCanManageInvitation(caller, link);
    if (link.status === InvitationStatus.REVOKED) throw new JsonableError('Invitation has already been revoked');
    await updateInvitation(tx, link.id, { status: InvitationStatus.REVOKED });
    await notifyInvitesChanged(tx, deps, afterCommit, realm, link.referredById);
  });
}

/**
 * POST /invites/{invite_id}/resend: the e-mail again, with a new key (only hashes are stored, so the
 * old link cannot be sent again; it stops working). The expiry date stays. Counts towards the daily
 * limit. An expired invitation cannot be resent (`No such invitation`: it is no longer listed).
 */
export async function doResendInvite(deps: AppDeps, realm: Realm, actor: User, id: number): Promise<void> {
  requireMemberOrAdmin(actor);
  await inTransaction(deps.db, async (tx) => {
    const caller = await reloadActor(tx, realm, actor);
    const invitation = await lockEmailInvitation(tx, realm, id);
    checkCanManageInvitation(caller, invitation);
    const inviter = await findUserById(tx, realm.id, invitation.referredById);
    if (!inviter?.isActive || (invitation.expiresAt && invitation.expiresAt <= new Date())) throw noSuchInvitation();
    await lockInviteCounter(tx, realm.id);
    await checkDailyLimit(tx, realm.id, 1);
    const key = newKey();
    const updated = await updateInvitation(tx, invitation.id, { confirmationKeyHash: deps.cipher.lookupHash(key) });
    await enqueueInvitationEmail(tx, deps, realm, inviter, updated, key);
    await logInvitationEmails(tx, realm.id, 1);
  });
}

// ---------------------------------------------------------------------------------------------
// Sign-up (pages of http/accounts.ts)

export type SignupProblem = LinkProblem | 'account-exists' | 'daily-limit';
export type SignupResult<T> = ({ ok: true } & T) | { ok: false; problem: SignupProblem; realm: Realm | null };

/**
 * The page of a reusable link: the visitor gives an address; Parley e-mails it a single-use link (valid
 * a day, and no longer than the reusable link) that leads to the sign-up form. Counts towards the
 * organization's daily limit of invitation e-mails. A malformed address is a JsonableError (the page
 * shows its message).
 */
export async function doRequestSignupFromLink(deps: AppDeps, key: string, rawEmail: string): Promise<SignupResult<{ email: string; realm: Realm }>> {
  if (!isWellFormedInvitationKey(key)) return { ok: false, problem: 'invalid', realm: null };
  const email = rawEmail.trim();
  if (!isPlausibleEmail(email)) throw new JsonableError('Please enter a valid e-mail address.');
  return inTransaction(deps.db, async (tx) => {
    const state = await invitationLinkState(tx, await lockInvitationByKeyHash(tx, deps.cipher.lookupHash(key)), 'reusable');
    if (!state.ok) return state;
    const { invitation: link, realm } = state;
    if ((await usersWithDeliveryEmails(tx, realm.id, [email])).length) return { ok: false, problem: 'account-exists', realm };
    await lockInviteCounter(tx, realm.id);
    if ((await invitationEmailsSentToday(tx, realm.id)) + 1 > DAILY_INVITATION_EMAILS) return { ok: false, problem: 'daily-limit', realm };
    const confirmationKey = newKey();
    const dayFromNow = expiryOf(SIGNUP_CONFIRMATION_MINUTES)!;
    const confirmation = await createInvitation(tx, {
      realmId: realm.id,
      email,
      referredById: link.referredById,
      invitedAs: link.invitedAs,
      expiresAt: link.expiresAt && link.expiresAt < dayFromNow ? link.expiresAt : dayFromNow,
      channelIds: link.channelIds,
      groupIds: link.groupIds,
      includeRealmDefaultSubscriptions: link.includeRealmDefaultSubscriptions,
      notifyReferrerOnJoin: link.notifyReferrerOnJoin,
      welcomeMessageCustomText: link.welcomeMessageCustomText,
      confirmationKeyHash: deps.cipher.lookupHash(confirmationKey),
      multiuseId: link.id,
    });
    const content = signupConfirmationEmail({ realmName: realm.name, realmUrl: realm.url, link: `${realm.url}${invitationPath(confirmationKey)}`, expiresAt: confirmation.expiresAt });
    await enqueueEmail(tx, deps, { to: email, ...content });
    await logInvitationEmails(tx, realm.id, 1);
    return { ok: true, email, realm };
  });
}

/**
 * The sign-up form of a single-use link: creates the account with the invitation's role, channels
 * (and the organization's default channels when the invitation asked for them) and groups, marks the
 * invitation used and revokes the address's other pending invitations, tells the inviter (a direct
 * message from the notification bot) when asked, and sends the events a new user causes. A bad name
 * or weak password is a JsonableError (the form shows its message); a link that cannot be used is a
 * problem of the result.
 */
export async function doAcceptInvitation(deps: AppDeps, key: string, form: { fullName: string; password: string; language?: string }): Promise<SignupResult<{ user: User; realm: Realm }>> {
  const before = await invitationLinkStateByKey(deps, key, 'single');
  if (!before.ok) return before;
  checkPasswordStrength(form.password);
  // Validation and the (slow) password hash before any lock is taken.
  const prepared = await prepareNewUser({ email: before.invitation.email!, fullName: form.fullName, password: form.password, role: before.invitation.invitedAs, ...(form.language ? { language: form.language } : {}) });
  try {
    return await inTransaction(deps.db, async (tx, afterCommit): Promise<SignupResult<{ user: User; realm: Realm }>> => {
      const state = await invitationLinkState(tx, await lockInvitationByKeyHash(tx, deps.cipher.lookupHash(key)), 'single');
      if (!state.ok) return state;
      const { invitation, realm, referrer } = state;
      if ((await usersWithDeliveryEmails(tx, realm.id, [invitation.email!])).length) return { ok: false, problem: 'account-exists', realm };

      const { user, events } = await insertInvitedUser(tx, realm, { ...prepared, email: invitation.email!, role: invitation.invitedAs });
      events.push(...(await joinGroups(tx, realm, user, invitation.groupIds)));
      const channelIds = [...invitation.channelIds, ...(invitation.includeRealmDefaultSubscriptions ? await defaultChannelIds(tx, realm.id) : [])];
      events.push(...(await subscribeNewUser(tx, realm, user, channelIds)));
      await deps.events.publish(tx, afterCommit, realm.id, events);

      await updateInvitation(tx, invitation.id, { status: InvitationStatus.USED, createdUserId: user.id });
      await revokePendingInvitationsOfEmail(tx, realm.id, invitation.email!, invitation.id);
      await notifyInvitesChanged(tx, deps, afterCommit, realm, referrer.id);
      // As in Zulip, the notification bot tells the inviter in a direct message.
      if (invitation.notifyReferrerOnJoin) {
        await sendNotificationMessage(tx, afterCommit, deps, realm, referrer, `@_**${user.fullName}|${user.id}** joined ${realm.name} through your invitation.`);
      }
      return { ok: true, user, realm };
    });
  } catch (error) {
    // Another sign-up of the same address won the race.
    if (isUniqueViolation(error)) return { ok: false, problem: 'account-exists', realm: before.realm };
    throw error;
  }
}

/**
 * The new user, their system group and the realm_user add event every member receives. This is
 * actions/users.ts insertUser without its subscription to the organization's default channels: an
 * invitation decides those (include_realm_default_subscriptions), as in Zulip. The API key is created
 * on first use (fetch_api_key).
 */
async function insertInvitedUser(tx: Db, realm: Realm, prepared: PreparedUser): Promise<{ user: User; events: QueuedEvent[] }> {
  const user = await createUser(tx, {
    realmId: realm.id,
    email: prepared.email,
    deliveryEmail: prepared.email,
    fullName: prepared.fullName,
    role: prepared.role,
    passwordHash: prepared.passwordHash,
  });
  const membership = await syncSystemGroupMembership(tx, realm.id, user.id, user.role, waitingPeriodOver(realm, user));
  // The organization's defaults for new users (PATCH /realm/user_settings_defaults), the browser's language first.
  const { emailAddressVisibility } = await applyNewUserDefaults(tx, realm, user.id, prepared.language);
  return {
    user,
    events: [
      // The real address is public only when the defaults make it so (email_address_visibility).
      { realmWide: true, payload: { type: 'realm_user', op: 'add', person: formatUser(user, { realm, viewer: user, clientGravatar: false, emailVisibility: emailAddressVisibility, profileValues: [] }) } },
      ...systemGroupEvents(user.id, membership).map((payload) => ({ realmWide: true as const, payload })),
    ],
  };
}

/** The invitation's groups that still exist (named, not system groups) gain the user. */
async function joinGroups(tx: Db, realm: Realm, user: User, groupIds: number[]): Promise<QueuedEvent[]> {
  const groups = (await findGroupsByIds(tx, realm.id, groupIds)).filter((g) => g.name !== null && !g.isSystemGroup).sort((a, b) => a.id - b.id);
  const events: QueuedEvent[] = [];
  for (const group of groups) {
    await addMembers(tx, group.id, [user.id]);
    events.push({ realmWide: true, payload: { type: 'user_group', op: 'add_members', group_id: group.id, user_ids: [user.id] } });
  }
  return events;
}

/**
 * Subscribes the new user to the channels that still exist and are not archived, with the events
 * actions/subscriptions.ts sends for any subscription: the stream creation for channels the user could
 * not see without it, the user's subscription add, and peer_add for everyone else who sees the channel.
 */
async function subscribeNewUser(tx: Db, realm: Realm, user: User, channelIds: number[]): Promise<QueuedEvent[]> {
  const channels = (await shareLockChannels(tx, realm.id, [...new Set(channelIds)])).filter((c) => !c.isArchived);
  if (channels.length === 0) return [];
  const colors = pickColors(new Set(), channels.length);
  const activation = await activateSubscriptions(
    tx,
    realm.id,
    channels.map((c, i) => ({ userId: user.id, channelId: c.id, color: colors[i]! })),
    channelFactsRequest(channels, { withSubscribers: true }),
  );
  const rows = new Map(activation.rows.map((r) => [r.channelId, r]));
  const added = channels.filter((c) => rows.has(c.id));
  if (added.length === 0) return [];
  const data = await channelDisplayData(tx, realm.id, added, activation.facts!);
  const events: QueuedEvent[] = [];
  for (const channel of added) {
    if ((await usersWhoSeeChannelOnlySubscribed(() => tx, realm.id, channel, [user])).length) events.push({ userIds: [user.id], payload: streamCreateEvent([formatChannel(channel, data)]) });
  }
  events.push({
    userIds: [user.id],
    payload: { type: 'subscription', op: 'add', subscriptions: added.map((c) => formatSubscription(c, rows.get(c.id)!, data, { subscribers: data.subscribers?.get(c.id) ?? [] })) },
  });
  for (const channel of added) {
    events.push({ audience: { ...channelAudience(channel), except: [user.id] }, payload: { type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: [user.id] } });
  }
  return events;
}

