// Loading a user a request names, and checking the caller may act on them.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserById, lockUser } from '../data/users.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { checkCanAdministerUser } from './roles.ts';

export async function accessUserById(db: Db, realm: Realm, userId: number, options: { allowDeactivated: boolean }): Promise<User> {
  const user = await findUserById(db, realm.id, userId);
  if (!user || (!options.allowDeactivated && !user.isActive)) throw new JsonableError('No such user');
  return user;
}

/**
 * Zulip's access_user_by_id_including_cross_realm + for-administration check. With `lock`, the target's
 * row is locked first (inside the caller's transaction) and the checks run on it as committed then.
 */
export async function accessUserForAdministration(db: Db, realm: Realm, actor: User, userId: number, options: { lock: boolean }): Promise<User> {
  const target = options.lock ? await lockUser(db, realm.id, userId) : await findUserById(db, realm.id, userId);
  if (!target) throw new JsonableError('No such user');
  checkCanAdministerUser(actor, target);
  return target;
}

/**
 * The caller's row as committed now. Actions that hold the organization lock (which every role change
 * takes) check roles on this, not on the row read when the request was authenticated.
 */
export async function reloadActor(db: Db, realm: Realm, actor: User): Promise<User> {
  return (await findUserById(db, realm.id, actor.id)) ?? actor;
}

/** Spectators (no credentials) may read public data only where the organization allows it. */
export function checkSpectatorAccess(realm: Realm): void {
  if (!realm.enableSpectatorAccess) {
    throw new UnauthorizedError('Missing authorization header for basic auth');
  }
}
