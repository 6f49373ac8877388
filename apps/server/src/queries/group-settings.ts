// Group-setting values as clients see them: a named group's id, or an anonymous group's direct
// members and subgroups. Shared by every read model and by the events of the actions.
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import { findGroupsByIds, membershipOfGroups } from '../data/user-groups.repo.ts';

/** Formats stored setting groups for responses and events, in one batch. */
export async function formatGroupSettingValues(db: RawSql, realmId: number, groupIds: number[]): Promise<Map<number, Schema<'GroupSettingValue'>>> {
  const unique = [...new Set(groupIds)];
  const groups = await findGroupsByIds(db, realmId, unique);
  const anonymous = groups.filter((g) => g.name === null).map((g) => g.id);
  const membership = await membershipOfGroups(db, anonymous);
  const out = new Map<number, Schema<'GroupSettingValue'>>();
  for (const id of unique) {
    const m = membership.get(id);
    out.set(id, m ? { direct_members: m.members, direct_subgroups: m.subgroups } : id);
  }
  return out;
}
