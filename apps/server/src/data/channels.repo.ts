// Channels, channel folders and the per-channel facts responses need (first message, activity),
// plus the organization's people as the audiences of channel events.
import type { Db } from './db.ts';
import { Prisma } from './db.ts';

export const findChannelById = (db: Db, realmId: number, id: number) => db.channel.findFirst({ where: { id, realmId } });

export const findChannelsByIds = (db: Db, realmId: number, ids: number[]) =>
  db.channel.findMany({ where: { realmId, id: { in: ids } }, orderBy: { id: 'asc' } });

/** Channels whose lower(name) is one of lower(names) (uses the unique index on lower(name)). */
export async function findChannelsByNames(db: Db, realmId: number, names: string[]) {
  if (names.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM channel
    WHERE realm_id = ${realmId} AND lower(name) IN (SELECT lower(n) FROM unnest(${names}::text[]) AS n)`;
  return findChannelsByIds(db, realmId, rows.map((r) => r.id));
}

/** The channel row locked for the rest of the transaction (serialises changes of one channel). */
export async function lockChannel(db: Db, realmId: number, id: number) {
  const rows = await db.$queryRaw<{ id: number }[]>`SELECT id FROM channel WHERE id = ${id} AND realm_id = ${realmId} FOR UPDATE`;
  return rows.length ? findChannelById(db, realmId, id) : null;
}

/** Locks several channel rows, always in id order (no deadlocks between concurrent requests). */
export async function lockChannels(db: Db, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  await db.$queryRaw`SELECT id FROM channel WHERE id IN (${Prisma.join(sorted)}) ORDER BY id FOR UPDATE`;
}

export const createChannel = (db: Db, data: Prisma.ChannelUncheckedCreateInput) => db.channel.create({ data });

export const updateChannel = (db: Db, id: number, data: Prisma.ChannelUncheckedUpdateInput) => db.channel.update({ where: { id }, data });

export const listChannelsOfRealm = (db: Db, realmId: number, options: { excludeArchived: boolean }) =>
  db.channel.findMany({ where: { realmId, ...(options.excludeArchived ? { isArchived: false } : {}) }, orderBy: { id: 'asc' } });

export async function defaultChannelIds(db: Db, realmId: number): Promise<number[]> {
  const rows = await db.channel.findMany({ where: { realmId, isDefault: true, isArchived: false }, select: { id: true }, orderBy: { id: 'asc' } });
  return rows.map((r) => r.id);
}

/** Is there a message in the channel outside the empty topic? */
export async function channelHasNamedTopics(db: Db, channelId: number): Promise<boolean> {
  return (await db.message.findFirst({ where: { channelId, topic: { not: '' } }, select: { id: true } })) !== null;
}

export async function firstMessageIds(db: Db, channelIds: number[]): Promise<Map<number, number>> {
  if (channelIds.length === 0) return new Map();
  const rows = await db.message.groupBy({ by: ['channelId'], where: { channelId: { in: channelIds } }, _min: { id: true } });
  return new Map(rows.filter((r) => r.channelId !== null && r._min.id !== null).map((r) => [r.channelId!, r._min.id!]));
}

/** Channels with a message sent since `since`. */
export async function channelIdsWithMessagesSince(db: Db, channelIds: number[], since: Date): Promise<Set<number>> {
  if (channelIds.length === 0) return new Set();
  const rows = await db.message.groupBy({ by: ['channelId'], where: { channelId: { in: channelIds }, dateSent: { gte: since } } });
  return new Set(rows.map((r) => r.channelId!).filter((id) => id !== null));
}

export const findChannelFolder = (db: Db, realmId: number, id: number) => db.channelFolder.findFirst({ where: { id, realmId } });

/** Unsets the organization's moderation-request channel if it is `channelId`; true when it was. */
export async function clearModerationRequestChannel(db: Db, realmId: number, channelId: number): Promise<boolean> {
  const { count } = await db.realm.updateMany({ where: { id: realmId, moderationRequestChannelId: channelId }, data: { moderationRequestChannelId: null } });
  return count > 0;
}

/** The organization's active users with what event audiences depend on (role, bot). */
export const activeUsersOfRealm = (db: Db, realmId: number) =>
  db.user.findMany({ where: { realmId, isActive: true }, select: { id: true, role: true, isBot: true, botOwnerId: true }, orderBy: { id: 'asc' } });

