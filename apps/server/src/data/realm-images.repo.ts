// The realm row's icon and logo columns (lib/realm-images.ts).
import type { Db } from './db.ts';
import type { RealmImage } from '../lib/realm-images.ts';

const COLUMNS = {
  icon: { source: 'iconSource', version: 'iconVersion' },
  logo: { source: 'logoSource', version: 'logoVersion' },
  night_logo: { source: 'nightLogoSource', version: 'nightLogoVersion' },
} as const;

/** Sets the image's source and moves its version on by one (Zulip's do_change_icon_source / do_change_logo_source); the updated realm. */
export async function advanceRealmImage(db: Db, realmId: number, image: RealmImage, source: string) {
  const c = COLUMNS[image];
  return db.realm.update({ where: { id: realmId }, data: { [c.source]: source, [c.version]: { increment: 1 } } });
}
