// What the fuzzer aims at on one server: the seeded people, a few channels, groups and custom profile
// fields made through the API, throwaway users/channels/groups for destructive operations, and fresh
// throwaway accounts on demand (for DELETE /users/me). Shared by fuzz.test.ts and bench/fuzz.bench.ts.
import { randomBytes } from 'node:crypto';
import type { AppDeps } from '../../src/deps.ts';
import { doCreateUser } from '../../src/actions/users.ts';
import { findFirstRealm } from '../../src/data/realms.repo.ts';
import type { Credential, FuzzPools } from './generator.ts';

export interface Seeded {
  people: Record<string, { id: number; email: string; apiKey: string }>;
  roles: Record<string, number>;
  password: string;
  /** The person that creates the channels, groups and fields (an owner). */
  owner: string;
}

export interface Targets {
  pools: FuzzPools;
  /** A new active account of the role, with its API key. */
  fresh(role: number): Promise<Credential>;
}

export async function prepareTargets(deps: AppDeps, baseUrl: string, seeded: Seeded, options: { throwaway?: number } = {}): Promise<Targets> {
  const realm = await findFirstRealm(deps.db);
  if (!realm) throw new Error('no organization');
  const tag = randomBytes(3).toString('hex');
  const owner = seeded.people[seeded.owner]!;
  const call = async (method: string, path: string, params: Record<string, string>) => {
    const res = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: { Authorization: `Basic ${Buffer.from(`${owner.email}:${owner.apiKey}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(params).toString(),
    });
    const body: any = await res.json(); // raw HTTP: whatever the server answered
    if (body.result !== 'success') throw new Error(`fuzz setup ${method} ${path}: ${JSON.stringify(body)}`);
    return body;
  };

  const n = options.throwaway ?? 12;
  const roles = [100, 200, 300, 400, 600];
  const throwawayUsers: number[] = [];
  const throwawayEmails: string[] = [];
  let counter = 0;
  const fresh = async (role: number): Promise<Credential> => {
    const email = `fz-${tag}-${++counter}@parley.test`;
    const { apiKey } = await doCreateUser(deps, realm, { email, fullName: `Fz throwaway ${counter}`, password: null, role });
    return { email, apiKey };
  };
  for (let i = 0; i < n; i++) {
    const email = `fz-${tag}-${++counter}@parley.test`;
    const { user } = await doCreateUser(deps, realm, { email, fullName: `Fz target ${counter}`, password: null, role: roles[i % roles.length]! });
    throwawayUsers.push(user.id);
    throwawayEmails.push(email);
  }

  const streamNames = [`fz public ${tag}`, `fz private ${tag}`, `fz web ${tag}`];
  await call('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: streamNames[0] }]) });
  await call('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: streamNames[1] }]), invite_only: 'true' });
  await call('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: streamNames[2] }]), is_web_public: 'true' }).catch(() => undefined);
  const doomedStreams = Array.from({ length: Math.max(3, Math.round(n / 2)) }, (_, i) => `fz doomed ${tag} ${i}`);
  await call('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify(doomedStreams.map((name) => ({ name }))) });
  const channels = await deps.db.channel.findMany({ where: { realmId: realm.id }, select: { id: true, name: true }, orderBy: { id: 'asc' } });

  const groupIds: number[] = [];
  const seededIds = Object.values(seeded.people).map((p) => p.id);
  for (let i = 0; i < 3; i++) {
    const body = await call('POST', '/user_groups/create', { name: `fz group ${tag} ${i}`, description: 'fuzz', members: JSON.stringify(seededIds.slice(i, i + 3)) });
    groupIds.push(body.group_id);
  }
  const doomedGroups: number[] = [];
  for (let i = 0; i < Math.max(3, Math.round(n / 2)); i++) {
    const body = await call('POST', '/user_groups/create', { name: `fz doomed group ${tag} ${i}`, description: '', members: '[]' });
    doomedGroups.push(body.group_id);
  }
  const allGroups = await deps.db.userGroup.findMany({ where: { realmId: realm.id, name: { not: null } }, select: { id: true }, orderBy: { id: 'asc' } });

  const fields: number[] = [];
  for (const params of <Array<Record<string, string>>>[
    { name: `fz text ${tag}`, field_type: '1' },
    { name: `fz choice ${tag}`, field_type: '3', field_data: JSON.stringify({ a: { text: 'A', order: '1' }, b: { text: 'B', order: '2' } }) },
    { name: `fz users ${tag}`, field_type: '6' },
  ]) {
    const body = await call('POST', '/realm/profile_fields', params).catch(() => null);
    if (body) fields.push(body.id);
  }

  const users = await deps.db.user.findMany({ where: { realmId: realm.id }, select: { id: true, deliveryEmail: true }, orderBy: { id: 'asc' } });
  const people: FuzzPools['people'] = {};
  for (const [name, p] of Object.entries(seeded.people)) people[name] = { ...p, role: seeded.roles[name] ?? 400 };
  const doomedStreamIds = channels.filter((c) => doomedStreams.includes(c.name)).map((c) => c.id);
  return {
    fresh,
    pools: {
      people,
      userIds: users.map((u) => u.id),
      emails: users.map((u) => u.deliveryEmail),
      streamIds: channels.filter((c) => !doomedStreamIds.includes(c.id)).map((c) => c.id),
      streamNames: channels.filter((c) => !doomedStreamIds.includes(c.id)).map((c) => c.name),
      groupIds: [...allGroups.map((g) => g.id).filter((id) => !doomedGroups.includes(id))],
      profileFieldIds: fields,
      throwaway: { userIds: throwawayUsers, streamIds: doomedStreamIds, groupIds: doomedGroups },
      password: seeded.password,
    },
  };
}

/** The same pools with the destructive operations aimed at the seeded people and shared targets. */
export function aimAtSeeded(pools: FuzzPools): FuzzPools {
  return {
    ...pools,
    throwaway: {
      userIds: Object.values(pools.people).map((p) => p.id),
      streamIds: pools.streamIds,
      groupIds: pools.groupIds,
    },
  };
}
