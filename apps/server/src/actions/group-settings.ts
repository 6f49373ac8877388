// Group-setting values: validation, Zulip's normalisation, storage (named group id, or an anonymous
// group owned by the setting) and compare-and-swap updates. Formatting for responses and events is the
// read model's (queries/group-settings.ts).
import type { Schema } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import { addMembers, addSubgroups, createGroup, deleteGroup, findGroupById, findGroupsByIds, lockGroupsShared, membershipOfGroups } from '../data/user-groups.repo.ts';
import { findUsersByIds } from '../data/users.repo.ts';
import { systemGroupIds } from '../data/system-groups.repo.ts';
import { JsonableError } from '../errors.ts';
import type { GroupSettingDefinition } from '../lib/group-settings.ts';

/** A setting's value as the API carries it: a named group's id, or direct members and subgroups. */
export type GroupSettingValue = Schema<'GroupSettingValue'>;
/** A compare-and-swap change of a setting: `{new, old?}`. */
export type GroupSettingUpdate = Schema<'GroupSettingUpdate'>;

/** Canonical form: a named group, or an anonymous set of members and subgroups (sorted, unique). */
type Canonical = { kind: 'named'; id: number } | { kind: 'anonymous'; members: number[]; subgroups: number[] };

const sortedUnique = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b);

function canonicalize(value: GroupSettingValue, nobodyId: number): Canonical {
  if (typeof value === 'number') return { kind: 'named', id: value };
  const members = sortedUnique(value.direct_members);
  const subgroups = sortedUnique(value.direct_subgroups);
  if (members.length === 0 && subgroups.length === 1) return { kind: 'named', id: subgroups[0]! };
  if (members.length === 0 && subgroups.length === 0) return { kind: 'named', id: nobodyId };
  return { kind: 'anonymous', members, subgroups };
}

const isOneOf = (names: readonly string[], name: string) => names.includes(name);

const sameCanonical = (a: Canonical, b: Canonical) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The stored group's value in canonical form, as clients see it: an anonymous value whose active
 * members dwindled to none reads as its single subgroup, or as role:nobody (FL 303 drops deactivated
 * users from direct_members), and compares equal to that.
 */
async function canonicalOfStored(db: Db, realmId: number, groupId: number, nobodyId: number): Promise<Canonical> {
  const group = await findGroupById(db, realmId, groupId);
  if (!group || group.name !== null) return { kind: 'named', id: groupId };
  const m = (await membershipOfGroups(db, [groupId])).get(groupId)!;
  return canonicalize({ direct_members: m.members, direct_subgroups: m.subgroups }, nobodyId);
}

