// `realm_users` and `realm_non_active_users` of POST /register: every user object of the organization
// as the viewer sees them, in the register's snapshot. Formatting thousands of users for every
// registration was most of its cost, so each user's object is kept as JSON text, per kind of viewer
// (role, client_gravatar), together with the version of the rows it was made from
// (users.repo.ts userObjectVersions). Each registration reads the versions in its own snapshot and
// formats again only the users whose version differs: what it answers is exactly what its snapshot
// holds, with no invalidation to wait for (unlike the GET /users directory, which may answer from
// before a change it has not heard of yet, registration must match its queue's first event).
// Most registrations find nothing changed: a digest of the whole version list (one row,
// users.repo.ts userObjectVersionsDigest) equal to the one the kept list was made at lets them answer
// the kept list whole (as text, the viewer's own object spliced in) without reading 2,000 versions.
// The digest is read in the registration's own snapshot, so a change committed by any process is in
// the next registration everywhere; a burst of registrations at the same digest shares one build.
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { listDirectoryUsers, userObjectVersions, userObjectVersionsDigest, type DirectoryUser } from '../data/users.repo.ts';
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
/**
 * The whole lists of a kind of viewer as UTF-8 JSON, at one digest of the version list: every user's
 * object as the role sees it (the viewer's own object is spliced in per registration), with where each
 * user's object lies in the bytes. Bytes, not text: an answer writes them as they are (slices of the
 * same buffer), where a text of a megabyte (2,000 users) was joined, measured and encoded again for
 * every registration.
 */
interface Whole {
  digest: string;
  active: Buffer;
  inactive: Buffer;
  /** Byte offsets. */
  spans: Map<number, { active: boolean; start: number; end: number }>;
}
const wholes = databaseCache<string, Whole>();
/** The whole lists being made now, by kind of viewer (null once made: failed). */
const building = databaseCache<string, { digest: string; done: Promise<Whole | null> }>();
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
  // A kind whose whole lists are kept holds every object twice (its objects, and their text in the lists).
  for (const [k, o] of kept) total += wholes.has(k) ? 2 * o.size : o.size;
  // Oldest kinds first (Map order), never the one this registration uses.
  for (const [k, o] of kept) {
    if (kept.size <= MAX_KINDS && total <= MAX_OBJECTS) break;
    if (k === key) continue;
    total -= wholes.has(k) ? 2 * o.size : o.size;
    kept.delete(k);
    wholes.delete(k);
  }
  const { digest, viewer: row, profileValues } = await userObjectVersionsDigest(db, realm.id, viewer.id);
  let whole = wholes.get(key);
  if (whole?.digest !== digest) {
    const made = building.get(key);
    if (made?.digest === digest) whole = (await made.done) ?? undefined;
  }
  // (The viewer's role as this snapshot has it: a role changed a moment ago, not yet heard of by the
  // credentials this registration was authenticated with, takes the slow path.)
  if (whole?.digest === digest && whole.spans.has(viewer.id) && row && row.role === viewer.role) {
    // The viewer's own object (their real address, their profile), from the same statement's snapshot.
    const me = formatUser(row, { realm, viewer, clientGravatar: options.clientGravatar, emailVisibility: row.emailVisibility, profileValues });
    return spliceViewer(whole, me, viewer.id);
  }
  // Made here: registrations at the same digest meanwhile wait for it rather than make it again.
  let madeWhole: (value: Whole | null) => void = () => {};
  const done = new Promise<Whole | null>((resolve) => (madeWhole = resolve));
  building.set(key, { digest, done });
  try {
    const answer = await answerFromVersions(db, realm, viewer, options, key, objects, digest);
    // (Not for a kind pushed out meanwhile by other registrations: it would stay outside the budget.)
    if (kept.has(key)) wholes.set(key, answer.whole);
    madeWhole(answer.whole);
    return answer.state;
  } catch (error) {
    madeWhole(null);
    throw error;
  } finally {
    if (building.get(key)?.done === done) building.delete(key);
  }
}

/** The answer from whole lists: the viewer's object as the role sees it replaced by their own. */
function spliceViewer(whole: Whole, me: Schema<'User'>, viewerId: number): RealmUsersState {
  const span = whole.spans.get(viewerId)!;
  const list = span.active ? whole.active : whole.inactive;
  const spliced = new RawJson(list.subarray(0, span.start), JSON.stringify(me), list.subarray(span.end));
  return span.active ? { active: spliced, inactive: new RawJson(whole.inactive), me } : { active: new RawJson(whole.active), inactive: spliced, me };
}

/** The whole lists from every user's object as the role sees it, in version order. */
function wholeOf(digest: string, versions: Array<{ id: number; active: boolean }>, jsonOf: (id: number) => string): Whole {
  const spans = new Map<number, { active: boolean; start: number; end: number }>();
  const parts: Record<'active' | 'inactive', { json: string[]; bytes: number }> = { active: { json: [], bytes: 1 }, inactive: { json: [], bytes: 1 } };
  for (const v of versions) {
    const part = v.active ? parts.active : parts.inactive;
    if (part.json.length > 0) part.bytes += 1; // the comma
    const json = jsonOf(v.id);
    const bytes = Buffer.byteLength(json);
    spans.set(v.id, { active: v.active, start: part.bytes, end: part.bytes + bytes });
    part.json.push(json);
    part.bytes += bytes;
  }
  return { digest, active: Buffer.from(`[${parts.active.json.join(',')}]`), inactive: Buffer.from(`[${parts.inactive.json.join(',')}]`), spans };
}

/** The answer read from the version list (formatting the users changed since their kept objects), and the whole lists it makes. */
async function answerFromVersions(
  db: RawSql,
  realm: Realm,
  viewer: User,
  options: { clientGravatar: boolean },
  key: string,
  objects: Map<number, Kept>,
  digest: string,
): Promise<{ state: RealmUsersState; whole: Whole }> {
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
  if (stale.length <= READ_ALL_ABOVE) return formatStale(db, realm, viewer, options, objects, versions, jsonOf, stale, digest);
  const fill = formatStale(db, realm, viewer, options, objects, versions, jsonOf, null, digest);
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
  digest: string,
): Promise<{ state: RealmUsersState; whole: Whole }> {
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
  /** The viewer's object as the role sees it, at this snapshot's version (for the whole lists). */
  let viewerAsRole: string | null = null;
  for (const row of rows) {
    const version = versionOf.get(row.id);
    if (version === undefined || jsonOf.has(row.id)) continue;
    if (row.id === viewer.id) {
      me = format(row, viewer);
      const object = objects.get(row.id);
      if (object?.version === version) {
        viewerAsRole = object.json;
        continue;
      }
    }
    const json = JSON.stringify(format(row, asRole));
    objects.set(row.id, { version, json });
    if (row.id === viewer.id) viewerAsRole = json;
    else jsonOf.set(row.id, json);
  }
  if (objects.size > versions.length) for (const id of objects.keys()) if (!versionOf.has(id)) objects.delete(id);
  if (!me || viewerAsRole === null) throw new Error(`register: the viewer ${viewer.id} is not a user of organization ${realm.id}`);
  const asRoleJson = viewerAsRole;
  const whole = wholeOf(digest, versions, (id) => (id === viewer.id ? asRoleJson : jsonOf.get(id)!));
  return { state: spliceViewer(whole, me, viewer.id), whole };
}
