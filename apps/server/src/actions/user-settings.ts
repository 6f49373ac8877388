// PATCH /settings (and its deprecated aliases): the caller's own settings, name, password and e-mail
// address; and the confirmation of an e-mail change (the link mailed to the new address).
//
// Every check runs before anything is written, in Zulip's order (setting values, the password, the
// e-mail address, the name), so a refused request changes nothing; then one transaction writes every
// change and stores its events. Zulip applies the parts one after the other (a password change stays
// even when the e-mail address of the same request is refused); Parley does all or nothing.
import { exportConsentEvent } from './exports.ts';
import { createHash, randomInt } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Db } from '../data/db.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { Realm, User } from '../data/models.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { findUserByDeliveryEmail, lockUser } from '../data/users.repo.ts';
import { activeUsersWithRole } from '../data/users-admin.repo.ts';
import {
  EmailChangeStatus,
  clearAttempts,
  countAttempt,
  createEmailChange,
  deleteDraftsOf,
  findEmailChangeByKeyHash,
  lockEmailChangeByKeyHash,
  recentEmailChangeRequests,
  settingsRowOf,
  setEmailChangeStatus,
  updateOwnUserColumns,
  updateSettingsRow,
} from '../data/user-settings.repo.ts';
import { JsonableError, RateLimitedError } from '../errors.ts';
import { requireHuman } from '../access/roles.ts';
import { enqueueEmail } from '../mail/outbox.ts';
import { confirmNewEmailEmail, emailChangedEmail } from '../mail/templates.ts';
import { checkCanChangeOwnEmail, deliveryEmailVisibleTo, mayChangeOwnName, publicEmailOf } from '../access/users.ts';
import { avatarUrl } from '../lib/avatar.ts';
import { checkPasswordStrength, isPlausibleEmail, validateFullName } from '../lib/validation.ts';
import { currentValue, settingChangeEvents, settingParams, settingsColumns, validateSettingValues, type UserSettingValue } from '../lib/user-settings.ts';
import { hashPassword, verifyPassword } from '../security/passwords.ts';
import { presenceEnabledChanged } from './presence.ts';

/** Zulip's `authenticate_by_username` rule: 5 password attempts per 30 minutes (a success starts over). */
export const PASSWORD_ATTEMPTS = { limit: 5, windowSeconds: 1800 } as const;
/** Zulip's `email_change_by_user` rules: 2 requests an hour, 5 a day. */
export const EMAIL_CHANGE_LIMITS = [
  { limit: 2, windowSeconds: 3600 },
  { limit: 5, windowSeconds: 86_400 },
] as const;
/** How long a confirmation link works (Zulip's CONFIRMATION_LINK_DEFAULT_VALIDITY_DAYS). */
export const EMAIL_CHANGE_VALIDITY_SECONDS = 86_400;
/** Where the link mailed to the new address leads (served by http/email-confirmation.ts). */
export const CONFIRM_NEW_EMAIL_PATH = '/accounts/confirm_new_email';

export interface SettingsUpdate {
  fullName?: string;
  email?: string;
  oldPassword?: string;
  newPassword?: string;
  /** The decoded parameters; the settings among them are picked by the table (lib/user-settings.ts). */
  settings: Record<string, unknown>;
}

