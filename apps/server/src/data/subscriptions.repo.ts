// Subscriptions (user × channel rows, kept with active=false when unsubscribed so that personal
// settings survive) and the subscriber queries. Subscribers are always active users.
import type { Db } from './db.ts';
import { Prisma } from './db.ts';

/** Of `channelIds`, the channels the user is actively subscribed to. */
export async function subscribedChannelIds(db: Db, userId: number, channelIds?: number[]): Promise<Set<number>> {
  const rows = await db.subscription.findMany({
    where: { userId, active: true, ...(channelIds ? { channelId: { in: channelIds } } : {}) },
    select: { channelId: true },
  });
  return new Set(rows.map((r) => r.channelId));
}

/** Every row (active or not) of the given users on the given channels. */
export const subscriptionRows = (db: Db, userIds: number[], channelIds: number[]) =>
  db.subscription.findMany({ where: { userId: { in: userIds }, channelId: { in: channelIds } } });

export async function insertSubscriptions(db: Db, rows: Array<{ userId: number; channelId: number; color: string }>): Promise<void> {
  if (rows.length) await db.subscription.createMany({ data: rows.map((r) => ({ ...r, active: true })), skipDuplicates: true });
}

export async function setSubscriptionsActive(db: Db, pairs: Array<{ userId: number; channelId: number }>, active: boolean): Promise<void> {
  if (pairs.length === 0) return;
  await db.$executeRaw`
    UPDATE subscription SET active = ${active}
    WHERE (user_id, channel_id) IN (${Prisma.join(pairs.map((p) => Prisma.sql`(${p.userId}::int, ${p.channelId}::int)`))})`;
}

/** Active subscribers (active users) of each channel, sorted by id. */
export async function subscriberIdsOfChannels(db: Db, channelIds: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>(channelIds.map((id) => [id, []]));
  if (channelIds.length === 0) return out;
  const rows = await db.subscription.findMany({
    where: { channelId: { in: channelIds }, active: true, user: { isActive: true } },
    select: { channelId: true, userId: true },
    orderBy: { userId: 'asc' },
  });
  for (const r of rows) out.get(r.channelId)!.push(r.userId);
  return out;
}

export async function subscriberIds(db: Db, channelId: number): Promise<number[]> {
  return (await subscriberIdsOfChannels(db, [channelId])).get(channelId)!;
}

export async function subscriberCounts(db: Db, channelIds: number[]): Promise<Map<number, number>> {
  if (channelIds.length === 0) return new Map();
  const rows = await db.subscription.groupBy({
    by: ['channelId'],
    where: { channelId: { in: channelIds }, active: true, user: { isActive: true } },
    _count: { _all: true },
  });
  return new Map(rows.map((r) => [r.channelId, r._count._all]));
}

/** Bot subscribers of each channel (for partial subscriber lists). */
export async function botSubscriberIdsOfChannels(db: Db, channelIds: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>(channelIds.map((id) => [id, []]));
  if (channelIds.length === 0) return out;
  const rows = await db.subscription.findMany({
    where: { channelId: { in: channelIds }, active: true, user: { isActive: true, isBot: true } },
    select: { channelId: true, userId: true },
    orderBy: { userId: 'asc' },
  });
  for (const r of rows) out.get(r.channelId)!.push(r.userId);
  return out;
}

/** The user's active subscriptions with their channels. */
export const activeSubscriptionsOfUser = (db: Db, userId: number) =>
  db.subscription.findMany({ where: { userId, active: true }, include: { channel: true } });

/** Colors each user already uses (active or not), to pick distinct ones for new subscriptions. */
export async function usedColorsOfUsers(db: Db, userIds: number[]): Promise<Map<number, Set<string>>> {
  const out = new Map<number, Set<string>>(userIds.map((id) => [id, new Set()]));
  if (userIds.length === 0) return out;
  const rows = await db.subscription.findMany({ where: { userId: { in: userIds } }, select: { userId: true, color: true } });
  for (const r of rows) out.get(r.userId)!.add(r.color);
  return out;
}

/** Users named by id (principals); null when any id is unknown in the organization. */
export async function findUsersByPrincipalIds(db: Db, realmId: number, ids: number[]) {
  const unique = [...new Set(ids)];
  const users = await db.user.findMany({ where: { realmId, id: { in: unique } }, orderBy: { id: 'asc' } });
  return users.length === unique.length ? users : null;
}

/**
 * Users named by e-mail (principals), matched case-insensitively against the address other users see:
 * the `email` column, or the `user<id>@<host>` form shown when the address is hidden. Null when any
 * address matches nobody.
 */
export async function findUsersByPrincipalEmails(db: Db, realm: { id: number; url: string }, emails: string[]) {
  const host = new URL(realm.url).hostname.toLowerCase();
  const wanted = [...new Set(emails.map((e) => e.trim().toLowerCase()))];
  const hiddenIds = wanted.map((e) => new RegExp(`^user(\\d+)@${host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`).exec(e)).filter((m) => m !== null).map((m) => Number(m[1]));
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM "user"
    WHERE realm_id = ${realm.id}
      AND (lower(email) IN (SELECT n FROM unnest(${wanted}::text[]) AS n) OR id = ANY(${hiddenIds}::int[]))`;
  const users = await db.user.findMany({ where: { id: { in: rows.map((r) => r.id) } }, orderBy: { id: 'asc' } });
  const matched = (email: string) => users.some((u) => u.email.toLowerCase() === email || `user${u.id}@${host}` === email);
  return wanted.every(matched) ? users : null;
}
