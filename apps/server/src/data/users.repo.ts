import type { Db } from './db.ts';

/** The key's row with its user and the user's organization (one query per authenticated request). */
export const findUserByApiKeyHash = (db: Db, lookupHash: string) =>
  db.apiKey.findUnique({ where: { lookupHash }, include: { user: { include: { realm: true } } } });

export const findUserById = (db: Db, realmId: number, id: number) => db.user.findFirst({ where: { id, realmId } });

export const findUserByDeliveryEmail = (db: Db, realmId: number, email: string) =>
  db.user.findFirst({ where: { realmId, deliveryEmail: { equals: email, mode: 'insensitive' } } });

export const findUsersByIds = (db: Db, realmId: number, ids: number[]) =>
  db.user.findMany({ where: { realmId, id: { in: ids } }, orderBy: { id: 'asc' } });

export const listUsers = (db: Db, realmId: number, ids?: number[]) =>
  db.user.findMany({ where: { realmId, ...(ids ? { id: { in: ids } } : {}) }, orderBy: { id: 'asc' } });

/** Active accounts of the organization, its system bots aside (they are Parley's, not the organization's). */
export const countActiveUsers = (db: Db, realmId: number) => db.user.count({ where: { realmId, isActive: true, systemBot: null } });

export const countActiveHumanOwners = (db: Db, realmId: number) =>
  db.user.count({ where: { realmId, isActive: true, isBot: false, role: 100 } });

/** Locks a user row and returns it as committed now (read after the lock is granted). */
export async function lockUser(db: Db, realmId: number, id: number) {
  await db.$queryRaw`SELECT id FROM "user" WHERE id = ${id} AND realm_id = ${realmId} FOR UPDATE`;
  return db.user.findFirst({ where: { id, realmId } });
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
    systemBot?: string | null;
    timezone?: string;
  },
) => db.user.create({ data: { ...data, settings: { create: {} } } });

/** The organization's system bot of this kind (see actions/system-bots.ts), if it exists yet. */
export const findSystemBot = (db: Db, realmId: number, kind: string) => db.user.findUnique({ where: { realmId_systemBot: { realmId, systemBot: kind } } });

/** Serialises the creation of an organization's system bots. */
export async function lockSystemBots(db: Db, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(7265010, ${realmId}::int)`;
}

export const updateUser = (db: Db, id: number, data: { fullName?: string; role?: number; isActive?: boolean; email?: string; deliveryEmail?: string }) =>
  db.user.update({ where: { id }, data });

export const upsertApiKey = (db: Db, userId: number, lookupHash: string, ciphertext: string) =>
  db.apiKey.upsert({
    where: { userId },
    create: { userId, lookupHash, ciphertext },
    update: { lookupHash, ciphertext, createdAt: new Date() },
  });

export const findApiKey = (db: Db, userId: number) => db.apiKey.findUnique({ where: { userId } });

/** A user with their e-mail visibility setting, as the user directory formats it. */
export type DirectoryUser = Awaited<ReturnType<typeof listUsers>>[number] & { emailVisibility: number };

/**
 * Every user of the organization with their e-mail visibility, in one statement whatever the
 * organization's size (no list of ids to bind).
 */
export async function listDirectoryUsers(db: Db, realmId: number): Promise<DirectoryUser[]> {
  const [users, settings] = await Promise.all([
    db.user.findMany({ where: { realmId }, orderBy: { id: 'asc' } }),
    db.$queryRaw<{ user_id: number; v: number }[]>`
      SELECT s.user_id, s.email_address_visibility AS v FROM user_settings s JOIN "user" u ON u.id = s.user_id WHERE u.realm_id = ${realmId}`,
  ]);
  const visibility = new Map(settings.map((s) => [s.user_id, s.v]));
  return users.map((u) => Object.assign(u, { emailVisibility: visibility.get(u.id) ?? 1 }));
}
