// Read models of users: the User object of GET /users, GET /users/{id} and GET /users/me, formatted for
// whoever asks (spectators included, where the organization allows them).
import type { Schema } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { listUsers } from '../data/users.repo.ts';
import { emailVisibilityOf } from '../data/users-admin.repo.ts';
import { profileValuesOfUsers } from '../data/profile-fields.repo.ts';
import { accessUserByAddress, accessUserById, checkSpectatorAccess } from '../access/users.ts';
import { formatUser, profileValuesByUser } from '../lib/user-format.ts';
import type { RawJson } from '../lib/raw-json.ts';
import type { UserDirectory } from './user-directory.ts';

export interface UserFormatOptions {
  clientGravatar: boolean;
  includeProfile: boolean;
}

/** User objects as `viewer` (null: a spectator) may see them, in a few queries. */
export async function formatUsers(db: Db, realm: Realm, viewer: User | null, users: User[], options: UserFormatOptions): Promise<Schema<'User'>[]> {
  const ids = users.map((u) => u.id);
  const visibility = await emailVisibilityOf(db, ids);
  const valuesByUser = profileValuesByUser(options.includeProfile ? await profileValuesOfUsers(db, ids) : []);
  return users.map((user) =>
    formatUser(user, {
      realm,
      viewer,
      clientGravatar: options.clientGravatar,
      emailVisibility: visibility.get(user.id) ?? 1,
      ...(options.includeProfile ? { profileValues: valuesByUser.get(user.id) ?? [] } : {}),
    }),
  );
}

/**
 * GET /users: the organization's users (all, or the given ids); spectators only where allowed. The
 * whole list comes from the serialised user directory (queries/user-directory.ts); a list of ids is
 * formatted on the spot.
 */
export async function listUsersForViewer(
  deps: { db: Db; userDirectory: UserDirectory },
  realm: Realm,
  viewer: User | null,
  userIds: number[] | undefined,
  options: UserFormatOptions,
): Promise<Schema<'User'>[] | RawJson> {
  if (!viewer) checkSpectatorAccess(realm);
  if (userIds === undefined) return deps.userDirectory.membersJson(deps.db, realm, viewer, options);
  return formatUsers(deps.db, realm, viewer, await listUsers(deps.db, realm.id, userIds), options);
}

/** GET /users/{id}: one user of the organization, deactivated ones included. */
export async function userById(db: Db, realm: Realm, viewer: User, userId: number, options: UserFormatOptions): Promise<Schema<'User'>> {
  const target = await accessUserById(db, realm, userId, { allowDeactivated: true });
  const [formatted] = await formatUsers(db, realm, viewer, [target], options);
  return formatted!;
}

/**
 * GET /users/{user_id} with an address: one user of the organization named by an address the viewer may use for them
 * (access/users.ts accessUserByAddress); deactivated users and bots included.
 */
export async function userByAddress(db: Db, realm: Realm, viewer: User, address: string, options: UserFormatOptions): Promise<Schema<'User'>> {
  const target = await accessUserByAddress(db, realm, viewer, address, { allowBots: true, allowDeactivated: true, forAdmin: false });
  const [formatted] = await formatUsers(db, realm, viewer, [target], options);
  return formatted!;
}

/** PATCH /users/{user_id} with an address: the id of the user an address names for the viewer (whether they may change them is the action's check). */
export async function userIdByAddress(db: Db, realm: Realm, viewer: User, address: string): Promise<number> {
  return (await accessUserByAddress(db, realm, viewer, address, { allowBots: true, allowDeactivated: true, forAdmin: false })).id;
}

/** GET /users/me: the caller, with full avatar URL and custom profile fields (kept in memory until they change). */
export async function ownUser(deps: { db: Db; userDirectory: UserDirectory }, realm: Realm, user: User): Promise<Schema<'User'>> {
  return deps.userDirectory.ownUser(user, async () => {
    const [formatted] = await formatUsers(deps.db, realm, user, [user], { clientGravatar: false, includeProfile: true });
    return formatted!;
  });
}
