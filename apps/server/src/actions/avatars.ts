// POST /users/me/avatar and DELETE /users/me/avatar (Zulip's set_avatar_backend, delete_avatar_backend
// and do_change_avatar_fields). An upload is read whole (it is small: Zulip's MAX_AVATAR_FILE_SIZE_MIB,
// refused as soon as it passes), decoded and re-encoded as two PNG squares (lib/image-resize.ts), stored
// under the next avatar version's paths, and only then is the user row moved to that version, with a
// `realm_user` update event to the whole organization in the same transaction. The previous version's
// files are deleted after commit. Whatever fails, the new files are deleted: nothing is left behind.
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { advanceAvatar } from '../data/avatars.repo.ts';
import { checkCanChangeOwnAvatar } from '../access/avatars.ts';
import { JsonableError } from '../errors.ts';
import type { StreamedMultipart } from '../lib/multipart-body.ts';
import { uploadedFileName, uploadContentType, bareContentType } from '../lib/uploads.ts';
import { AVATAR_SIZE, AVATAR_SOURCE_GRAVATAR, AVATAR_SOURCE_UPLOADED, MEDIUM_AVATAR_SIZE, avatarKeys, avatarUrl } from '../lib/avatar.ts';
import { ACCEPTED_IMAGE_TYPES, invalidImageFormat, squarePngs } from '../lib/image-resize.ts';

/** Zulip's MAX_AVATAR_FILE_SIZE_MIB. */
export const MAX_AVATAR_FILE_SIZE_MIB = 5;

const tooLarge = (mib: number) => new JsonableError(`Uploaded file is larger than the allowed limit of ${mib} MiB`);

/** The one image file of a body, read into memory up to `limitMib` (refused as soon as it passes). */
export async function readOneImage(body: StreamedMultipart, limitMib: number, missing: string): Promise<{ bytes: Buffer; contentType: string }> {
  const limit = limitMib * 1024 * 1024;
  try {
    let file = await body.nextFile();
    while (file !== null && uploadedFileName(file.filename) === '') file = await body.nextFile();
    if (file === null) throw new JsonableError(missing);
    const contentType = bareContentType(uploadContentType(file.contentType, uploadedFileName(file.filename))) ?? '';
    if (!ACCEPTED_IMAGE_TYPES.has(contentType)) throw invalidImageFormat();
    const bytes = await readLimited(file.stream, limit, () => tooLarge(limitMib));
    const others = (await body.discardRest()).filter((f) => uploadedFileName(f) !== '');
    if (others.length > 0) throw new JsonableError(missing);
    if (bytes.length === 0) throw new JsonableError('Could not decode image; did you upload an image file?');
    return { bytes, contentType };
  } catch (error) {
    body.abandon(Math.max(limit, 64 * 1024 * 1024));
    throw error;
  }
}

async function readLimited(stream: Readable, limit: number, tooBig: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      stream.destroy();
      throw tooBig();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export function avatarEvent(user: User) {
  return {
    type: 'realm_user',
    op: 'update',
    person: { user_id: user.id, avatar_source: user.avatarSource, avatar_url: avatarUrl(user), avatar_url_medium: avatarUrl(user, true), avatar_version: user.avatarVersion },
  };
}

/** Moves the user to the next avatar version with `source`; the previous version's files go after commit. */
async function changeAvatar(deps: AppDeps, realm: Realm, user: User, source: string): Promise<User> {
  const changed = await inTransaction(deps.db, async (tx, afterCommit) => {
    const updated = await advanceAvatar(tx, realm.id, user.id, user.avatarVersion, source);
    if (!updated) return null;
    await deps.events.publish(tx, afterCommit, realm.id, [{ realmWide: true, payload: avatarEvent(updated) }]);
    return updated;
  });
  if (!changed) throw new JsonableError('Your avatar was changed at the same time; please try again.');
  if (user.avatarSource === AVATAR_SOURCE_UPLOADED) {
    const old = avatarKeys(realm.id, user.id, user.avatarVersion);
    await deps.storage.delete([old.small, old.medium]).catch((e: unknown) => deps.logger.error({ err: e, user_id: user.id }, 'could not delete a replaced avatar'));
  }
  return changed;
}

export async function doSetAvatar(deps: AppDeps, realm: Realm, user: User, body: StreamedMultipart): Promise<{ avatar_url: string }> {
  checkCanChangeOwnAvatar(realm, user);
  const { bytes } = await readOneImage(body, MAX_AVATAR_FILE_SIZE_MIB, 'You must upload exactly one avatar.');
  const [small, medium] = await squarePngs(bytes, [AVATAR_SIZE, MEDIUM_AVATAR_SIZE]);
  const keys = avatarKeys(realm.id, user.id, user.avatarVersion + 1);
  const removeNew = () => deps.storage.delete([keys.small, keys.medium]).catch((e: unknown) => deps.logger.error({ err: e, user_id: user.id }, 'could not delete an unused avatar'));
  let changed: User;
  try {
    await deps.storage.put(keys.small, Readable.from([small!]), { contentType: 'image/png' });
    await deps.storage.put(keys.medium, Readable.from([medium!]), { contentType: 'image/png' });
    changed = await changeAvatar(deps, realm, user, AVATAR_SOURCE_UPLOADED);
  } catch (error) {
    await removeNew();
    throw error;
  }
  return { avatar_url: avatarUrl(changed) };
}

export async function doDeleteAvatar(deps: AppDeps, realm: Realm, user: User): Promise<{ avatar_url: string }> {
  checkCanChangeOwnAvatar(realm, user);
  const changed = await changeAvatar(deps, realm, user, AVATAR_SOURCE_GRAVATAR);
  return { avatar_url: avatarUrl(changed) };
}
