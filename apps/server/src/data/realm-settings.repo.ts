// The realm area's rows besides the realm itself: the defaults of new users' settings (table
// realm_user_default), the full-member system group as the waiting period shapes it, and what the
// retention job reads and deletes.
import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';
import type { UserSettings } from './models.ts';

/** A moment as the UTC wall time Prisma stores in `timestamp` columns. */
const utc = (at: Date) => Prisma.sql`(${at.toISOString()}::timestamptz AT TIME ZONE 'UTC')`;

// ---------------------------------------------------------------------------------------------
// New users' settings (Zulip's RealmUserDefault): only the settings an administrator changed are stored.

/** The stored defaults of the organization's new users (setting name → value); empty when none was changed. */
export async function readUserDefaults(db: RawSql, realmId: number): Promise<Record<string, unknown>> {
  const [row] = await db.$queryRaw<Array<{ settings: unknown }>>`SELECT settings FROM realm_user_default WHERE realm_id = ${realmId}::int`;
  return (row?.settings ?? {}) as Record<string, unknown>;
}

/** The stored defaults, locked until the transaction ends (the row is created when missing). */
export async function lockUserDefaults(db: Db, realmId: number): Promise<Record<string, unknown>> {
  await db.$executeRaw`INSERT INTO realm_user_default (realm_id) VALUES (${realmId}::int) ON CONFLICT (realm_id) DO NOTHING`;
  const [row] = await db.$queryRaw<Array<{ settings: Record<string, unknown> }>>`SELECT settings FROM realm_user_default WHERE realm_id = ${realmId}::int FOR UPDATE`;
  return row?.settings ?? {};
}

export async function writeUserDefaults(db: Db, realmId: number, settings: Record<string, unknown>): Promise<void> {
  await db.realmUserDefault.update({ where: { realmId }, data: { settings: settings as Prisma.InputJsonObject } });
}

/** A new user's settings, from the organization's defaults (the row users.repo.ts createUser made, or a new one). */
export async function writeNewUserSettings(db: Db, userId: number, data: Omit<UserSettings, 'userId'>): Promise<void> {
  await db.userSettings.upsert({ where: { userId }, create: { ...data, userId }, update: data });
}

// ---------------------------------------------------------------------------------------------
// Full members

/**
 * Brings role:fullmembers in step with the waiting period: members (role `memberRole`) who joined at
 * or before `cutoff` join it, and direct members who are not such members leave it (Zulip's
 * update_users_in_full_members_system_group; deactivated users' memberships are kept in step too, as
 * there). Answers who joined and who left, ascending.
 */
export async function syncFullMembers(db: Db, q: { fullMembersGroupId: number; membersGroupId: number; memberRole: number; cutoff: Date; userIds?: number[] }): Promise<{ added: number[]; removed: number[] }> {
  const only = q.userIds ? Prisma.sql`AND u.id = ANY(${q.userIds}::int[])` : Prisma.empty;
  const removed = await db.$queryRaw<Array<{ id: number }>>`
    DELETE FROM user_group_member gm USING "user" u
    WHERE gm.group_id = ${q.fullMembersGroupId}::int AND u.id = gm.user_id ${only}
      AND (u.role <> ${q.memberRole}::int OR u.date_joined > ${utc(q.cutoff)})
    RETURNING u.id`;
  const added = await db.$queryRaw<Array<{ id: number }>>`
    INSERT INTO user_group_member (group_id, user_id)
    SELECT ${q.fullMembersGroupId}::int, u.id FROM user_group_member gm JOIN "user" u ON u.id = gm.user_id
    WHERE gm.group_id = ${q.membersGroupId}::int AND u.role = ${q.memberRole}::int AND u.date_joined <= ${utc(q.cutoff)} ${only}
      AND NOT EXISTS (SELECT 1 FROM user_group_member f WHERE f.group_id = ${q.fullMembersGroupId}::int AND f.user_id = u.id)
    ORDER BY u.id
    ON CONFLICT DO NOTHING
    RETURNING user_id AS id`;
  const sorted = (rows: Array<{ id: number }>) => rows.map((r) => r.id).sort((a, b) => a - b);
  return { added: sorted(added), removed: sorted(removed) };
}