export async function doUpdateSettings(deps: AppDeps, realm: Realm, user: User, update: SettingsUpdate): Promise<void> {
  requireHuman(user);
  const settings = validateSettingValues(settingParams(update.settings));
  const passwordHash = update.newPassword !== undefined ? await checkPasswordChange(deps, user, update.oldPassword ?? '', update.newPassword) : undefined;
  const newEmail = update.email !== undefined ? await checkEmailChange(deps.db, realm, user, update.email) : null;
  // The organization may forbid name changes: then the name is ignored without an error, as in Zulip.
  const nameAllowed = mayChangeOwnName(realm, user);
  const fullName = update.fullName !== undefined && update.fullName !== user.fullName && nameAllowed ? validateFullName(update.fullName) : undefined;
  if (newEmail !== null) await checkEmailChangeRate(deps.db, user);

  await inTransaction(deps.db, async (tx, afterCommit) => {
    const current = (await lockUser(tx, realm.id, user.id)) ?? user;
    const row = await settingsRowOf(tx, user.id);
    const events: QueuedEvent[] = [];
    const own = (payload: Record<string, unknown>) => events.push({ userIds: [user.id], payload });

    if (passwordHash !== undefined) await updateOwnUserColumns(tx, user.id, { passwordHash });
    if (newEmail !== null) await startEmailChange(tx, deps, realm, current, newEmail);
    if (fullName !== undefined && fullName !== current.fullName) {
      await updateOwnUserColumns(tx, user.id, { fullName });
      events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, full_name: fullName } } });
    }

    const changed = settings.filter(({ setting, value }) => currentValue(setting, row, current) !== value);
    await updateSettingsRow(tx, user.id, settingsColumns(changed));
    let visibility = row.emailAddressVisibility;
    for (const { setting, value } of changed) {
      if (setting.name === 'email_address_visibility') {
        events.push(...(await emailVisibilityEvents(tx, realm, current, visibility, Number(value))));
        visibility = Number(value);
      }
      const shownEmail = publicEmailOf(realm, current, visibility);
      for (const payload of settingChangeEvents(setting, value, shownEmail)) own(payload);
      if (setting.store.table === 'user') await updateOwnUserColumns(tx, user.id, { [setting.store.column]: String(value) });
      if (setting.toEveryone) {
        events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { email: shownEmail, user_id: user.id, [setting.name]: value } } });
      }
      // Drafts stop being kept on the server: those stored are deleted, without events (clients keep theirs).
      if (setting.name === 'enable_drafts_synchronization' && value === false) await deleteDraftsOf(tx, user.id);
      // Presence turned off or on: written at once, so that everyone sees the user as it says.
      if (setting.name === 'presence_enabled') await presenceEnabledChanged(tx, deps, realm, current, value === true, events);
      // Consent to private data exports: the administrators' export consent lists follow it (actions/exports.ts).
      if (setting.name === 'allow_private_data_export') events.push(await exportConsentEvent(tx, realm.id, user.id, value === true));
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
  // A new password starts the count of failed attempts over (Zulip clears it too).
  if (passwordHash !== undefined) await clearAttempts(deps.db, passwordAttemptsKey(user));
}

// ---------------------------------------------------------------------------------------------
// Password

const passwordAttemptsKey = (user: User) => `authenticate_by_username:${user.deliveryEmail.toLowerCase()}`;

/** Checks the current password (counting attempts) and the new one's strength; returns the new hash. */
async function checkPasswordChange(deps: AppDeps, user: User, oldPassword: string, newPassword: string): Promise<string> {
  const key = passwordAttemptsKey(user);
  const { attempts, secondsLeft } = await countAttempt(deps.db, key, PASSWORD_ATTEMPTS.windowSeconds);
  if (attempts > PASSWORD_ATTEMPTS.limit) throw new JsonableError(`You're making too many attempts! Try again in ${Math.floor(secondsLeft)} seconds.`);
  if (!(await verifyPassword(oldPassword, user.passwordHash))) throw new JsonableError('Wrong password!');
  await clearAttempts(deps.db, key);
  checkPasswordStrength(newPassword, 'New password is too weak!');
  return hashPassword(newPassword);
}

// ---------------------------------------------------------------------------------------------
// E-mail address

/** The new address (stripped), or null when it is the current one; Zulip's checks and texts. */
async function checkEmailChange(db: Db, realm: Realm, user: User, raw: string): Promise<string | null> {
  const email = raw.trim();
  if (email === user.deliveryEmail) return null;
  checkCanChangeOwnEmail(realm, user);
  if (!isPlausibleEmail(email)) throw new JsonableError('Invalid address.');
  // Any account with the address, the caller's own included (a change of letter case only), as in Zulip.
  const holder = await findUserByDeliveryEmail(db, realm.id, email);
  if (holder) throw new JsonableError(holder.isActive ? 'Already has an account.' : 'Account has been deactivated.');
  return email;
}

