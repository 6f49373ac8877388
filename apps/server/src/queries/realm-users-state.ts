// `realm_users` and `realm_non_active_users` of POST /register: every user object of the organization
// as the viewer sees them, in the register's snapshot. Formatting thousands of users for every
// registration was most of its cost, so each user's object is kept as JSON text, per kind of viewer
// (role, client_gravatar), together with the version of the rows it was made from
// (users.repo.ts userObjectVersions). Each registration reads the versions in its own snapshot and
// formats again only the users whose version differs: what it answers is exactly what its snapshot
// holds, with no invalidation to wait for (unlike the GET /users directory, which may answer from
// before a change it has not heard of yet, registration must match its queue's first event).
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { listDirectoryUsers, userObjectVersions, type DirectoryUser } from '../data/users.repo.ts';
import { profileValuesOfRealm, profileValuesOfUsers } from '../data/profile-fields.repo.ts';
import { formatUser, profileValuesByUser } from '../lib/user-format.ts';
import { RawJson } from '../lib/raw-json.ts';
import { databaseCache } from '../lib/process-caches.ts';

interface Kept {
  version: string;
  json: string;
}

/** Kept objects by kind of viewer (organization, its URL, role, client_gravatar), then by user id. */
const kept = databaseCache<string, Map<number, Kept>>();
/** Registrations formatting most of an organization's users now, by kind of viewer (see below). */
const filling = databaseCache<string, Promise<void>>();
/** Kinds of viewer kept at most (each holds one JSON text per user of its organization). */
const MAX_KINDS = 64;
/**
 * User objects kept at most over all kinds (~350 bytes each: ~70 MB). A very large organization keeps
 * fewer kinds of viewer (the kinds made first are dropped first), never an unbounded amount.
 */
const MAX_OBJECTS = 200_000;
/** Above this many users to format, every user's rows are read in one statement rather than by id. */
const READ_ALL_ABOVE = 200;

export interface RealmUsersState {
  active: RawJson;
  inactive: RawJson;
  /** The viewer's own object (their real address, their profile). */
  me: Schema<'User'>;
}

export async function realmUsersState(db: RawSql, realm: Realm, viewer: User, options: { clientGravatar: boolean }): Promise<RealmUsersState> {
  const key = `${realm.id}|${realm.url}|${viewer.role}|${options.clientGravatar}`;
  let objects = kept.get(key);
  if (!objects) {
    objects = new Map();
    kept.set(key, objects);
  }
  let total = 0;
  for (const o of kept.values()) total += o.size;
  // Oldest kinds first (Map order), never the one this registration uses.
  for (const [k, o] of kept) {
    if (kept.size <= MAX_KINDS && total <= MAX_OBJECTS) break;
    if (k === key) continue;
    kept.delete(k);
    total -= o.size;
  }
  const versions = await userObjectVersions(db, realm.id);
  // When many users must be formatted and another registration of the same kind of viewer is doing
  // it now (a burst of registrations after a start, or after a change to everyone), wait for it rather
  // than format them all once more: what it keeps is then checked against this snapshot's versions.
  const pending = filling.get(key);
  if (pending && staleIds(objects, versions, viewer.id).length > READ_ALL_ABOVE) await pending;
  // The JSON of each user whose kept object is current, chosen before the next await: another
  // registration may replace kept objects meanwhile (with its own snapshot's versions).
  const jsonOf = new Map<number, string>();
  for (const v of versions) {
    const object = objects.get(v.id);
    if (v.id !== viewer.id && object?.version === v.version) jsonOf.set(v.id, object.json);
  }
  const stale = staleIds(objects, versions, viewer.id);
  if (stale.length <= READ_ALL_ABOVE) return formatStale(db, realm, viewer, options, objects, versions, jsonOf, stale);
  const fill = formatStale(db, realm, viewer, options, objects, versions, jsonOf, null);
  const settled = fill.then(
    () => {},
    () => {},
  );
  filling.set(key, settled);
  void settled.then(() => {
    if (filling.get(key) === settled) filling.delete(key);
  });
  return fill;
}

function staleIds(objects: Map<number, Kept>, versions: Array<{ id: number; version: string }>, viewerId: number): number[] {
  return versions.filter((v) => v.id === viewerId || objects.get(v.id)?.version !== v.version).map((v) => v.id);
}

/** Reads and formats the users `jsonOf` lacks (`stale`, or every user when null), keeps them, and answers. */
async function formatStale(
  db: RawSql,
  realm: Realm,
  viewer: User,
  options: { clientGravatar: boolean },
  objects: Map<number, Kept>,
  versions: Array<{ id: number; active: boolean; version: string }>,
  jsonOf: Map<number, string>,
  stale: number[] | null,
): Promise<RealmUsersState> {
  const [rows, values] = await Promise.all([
    listDirectoryUsers(db, realm.id, stale ?? undefined),
    stale ? profileValuesOfUsers(db, stale) : profileValuesOfRealm(db, realm.id),
  ]);
  const profiles = profileValuesByUser(values);
  const format = (user: DirectoryUser, as: User) =>
    formatUser(user, { realm, viewer: as, clientGravatar: options.clientGravatar, emailVisibility: user.emailVisibility, profileValues: profiles.get(user.id) ?? [] });
  // Formatted as the viewer's role, as nobody in particular: no object is the viewer's own.
  const asRole = { ...viewer, id: -1 };
  const versionOf = new Map(versions.map((v) => [v.id, v.version]));
  let me: Schema<'User'> | null = null;
  for (const row of rows) {
    const version = versionOf.get(row.id);
    if (version === undefined || jsonOf.has(row.id)) continue;
    if (row.id === viewer.id) {
      me = format(row, viewer);
      jsonOf.set(row.id, JSON.stringify(me));
      if (objects.get(row.id)?.version === version) continue;
    }
    const json = JSON.stringify(format(row, asRole));
    objects.set(row.id, { version, json });
    if (row.id !== viewer.id) jsonOf.set(row.id, json);
  }
  if (objects.size > versions.length) for (const id of objects.keys()) if (!versionOf.has(id)) objects.delete(id);
  if (!me) throw new Error(`register: the viewer ${viewer.id} is not a user of organization ${realm.id}`);
  const active: string[] = [];
  const inactive: string[] = [];
  for (const v of versions) (v.active ? active : inactive).push(jsonOf.get(v.id)!);
  return { active: new RawJson(`[${active.join(',')}]`), inactive: new RawJson(`[${inactive.join(',')}]`), me };
}
