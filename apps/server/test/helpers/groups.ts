// User groups through the API: the system groups' ids, new groups with unique names, and read-backs.
// Setup and read-back requests are made as iago (an administrator) unless a person is named.
import { randomBytes } from 'node:crypto';
import { beforeAll } from 'vitest';
import type { components, paths } from '@parley/client';
import type { Person } from './fixtures.ts';
import type { TestServer } from './test-server.ts';

export type CreateGroupBody = paths['/user_groups/create']['post']['requestBody']['content']['application/x-www-form-urlencoded'];
export type GroupSettingValue = components['schemas']['GroupSettingValue'];
type RealmBody = NonNullable<paths['/realm']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];
/** The organization's group settings (the PATCH /realm parameters taking a `{new, old}` update). */
export type RealmGroupSetting = { [K in keyof RealmBody]-?: NonNullable<RealmBody[K]> extends components['schemas']['GroupSettingUpdate'] ? K : never }[keyof RealmBody];

export const SYSTEM_GROUP_NAMES = [
  'role:internet',
  'role:everyone',
  'role:members',
  'role:fullmembers',
  'role:moderators',
  'role:administrators',
  'role:owners',
  'role:nobody',
] as const;
export type SystemGroupName = (typeof SYSTEM_GROUP_NAMES)[number];
export type SystemGroupIds = Record<SystemGroupName, number>;

/** Ascending copy of a list of ids. */
export const sorted = (ids: number[]): number[] => [...ids].sort((a, b) => a - b);

let counter = 0;
/** A name no other test uses: `<label> <counter> <6 hex digits>`. */
export const uniqueName = (label: string): string => `${label} ${++counter} ${randomBytes(3).toString('hex')}`;

/** The ids of the organization's system groups by name, from GET /user_groups. */
export async function systemGroupIds(env: TestServer): Promise<SystemGroupIds> {
  const { data, error } = await env.client('iago').GET('/user_groups', { params: { query: {} } });
  if (!data) throw new Error(`setup: listing groups failed: ${JSON.stringify(error)}`);
  return Object.fromEntries(data.user_groups.filter((g) => g.is_system_group).map((g) => [g.name, g.id])) as SystemGroupIds;
}

/** The system groups' ids, filled in by a beforeAll hook (register it after useTestServer; read it in hooks and tests). */
export function useSystemGroupIds(env: TestServer): SystemGroupIds {
  const ids = {} as SystemGroupIds;
  beforeAll(async () => {
    Object.assign(ids, await systemGroupIds(env));
  });
  return ids;
}

/** Creates a group as `as`: a unique name ("group …"), an empty description and no members unless `body` says otherwise. */
export async function createGroup(env: TestServer, as: Person, body: Partial<CreateGroupBody> = {}): Promise<number> {
  const { data, error } = await env.client(as).POST('/user_groups/create', {
    body: { name: uniqueName('group'), description: '', members: [], ...body },
  });
  if (!data) throw new Error(`setup: creating a group failed: ${JSON.stringify(error)}`);
  return data.group_id;
}

/** A group as GET /user_groups lists it (deactivated groups included). */
export async function readGroup(env: TestServer, groupId: number) {
  const { data, error } = await env.client('iago').GET('/user_groups', { params: { query: { include_deactivated_groups: true } } });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  const group = data.user_groups.find((g) => g.id === groupId);
  if (!group) throw new Error(`read-back: group ${groupId} is not listed`);
  return group;
}

export async function deactivateGroup(env: TestServer, groupId: number): Promise<void> {
  const { error } = await env.client('iago').POST('/user_groups/{user_group_id}/deactivate', { params: { path: { user_group_id: groupId } } });
  if (error) throw new Error(`setup: deactivating group ${groupId} failed: ${JSON.stringify(error)}`);
}

/** The group's members (ascending): direct ones only, or also those of its subgroups (recursively). */
async function memberIds(env: TestServer, groupId: number, directOnly: boolean): Promise<number[]> {
  const { data, error } = await env.client('iago').GET('/user_groups/{user_group_id}/members', {
    params: { path: { user_group_id: groupId }, query: directOnly ? { direct_member_only: true } : {} },
  });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return sorted(data.members);
}

/** The group's subgroups (ascending): direct ones only, or recursively. */
async function subgroupIds(env: TestServer, groupId: number, directOnly: boolean): Promise<number[]> {
  const { data, error } = await env.client('iago').GET('/user_groups/{user_group_id}/subgroups', {
    params: { path: { user_group_id: groupId }, query: directOnly ? { direct_subgroup_only: true } : {} },
  });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return sorted(data.subgroups);
}

export const directMembers = (env: TestServer, groupId: number) => memberIds(env, groupId, true);
export const allMembers = (env: TestServer, groupId: number) => memberIds(env, groupId, false);
export const directSubgroups = (env: TestServer, groupId: number) => subgroupIds(env, groupId, true);
export const allSubgroups = (env: TestServer, groupId: number) => subgroupIds(env, groupId, false);

/** Sets an organization group setting (PATCH /realm `{name: {new: value}}`) as desdemona (an owner). */
export async function setRealmGroupSetting(env: TestServer, name: RealmGroupSetting, value: GroupSettingValue): Promise<void> {
  const { error } = await env.client('desdemona').PATCH('/realm', { body: { [name]: { new: value } } });
  if (error) throw new Error(`setup: PATCH /realm ${name} failed: ${JSON.stringify(error)}`);
}
