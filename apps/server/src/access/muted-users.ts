// Whom a user may mute or unmute (Zulip's mute_user / unmute_user views): any user of the organization,
// bots and deactivated users included (Zulip's access_user_by_id_including_cross_realm with bots and
// deactivated users allowed; Parley's system bots are users of the organization), but not oneself.
// Zulip also refuses a user the caller cannot see (a guest limited by can_access_all_users_group);
// Parley does not limit what guests see yet (README), so no user is hidden here either.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { accessUserById } from './users.ts';

/** The user to mute: `Cannot mute self` first (before any lookup, as Zulip), then `No such user`. */
export async function accessUserToMute(db: Db, realm: Realm, user: User, mutedUserId: number): Promise<User> {
  if (mutedUserId === user.id) throw new JsonableError('Cannot mute self');
  return accessUserById(db, realm, mutedUserId, { allowDeactivated: true });
}

/** The user to unmute (oneself is looked up like anyone, and is then not muted). */
export async function accessUserToUnmute(db: Db, realm: Realm, mutedUserId: number): Promise<User> {
  return accessUserById(db, realm, mutedUserId, { allowDeactivated: true });
}
