// Custom emoji: GET /realm/emoji (public to the organization, deactivated ones included, as Zulip's),
// POST /realm/emoji/{emoji_name} (one image) and DELETE /realm/emoji/{emoji_name} (deactivates).
// The images are served by http/user-avatars.ts.
import type { Handler } from '../http/handler.ts';
import { doAddRealmEmoji, doRemoveRealmEmoji } from '../actions/realm-emoji.ts';
import { realmEmojiDict } from '../queries/realm-emoji.ts';

export const getCustomEmoji: Handler<'get-custom-emoji'> = async ({ realm, deps, cachedTableWrites }) => {
  cachedTableWrites.none();
  return { emoji: await realmEmojiDict(deps.db, realm.id) };
};

export const uploadCustomEmoji: Handler<'upload-custom-emoji'> = async ({ realm, user, deps, path, multipart, cachedTableWrites }) => {
  cachedTableWrites.none();
  await doAddRealmEmoji(deps, realm, user, path.emoji_name, multipart);
  return {};
};

export const deactivateCustomEmoji: Handler<'deactivate-custom-emoji'> = async ({ realm, user, deps, path, cachedTableWrites }) => {
  cachedTableWrites.none();
  await doRemoveRealmEmoji(deps, realm, user, path.emoji_name);
  return {};
};
