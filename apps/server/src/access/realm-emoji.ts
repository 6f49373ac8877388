// Who may add and remove custom emoji (Zulip's upload_emoji and check_remove_custom_emoji): adding
// takes a member or better (guests are refused outright) in can_add_custom_emoji_group, and overriding a
// built-in emoji's name takes an administrator; removing takes an administrator or the emoji's author.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { holds, loadPermissionSubject } from './group-settings.ts';
import { isAdmin, isGuest } from './roles.ts';

export async function checkCanAddCustomEmoji(db: Db, realm: Pick<Realm, 'canAddCustomEmojiGroupId'>, user: User): Promise<void> {
  if (!holds(await loadPermissionSubject(db, user), realm.canAddCustomEmojiGroupId)) throw new JsonableError('Insufficient permission');
}

export function checkMemberOrAdmin(user: Pick<User, 'role'>): void {
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
}

export function checkCanOverrideBuiltInEmoji(user: Pick<User, 'role'>): void {
  if (!isAdmin(user)) throw new JsonableError('Only administrators can override built-in emoji.');
}

export function checkCanRemoveCustomEmoji(user: Pick<User, 'id' | 'role'>, emoji: { authorId: number | null }): void {
  if (isAdmin(user)) return;
  if (emoji.authorId === null || emoji.authorId !== user.id) throw new JsonableError('Must be an organization administrator or emoji author');
}
