import type { Db } from './db.ts';

/** Active users with what visibility rules need (id, role). */
export const activeUsersWithRole = (db: Db, realmId: number) =>
  db.user.findMany({ where: { realmId, isActive: true }, select: { id: true, role: true, isBot: true } });

export async function deactivateBotsOwnedBy(db: Db, ownerId: number): Promise<number[]> {
  const bots = await db.user.findMany({ where: { botOwnerId: ownerId, isBot: true, isActive: true }, select: { id: true } });
  if (bots.length) await db.user.updateMany({ where: { id: { in: bots.map((b) => b.id) } }, data: { isActive: false } });
  return bots.map((b) => b.id);
}

export const emailVisibilityOf = async (db: Db, userIds: number[]) => {
  const rows = await db.userSettings.findMany({ where: { userId: { in: userIds } }, select: { userId: true, emailAddressVisibility: true } });
  return new Map(rows.map((r) => [r.userId, r.emailAddressVisibility]));
};
