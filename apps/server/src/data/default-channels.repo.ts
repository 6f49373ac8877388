// Default channel groups (default channels themselves are channel.is_default, see channels.repo.ts).
import type { Db, RawSql } from './db.ts';

export interface DefaultChannelGroupRow {
  id: number;
  name: string;
  description: string;
  /** The group's channels, in the order of their names. */
  channelIds: number[];
}

/** Every group of the organization with its channels (one statement), sorted by name (code points, as Python sorts). */
export async function listDefaultChannelGroups(db: RawSql, realmId: number): Promise<DefaultChannelGroupRow[]> {
  const rows = await db.$queryRaw<Array<{ id: number; name: string; description: string; channel_ids: number[] }>>`
    SELECT g.id, g.name, g.description,
      COALESCE(array_agg(c.id ORDER BY c.name COLLATE "C", c.id) FILTER (WHERE c.id IS NOT NULL), '{}') AS channel_ids
    FROM default_channel_group g
    LEFT JOIN default_channel_group_channel gc ON gc.group_id = g.id
    LEFT JOIN channel c ON c.id = gc.channel_id
    WHERE g.realm_id = ${realmId}
    GROUP BY g.id
    ORDER BY g.name COLLATE "C", g.id`;
  return rows.map((r) => ({ id: r.id, name: r.name, description: r.description, channelIds: r.channel_ids }));
}

/** One group of the organization, locked FOR UPDATE until the transaction ends, with its channel ids. */
export async function lockDefaultChannelGroup(db: Db, realmId: number, id: number): Promise<DefaultChannelGroupRow | null> {
  const [row] = await db.$queryRaw<Array<{ id: number; name: string; description: string }>>`
    SELECT id, name, description FROM default_channel_group WHERE id = ${id} AND realm_id = ${realmId} FOR UPDATE`;
  if (!row) return null;
  const channels = await db.defaultChannelGroupChannel.findMany({ where: { groupId: id }, select: { channelId: true } });
  return { ...row, channelIds: channels.map((c) => c.channelId) };
}

export const findDefaultChannelGroupByName = (db: Db, realmId: number, name: string) => db.defaultChannelGroup.findFirst({ where: { realmId, name } });

export const createDefaultChannelGroup = (db: Db, data: { realmId: number; name: string; description: string; channelIds: number[] }) =>
  db.defaultChannelGroup.create({
    data: { realmId: data.realmId, name: data.name, description: data.description, channels: { create: [...new Set(data.channelIds)].map((channelId) => ({ channelId })) } },
  });

export const updateDefaultChannelGroup = (db: Db, id: number, data: { name?: string; description?: string }) => db.defaultChannelGroup.update({ where: { id }, data });

export const deleteDefaultChannelGroup = (db: Db, id: number) => db.defaultChannelGroup.delete({ where: { id } });

export const addChannelsToDefaultGroup = (db: Db, groupId: number, channelIds: number[]) =>
  db.defaultChannelGroupChannel.createMany({ data: [...new Set(channelIds)].map((channelId) => ({ groupId, channelId })), skipDuplicates: true });

export const removeChannelsFromDefaultGroup = (db: Db, groupId: number, channelIds: number[]) =>
  db.defaultChannelGroupChannel.deleteMany({ where: { groupId, channelId: { in: channelIds } } });

/** Takes a channel out of every group of its organization; the number of groups it was in. */
export const removeChannelFromDefaultGroups = async (db: Db, channelId: number): Promise<number> =>
  (await db.defaultChannelGroupChannel.deleteMany({ where: { channelId } })).count;
