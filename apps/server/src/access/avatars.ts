// Who may change their avatar (Zulip's avatar_changes_disabled: when set, only administrators).
import type { Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { isAdmin } from './roles.ts';

export function checkCanChangeOwnAvatar(realm: Pick<Realm, 'avatarChangesDisabled'>, user: Pick<User, 'role'>): void {
  if (realm.avatarChangesDisabled && !isAdmin(user)) throw new JsonableError('Avatar changes are disabled in this organization.');
}
