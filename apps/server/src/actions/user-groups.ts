// Domain actions on user groups. Each runs in one transaction, locking the group row first so that
// concurrent edits of one group serialise (no lost updates, no deadlocks surfacing to clients); the
// caller's permissions are checked on the group as read under that lock. Events (user_group) are
// stored in the transaction for delivery after commit.
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User, UserGroup } from '../data/models.ts';
import {
  addMembers,
  addSubgroups,
  createGroup,
  directMemberIds,
  directSubgroupIds,
  findGroupsByIds,
  findNamedGroupByName,
  lockGroupsShared,
  lockSubgroupGraph,
  recursiveSubgroupIds,
  removeMembers,
  removeSubgroups,
  updateGroup,
  activeSupergroupIds,
} from '../data/user-groups.repo.ts';
import { findUsersByIds } from '../data/users.repo.ts';
import { findGroupUsage } from '../data/group-usage.repo.ts';
import { JsonableError } from '../errors.ts';
import { settingsOf, type GroupSettingName } from '../lib/group-settings.ts';
import {
  accessUserGroup,
  checkCanAddMembers,
  checkCanAddSubgroups,
  checkCanCreateGroups,
  checkCanManageGroup,
  checkCanRemoveMembers,
  checkCanRemoveSubgroups,
} from '../access/user-groups.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { formatGroupSettingValues } from '../queries/group-settings.ts';
import { formatUserGroups } from '../queries/user-groups.ts';
import {
  releaseGroupSettingValue,
  resolveGroupSettingUpdate,
  storeDefaultGroupSettingValue,
  storeNewGroupSettingValue,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from './group-settings.ts';

const GROUP_SETTINGS = settingsOf('user_group');
const RESERVED_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

async function validateGroupName(db: Db, realmId: number, raw: string, exceptGroupId?: number): Promise<string> {
  const name = raw.trim();
  if (!name) throw new JsonableError("User group name can't be empty!");
  if (name.length > 100) throw new JsonableError('User group name cannot exceed 100 characters.');
  const prefix = RESERVED_PREFIXES.find((p) => name.startsWith(p));
  if (prefix) throw new JsonableError(`User group name cannot start with '${prefix}'.`);
  const existing = await findNamedGroupByName(db, realmId, name);
  if (existing && existing.id !== exceptGroupId) throw new JsonableError(`User group '${name}' already exists.`);
  return name;
}

/** Active users of the organization, in the order given; the first unknown or deactivated id fails. */
async function checkActiveUsers(db: Db, realmId: number, ids: number[]): Promise<void> {
  const users = await findUsersByIds(db, realmId, ids);
  for (const id of ids) {
    if (!users.find((u) => u.id === id && u.isActive)) throw new JsonableError(`Invalid user ID: ${id}`);
  }
}

async function notifyRealm(tx: Db, deps: AppDeps, realmId: number, payloads: Record<string, unknown>[], afterCommit: AfterCommit) {
  await deps.events.publish(tx, afterCommit, realmId, payloads.map((payload) => ({ realmWide: true as const, payload })));
}

export interface NewUserGroup {
  name: string;
  description: string;
  members: number[];
  subgroups: number[];
  settings: { [K in GroupSettingName<'user_group'>]?: GroupSettingValue };
}

/** POST /user_groups/create: members and administrators holding the organization's can_create_groups. */
export async function doCreateUserGroup(deps: AppDeps, realm: Realm, creator: User, input: NewUserGroup): Promise<number> {
  requireMemberOrAdmin(creator);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    checkCanCreateGroups(await loadPermissionSubject(tx, creator), realm);
    const name = await validateGroupName(tx, realm.id, input.name);
    await checkActiveUsers(tx, realm.id, input.members);
    // Same locks as deactivation, so a subgroup cannot be deactivated while it joins the new group.
    await lockSubgroupGraph(tx, realm.id);
    await lockGroupsShared(tx, input.subgroups);
    await checkSubgroupsAddable(tx, realm.id, input.subgroups);
    const settings: Record<string, number> = {};
    for (const setting of GROUP_SETTINGS) {
      const value = input.settings[setting.name];
      settings[setting.column] =
        value === undefined
          ? await storeDefaultGroupSettingValue(tx, realm.id, setting, creator.id)
          : await storeNewGroupSettingValue(tx, realm.id, setting, value);
    }
    const group = await createGroup(tx, { realmId: realm.id, name, description: input.description, creatorId: creator.id, settings });
    await addMembers(tx, group.id, [...new Set(input.members)]);
    await addSubgroups(tx, group.id, [...new Set(input.subgroups)]);
    const [formatted] = await formatUserGroups(tx, realm.id, [group]);
    await notifyRealm(tx, deps, realm.id, [{ type: 'user_group', op: 'add', group: formatted }], afterCommit);
    return group.id;
  }).catch(duplicateNameError(input.name));
}

