// Domain actions on users. Each runs in one transaction, checks the caller's permissions itself (through
// access/) on rows read under the locks it holds, and emits its events after commit.
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Db } from '../data/db.ts';
import { startCaughtUp } from '../data/deferred-rows.repo.ts';
import type { Realm, User } from '../data/models.ts';
import {
  countActiveHumanOwners,
  countActiveUsers,
  createUser,
  findApiKey,
  findUserByDeliveryEmail,
  lockUser,
  lockRealm,
  updateUser,
  upsertApiKey,
} from '../data/users.repo.ts';
import { syncSystemGroupMembership, systemGroupEvents } from '../data/system-groups.repo.ts';
import { activeUsersWithRole, deactivateBotsOwnedBy, emailVisibilityOf } from '../data/users-admin.repo.ts';
import { deleteAllPublicStreamsQueuesOfUser, deleteEventQueuesOfUsers } from '../data/event-queues.repo.ts';
import { roleChangeEndsAllPublicChannelQueues } from '../access/event-queues.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { generateApiKey } from '../security/secrets.ts';
import { hashPassword } from '../security/passwords.ts';
import { changeProfileDataOfUser } from './profile-fields.ts';
import { checkCanChangeRole, checkCanChangeUserEmail, checkCanDeactivateUser, countsAsHumanOwner, requireAdmin, requireHuman, Role } from '../access/roles.ts';
import { accessUserForAdministration, deliveryEmailVisibleTo, publicEmailOf, reloadActor } from '../access/users.ts';
import { formatUser } from '../lib/user-format.ts';
import { subscribeToDefaultChannels } from './subscriptions.ts';
import { applyNewUserDefaults } from './realm-user-defaults.ts';
import { waitingPeriodOver } from '../access/realm.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { checkPasswordStrength, isPlausibleEmail, validateEmailAddress, validateFullName } from '../lib/validation.ts';
import { enqueueEmail } from '../mail/outbox.ts';
import { deactivationNoticeEmail } from '../mail/templates.ts';
import { botOwnerChangeEvents, checkBotReactivation, realmBotUpdate } from './bot-events.ts';
import { setBotOwner } from '../data/bots.repo.ts';
import type { StoredEvent } from '../data/events.repo.ts';

export interface NewUser {
  email: string;
  fullName: string;
  password: string | null;
  role: number;
  /** The language the sign-up's browser asked for (else the organization's default_language). */
  language?: string;
}

export async function doCreateUser(deps: AppDeps, realm: Realm, input: NewUser): Promise<{ user: User; apiKey: string }> {
  const prepared = await prepareNewUser(input);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const created = await insertUser(tx, deps, realm, prepared);
    afterCommit(() => deps.events.announce(realm.id));
    return created;
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError(`Email '${prepared.email}' already in use`);
    throw error;
  });
}

/** POST /users: an administrator creates a member with a password (Zulip's checks, in its order). */
export async function checkCreateUser(deps: AppDeps, realm: Realm, actor: User, input: { email: string; fullName: string; password: string }): Promise<User> {
  requireAdmin(actor);
  if (!isPlausibleEmail(input.email)) throw new JsonableError('Bad name or username');
  checkPasswordStrength(input.password);
  const { user } = await doCreateUser(deps, realm, { ...input, role: Role.MEMBER });
  return user;
}

export interface PreparedUser {
  email: string;
  fullName: string;
  passwordHash: string | null;
  role: number;
  /** A bot Parley itself speaks through (a system bot): no default channels. */
  systemBot?: { kind: string; botType: number };
  /** A bot a user created (POST /bots, manage create-bot): no password, no default channels. */
  bot?: { botType: number; ownerId: number };
  /** `U`: the user starts with an uploaded avatar, stored under its first version's paths (a bot created with one). */
  avatarSource?: string;
  /** See NewUser. */
  language?: string;
}

/** Validation and password hashing, done before any transaction opens. */
export async function prepareNewUser(input: NewUser): Promise<PreparedUser> {
  return {
    email: validateEmailAddress(input.email),
    fullName: validateFullName(input.fullName),
    passwordHash: input.password ? await hashPassword(input.password) : null,
    role: input.role,
    ...(input.language ? { language: input.language } : {}),
  };
}

