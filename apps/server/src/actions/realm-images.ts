// The organization's icon and logos (Zulip's upload_icon / delete_icon_backend, upload_logo /
// delete_logo_backend, do_change_icon_source and do_change_logo_source): administrators only. An
// upload is checked and re-encoded first (the icon a 100-pixel PNG square, as avatars are; a logo
// shrunk to fit within 800×100), stored with the upload as sent, and only then does the realm row
// move to the next version with the new source, with a `realm` `update_dict` event to every active
// user in the same transaction. As in Zulip, an image's path does not change between versions (the
// URL's `?version=` does) and a deletion leaves the files in place: they are overwritten by the next upload.
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { advanceRealmImage } from '../data/realm-images.repo.ts';
import { requireAdmin } from '../access/roles.ts';
import { JsonableError } from '../errors.ts';
import type { BodyFile, StreamedMultipart } from '../lib/multipart-body.ts';
import { AVATAR_SIZE } from '../lib/avatar.ts';
import { fittedPng, squarePngs } from '../lib/image-resize.ts';
import {
  ICON_FROM_GRAVATAR,
  ICON_UPLOADED,
  LOGO_DEFAULT,
  LOGO_MAX_HEIGHT,
  LOGO_MAX_WIDTH,
  LOGO_UPLOADED,
  MAX_ICON_FILE_SIZE_MIB,
  MAX_LOGO_FILE_SIZE_MIB,
  type RealmImage,
  realmIconUrl,
  realmImageData,
  realmImageKeys,
} from '../lib/realm-images.ts';
import { readOneImage } from './avatars.ts';
import { bodyImage } from './bot-avatars.ts';

/** Moves the image to its next version with `source`, announcing it; the updated realm. */
async function changeRealmImage(deps: AppDeps, realm: Realm, image: RealmImage, source: string): Promise<Realm> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const updated = await advanceRealmImage(tx, realm.id, image, source);
    const payload = { type: 'realm', op: 'update_dict', property: image, data: realmImageData(updated, image) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ realmWide: true, payload }]);
    return updated;
  });
}

async function storeRealmImage(deps: AppDeps, realmId: number, image: RealmImage, png: Buffer, original: Buffer): Promise<void> {
  const keys = realmImageKeys(realmId, image);
  await deps.storage.put(keys.original, Readable.from([original]), { contentType: 'application/octet-stream' });
  await deps.storage.put(keys.png, Readable.from([png]), { contentType: 'image/png' });
}

export async function doUploadRealmIcon(deps: AppDeps, realm: Realm, user: User, body: StreamedMultipart): Promise<{ icon_url: string }> {
  requireAdmin(user);
  const { bytes } = await readOneImage(body, MAX_ICON_FILE_SIZE_MIB, 'You must upload exactly one icon.');
  const [png] = await squarePngs(bytes, [AVATAR_SIZE]);
  await storeRealmImage(deps, realm.id, 'icon', png!, bytes);
  return { icon_url: realmIconUrl(await changeRealmImage(deps, realm, 'icon', ICON_UPLOADED)) };
}

export async function doDeleteRealmIcon(deps: AppDeps, realm: Realm, user: User): Promise<{ icon_url: string }> {
  requireAdmin(user);
  return { icon_url: realmIconUrl(await changeRealmImage(deps, realm, 'icon', ICON_FROM_GRAVATAR)) };
}

export async function doUploadRealmLogo(deps: AppDeps, realm: Realm, user: User, night: boolean, files: readonly BodyFile[]): Promise<void> {
  requireAdmin(user);
  const missing = 'You must upload exactly one logo.';
  const bytes = bodyImage(files, missing, MAX_LOGO_FILE_SIZE_MIB);
  if (bytes === null) throw new JsonableError(missing);
  const image = night ? 'night_logo' : 'logo';
  await storeRealmImage(deps, realm.id, image, await fittedPng(bytes, LOGO_MAX_WIDTH, LOGO_MAX_HEIGHT), bytes);
  await changeRealmImage(deps, realm, image, LOGO_UPLOADED);
}

export async function doDeleteRealmLogo(deps: AppDeps, realm: Realm, user: User, night: boolean): Promise<void> {
  requireAdmin(user);
  await changeRealmImage(deps, realm, night ? 'night_logo' : 'logo', LOGO_DEFAULT);
}