/** A concurrent create or rename took the name between our check and our write. */
const duplicateNameError = (name: string | undefined) => (error: unknown): never => {
  if (name !== undefined && isUniqueViolation(error)) throw new JsonableError(`User group '${name.trim()}' already exists.`);
  throw error;
};

export interface UserGroupUpdate {
  name?: string;
  description?: string;
  deactivated?: boolean;
  settings: { [K in GroupSettingName<'user_group'>]?: GroupSettingUpdate };
}

/** PATCH /user_groups/{id}: Zulip's checks in Zulip's order, the permission on the locked group. */
export async function doUpdateUserGroup(deps: AppDeps, realm: Realm, actor: User, groupId: number, update: UserGroupUpdate): Promise<void> {
  requireMemberOrAdmin(actor);
  const nothing = update.name === undefined && update.description === undefined && update.deactivated === undefined && Object.values(update.settings).every((v) => v === undefined);
  if (nothing) throw new JsonableError('No new data supplied');
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const group = await accessUserGroup(tx, realm, groupId, { lock: true });
    checkCanManageGroup(await loadPermissionSubject(tx, actor), realm, group);
    const data: Record<string, unknown> = {};
    const eventData: Record<string, unknown> = {};
    if (update.name !== undefined) {
      const name = await validateGroupName(tx, realm.id, update.name, group.id);
      if (name !== group.name) data.name = eventData.name = name;
    }
    if (update.description !== undefined && update.description !== group.description) {
      data.description = eventData.description = update.description;
    }
    if (update.deactivated === false && group.deactivated) data.deactivated = eventData.deactivated = false;
    const released: number[] = [];
    for (const setting of GROUP_SETTINGS) {
      const change = update.settings[setting.name];
      if (!change) continue;
      const current = group[setting.column]!;
      const next = await resolveGroupSettingUpdate(tx, realm.id, setting, current, change);
      if (next === null) continue;
      data[setting.column] = next;
      released.push(current);
      eventData[setting.name] = (await formatGroupSettingValues(tx, realm.id, [next])).get(next);
    }
    if (Object.keys(data).length === 0) return;
    await updateGroup(tx, group.id, data);
    for (const old of released) await releaseGroupSettingValue(tx, realm.id, old);
    await notifyRealm(tx, deps, realm.id, [{ type: 'user_group', op: 'update', group_id: group.id, data: eventData }], afterCommit);
  }).catch(duplicateNameError(update.name));
}

/** Subgroups one may add: named, active groups of the organization. */
async function checkSubgroupsAddable(db: Db, realmId: number, ids: number[]): Promise<UserGroup[]> {
  const groups = await findGroupsByIds(db, realmId, ids);
  for (const id of ids) {
    const group = groups.find((g) => g.id === id);
    if (!group || group.name === null) throw new JsonableError(`Invalid user group ID: ${id}`);
    if (group.deactivated) throw new JsonableError('User group is deactivated.');
  }
  return groups;
}

export interface MembershipChange {
  add: number[];
  delete: number[];
  addSubgroups: number[];
  deleteSubgroups: number[];
}