/** Creates the user, its settings, system-group membership and API key inside `tx`. */
export async function insertUser(tx: Db, deps: Pick<AppDeps, 'cipher' | 'events'>, realm: Realm, input: PreparedUser): Promise<{ user: User; apiKey: string }> {
  const { email, fullName, passwordHash, role } = input;
  if (await findUserByDeliveryEmail(tx, realm.id, email)) throw new JsonableError(`Email '${email}' already in use`);
  const bot = input.systemBot
    ? { isBot: true, botType: input.systemBot.botType, botOwnerId: null, systemBot: input.systemBot.kind }
    : input.bot
      ? { isBot: true, botType: input.bot.botType, botOwnerId: input.bot.ownerId }
      : {};
  const user = await createUser(tx, { realmId: realm.id, email, deliveryEmail: email, fullName, role, passwordHash, ...bot, ...(input.avatarSource ? { avatarSource: input.avatarSource } : {}) });
  await startCaughtUp(tx, realm.id, user.id);
  const membership = await syncSystemGroupMembership(tx, realm.id, user.id, user.role, waitingPeriodOver(realm, user));
  // Humans start with the organization's defaults (PATCH /realm/user_settings_defaults); bots with the
  // table's (their addresses are everyone's to see, as in Zulip).
  const { emailAddressVisibility } = input.systemBot || input.bot ? { emailAddressVisibility: 1 } : await applyNewUserDefaults(tx, realm, user.id, input.language);
  const apiKey = generateApiKey();
  await upsertApiKey(tx, user.id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey));
  await deps.events.enqueue(tx, realm.id, [
    // The whole user, as every member sees it in GET /users (the e-mail address as their visibility shows it).
    { realmWide: true, payload: { type: 'realm_user', op: 'add', person: formatUser(user, { realm, viewer: user, clientGravatar: false, emailVisibility: emailAddressVisibility, profileValues: [] }) } },
    ...systemGroupEvents(user.id, membership).map((payload) => ({ realmWide: true as const, payload })),
    ...(input.systemBot || input.bot ? [] : await subscribeToDefaultChannels(tx, realm, user)),
  ]);
  return { user, apiKey };
}

/** The user's API key (shared by all their devices, as in Zulip); created on first use. */
export async function getOrCreateApiKey(deps: AppDeps, user: User): Promise<string> {
  const row = await findApiKey(deps.db, user.id);
  if (row) return deps.cipher.decrypt(row.ciphertext);
  return doRotateApiKey(deps, user);
}

export async function doRotateApiKey(deps: AppDeps, user: User): Promise<string> {
  const apiKey = generateApiKey();
  await upsertApiKey(deps.db, user.id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey));
  return apiKey;
}

export interface UserUpdate {
  fullName?: string;
  role?: number;
  profileData?: Array<{ id: number; value?: unknown }>;
  newEmail?: string;
}

/**
 * PATCH /users/{user_id}. `actor` is the caller (null for the management CLI, which is not checked).
 * Role changes are serialised on the realm row, and the caller and the target are read again under
 * that lock, so "the only owner keeps the role" and "only owners change owners" hold under concurrency.
 * Checks in Zulip's order: access to the target, role and e-mail permissions, then the values.
 */
