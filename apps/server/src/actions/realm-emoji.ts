// POST /realm/emoji/{emoji_name} and DELETE /realm/emoji/{emoji_name} (Zulip's upload_emoji,
// check_add_realm_emoji, delete_emoji and do_remove_realm_emoji). Adding: the checks in Zulip's order
// (name, permission, name taken, one file, built-in names for administrators only, size), then a row
// without a file (its id names the file), the images (lib/image-resize.ts emojiImages) stored, and the
// row completed with a `realm_emoji` event of the whole list to everyone, in one transaction. If the
// image fails or the transaction does, the row and the stored images are removed: nothing is left.
// Removing deactivates the emoji (reactions keep naming it) and sends the list again.
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { deactivateRealmEmoji, deleteRealmEmojiRow, findActiveRealmEmojiByName, insertRealmEmoji, setRealmEmojiFile } from '../data/realm-emoji.repo.ts';
import { checkCanAddCustomEmoji, checkCanOverrideBuiltInEmoji, checkCanRemoveCustomEmoji, checkMemberOrAdmin } from '../access/realm-emoji.ts';
import { JsonableError } from '../errors.ts';
import type { StreamedMultipart } from '../lib/multipart-body.ts';
import { emojiCodeForName } from '../lib/emoji.ts';
import { EMOJI_SIZE, MAX_EMOJI_FILE_SIZE_MIB, checkValidEmojiName, emojiFileName, emojiKeys, normalizeEmojiName } from '../lib/realm-emoji.ts';
import { emojiImages } from '../lib/image-resize.ts';
import { realmEmojiDict } from '../queries/realm-emoji.ts';
import { readOneImage } from './avatars.ts';
import type { Db } from '../data/db.ts';

const nameTaken = () => new JsonableError('A custom emoji with this name already exists.');

async function realmEmojiEvent(tx: Db, realmId: number) {
  return { realmWide: true as const, payload: { type: 'realm_emoji', op: 'update', realm_emoji: await realmEmojiDict(tx, realmId) } };
}

export async function doAddRealmEmoji(deps: AppDeps, realm: Realm, user: User, rawName: string, body: StreamedMultipart): Promise<void> {
  const name = normalizeEmojiName(rawName);
  try {
    checkMemberOrAdmin(user);
    checkValidEmojiName(name);
    await checkCanAddCustomEmoji(deps.db, realm, user);
    if (await findActiveRealmEmojiByName(deps.db, realm.id, name)) throw nameTaken();
  } catch (error) {
    body.abandon(64 * 1024 * 1024);
    throw error;
  }
  const { bytes, contentType } = await readOneImage(body, MAX_EMOJI_FILE_SIZE_MIB, 'You must upload exactly one file.');
  if (emojiCodeForName(name) !== undefined) checkCanOverrideBuiltInEmoji(user);
  const { image, still } = await emojiImages(bytes, contentType, EMOJI_SIZE);

  const id = await insertRealmEmoji(deps.db, realm.id, user.id, name);
  if (id === null) throw nameTaken();
  const fileName = emojiFileName(contentType, id);
  const keys = emojiKeys(realm.id, fileName);
  try {
    await deps.storage.put(keys.image, Readable.from([image]), { contentType });
    if (still) await deps.storage.put(keys.still, Readable.from([still]), { contentType: 'image/png' });
    await inTransaction(deps.db, async (tx, afterCommit) => {
      await setRealmEmojiFile(tx, id, fileName, still !== null);
      await deps.events.publish(tx, afterCommit, realm.id, [await realmEmojiEvent(tx, realm.id)]);
    });
  } catch (error) {
    await deps.storage.delete([keys.image, keys.still]).catch((e: unknown) => deps.logger.error({ err: e, emoji_id: id }, 'could not delete an unused emoji image'));
    await deleteRealmEmojiRow(deps.db, id).catch((e: unknown) => deps.logger.error({ err: e, emoji_id: id }, 'could not delete an unfinished emoji'));
    throw error;
  }
}

export async function doRemoveRealmEmoji(deps: AppDeps, realm: Realm, user: User, name: string): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const emoji = await findActiveRealmEmojiByName(tx, realm.id, name);
    if (!emoji || emoji.fileName === null) throw new JsonableError(`Emoji '${name}' does not exist`);
    checkCanRemoveCustomEmoji(user, emoji);
    if ((await deactivateRealmEmoji(tx, emoji.id)).count !== 1) throw new JsonableError(`Emoji '${name}' does not exist`);
    await deps.events.publish(tx, afterCommit, realm.id, [await realmEmojiEvent(tx, realm.id)]);
  });
}
