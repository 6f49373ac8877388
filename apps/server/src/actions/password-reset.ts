// Password resets of imported accounts (`pnpm manage import --send-password-resets`): Zulip's exports
// carry no passwords, so imported people sign in again by choosing one through a link mailed to them,
// as Zulip's importer leaves them to its "Forgot your password?" e-mail.
//
// The link's key is stateless (no table): `<realm id>.<user id>.<issued, UNIX seconds>.<MAC>`, the MAC
// an HMAC with the server's secret key over those numbers and the account's state: its address, its
// current password hash and how many times it was deactivated (like the state Django's reset tokens,
// Zulip's, are bound to). So it works once (setting a password changes the hash, which voids every
// link issued before), stops at any other password change, at an address change and at a
// deactivation (for good: reactivating the account does not bring it back), and expires
// PASSWORD_RESET_LIFETIME_S after it was issued. The MAC is compared in constant time.
import { timingSafeEqual } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserById } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { updateOwnUserColumns } from '../data/user-settings.repo.ts';
import { inTransaction } from '../data/transactions.ts';
import { enqueueEmail } from '../mail/outbox.ts';
import { passwordResetEmail } from '../mail/password-reset.ts';
import { hashPassword } from '../security/passwords.ts';
import { checkPasswordStrength } from '../lib/validation.ts';

export const PASSWORD_RESET_PATH = '/accounts/password/reset';
/** 3 days, Django's PASSWORD_RESET_TIMEOUT (Zulip's reset links). */
export const PASSWORD_RESET_LIFETIME_S = 3 * 24 * 3600;

type Cipher = Pick<AppDeps, 'cipher'>;
/** What a key is bound to: when any of it changes, the key stops working. */
type KeyedUser = Pick<User, 'id' | 'deliveryEmail' | 'passwordHash' | 'deactivationCount'>;

function mac(deps: Cipher, realmId: number, user: KeyedUser, issued: number): string {
  // The numbers first and the address and hash (free text) last, so that no two states read alike.
  const state = `${realmId}\n${user.id}\n${issued}\n${user.deactivationCount}\n${user.deliveryEmail}\n${user.passwordHash ?? ''}`;
  return deps.cipher.lookupHash(`parley-password-reset-2\n${state}`).slice(0, 40);
}

export function passwordResetKey(deps: Cipher, realmId: number, user: KeyedUser, now = new Date()): string {
  const issued = Math.floor(now.getTime() / 1000);
  return `${realmId}.${user.id}.${issued}.${mac(deps, realmId, user, issued)}`;
}

export type ResetKeyState = { state: 'invalid' } | { state: 'expired' } | { state: 'valid'; realm: Realm; user: User };

/** What a key names: its account when the key is genuine, current and unused. */
export async function inspectPasswordResetKey(deps: Cipher & { db: Db }, key: string, now = new Date()): Promise<ResetKeyState> {
  const m = /^(\d{1,10})\.(\d{1,10})\.(\d{1,12})\.([0-9a-f]{40})$/.exec(key);
  if (!m) return { state: 'invalid' };
  const [realmId, userId, issued] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const user = await findUserById(deps.db, realmId, userId);
  const realm = user ? await findRealmById(deps.db, realmId) : null;
  // A well-formed key of no account answers as a forged key of a real one ('expired': a used link
  // cannot be told from a forged one), so that the page does not tell who has an account.
  if (!user || !realm) return { state: 'expired' };
  const expected = Buffer.from(mac(deps, realmId, user, issued));
  if (!timingSafeEqual(expected, Buffer.from(m[4]!))) return { state: 'expired' }; // used, or the address changed (or forged)
  if (now.getTime() / 1000 - issued > PASSWORD_RESET_LIFETIME_S || !user.isActive || realm.deactivated) return { state: 'expired' };
  return { state: 'valid', realm, user };
}

/** Sets the account's password from a reset link; the link (and every other issued before) stops working. */
export async function doResetPassword(deps: Pick<AppDeps, 'cipher' | 'db'>, key: string, password: string): Promise<ResetKeyState> {
  const link = await inspectPasswordResetKey(deps, key);
  if (link.state !== 'valid') return link;
  checkPasswordStrength(password, 'The password is too weak.');
  const passwordHash = await hashPassword(password);
  return inTransaction(deps.db, async (tx) => {
    // Checked again inside the transaction, against the row as it is now (two submissions of one link).
    await tx.$queryRaw`SELECT id FROM "user" WHERE id = ${link.user.id}::int FOR UPDATE`;
    const again = await inspectPasswordResetKey({ ...deps, db: tx }, key);
    if (again.state !== 'valid') return again;
    await updateOwnUserColumns(tx, link.user.id, { passwordHash });
    return again;
  });
}

/**
 * Queues a reset e-mail to each of `users` (active people with an address; bots are skipped) inside
 * `tx`; returns how many were queued.
 */
export async function queuePasswordResetEmails(
  tx: Db,
  deps: Pick<AppDeps, 'cipher' | 'jobs'>,
  realm: Realm,
  users: Array<KeyedUser & Pick<User, 'isActive' | 'isBot'>>,
  reason: 'import',
): Promise<number> {
  let n = 0;
  for (const user of users) {
    if (!user.isActive || user.isBot) continue;
    const link = `${realm.url}${PASSWORD_RESET_PATH}/${passwordResetKey(deps, realm.id, user)}`;
    await enqueueEmail(tx, deps, { to: user.deliveryEmail, ...passwordResetEmail({ realmName: realm.name, realmUrl: realm.url, email: user.deliveryEmail, link, reason, validDays: PASSWORD_RESET_LIFETIME_S / 86400 }) });
    n++;
  }
  return n;
}

