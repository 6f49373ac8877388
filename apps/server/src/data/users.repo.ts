import type { Db } from './db.ts';

export const findUserByApiKeyHash = (db: Db, lookupHash: string) =>
  db.apiKey.findUnique({ where: { lookupHash }, include: { user: true } });

export const findUserById = (db: Db, realmId: number, id: number) => db.user.findFirst({ where: { id, realmId } });

export const findUserByDeliveryEmail = (db: Db, realmId: number, email: string) =>
  db.user.findFirst({ where: { realmId, deliveryEmail: { equals: email, mode: 'insensitive' } } });

export const findUsersByIds = (db: Db, realmId: number, ids: number[]) =>
  db.user.findMany({ where: { realmId, id: { in: ids } }, orderBy: { id: 'asc' } });

export const findUsersByDeliveryEmails = (db: Db, realmId: number, emails: string[]) =>
  db.user.findMany({
    where: { realmId, OR: emails.map((email) => ({ deliveryEmail: { equals: email, mode: 'insensitive' as const } })) },
  });

export const listUsers = (db: Db, realmId: number, ids?: number[]) =>
  db.user.findMany({ where: { realmId, ...(ids ? { id: { in: ids } } : {}) }, orderBy: { id: 'asc' } });

export const countActiveUsers = (db: Db, realmId: number) => db.user.count({ where: { realmId, isActive: true } });

export const countActiveHumanOwners = (db: Db, realmId: number) =>
  db.user.count({ where: { realmId, isActive: true, isBot: false, role: 100 } });

/** Locks the organization's active owner rows, so that concurrent demotions/deactivations cannot leave it ownerless. */
export async function lockActiveOwners(db: Db, realmId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM "user" WHERE realm_id = ${realmId} AND is_active AND NOT is_bot AND role = 100 ORDER BY id FOR UPDATE`;
  return rows.map((r) => r.id);
}

/** Locks the organization row; serialises organization-wide invariants (last user, last owner). */
export async function lockRealm(db: Db, realmId: number): Promise<void> {
  await db.$queryRaw`SELECT id FROM realm WHERE id = ${realmId} FOR UPDATE`;
}

export const createUser = (
  db: Db,
  data: {
    realmId: number;
    email: string;
    deliveryEmail: string;
    fullName: string;
    role: number;
    passwordHash: string | null;
    isBot?: boolean;
    botType?: number | null;
    botOwnerId?: number | null;
    timezone?: string;
  },
) => db.user.create({ data: { ...data, settings: { create: {} } } });

export const updateUser = (db: Db, id: number, data: { fullName?: string; role?: number; isActive?: boolean; email?: string; deliveryEmail?: string }) =>
  db.user.update({ where: { id }, data });

export const upsertApiKey = (db: Db, userId: number, lookupHash: string, ciphertext: string) =>
  db.apiKey.upsert({
    where: { userId },
    create: { userId, lookupHash, ciphertext },
    update: { lookupHash, ciphertext, createdAt: new Date() },
  });

export const findApiKey = (db: Db, userId: number) => db.apiKey.findUnique({ where: { userId } });
