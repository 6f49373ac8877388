// The organization's icon and logos (Zulip's zerver/lib/realm_icon.py and realm_logo.py). An uploaded
// one lives in storage at `avatars/<realm id>/realm/<name>.png` (the upload as sent besides, at
// `….original`) and is served, like avatars, by http/user-avatars.ts at `/user_avatars/<realm id>/realm/
// <name>.png`; its URL carries the version (`?version=N`), which every change moves on. Without an
// upload the icon is a gravatar identicon and the logos Zulip's default logo.
import { createHash } from 'node:crypto';
import type { Realm } from '../data/models.ts';

export const ICON_FROM_GRAVATAR = 'G';
export const ICON_UPLOADED = 'U';
export const LOGO_DEFAULT = 'D';
export const LOGO_UPLOADED = 'U';

/** Zulip's MAX_ICON_FILE_SIZE_MIB and MAX_LOGO_FILE_SIZE_MIB. */
export const MAX_ICON_FILE_SIZE_MIB = 5;
export const MAX_LOGO_FILE_SIZE_MIB = 5;
/** Zulip's resize_logo bounds: a logo is shrunk to fit within them, never enlarged. */
export const LOGO_MAX_WIDTH = 800;
export const LOGO_MAX_HEIGHT = 100;

export type RealmImage = 'icon' | 'logo' | 'night_logo';

type RealmImageFields = Pick<Realm, 'id' | 'url' | 'iconSource' | 'iconVersion' | 'logoSource' | 'logoVersion' | 'nightLogoSource' | 'nightLogoVersion'>;

/** The storage keys of an uploaded image (the re-encoded PNG and the upload as sent). */
export function realmImageKeys(realmId: number, image: RealmImage): { png: string; original: string } {
  const base = `avatars/${realmId}/realm/${image}`;
  return { png: `${base}.png`, original: `${base}.original` };
}

/** The image's source and version as the realm row holds them. */
export function realmImageState(realm: RealmImageFields, image: RealmImage): { source: string; version: number } {
  if (image === 'icon') return { source: realm.iconSource, version: realm.iconVersion };
  if (image === 'logo') return { source: realm.logoSource, version: realm.logoVersion };
  return { source: realm.nightLogoSource, version: realm.nightLogoVersion };
}

const uploadedUrl = (realmId: number, image: RealmImage, version: number) => `/user_avatars/${realmId}/realm/${image}.png?version=${version}`;

/** Zulip's realm_icon_url: the upload, or the identicon gravatar of the organization's host name. */
export function realmIconUrl(realm: RealmImageFields): string {
  if (realm.iconSource === ICON_UPLOADED) return uploadedUrl(realm.id, 'icon', realm.iconVersion);
  const hash = createHash('md5').update(new URL(realm.url).hostname.toLowerCase()).digest('hex');
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=${realm.iconVersion}`;
}

/** Zulip's get_realm_logo_url: the upload, or the default logo. */
export function realmLogoUrl(realm: RealmImageFields, night: boolean): string {
  const image = night ? 'night_logo' : 'logo';
  const { source, version } = realmImageState(realm, image);
  return source === LOGO_UPLOADED ? uploadedUrl(realm.id, image, version) : '/static/images/logo/zulip-org-logo.svg?version=0';
}

/** The `data` of the `realm` `update_dict` event for the image (and the /register keys, with `realm_`). */
export function realmImageData(realm: RealmImageFields, image: RealmImage): Record<string, string> {
  if (image === 'icon') return { icon_url: realmIconUrl(realm), icon_source: realm.iconSource };
  if (image === 'logo') return { logo_url: realmLogoUrl(realm, false), logo_source: realm.logoSource };
  return { night_logo_url: realmLogoUrl(realm, true), night_logo_source: realm.nightLogoSource };
}

/** The /register state of the three images (realm_icon_url, realm_icon_source, realm_logo_url …). */
export function realmImagesState(realm: RealmImageFields): Record<string, string> {
  const out: Record<string, string> = {};
  for (const image of ['icon', 'logo', 'night_logo'] as const) for (const [k, v] of Object.entries(realmImageData(realm, image))) out[`realm_${k}`] = v;
  return out;
}
