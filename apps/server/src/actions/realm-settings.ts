// Organization settings, including the organization-level group settings (compare-and-swap under a
// lock on the realm row).
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/db.ts';
import type { Realm } from '../data/models.ts';
import { lockRealm } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { updateRealm } from '../data/realms-admin.repo.ts';
import { settingsOf } from '../lib/group-settings.ts';
import { formatGroupSettingValues, releaseGroupSettingValue, resolveGroupSettingUpdate, type GroupSettingUpdate, type GroupSettingValue } from './group-settings.ts';

export interface RealmUpdate {
  name?: string;
  description?: string;
  flags: Partial<Record<'enableSpectatorAccess' | 'emailChangesDisabled' | 'nameChangesDisabled' | 'inviteRequired', boolean>>;
  settings: Record<string, GroupSettingUpdate | undefined>;
}

const FLAG_NAMES = {
  enableSpectatorAccess: 'enable_spectator_access',
  emailChangesDisabled: 'email_changes_disabled',
  nameChangesDisabled: 'name_changes_disabled',
  inviteRequired: 'invite_required',
} as const;

/** Returns the changed settings as Zulip echoes them (strings as "updated"). */
export async function doUpdateRealm(deps: AppDeps, realm: Realm, update: RealmUpdate): Promise<Record<string, unknown>> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const current = (await findRealmById(tx, realm.id))!;
    const data: Record<string, unknown> = {};
    const changed: Record<string, unknown> = {};
    const events: Record<string, unknown>[] = [];
    if (update.name !== undefined && update.name !== current.name) {
      data.name = update.name;
      changed.name = 'updated';
      events.push({ type: 'realm', op: 'update', property: 'name', value: update.name });
    }
    if (update.description !== undefined && update.description !== current.description) {
      data.description = update.description;
      changed.description = 'updated';
      events.push({ type: 'realm', op: 'update', property: 'description', value: update.description });
    }
    for (const [field, name] of Object.entries(FLAG_NAMES) as [keyof typeof FLAG_NAMES, string][]) {
      const value = update.flags[field];
      if (value === undefined || value === current[field]) continue;
      data[field] = value;
      changed[name] = value;
      events.push({ type: 'realm', op: 'update', property: name, value });
    }
    const released: number[] = [];
    const groupData: Record<string, GroupSettingValue> = {};
    for (const setting of settingsOf('realm')) {
      const change = update.settings[setting.name];
      if (!change) continue;
      const currentGroup = (current as unknown as Record<string, number>)[setting.column]!;
      const next = await resolveGroupSettingUpdate(tx, realm.id, setting, currentGroup, change);
      if (next === null) continue;
      data[setting.column] = next;
      released.push(currentGroup);
      groupData[setting.name] = changed[setting.name] = (await formatGroupSettingValues(tx, realm.id, [next])).get(next)!;
    }
    if (Object.keys(groupData).length) events.push({ type: 'realm', op: 'update_dict', property: 'default', data: groupData });
    if (Object.keys(data).length === 0) return changed;
    await updateRealm(tx, realm.id, data);
    for (const old of released) await releaseGroupSettingValue(tx, realm.id, old);
    await deps.events.enqueue(tx, realm.id, events.map((payload) => ({ realmWide: true as const, payload })));
    afterCommit(() => deps.events.announce(realm.id));
    return changed;
  });
}