/** Validates a value for `setting` and returns its canonical form (no writes). */
async function validateValue(db: Db, realmId: number, setting: GroupSettingDefinition, value: GroupSettingValue): Promise<Canonical> {
  const system = await systemGroupIds(db, realmId);
  const systemNameById = new Map(Object.entries(system).map(([name, id]) => [id, name]));
  const canonical = canonicalize(value, system['role:nobody']);
  // Share-lock the named groups the value refers to: a concurrent deactivation (which locks the group
  // for update and then looks for uses) either finishes first — and we see `deactivated` — or waits
  // for this transaction and then sees the new use.
  await lockGroupsShared(db, canonical.kind === 'named' ? [canonical.id] : canonical.subgroups);
  const checkSystemGroup = (id: number) => {
    const name = systemNameById.get(id);
    if (name && isOneOf(setting.disallowedSystemGroups, name)) {
      throw new JsonableError(`'${setting.name}' setting cannot be set to '${name}' group.`);
    }
  };
  if (canonical.kind === 'named') {
    const group = await findGroupById(db, realmId, canonical.id);
    if (!group || group.name === null) {
      throw new JsonableError(typeof value === 'number' ? 'Invalid user group' : `Invalid user group ID: ${canonical.id}`);
    }
    if (group.deactivated) throw new JsonableError('User group is deactivated.');
    checkSystemGroup(group.id);
    if (setting.requireSystemGroup && !group.isSystemGroup) {
      throw new JsonableError(`'${setting.name}' must be a system user group.`, { code: 'SYSTEM_GROUP_REQUIRED' });
    }
    if (setting.allowedSystemGroups && group.isSystemGroup && !isOneOf(setting.allowedSystemGroups, group.name)) {
      throw new JsonableError(`'${setting.name}' setting cannot be set to '${group.name}' group.`);
    }
    return canonical;
  }
  if (setting.requireSystemGroup) throw new JsonableError(`'${setting.name}' must be a system user group.`, { code: 'SYSTEM_GROUP_REQUIRED' });
  const users = await findUsersByIds(db, realmId, canonical.members);
  for (const id of canonical.members) {
    const user = users.find((u) => u.id === id);
    if (!user || !user.isActive) throw new JsonableError(`Invalid user ID: ${id}`);
  }
  const groups = await findGroupsByIds(db, realmId, canonical.subgroups);
  for (const id of canonical.subgroups) {
    const group = groups.find((g) => g.id === id);
    if (!group || group.name === null) throw new JsonableError(`Invalid user group ID: ${id}`);
    if (group.deactivated) throw new JsonableError('User group is deactivated.');
    checkSystemGroup(id);
  }
  return canonical;
}

/** Stores a canonical value: a named group is referenced; an anonymous one gets its own group row. */
async function store(db: Db, realmId: number, canonical: Canonical): Promise<number> {
  if (canonical.kind === 'named') return canonical.id;
  const group = await createGroup(db, { realmId, name: null });
  await addMembers(db, group.id, canonical.members);
  await addSubgroups(db, group.id, canonical.subgroups);
  return group.id;
}

/** Validates and stores the value of a setting of a new object; returns the group id to reference. */
export async function storeNewGroupSettingValue(db: Db, realmId: number, setting: GroupSettingDefinition, value: GroupSettingValue): Promise<number> {
  return store(db, realmId, await validateValue(db, realmId, setting, value));
}

/** The default value of a setting for a new object created by `creatorId`. */
export async function storeDefaultGroupSettingValue(db: Db, realmId: number, setting: GroupSettingDefinition, creatorId: number | null): Promise<number> {
  const system = await systemGroupIds(db, realmId);
  if (setting.defaultValue !== 'creator') return system[setting.defaultValue];
  if (creatorId === null) return system['role:nobody'];
  return store(db, realmId, { kind: 'anonymous', members: [creatorId], subgroups: [] });
}

/**
 * Applies `{new, old?}` to a setting whose current group is `currentGroupId`. The caller holds a lock
 * on the owning row, so the compare-and-swap on `old` is atomic. Returns the new group id, or null
 * when the value does not change. The replaced anonymous group (if any) is deleted by `releaseGroupSettingValue`.
 */
export async function resolveGroupSettingUpdate(
  db: Db,
  realmId: number,
  setting: GroupSettingDefinition,
  currentGroupId: number,
  update: GroupSettingUpdate,
): Promise<number | null> {
  const system = await systemGroupIds(db, realmId);
  const current = await canonicalOfStored(db, realmId, currentGroupId, system['role:nobody']);
  if (update.old !== undefined && !sameCanonical(canonicalize(update.old, system['role:nobody']), current)) {
    throw new JsonableError("'old' value does not match the expected value.", { code: 'EXPECTATION_MISMATCH' });
  }
  const next = await validateValue(db, realmId, setting, update.new);
  if (sameCanonical(next, current)) return null;
  return store(db, realmId, next);
}

/** Deletes the anonymous group of a replaced value (named groups are untouched). */
export async function releaseGroupSettingValue(db: Db, realmId: number, groupId: number): Promise<void> {
  const group = await findGroupById(db, realmId, groupId);
  if (group && group.name === null) await deleteGroup(db, groupId);
}
