// GET /users for a whole organization, served from a serialised copy: the list is formatted once per
// kind of viewer (role, or spectator) and request flags, and kept as JSON text until any user, their
// settings or profile values, or the organization changes (database triggers NOTIFY
// `parley_invalidate`, whoever wrote). Each viewer differs from others of their role only in their
// own row (they always see their own address), which is formatted per request and spliced in.
// Concurrent requests share one build; a build that overlapped an invalidation is served once but
// not kept.
import type { Realm, User } from '../data/models.ts';
import type { Db } from '../data/db.ts';
import { listDirectoryUsers, type DirectoryUser } from '../data/users.repo.ts';
import { profileValuesOfRealm } from '../data/profile-fields.repo.ts';
import type { CustomProfileFieldValue } from '../data/models.ts';
import type { DatabaseListener } from '../events/listener.ts';
import { INVALIDATION_CHANNEL } from '../security/credential-cache.ts';
import { formatUser } from '../lib/user-format.ts';
import { RawJson } from '../lib/raw-json.ts';

export interface DirectoryOptions {
  clientGravatar: boolean;
  includeProfile: boolean;
}

interface Directory {
  ids: number[];
  users: DirectoryUser[];
  profile: Map<number, CustomProfileFieldValue[]> | null;
  /** Every row serialised, joined with commas; `offsets[i]` is where row i starts. */
  joined: string;
  offsets: number[];
  lengths: number[];
}

export interface UserDirectory {
  /** The members array as JSON text, as `viewer` (null: spectator) sees it. */
  membersJson(db: Db, realm: Realm, viewer: User | null, options: DirectoryOptions): Promise<RawJson>;
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
  listener.onReset(drop);
  listener.on(INVALIDATION_CHANNEL, drop);

  async function build(db: Db, realm: Realm, viewer: User | null, options: DirectoryOptions): Promise<Directory> {
    const [users, values] = await Promise.all([
      listDirectoryUsers(db, realm.id),
      options.includeProfile && viewer ? profileValuesOfRealm(db, realm.id) : Promise.resolve(null),
    ]);
    let profile: Map<number, CustomProfileFieldValue[]> | null = null;
    if (values) {
      profile = new Map();
      for (const value of values) {
        const list = profile.get(value.userId);
        if (list) list.push(value);
        else profile.set(value.userId, [value]);
      }
    }
    // Formatted for the viewer's role, as nobody in particular: no row is the viewer's own.
    const asRole = viewer ? ({ ...viewer, id: -1 } as User) : null;
    const rows = users.map((user) => JSON.stringify(format(realm, asRole, user, profile, options)));
    const offsets: number[] = [];
    const lengths: number[] = [];
    let at = 0;
    for (const row of rows) {
      offsets.push(at);
      lengths.push(row.length);
      at += row.length + 1;
    }
    return { ids: users.map((u) => u.id), users, profile, joined: rows.join(','), offsets, lengths };
  }

  return {
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
      if (i < 0) return new RawJson(`[${directory.joined}]`);
      const own = JSON.stringify(format(realm, viewer, directory.users[i]!, directory.profile, options));
      const start = directory.offsets[i]!;
      const end = start + directory.lengths[i]!;
      return new RawJson(`[${directory.joined.slice(0, start)}${own}${directory.joined.slice(end)}]`);
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
