// Read models of users' statuses: one user's (GET /users/{user_id}/status) and the organization's
// (POST /register's `user_status`), in Zulip's shape: only what is set.
import type { Db, RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserStatus, userStatusesOfRealm } from '../data/user-status.repo.ts';
import { accessUser } from '../access/users.ts';
import { formatUserStatus, type UserStatusObject } from '../lib/user-status.ts';

/** GET /users/{user_id}/status: an active human user's status ({} when they never set one). */
export async function userStatusOf(db: Db, realm: Realm, viewer: User, userId: number): Promise<UserStatusObject> {
  const target = await accessUser(db, realm, viewer, userId, { allowBots: false, allowDeactivated: false, forAdmin: false });
  const row = await findUserStatus(db, target.id);
  return row ? formatUserStatus(row) : {};
}

/**
 * POST /register's `user_status`: by user id (as a string), the organization's active users whose
 * status holds something. Every user sees every other's (Zulip restricts guests who may not see all
 * users; Parley does not apply can_access_all_users_group yet).
 */
export async function userStatusState(db: RawSql, realm: Realm): Promise<Record<string, UserStatusObject>> {
  const state: Record<string, UserStatusObject> = {};
  for (const row of await userStatusesOfRealm(db, realm.id)) state[String(row.userId)] = formatUserStatus(row);
  return state;
}