/** 429 when the user asked for too many changes lately (counted from the stored requests). */
async function checkEmailChangeRate(db: Db, user: User): Promise<void> {
  for (const rule of EMAIL_CHANGE_LIMITS) {
    const { count, oldest } = await recentEmailChangeRequests(db, user.id, rule.windowSeconds);
    if (count >= rule.limit && oldest) throw new RateLimitedError(Math.max((oldest.getTime() + rule.windowSeconds * 1000 - Date.now()) / 1000, 0.001));
  }
}

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');
const KEY_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** A confirmation key as Zulip makes them: 24 lowercase letters and digits. */
const newConfirmationKey = () => Array.from({ length: 24 }, () => KEY_ALPHABET[randomInt(KEY_ALPHABET.length)]).join('');

/** Stores the request (revoking earlier ones), marks the address pending and mails the link to it. */
async function startEmailChange(tx: Db, deps: AppDeps, realm: Realm, user: User, newEmail: string): Promise<void> {
  const key = newConfirmationKey();
  await createEmailChange(tx, {
    realmId: realm.id,
    userId: user.id,
    oldEmail: user.deliveryEmail,
    newEmail,
    keyHash: hashKey(key),
    expiresAt: new Date(Date.now() + EMAIL_CHANGE_VALIDITY_SECONDS * 1000),
  });
  await updateOwnUserColumns(tx, user.id, { pendingEmail: newEmail });
  const link = `${realm.url}${CONFIRM_NEW_EMAIL_PATH}/${key}`;
  await enqueueEmail(tx, deps, { to: newEmail, ...confirmNewEmailEmail({ realmName: realm.name, realmUrl: realm.url, oldEmail: user.deliveryEmail, newEmail, link }) });
}

export type EmailChangeLink = { state: 'valid'; newEmail: string } | { state: 'invalid' } | { state: 'expired' };

/** What a confirmation link is worth, without using it (the page that asks to confirm). */
export async function inspectEmailChangeKey(deps: AppDeps, key: string): Promise<EmailChangeLink> {
  if (!/^[a-z0-9]{24}$/.test(key)) return { state: 'invalid' };
  const change = await findEmailChangeByKeyHash(deps.db, hashKey(key));
  if (!change) return { state: 'invalid' };
  if (change.status !== EmailChangeStatus.PENDING || change.expiresAt.getTime() <= Date.now()) return { state: 'expired' };
  return { state: 'valid', newEmail: change.newEmail };
}

export type EmailChangeOutcome =
  | { state: 'confirmed'; oldEmail: string; newEmail: string; realmName: string; realmUrl: string }
  | { state: 'invalid' }
  | { state: 'expired' }
  | { state: 'refused'; message: string };

/**
 * Follows a confirmation link: the address changes now (if the request is still the user's latest, the
 * organization still allows it and nobody took the address meanwhile); the old address is told.
 */