/** POST /user_groups/{id}/members: users and subgroups, added and removed in one go. */
export async function doUpdateUserGroupMembers(deps: AppDeps, realm: Realm, actor: User, groupId: number, change: MembershipChange): Promise<void> {
  requireMemberOrAdmin(actor);
  if (!change.add.length && !change.delete.length && !change.addSubgroups.length && !change.deleteSubgroups.length) {
    throw new JsonableError('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
  }
  await updateMembership(deps, realm, actor, groupId, change);
}

/** POST /user_groups/{id}/subgroups: subgroups added and removed. */
export async function doUpdateUserGroupSubgroups(deps: AppDeps, realm: Realm, actor: User, groupId: number, change: { add: number[]; delete: number[] }): Promise<void> {
  requireMemberOrAdmin(actor);
  if (!change.add.length && !change.delete.length) throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  await updateMembership(deps, realm, actor, groupId, { add: [], delete: [], addSubgroups: change.add, deleteSubgroups: change.delete });
}

/** All parts in one transaction, checked on the locked group: any error rolls every part back. */
async function updateMembership(deps: AppDeps, realm: Realm, actor: User, groupId: number, change: MembershipChange): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if (change.addSubgroups.length || change.deleteSubgroups.length) await lockSubgroupGraph(tx, realm.id);
    const group = await accessUserGroup(tx, realm, groupId, { lock: true });
    const subject = await loadPermissionSubject(tx, actor);
    if (change.add.length) checkCanAddMembers(subject, realm, group, change.add);
    if (change.delete.length) checkCanRemoveMembers(subject, realm, group, change.delete);
    if (change.addSubgroups.length) checkCanAddSubgroups(subject, realm, group);
    if (change.deleteSubgroups.length) checkCanRemoveSubgroups(subject, realm, group);
    const events: Record<string, unknown>[] = [];
    if (change.add.length || change.delete.length) {
      const current = new Set(await directMemberIds(tx, groupId, false));
      const add = [...new Set(change.add)];
      const remove = [...new Set(change.delete)];
      await checkActiveUsers(tx, realm.id, add);
      for (const id of add) if (current.has(id)) throw new JsonableError(`User ${id} is already a member of this group`);
      await checkActiveUsers(tx, realm.id, remove);
      for (const id of remove) if (!current.has(id)) throw new JsonableError(`There is no member '${id}' in this user group`);
      await addMembers(tx, groupId, add);
      await removeMembers(tx, groupId, remove);
      if (add.length) events.push({ type: 'user_group', op: 'add_members', group_id: groupId, user_ids: add });
      if (remove.length) events.push({ type: 'user_group', op: 'remove_members', group_id: groupId, user_ids: remove });
    }
    if (change.addSubgroups.length || change.deleteSubgroups.length) {
      const add = [...new Set(change.addSubgroups)];
      const remove = [...new Set(change.deleteSubgroups)];
      const current = new Set(await directSubgroupIds(tx, groupId));
      await checkSubgroupsAddable(tx, realm.id, add);
      for (const id of add) if (current.has(id)) throw new JsonableError(`User group ${id} is already a subgroup of this group.`);
      for (const id of add) {
        if (id === groupId || (await recursiveSubgroupIds(tx, id)).includes(groupId)) {
          throw new JsonableError(`User group ${groupId} is already a subgroup of one of the passed subgroups.`);
        }
      }
      const known = await findGroupsByIds(tx, realm.id, remove);
      for (const id of remove) {
        if (!known.find((g) => g.id === id && g.name !== null)) throw new JsonableError(`Invalid user group ID: ${id}`);
        if (!current.has(id)) throw new JsonableError(`User group ${id} is not a subgroup of this group.`);
      }
      await addSubgroups(tx, groupId, add);
      await removeSubgroups(tx, groupId, remove);
      if (add.length) events.push({ type: 'user_group', op: 'add_subgroups', group_id: groupId, direct_subgroup_ids: add });
      if (remove.length) events.push({ type: 'user_group', op: 'remove_subgroups', group_id: groupId, direct_subgroup_ids: remove });
    }
    await notifyRealm(tx, deps, realm.id, events, afterCommit);
  });
}

/** POST /user_groups/{id}/deactivate: refused while the group is in use (Zulip's objections). */
export async function doDeactivateUserGroup(deps: AppDeps, realm: Realm, actor: User, groupId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await lockSubgroupGraph(tx, realm.id);
    const group = await accessUserGroup(tx, realm, groupId, { lock: true });
    if (group.deactivated) throw new JsonableError('User group is deactivated.');
    checkCanManageGroup(await loadPermissionSubject(tx, actor), realm, group);
    const objections: Record<string, unknown>[] = [];
    const supergroups = await activeSupergroupIds(tx, groupId);
    if (supergroups.length) objections.push({ type: 'subgroup', supergroup_ids: supergroups });
    const usage = await findGroupUsage(tx, realm.id, groupId);
    for (const c of usage.channels) objections.push({ type: 'channel', channel_id: c.channelId, settings: c.settings });
    for (const g of usage.userGroups) objections.push({ type: 'user_group', group_id: g.groupId, settings: g.settings });
    if (usage.realm.length) objections.push({ type: 'realm', settings: usage.realm });
    if (objections.length) {
      throw new JsonableError('Cannot deactivate user group in use.', { code: 'CANNOT_DEACTIVATE_GROUP_IN_USE', data: { objections } });
    }
    await updateGroup(tx, groupId, { deactivated: true });
    await notifyRealm(tx, deps, realm.id, [{ type: 'user_group', op: 'update', group_id: groupId, data: { deactivated: true } }], afterCommit);
  });
}
