// Where a group is used as a permission: channel, user-group and organization settings (directly or
// as a subgroup of an anonymous setting value). Columns come from the settings table in
// lib/group-settings.ts, so a new setting is covered without touching this file.
import type { Db } from './db.ts';
import { settingsOf } from '../lib/group-settings.ts';
import { anonymousGroupsContaining } from './user-groups.repo.ts';

export interface GroupUsage {
  channels: Array<{ channelId: number; settings: string[] }>;
  userGroups: Array<{ groupId: number; settings: string[] }>;
  realm: string[];
}

function settingsReferencing(row: Record<string, unknown>, owner: 'channel' | 'user_group' | 'realm', ids: Set<number>): string[] {
  return settingsOf(owner)
    .filter((s) => ids.has(row[s.column] as number))
    .map((s) => s.name);
}

export async function findGroupUsage(db: Db, realmId: number, groupId: number): Promise<GroupUsage> {
  const ids = new Set([groupId, ...(await anonymousGroupsContaining(db, groupId))]);
  const idList = [...ids];
  const channelOr = settingsOf('channel').map((s) => ({ [s.column]: { in: idList } }));
  const groupOr = settingsOf('user_group').map((s) => ({ [s.column]: { in: idList } }));
  const [channels, groups, realm] = await Promise.all([
    db.channel.findMany({ where: { realmId, isArchived: false, OR: channelOr }, orderBy: { id: 'asc' } }),
    db.userGroup.findMany({ where: { realmId, name: { not: null }, deactivated: false, id: { not: groupId }, OR: groupOr }, orderBy: { id: 'asc' } }),
    db.realm.findUnique({ where: { id: realmId } }),
  ]);
  return {
    channels: channels.map((c) => ({ channelId: c.id, settings: settingsReferencing(c, 'channel', ids) })),
    userGroups: groups.map((g) => ({ groupId: g.id, settings: settingsReferencing(g, 'user_group', ids) })),
    realm: realm ? settingsReferencing(realm, 'realm', ids) : [],
  };
}
