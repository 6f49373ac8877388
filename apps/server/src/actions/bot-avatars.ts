// Bots' avatars (Zulip's patch_bot_backend and add_bot_backend with a file in request.FILES): the one
// image file part of the multipart body that carries the bot's other parameters (http/multipart.ts,
// `filesInBody`), checked and resized as POST /users/me/avatar does (actions/avatars.ts) before
// anything changes. At creation the bot starts with it (avatar_source `U`, version 1, in the creation's
// transaction: its `realm_user`/`realm_bot` add events carry it); on PATCH it replaces the bot's avatar
// after the other changes, with Zulip's do_change_avatar_fields events: `realm_user` `update` to the
// organization and `realm_bot` `update` (`avatar_url`) to the owner and the administrators.
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { advanceAvatar } from '../data/avatars.repo.ts';
import { accessBotById } from '../access/bots.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { JsonableError } from '../errors.ts';
import type { BodyFile } from '../lib/multipart-body.ts';
import { bareContentType, uploadContentType, uploadedFileName } from '../lib/uploads.ts';
import { AVATAR_SIZE, AVATAR_SOURCE_UPLOADED, MEDIUM_AVATAR_SIZE, avatarKeys, avatarUrl } from '../lib/avatar.ts';
import { ACCEPTED_IMAGE_TYPES, invalidImageFormat, squarePngs } from '../lib/image-resize.ts';
import { MAX_AVATAR_FILE_SIZE_MIB, avatarEvent } from './avatars.ts';
import { realmBotUpdate } from './bot-events.ts';

/** A bot's avatar, decoded and re-encoded: the two PNG squares to store. */
export interface BotAvatarImages {
  small: Buffer;
  medium: Buffer;
}

/**
 * The body's avatar, checked and resized: null when the body has no file; Zulip's errors for more
 * than one file, one over the limit, of a type it does not decode, or whose bytes are not an image.
 */
export async function bodyAvatar(files: readonly BodyFile[]): Promise<BotAvatarImages | null> {
  const bytes = bodyImage(files, 'You may only upload one file at a time', MAX_AVATAR_FILE_SIZE_MIB);
  if (bytes === null) return null;
  const [small, medium] = await squarePngs(bytes, [AVATAR_SIZE, MEDIUM_AVATAR_SIZE]);
  return { small: small!, medium: medium! };
}

/**
 * The bytes of the body's one image file part (not decoded yet): null when the body has none;
 * `tooMany` for more than one, and Zulip's errors for one over `limitMib` or of a type it does not decode.
 */
export function bodyImage(files: readonly BodyFile[], tooMany: string, limitMib: number): Buffer | null {
  const named = files.filter((f) => uploadedFileName(f.filename) !== '');
  if (named.length === 0) return null;
  if (named.length > 1) throw new JsonableError(tooMany);
  const file = named[0]!;
  if (file.truncated) throw new JsonableError(`Uploaded file is larger than the allowed limit of ${limitMib} MiB`);
  const contentType = bareContentType(uploadContentType(file.contentType, uploadedFileName(file.filename))) ?? '';
  if (!ACCEPTED_IMAGE_TYPES.has(contentType)) throw invalidImageFormat();
  if (file.bytes.length === 0) throw new JsonableError('Could not decode image; did you upload an image file?');
  return file.bytes;
}

async function storeImages(deps: Pick<AppDeps, 'storage'>, keys: { small: string; medium: string }, images: BotAvatarImages): Promise<void> {
  await deps.storage.put(keys.small, Readable.from([images.small]), { contentType: 'image/png' });
  await deps.storage.put(keys.medium, Readable.from([images.medium]), { contentType: 'image/png' });
}

const removeImages = (deps: Pick<AppDeps, 'storage' | 'logger'>, keys: { small: string; medium: string }, userId: number) =>
  deps.storage.delete([keys.small, keys.medium]).catch((e: unknown) => deps.logger.error({ err: e, user_id: userId }, 'could not delete an unused avatar'));

/**
 * In the transaction creating `bot` (made with avatar source `U`, so that its events show the
 * avatar): stores the avatar under its first version's paths. On the transaction's failure the
 * caller removes the files (`discardCreatedBotAvatar`).
 */
export async function storeCreatedBotAvatar(deps: Pick<AppDeps, 'storage'>, bot: User, images: BotAvatarImages): Promise<void> {
  await storeImages(deps, avatarKeys(bot.realmId, bot.id, bot.avatarVersion), images);
}

/** The files a failed creation may have stored for its bot (nothing if it stored none). */
export async function discardCreatedBotAvatar(deps: Pick<AppDeps, 'storage' | 'logger'>, bot: Pick<User, 'id' | 'realmId' | 'avatarVersion'>): Promise<void> {
  await removeImages(deps, avatarKeys(bot.realmId, bot.id, bot.avatarVersion), bot.id);
}

/** PATCH /bots/{bot_id} with a file: the bot's avatar replaced (who may: as for the other changes). */
export async function doSetBotAvatar(deps: AppDeps, realm: Realm, actor: User, botId: number, images: BotAvatarImages): Promise<User> {
  requireMemberOrAdmin(actor);
  const bot = await accessBotById(deps.db, realm, actor, botId, { lock: false });
  const keys = avatarKeys(realm.id, bot.id, bot.avatarVersion + 1);
  let changed: User | null;
  try {
    await storeImages(deps, keys, images);
    changed = await inTransaction(deps.db, async (tx, afterCommit) => {
      const locked = await accessBotById(tx, realm, actor, botId, { lock: true });
      const updated = locked.avatarVersion === bot.avatarVersion ? await advanceAvatar(tx, realm.id, bot.id, bot.avatarVersion, AVATAR_SOURCE_UPLOADED) : null;
      if (!updated) return null;
      await deps.events.publish(tx, afterCommit, realm.id, [
        { realmWide: true, payload: avatarEvent(updated) },
        await realmBotUpdate(tx, realm.id, updated, { user_id: updated.id, avatar_url: avatarUrl(updated) }),
      ]);
      return updated;
    });
  } catch (error) {
    await removeImages(deps, keys, bot.id);
    throw error;
  }
  if (!changed) {
    await removeImages(deps, keys, bot.id);
    throw new JsonableError('Your avatar was changed at the same time; please try again.');
  }
  if (bot.avatarSource === AVATAR_SOURCE_UPLOADED) await removeImages(deps, avatarKeys(realm.id, bot.id, bot.avatarVersion), bot.id);
  return changed;
}
