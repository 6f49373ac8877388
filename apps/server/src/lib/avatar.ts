// Avatar URLs (Zulip's zerver/lib/avatar.py): a user who never uploaded one has a gravatar, computed
// from their real address; an uploaded avatar lives at `/user_avatars/<realm id>/<hash>.png` (100×100)
// and `…/<hash>-medium.png` (500×500), where the hash depends on the user, the avatar's version and a
// server secret (Zulip's AVATAR_SALT): each new avatar gets a new, unguessable, cacheable path, and
// nobody can enumerate the avatars of an organization. The files are public (as Zulip's), served by
// http/user-avatars.ts from storage keys `avatars/<realm id>/<hash>[-medium].png`.
import { createHash, createHmac } from 'node:crypto';
import { gravatarUrl } from './user-format.ts';

export const AVATAR_SOURCE_GRAVATAR = 'G';
export const AVATAR_SOURCE_UPLOADED = 'U';
/** Zulip's DEFAULT_AVATAR_SIZE and MEDIUM_AVATAR_SIZE (square, in pixels). */
export const AVATAR_SIZE = 100;
export const MEDIUM_AVATAR_SIZE = 500;

let salt = 'parley-avatar-salt-unconfigured';

/** Sets the secret avatar paths are derived from (server.ts, from the server's secret key, at start-up). */
export function configureAvatarSalt(secret: Buffer): void {
  salt = createHmac('sha256', secret).update('parley avatar paths').digest('hex');
}

export interface AvatarOwner {
  id: number;
  realmId: number;
  deliveryEmail: string;
  avatarSource: string;
  avatarVersion: number;
}

/** The server's salt of unguessable file paths (avatars, custom emoji). */
export const avatarSalt = () => salt;

/** `<realm id>/<40 hex>`: the path (without extension) of a user's uploaded avatar at a version. */
export function avatarBasePath(realmId: number, userId: number, version: number): string {
  return `${realmId}/${createHash('sha256').update(`${userId}:${version}:${salt}`).digest('hex').slice(0, 40)}`;
}

/** The storage keys of the avatar images at a version. */
export function avatarKeys(realmId: number, userId: number, version: number): { small: string; medium: string } {
  const base = `avatars/${avatarBasePath(realmId, userId, version)}`;
  return { small: `${base}.png`, medium: `${base}-medium.png` };
}

/** The avatar's URL as Zulip's avatar_url gives it (versioned); `medium` for the 500-pixel one. */
export function avatarUrl(user: AvatarOwner, medium = false): string {
  if (user.avatarSource !== AVATAR_SOURCE_UPLOADED) {
    const url = gravatarUrl(user.deliveryEmail, user.avatarVersion);
    return medium ? `${url}&s=${MEDIUM_AVATAR_SIZE}` : url;
  }
  return `/user_avatars/${avatarBasePath(user.realmId, user.id, user.avatarVersion)}${medium ? '-medium' : ''}.png?version=${user.avatarVersion}`;
}