export async function doConfirmEmailChange(deps: AppDeps, key: string): Promise<EmailChangeOutcome> {
  if (!/^[a-z0-9]{24}$/.test(key)) return { state: 'invalid' };
  return inTransaction(deps.db, async (tx, afterCommit): Promise<EmailChangeOutcome> => {
    const change = await lockEmailChangeByKeyHash(tx, hashKey(key));
    if (!change) return { state: 'invalid' };
    if (change.status !== EmailChangeStatus.PENDING || change.expiresAt.getTime() <= Date.now()) return { state: 'expired' };
    const realm = await findRealmById(tx, change.realmId);
    if (!realm || realm.deactivated) return { state: 'refused', message: 'This organization has been deactivated.' };
    const user = await lockUser(tx, realm.id, change.userId);
    if (!user || user.deliveryEmail !== change.oldEmail) return { state: 'expired' };
    if (!user.isActive) return { state: 'refused', message: 'Account is deactivated.' };
    try {
      checkCanChangeOwnEmail(realm, user);
      const holder = await findUserByDeliveryEmail(tx, realm.id, change.newEmail);
      if (holder) throw new JsonableError(holder.isActive ? 'Already has an account.' : 'Account has been deactivated.');
    } catch (error) {
      if (error instanceof JsonableError) return { state: 'refused', message: error.message };
      throw error;
    }
    await setEmailChangeStatus(tx, change.id, EmailChangeStatus.CONFIRMED);
    await updateOwnUserColumns(tx, user.id, { email: change.newEmail, deliveryEmail: change.newEmail, pendingEmail: null });
    const changed = { ...user, email: change.newEmail, deliveryEmail: change.newEmail };
    const visibility = (await settingsRowOf(tx, user.id)).emailAddressVisibility;
    const viewers = await activeUsersWithRole(tx, realm.id);
    const events: QueuedEvent[] = [
      {
        userIds: viewers.filter((v) => deliveryEmailVisibleTo(v, changed, visibility)).map((v) => v.id).sort(ascending),
        payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, delivery_email: change.newEmail } },
      },
      // Avatars are gravatars of the real address: the picture changes with it.
      { realmWide: true, payload: avatarEvent(changed) },
    ];
    // Others learn the new `email` when the address everyone sees changed (it is the real one).
    const shown = publicEmailOf(realm, changed, visibility);
    if (shown !== publicEmailOf(realm, user, visibility)) events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, new_email: shown } } });
    await deps.events.publish(tx, afterCommit, realm.id, events);
    // The old address is told (an account made with an address that is not one has nobody to tell).
    if (isPlausibleEmail(change.oldEmail)) {
      await enqueueEmail(tx, deps, { to: change.oldEmail, ...emailChangedEmail({ realmName: realm.name, realmUrl: realm.url, oldEmail: change.oldEmail, newEmail: change.newEmail }) });
    }
    return { state: 'confirmed', oldEmail: change.oldEmail, newEmail: change.newEmail, realmName: realm.name, realmUrl: realm.url };
  }).catch((error): EmailChangeOutcome => {
    // Someone took the address between the check and the write.
    if (isUniqueViolation(error)) return { state: 'refused', message: 'Already has an account.' };
    throw error;
  });
}

// ---------------------------------------------------------------------------------------------
// Events about the user that others receive

/** Recipient lists are stored ascending (delivery looks queues' users up by binary search). */
const ascending = (a: number, b: number) => a - b;

function avatarEvent(user: User): Record<string, unknown> {
  return {
    type: 'realm_user',
    op: 'update',
    person: { user_id: user.id, avatar_source: user.avatarSource, avatar_url: avatarUrl(user), avatar_url_medium: avatarUrl(user, true), avatar_version: user.avatarVersion },
  };
}

/**
 * email_address_visibility changed: the real address (`delivery_email`) to those who may now see it,
 * null to those who no longer may; and when the address everyone sees changes (to or from "everyone"),
 * the new `email` and the avatar (clients that compute gravatars from `email` can no longer).
 */
async function emailVisibilityEvents(tx: Db, realm: Realm, user: User, before: number, after: UserSettingValue | number): Promise<QueuedEvent[]> {
  const now = Number(after);
  const viewers = await activeUsersWithRole(tx, realm.id);
  const gained = viewers.filter((v) => !deliveryEmailVisibleTo(v, user, before) && deliveryEmailVisibleTo(v, user, now)).map((v) => v.id).sort(ascending);
  const lost = viewers.filter((v) => deliveryEmailVisibleTo(v, user, before) && !deliveryEmailVisibleTo(v, user, now)).map((v) => v.id).sort(ascending);
  const events: QueuedEvent[] = [];
  if (gained.length) events.push({ userIds: gained, payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, delivery_email: user.deliveryEmail } } });
  if (lost.length) events.push({ userIds: lost, payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, delivery_email: null } } });
  if (before === 1 || now === 1) {
    events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: user.id, new_email: publicEmailOf(realm, user, now) } } });
    events.push({ realmWide: true, payload: avatarEvent(user) });
  }
  return events;
}
