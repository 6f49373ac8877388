// Presence rows (table user_presence, migration 20261127130000_presence): one per user who ever
// reported presence. Every write of an organization's rows takes its presence lock first and draws
// update ids from user_presence_update_id_seq under it, so that ids commit in increasing order within
// an organization (a reader who saw id n has seen every id below it: deltas never miss a change), and
// announces the organization's newest id on PRESENCE_CHANNEL in the same transaction (delivered at
// commit), for the per-process copies of queries/presence.ts.
import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';

/** Serialises the presence writes of one organization (pg_advisory_xact_lock(PRESENCE_LOCK, realm id)). */
export const PRESENCE_LOCK = 7265023;
/** NOTIFY channel: `<realm id>:<newest update id>` after presence of the organization changed. */
export const PRESENCE_CHANNEL = 'parley_presence';

export async function lockPresenceOfRealm(db: RawSql, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(${PRESENCE_LOCK}::int, ${realmId}::int)`;
}

/** A user of the organization with what a presence write needs: their row (null times without one) and settings. */
export interface PresenceTarget {
  user_id: number;
  is_active: boolean;
  is_bot: boolean;
  presence_enabled: boolean;
  delivery_email: string;
  email_address_visibility: number;
  date_joined: Date;
  last_connected_time: Date | null;
  last_active_time: Date | null;
}

/** The users among `userIds` of the organization (unknown ids left out), read after the presence lock. */
export function presenceTargets(db: RawSql, realmId: number, userIds: number[]): PromiseLike<PresenceTarget[]> {
  return db.$queryRaw<PresenceTarget[]>`
    SELECT u.id AS user_id, u.is_active, u.is_bot, COALESCE(s.presence_enabled, true) AS presence_enabled,
      u.delivery_email, COALESCE(s.email_address_visibility, 1) AS email_address_visibility, u.date_joined,
      p.last_connected_time, p.last_active_time
    FROM "user" u
    LEFT JOIN user_settings s ON s.user_id = u.id
    LEFT JOIN user_presence p ON p.user_id = u.id
    WHERE u.id = ANY(${userIds}::int[]) AND u.realm_id = ${realmId}::int`;
}

export interface PresenceWrite {
  userId: number;
  connected: Date;
  active: Date | null;
}

/**
 * Writes the rows (one multi-row upsert), each with a new update id; the caller holds the organization's
 * presence lock. Returns the ids given, by user.
 */
export async function writePresence(db: RawSql, realmId: number, rows: PresenceWrite[]): Promise<Map<number, number>> {
  if (rows.length === 0) return new Map();
  const written = await db.$queryRaw<{ user_id: number; last_update_id: bigint }[]>`
    INSERT INTO user_presence (user_id, realm_id, last_connected_time, last_active_time, last_update_id)
    SELECT w.user_id, ${realmId}::int, w.connected::timestamp(3), w.active::timestamp(3), nextval('user_presence_update_id_seq')
    FROM unnest(${rows.map((r) => r.userId)}::int[], ${rows.map((r) => r.connected.toISOString())}::text[], ${rows.map((r) => r.active?.toISOString() ?? null)}::text[])
      AS w(user_id, connected, active)
    ON CONFLICT (user_id) DO UPDATE SET
      last_connected_time = excluded.last_connected_time,
      last_active_time = excluded.last_active_time,
      last_update_id = excluded.last_update_id
    RETURNING user_id, last_update_id`;
  return new Map(written.map((r) => [r.user_id, Number(r.last_update_id)]));
}

/** Deletes a user's row (turning presence_enabled off starts them over); the caller holds the presence lock. */
export async function deletePresence(db: RawSql, userId: number): Promise<void> {
  await db.$executeRaw`DELETE FROM user_presence WHERE user_id = ${userId}::int`;
}

/** Tells every process that the organization's presence changed up to `newestId` (at commit). */
export async function announcePresenceChange(db: RawSql, realmId: number, newestId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${PRESENCE_CHANNEL}, ${`${realmId}:${newestId}`})`;
}

