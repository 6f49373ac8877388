// GET /users for a whole organization, served from a serialised copy: the list is formatted once per
// kind of viewer (role, or spectator) and request flags, and kept as JSON text until any user, their
// settings or profile values, or the organization changes (database triggers NOTIFY
// `parley_invalidate`, whoever wrote). Each viewer differs from others of their role only in their
// own row (they always see their own address), which is formatted per request and spliced in.
// Concurrent requests share one build; a build that overlapped an invalidation is served once but
// not kept.
import type { Schema } from '@parley/api-types';
import type { Realm, User } from '../data/models.ts';
import type { Db } from '../data/db.ts';
import { listDirectoryUsers, type DirectoryUser } from '../data/users.repo.ts';
import { profileValuesOfRealm } from '../data/profile-fields.repo.ts';
import type { CustomProfileFieldValue } from '../data/models.ts';
import type { DatabaseListener } from '../events/listener.ts';
import { INVALIDATION_CHANNEL } from '../security/credential-cache.ts';
import { formatUser, profileValuesByUser } from '../lib/user-format.ts';
import { RawJson } from '../lib/raw-json.ts';

export interface DirectoryOptions {
  clientGravatar: boolean;
  includeProfile: boolean;
}

interface Directory {
  ids: number[];
  users: DirectoryUser[];
  profile: Map<number, CustomProfileFieldValue[]> | null;
  /** Every row serialised (UTF-8), joined with commas; row i is bytes offsets[i] .. offsets[i] + lengths[i]. */
  joined: Buffer;
  offsets: number[];
  lengths: number[];
}

export interface UserDirectory {
  /** The members array as JSON text, as `viewer` (null: spectator) sees it. */
  membersJson(db: Db, realm: Realm, viewer: User | null, options: DirectoryOptions): Promise<RawJson>;
  /** GET /users/me: the caller as they see themselves, kept until they, their settings or profile change. */
  ownUser(user: User, load: () => Promise<Schema<'User'>>): Promise<Schema<'User'>>;
}

export function createUserDirectory(listener: DatabaseListener): UserDirectory {
  const built = new Map<string, Directory>();
  const building = new Map<string, Promise<Directory>>();
  let generation = 0;
  const drop = () => {
    generation++;
    built.clear();
    building.clear();
  };
  const ownUsers = new Map<number, Schema<'User'>>();
  let ownGeneration = 0;
  listener.onReset(() => {
    drop();
    ownGeneration++;
    ownUsers.clear();
  });
  listener.on(INVALIDATION_CHANNEL, (payload) => {
    drop();
    ownGeneration++;
    const [kind, id] = payload.split(':');
    if (kind === 'user' || kind === 'settings' || kind === 'profile') ownUsers.delete(Number(id));
    else if (kind !== 'directory') ownUsers.clear(); // organization changes (its URL shapes addresses)
  });

  async function build(db: Db, realm: Realm, viewer: User | null, options: DirectoryOptions): Promise<Directory> {
    const [users, values] = await Promise.all([
      listDirectoryUsers(db, realm.id),
      options.includeProfile && viewer ? profileValuesOfRealm(db, realm.id) : Promise.resolve(null),
    ]);
    const profile = values ? profileValuesByUser(values) : null;
    // Formatted for the viewer's role, as nobody in particular: no row is the viewer's own.
    const asRole = viewer ? ({ ...viewer, id: -1 } as User) : null;
    const rows = users.map((user) => JSON.stringify(format(realm, asRole, user, profile, options)));
    const offsets: number[] = [];
    const lengths: number[] = [];
    let at = 0;
    for (const row of rows) {
      const bytes = Buffer.byteLength(row);
      offsets.push(at);
      lengths.push(bytes);
      at += bytes + 1;
    }
    return { ids: users.map((u) => u.id), users, profile, joined: Buffer.from(rows.join(',')), offsets, lengths };
  }

  return {
    async ownUser(user, load) {
      const hit = ownUsers.get(user.id);
      if (hit) return hit;
      const startedAt = ownGeneration;
      const value = await load();
      if (ownGeneration === startedAt && listener.listening) {
        if (ownUsers.size >= 50_000) ownUsers.delete(ownUsers.keys().next().value!);
        ownUsers.set(user.id, value);
      }
      return value;
    },
    async membersJson(db, realm, viewer, options) {
      const key = `${realm.id}|${viewer ? viewer.role : 'spectator'}|${options.clientGravatar}|${options.includeProfile}`;
      let directory = built.get(key);
      if (!directory) {
        let pending = building.get(key);
        if (!pending) {
          const startedAt = generation;
          pending = build(db, realm, viewer, options).then((d) => {
            if (generation === startedAt && listener.listening) built.set(key, d);
            return d;
          });
          pending.finally(() => {
            if (building.get(key) === pending) building.delete(key);
          }).catch(() => {});
          building.set(key, pending);
        }
        directory = await pending;
      }
      // The viewer's own row (and only it) differs from what others of the same role see.
      const i = viewer ? binarySearch(directory.ids, viewer.id) : -1;
      // Zero-copy views of the shared bytes around the viewer's own row.
      if (i < 0) return new RawJson('[', directory.joined, ']');
      const own = JSON.stringify(format(realm, viewer, directory.users[i]!, directory.profile, options));
      const start = directory.offsets[i]!;
      const end = start + directory.lengths[i]!;
      return new RawJson('[', directory.joined.subarray(0, start), own, directory.joined.subarray(end), ']');
    },
  };
}

function format(realm: Realm, viewer: User | null, user: DirectoryUser, profile: Map<number, CustomProfileFieldValue[]> | null, options: DirectoryOptions) {
  return formatUser(user, {
    realm,
    viewer,
    clientGravatar: options.clientGravatar,
    emailVisibility: user.emailVisibility,
    ...(options.includeProfile ? { profileValues: profile?.get(user.id) ?? [] } : {}),
  });
}

function binarySearch(sorted: number[], id: number): number {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = sorted[mid]!;
    if (v === id) return mid;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
