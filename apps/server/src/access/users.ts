// Loading a user a request names, and checking the caller may act on them.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserById } from '../data/users.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { checkCanAdministerUser } from './roles.ts';

export async function accessUserById(db: Db, realm: Realm, userId: number, options: { allowDeactivated: boolean }): Promise<User> {
  const user = await findUserById(db, realm.id, userId);
  if (!user || (!options.allowDeactivated && !user.isActive)) throw new JsonableError('No such user');
  return user;
}

/** Zulip's access_user_by_id_including_cross_realm + for-administration check. */
export async function accessUserForAdministration(db: Db, realm: Realm, actor: User, userId: number): Promise<User> {
  const target = await accessUserById(db, realm, userId, { allowDeactivated: true });
  checkCanAdministerUser(actor, target);
  return target;
}

/** Spectators (no credentials) may read public data only where the organization allows it. */
export function checkSpectatorAccess(realm: Realm): void {
  if (!realm.enableSpectatorAccess) {
    throw new UnauthorizedError('Missing authorization header for basic auth');
  }
}