/** Active organizations with a waiting period (the periodic promotion's work list). */
export async function realmsWithWaitingPeriod(db: Db): Promise<number[]> {
  const rows = await db.realm.findMany({ where: { deactivated: false, waitingPeriodThreshold: { gt: 0 } }, select: { id: true }, orderBy: { id: 'asc' } });
  return rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Message retention

/**
 * The channels whose messages expire, with their retention in days: the channel's own
 * (`message_retention_days`; -1 keeps them for ever) or else the organization's (null keeps them).
 */
export async function channelsWithRetention(db: Db): Promise<Array<{ realmId: number; channelId: number; days: number }>> {
  return db.$queryRaw<Array<{ realmId: number; channelId: number; days: number }>>`
    SELECT c.realm_id AS "realmId", c.id AS "channelId", COALESCE(c.message_retention_days, r.message_retention_days) AS days
    FROM channel c JOIN realm r ON r.id = c.realm_id
    WHERE NOT r.deactivated AND COALESCE(c.message_retention_days, r.message_retention_days) > 0
    ORDER BY c.realm_id, c.id`;
}

/** Organizations whose direct messages expire, with their retention in days. */
export async function realmsWithRetention(db: Db): Promise<Array<{ realmId: number; days: number }>> {
  const rows = await db.realm.findMany({ where: { deactivated: false, messageRetentionDays: { gt: 0 } }, select: { id: true, messageRetentionDays: true }, orderBy: { id: 'asc' } });
  return rows.map((r) => ({ realmId: r.id, days: r.messageRetentionDays! }));
}

/**
 * A channel's oldest messages sent before `cutoff`, up to `limit`, locked until the transaction ends.
 * Message ids follow the order messages were stored in, and a message's date is when it was stored
 * (moves keep both), so a channel's expired messages are the first entries of its (channel_id, id)
 * index: the walk stops at the first message that has not expired, one index probe when nothing is
 * due, and the index sends already maintain serves it.
 */
export async function lockExpiredChannelMessages(db: Db, q: { channelId: number; cutoff: Date; limit: number }): Promise<number[]> {
  const head = await db.$queryRaw<Array<{ id: number; expired: boolean }>>`
    SELECT m.id, m.date_sent < ${utc(q.cutoff)} AS expired FROM message m WHERE m.channel_id = ${q.channelId}::int ORDER BY m.id LIMIT ${q.limit}::int`;
  const stop = head.findIndex((m) => !m.expired);
  const ids = (stop < 0 ? head : head.slice(0, stop)).map((m) => m.id);
  if (ids.length === 0) return [];
  // Under the lock, as they are now (a move may have taken one elsewhere meanwhile).
  const locked = await db.$queryRaw<Array<{ id: number }>>`
    SELECT m.id FROM message m WHERE m.id = ANY(${ids}::int[]) AND m.channel_id = ${q.channelId}::int AND m.date_sent < ${utc(q.cutoff)} ORDER BY m.id FOR UPDATE`;
  return locked.map((m) => m.id);
}

/**
 * An organization's oldest direct messages sent before `cutoff`, up to `limit`, locked until the
 * transaction ends (the partial index on direct messages' dates, migration 20261127170000).
 */
export async function lockExpiredDirectMessages(db: Db, q: { realmId: number; cutoff: Date; limit: number }): Promise<number[]> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`
    SELECT m.id FROM message m WHERE m.realm_id = ${q.realmId}::int AND m.channel_id IS NULL AND m.date_sent < ${utc(q.cutoff)}
    ORDER BY m.date_sent, m.id LIMIT ${q.limit}::int FOR UPDATE`;
  return rows.map((m) => m.id);
}
