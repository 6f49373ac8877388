import type { Db } from './db.ts';

/**
 * Sets a user's avatar source and moves their avatar version on by one, if it is still `fromVersion`
 * (an upload stored its files under the next version's paths); null when another change came first.
 */
export async function advanceAvatar(db: Db, realmId: number, userId: number, fromVersion: number, source: string) {
  const { count } = await db.user.updateMany({ where: { id: userId, realmId, avatarVersion: fromVersion }, data: { avatarSource: source, avatarVersion: fromVersion + 1 } });
  return count === 1 ? db.user.findFirst({ where: { id: userId, realmId } }) : null;
}
