// A user's own settings and account changes (PATCH /settings): the user_settings row, the user's own
// columns (name, time zone, password, pending address), failed-password counters, and the pending
// e-mail changes (table `email_change`, keys stored as SHA-256).
import type { UserSettings } from '@parley/db';
import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';

export type UserSettingsRow = UserSettings;

/** The user's settings row, or null when the account has none (read-only: POST /register). */
export async function readSettingsRow(db: RawSql, userId: number): Promise<UserSettingsRow | null> {
  const [row] = await db.$queryRaw<UserSettingsRow[]>`SELECT ${modelColumns(Prisma.UserSettingsScalarFieldEnum, 's')} FROM user_settings s WHERE s.user_id = ${userId}::int`;
  return row ?? null;
}

/** The user's settings row; one is created with the defaults when the user has none (accounts made behind Parley's back). */
export async function settingsRowOf(db: Db, userId: number): Promise<UserSettingsRow> {
  return (await db.userSettings.findUnique({ where: { userId } })) ?? db.userSettings.create({ data: { userId } });
}

export async function updateSettingsRow(db: Db, userId: number, data: Partial<Omit<UserSettingsRow, 'userId'>>): Promise<void> {
  if (Object.keys(data).length === 0) return;
  await db.userSettings.update({ where: { userId }, data });
}

/** The user's own columns that PATCH /settings and the e-mail confirmation change. */
export async function updateOwnUserColumns(
  db: Db,
  userId: number,
  data: { fullName?: string; timezone?: string; passwordHash?: string; pendingEmail?: string | null; email?: string; deliveryEmail?: string },
): Promise<void> {
  if (Object.keys(data).length === 0) return;
  await db.user.update({ where: { id: userId }, data });
}

/** Deletes every draft the user stored (turning enable_drafts_synchronization off); no events. */
export async function deleteDraftsOf(db: Db, userId: number): Promise<number> {
  return db.$executeRaw`DELETE FROM draft WHERE user_id = ${userId}::int`;
}

// ---------------------------------------------------------------------------------------------
// Counters of attempts (table rate_limit, shared with the API rate limiter under other key prefixes):
// a fixed window that starts with the first attempt. Timestamps are UTC wall time, as Prisma writes them.

/** Counts one attempt under `key`; returns the attempts in the current window (this one included) and the seconds it has left. */
export async function countAttempt(db: Db, key: string, windowSeconds: number): Promise<{ attempts: number; secondsLeft: number }> {
  const [row] = await db.$queryRaw<Array<{ points: number; seconds_left: number }>>`
    INSERT INTO rate_limit AS r (key, points, expire)
    VALUES (${key}, 1, (now() AT TIME ZONE 'UTC') + make_interval(secs => ${windowSeconds}::int))
    ON CONFLICT (key) DO UPDATE SET
      points = CASE WHEN r.expire IS NULL OR r.expire <= (now() AT TIME ZONE 'UTC') THEN 1 ELSE r.points + 1 END,
      expire = CASE WHEN r.expire IS NULL OR r.expire <= (now() AT TIME ZONE 'UTC') THEN EXCLUDED.expire ELSE r.expire END
    RETURNING points, extract(epoch FROM expire - (now() AT TIME ZONE 'UTC'))::float8 AS seconds_left`;
  return { attempts: row!.points, secondsLeft: Math.max(0, row!.seconds_left) };
}

export async function clearAttempts(db: Db, key: string): Promise<void> {
  await db.$executeRaw`DELETE FROM rate_limit WHERE key = ${key}`;
}

// ---------------------------------------------------------------------------------------------
// Pending e-mail changes

export interface EmailChangeRow {
  id: number;
  realmId: number;
  userId: number;
  oldEmail: string;
  newEmail: string;
  status: number;
  expiresAt: Date;
}

export const EmailChangeStatus = { PENDING: 0, CONFIRMED: 1, REVOKED: 2 } as const;

/** Requests the user made within the last `seconds`, and when the oldest of them was made. */
export async function recentEmailChangeRequests(db: Db, userId: number, seconds: number): Promise<{ count: number; oldest: Date | null }> {
  const since = new Date(Date.now() - seconds * 1000);
  const rows = await db.emailChange.findMany({ where: { userId, createdAt: { gt: since } }, select: { createdAt: true }, orderBy: { createdAt: 'asc' } });
  return { count: rows.length, oldest: rows[0]?.createdAt ?? null };
}

/** Stores a new request and revokes the user's earlier pending ones (only the newest link works). */
export async function createEmailChange(db: Db, data: { realmId: number; userId: number; oldEmail: string; newEmail: string; keyHash: string; expiresAt: Date }): Promise<void> {
  await db.emailChange.updateMany({ where: { userId: data.userId, status: EmailChangeStatus.PENDING }, data: { status: EmailChangeStatus.REVOKED } });
  await db.emailChange.create({ data });
}

/** The request a key hash belongs to, locked for the confirmation. */
export async function lockEmailChangeByKeyHash(db: Db, keyHash: string): Promise<EmailChangeRow | null> {
  await db.$queryRaw`SELECT id FROM email_change WHERE key_hash = ${keyHash} FOR UPDATE`;
  return db.emailChange.findUnique({ where: { keyHash }, select: { id: true, realmId: true, userId: true, oldEmail: true, newEmail: true, status: true, expiresAt: true } });
}

/** The request a key hash belongs to (no lock: the page that asks for confirmation). */
export async function findEmailChangeByKeyHash(db: Db, keyHash: string): Promise<EmailChangeRow | null> {
  return db.emailChange.findUnique({ where: { keyHash }, select: { id: true, realmId: true, userId: true, oldEmail: true, newEmail: true, status: true, expiresAt: true } });
}

export async function setEmailChangeStatus(db: Db, id: number, status: number): Promise<void> {
  await db.emailChange.update({ where: { id }, data: { status } });
}