export async function doUpdateUser(deps: AppDeps, realm: Realm, actor: User | null, targetId: number, update: UserUpdate): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if (update.role !== undefined) await lockRealm(tx, realm.id);
    const caller = actor && update.role !== undefined ? await reloadActor(tx, realm, actor) : actor;
    const target = caller ? await accessUserForAdministration(tx, realm, caller, targetId, { lock: true }) : await lockUser(tx, realm.id, targetId);
    if (!target) throw new JsonableError('No such user');
    if (caller && update.role !== undefined && update.role !== target.role) checkCanChangeRole(caller, target, update.role);
    if (caller && update.newEmail !== undefined) checkCanChangeUserEmail(caller);
    const fullName = update.fullName !== undefined && update.fullName.trim() !== '' ? validateFullName(update.fullName) : undefined;
    const newEmail = update.newEmail !== undefined ? validateEmailAddress(update.newEmail) : undefined;
    const events: Array<Record<string, unknown>> = [];
    if (update.role !== undefined && update.role !== target.role) {
      if (target.isActive && (await isOnlyHumanOwner(tx, realm, target))) {
        throw new JsonableError('The owner permission cannot be removed from the only organization owner.');
      }
      events.push(...(await applyRoleChange(tx, realm, target, update.role)));
    }
    const privateEvents: Array<{ userIds: number[]; payload: Record<string, unknown> }> = [];
    if (fullName !== undefined && fullName !== target.fullName) {
      await updateUser(tx, target.id, { fullName });
      events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, full_name: fullName } });
      // A bot's owner and the administrators keep a list of bots (realm_bots).
      if (target.isBot) privateEvents.push(await realmBotUpdate(tx, realm.id, target, { user_id: target.id, full_name: fullName }));
    }
    if (newEmail !== undefined && newEmail.toLowerCase() !== target.deliveryEmail.toLowerCase()) {
      const holder = await findUserByDeliveryEmail(tx, realm.id, newEmail);
      if (holder && holder.id !== target.id) throw new JsonableError(`Email '${newEmail}' already in use`);
      await updateUser(tx, target.id, { email: newEmail, deliveryEmail: newEmail });
      // The real address goes only to those allowed to see it (the target's email_address_visibility).
      const visibility = (await emailVisibilityOf(tx, [target.id])).get(target.id) ?? 1;
      const viewers = await activeUsersWithRole(tx, realm.id);
      privateEvents.push({
        userIds: viewers.filter((v) => deliveryEmailVisibleTo(v, target, visibility)).map((v) => v.id),
        payload: { type: 'realm_user', op: 'update', person: { user_id: target.id, delivery_email: newEmail } },
      });
      // The address everyone sees changes only when it is the real one.
      const shown = publicEmailOf(realm, { ...target, deliveryEmail: newEmail }, visibility);
      if (shown !== publicEmailOf(realm, target, visibility)) events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, new_email: shown } });
    }
    const profileEvents = update.profileData?.length ? await changeProfileDataOfUser(tx, realm, caller, target, update.profileData) : [];
    await deps.events.publish(tx, afterCommit, realm.id, [...events.map((payload) => ({ realmWide: true as const, payload })), ...privateEvents, ...profileEvents]);
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError(`Email '${update.newEmail?.trim()}' already in use`);
    throw error;
  });
}

/**
 * DELETE /users/{user_id}: an administrator deactivates another user (bots go through the bot API).
 * Serialised on the realm row with role changes and other deactivations; the caller and the target are
 * read again under that lock, so "only owners deactivate owners" and "the organization keeps an owner"
 * hold under concurrency.
 */
/**
 * DELETE /users/{id}. With `notificationComment` (even empty) the user is told by e-mail, in the same
 * transaction, as Zulip does when `deactivation_notification_comment` is given.
 */
export async function doDeactivateUser(deps: AppDeps, realm: Realm, actor: User, targetId: number, options: { notificationComment?: string } = {}): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const caller = await reloadActor(tx, realm, actor);
    const target = await accessUserForAdministration(tx, realm, caller, targetId, { lock: true });
    if (target.isBot) throw new JsonableError('No such user');
    requireAdmin(caller);
    checkCanDeactivateUser(caller, target);
    if (!target.isActive) throw new JsonableError('User is deactivated');
    // An administrator's attempt is a plain error; one's own has its own code (doDeactivateOwnUser).
    if (await isOnlyHumanOwner(tx, realm, target)) throw new JsonableError('Cannot deactivate the only organization owner');
    await deactivate(tx, deps, realm, target, afterCommit);
    if (options.notificationComment !== undefined && isPlausibleEmail(target.deliveryEmail)) {
      const notice = deactivationNoticeEmail({ realmName: realm.name, realmUrl: realm.url, comment: options.notificationComment.trim() });
      await enqueueEmail(tx, deps, { to: target.deliveryEmail, ...notice });
    }
  });
}

/**
 * DELETE /users/me: a human deactivates their own account, unless they are the organization's only
 * user or only owner (CANNOT_DEACTIVATE_LAST_USER). Serialised on the realm row like every
 * deactivation and role change, with the account read again under that lock: of concurrent requests
 * with one key, the first deactivates and the others find the account deactivated and get what any
 * later request with that key gets, 401 `Account is deactivated`.
 */
export async function doDeactivateOwnUser(deps: AppDeps, realm: Realm, user: User): Promise<void> {
  requireHuman(user);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const self = await lockUser(tx, realm.id, user.id);
    if (!self || !self.isActive) throw new UnauthorizedError('Account is deactivated');
    if ((await countActiveUsers(tx, realm.id)) <= 1) {
      throw new JsonableError('Cannot deactivate the only user.', {
        code: 'CANNOT_DEACTIVATE_LAST_USER',
        data: { is_last_owner: false, entity: 'user' },
      });
    }
    if (await isOnlyHumanOwner(tx, realm, self)) {
      throw new JsonableError('Cannot deactivate the only organization owner.', {
        code: 'CANNOT_DEACTIVATE_LAST_USER',
        data: { is_last_owner: true, entity: 'organization owner' },
      });
    }
    await deactivate(tx, deps, realm, self, afterCommit);
  });
}