/** A stored presence with what formatting it needs. */
export interface PresenceRow {
  user_id: number;
  last_update_id: bigint;
  last_connected_time: Date;
  last_active_time: Date | null;
  date_joined: Date;
  delivery_email: string;
  email_address_visibility: number;
  is_active: boolean;
  is_bot: boolean;
  presence_enabled: boolean;
}

const presenceColumns = Prisma.sql`p.user_id, p.last_update_id, p.last_connected_time, p.last_active_time, u.date_joined,
  u.delivery_email, COALESCE(s.email_address_visibility, 1) AS email_address_visibility, u.is_active, u.is_bot,
  COALESCE(s.presence_enabled, true) AS presence_enabled`;

/**
 * The organization's rows: all of them, or those changed after `afterUpdateId` and those of `userIds`
 * (a refresh of a copy). Deactivated users and bots are included, marked: the caller filters.
 */
export function presenceRowsOfRealm(db: Db, realmId: number, since: { afterUpdateId: number; userIds: number[] } | null): Promise<PresenceRow[]> {
  const filter = since
    ? Prisma.sql`AND (p.last_update_id > ${since.afterUpdateId}::bigint OR p.user_id = ANY(${since.userIds}::int[]))`
    : Prisma.empty;
  return db.$queryRaw<PresenceRow[]>`
    SELECT ${presenceColumns}
    FROM user_presence p JOIN "user" u ON u.id = p.user_id LEFT JOIN user_settings s ON s.user_id = p.user_id
    WHERE p.realm_id = ${realmId}::int ${filter}`;
}

/**
 * What POST /register's presence state reads, in its snapshot: the active humans' rows last connected
 * at or after `connectedSince` (none when null).
 */
export async function presenceRowsForState(db: RawSql, realmId: number, connectedSince: Date): Promise<PresenceRow[]> {
  return db.$queryRaw<PresenceRow[]>`
    SELECT ${presenceColumns}
    FROM user_presence p JOIN "user" u ON u.id = p.user_id LEFT JOIN user_settings s ON s.user_id = p.user_id
    WHERE p.realm_id = ${realmId}::int AND p.last_connected_time >= ${connectedSince} AND u.is_active AND NOT u.is_bot`;
}

/** One user's row (null when they never reported presence). */
export async function presenceRowOfUser(db: Db, userId: number): Promise<{ last_connected_time: Date; last_active_time: Date | null } | null> {
  const rows = await db.$queryRaw<{ last_connected_time: Date; last_active_time: Date | null }[]>`
    SELECT last_connected_time, last_active_time FROM user_presence WHERE user_id = ${userId}::int`;
  return rows[0] ?? null;
}

/** A user named by GET /users/{user_id_or_email}/presence, with their e-mail visibility. */
export interface PresenceSubject {
  id: number;
  isActive: boolean;
  isBot: boolean;
  deliveryEmail: string;
  emailVisibility: number;
  dateJoined: Date;
  presenceEnabled: boolean;
}

const subjectColumns = Prisma.sql`u.id, u.is_active AS "isActive", u.is_bot AS "isBot", u.delivery_email AS "deliveryEmail",
  COALESCE(s.email_address_visibility, 1) AS "emailVisibility", u.date_joined AS "dateJoined",
  COALESCE(s.presence_enabled, true) AS "presenceEnabled"`;

export async function presenceSubjectById(db: Db, realmId: number, userId: number): Promise<PresenceSubject | null> {
  const rows = await db.$queryRaw<PresenceSubject[]>`
    SELECT ${subjectColumns} FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE u.id = ${userId}::int AND u.realm_id = ${realmId}::int`;
  return rows[0] ?? null;
}

/** Users of the organization whose real address is `address` (case-insensitive). */
export function presenceSubjectsByDeliveryEmail(db: Db, realmId: number, address: string): Promise<PresenceSubject[]> {
  return db.$queryRaw<PresenceSubject[]>`
    SELECT ${subjectColumns} FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE u.realm_id = ${realmId}::int AND lower(u.delivery_email) = lower(${address.trim()})`;
}