/**
 * Changes a user's role inside `tx` (the caller checked the permission and the last-owner rule): the
 * row, their all-public-channels queues when the new role may not have them, their system groups;
 * returns the realm-wide events (`realm_user` role, then the system groups').
 */
export async function applyRoleChange(tx: Db, realm: Realm, target: User, role: number): Promise<Array<Record<string, unknown>>> {
  await updateUser(tx, target.id, { role });
  // Their long-polls end at this change's realm_user event (access/event-queues.ts eventEndsQueue).
  if (roleChangeEndsAllPublicChannelQueues(role)) await deleteAllPublicStreamsQueuesOfUser(tx, target.id);
  const membership = await syncSystemGroupMembership(tx, realm.id, target.id, role, waitingPeriodOver((await findRealmById(tx, realm.id)) ?? realm, target));
  return [{ type: 'realm_user', op: 'update', person: { user_id: target.id, role } }, ...systemGroupEvents(target.id, membership)];
}

/** Is `user` the organization's only active human owner? (Call with the realm row locked.) */
async function isOnlyHumanOwner(tx: Db, realm: Realm, user: User): Promise<boolean> {
  return countsAsHumanOwner(user) && (await countActiveHumanOwners(tx, realm.id)) <= 1;
}

/**
 * Deactivates the user and the bots they own (as Zulip's do_deactivate_user cascades), and stores the
 * events: `realm_user` for everyone, and for each bot a `realm_bot` update for its owner and the
 * administrators. Also DELETE /bots/{bot_id} (actions/bots.ts).
 */
export async function deactivate(tx: Db, deps: AppDeps, realm: Realm, target: User, afterCommit: AfterCommit): Promise<void> {
  await updateUser(tx, target.id, { isActive: false });
  const bots = await deactivateBotsOwnedBy(tx, target.id);
  // Their long-polls end with BAD_EVENT_QUEUE_ID (or 401) rather than waiting for events they may not see.
  await deleteEventQueuesOfUsers(tx, [target.id, ...bots]);
  const botEvents: StoredEvent[] = [];
  for (const bot of [...(target.isBot ? [target] : []), ...bots.map((id) => ({ id, botOwnerId: target.id }))]) {
    botEvents.push(await realmBotUpdate(tx, realm.id, bot, { user_id: bot.id, is_active: false }));
  }
  await deps.events.publish(tx, afterCommit, realm.id, [
    ...[target.id, ...bots].map((userId) => ({ realmWide: true as const, payload: { type: 'realm_user', op: 'update', person: { user_id: userId, is_active: false } } })),
    ...botEvents,
  ]);
}

/**
 * POST /users/{user_id}/reactivate: checked on the target's locked row; already active is a no-op (as in
 * Zulip). A bot needs the caller to be allowed to create a bot of its type and its name to be free
 * among active users (checked first, as Zulip does); a bot whose owner is deactivated becomes the
 * caller's.
 */
export async function doReactivateUser(deps: AppDeps, realm: Realm, actor: User, targetId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const target = await accessUserForAdministration(tx, realm, actor, targetId, { lock: true });
    if (target.isBot) await checkBotReactivation(tx, realm, actor, target);
    if (target.isActive) return;
    await updateUser(tx, target.id, { isActive: true });
    const events: Array<StoredEvent | { realmWide: true; payload: Record<string, unknown> }> = [
      { realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: true } } },
    ];
    if (target.isBot) {
      const owner = target.botOwnerId === null ? null : await lockUser(tx, realm.id, target.botOwnerId);
      const takeOver = owner !== null && !owner.isActive && owner.id !== actor.id;
      const bot = takeOver ? { ...target, isActive: true, botOwnerId: actor.id } : { ...target, isActive: true };
      if (takeOver) await setBotOwner(tx, target.id, actor.id);
      events.push(await realmBotUpdate(tx, realm.id, bot, { user_id: target.id, is_active: true }));
      if (takeOver) events.push(...(await botOwnerChangeEvents(tx, deps.cipher, realm, bot, actor, owner.id)));
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
}
