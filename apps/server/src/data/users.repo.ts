import type { CustomProfileFieldValue, User } from './models.ts';
import { Prisma, modelColumns, type Db, type RawSql } from './db.ts';

/** The key's row with its user and the user's organization (one query per authenticated request). */
export const findUserByApiKeyHash = (db: Db, lookupHash: string) =>
  db.apiKey.findUnique({ where: { lookupHash }, include: { user: { include: { realm: true } } } });

export const findUserById = (db: Db, realmId: number, id: number) => db.user.findFirst({ where: { id, realmId } });

/**
 * The user whose real address is `email`, compared as lower() = lower() (the unique index). Not Prisma's
 * case-insensitive `equals`, which is an ILIKE: there `_` and `%` would match any character.
 */
export async function findUserByDeliveryEmail(db: Db, realmId: number, email: string) {
  const [row] = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM "user" WHERE realm_id = ${realmId}::int AND lower(delivery_email) = lower(${email}::text)`;
  return row ? findUserById(db, realmId, row.id) : null;
}

export const findUsersByIds = (db: Db, realmId: number, ids: number[]) =>
  db.user.findMany({ where: { realmId, id: { in: ids } }, orderBy: { id: 'asc' } });

export const listUsers = async (db: RawSql, realmId: number, ids?: number[]): Promise<User[]> =>
  db.$queryRaw<User[]>`
    SELECT ${modelColumns(Prisma.UserScalarFieldEnum, 'u')} FROM "user" u
    WHERE u.realm_id = ${realmId}::int ${ids ? Prisma.sql`AND u.id = ANY(${ids}::int[])` : Prisma.empty}
    ORDER BY u.id`;

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
    avatarSource?: string;
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
export async function listDirectoryUsers(db: RawSql, realmId: number, ids?: number[]): Promise<DirectoryUser[]> {
  const [users, settings] = await Promise.all([
    listUsers(db, realmId, ids),
    db.$queryRaw<{ user_id: number; v: number }[]>`
      SELECT s.user_id, s.email_address_visibility AS v FROM user_settings s JOIN "user" u ON u.id = s.user_id
      WHERE u.realm_id = ${realmId} ${ids ? Prisma.sql`AND u.id = ANY(${ids}::int[])` : Prisma.empty}`,
  ]);
  const visibility = new Map(settings.map((s) => [s.user_id, s.v]));
  return users.map((u) => Object.assign(u, { emailVisibility: visibility.get(u.id) ?? 1 }));
}

/**
 * Every user of the organization (by id) with a version of what their user object is made of: the
 * row versions (PostgreSQL's xmin, which changes with every update) of the user, their settings and
 * their custom profile field values, as the statement's snapshot sees them. Equal versions, equal
 * objects: a cache keyed by it needs no invalidation.
 */
export async function userObjectVersions(db: RawSql, realmId: number): Promise<Array<{ id: number; active: boolean; version: string }>> {
  return db.$queryRaw`SELECT u.id, u.is_active AS active, ${USER_OBJECT_VERSION} AS version FROM ${usersWithVersionSources(realmId)} ORDER BY u.id`;
}

/** A user's object version (u, s and p of usersWithVersionSources): its rows' xmin values. */
const USER_OBJECT_VERSION = Prisma.sql`u.xmin::text || '/' || COALESCE(s.xmin::text, '') || '/' || COALESCE(p.v, '')`;

/** The organization's users (u) with their settings row (s) and their profile values' versions (p.v). */
const usersWithVersionSources = (realmId: number) => Prisma.sql`"user" u
    LEFT JOIN user_settings s ON s.user_id = u.id
    LEFT JOIN (
      SELECT v.user_id, string_agg(v.field_id::text || ':' || v.xmin::text, ',' ORDER BY v.field_id) AS v
      FROM custom_profile_field_value v JOIN "user" o ON o.id = v.user_id WHERE o.realm_id = ${realmId} GROUP BY v.user_id
    ) p ON p.user_id = u.id
    WHERE u.realm_id = ${realmId}`;

/**
 * The user of the organization whose real address is `email` (compared as lower() = lower(), on the
 * unique index), provided their e-mail visibility is one of `visibilities` or they are a bot (bots'
 * addresses are public): the choice is made by the statement that finds the address, so that a hidden
 * address and an unknown one take the same path. A user without a settings row has the default
 * visibility, 1 ("everyone"). Never a LIKE comparison (Prisma's case-insensitive `equals`): `_` and `%`
 * in an address are plain characters.
 */
export async function findUserByDeliveryEmailVisibleAs(db: Db, realmId: number, email: string, visibilities: readonly number[]) {
  const [row] = await db.$queryRaw<{ id: number }[]>`
    SELECT u.id FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE u.realm_id = ${realmId}::int AND lower(u.delivery_email) = lower(${email}::text)
      AND (u.is_bot OR COALESCE(s.email_address_visibility, 1) = ANY(${[...visibilities]}::int[]))`;
  return row ? findUserById(db, realmId, row.id) : null;
}

/**
 * One digest of what userObjectVersions answers (every user's id, whether active, and version, in id
 * order), as the statement's snapshot sees it: equal digests, equal lists. One row instead of one per
 * user for a registration to find nothing changed (md5 over the ordered list; PostgreSQL does the work).
 * The same statement reads the viewer's row as listDirectoryUsers does and their profile values as
 * profileValuesOfUsers does (field order), so that a registration finding nothing changed sends one
 * statement for its users.
 */
export async function userObjectVersionsDigest(
  db: RawSql,
  realmId: number,
  viewerId: number,
): Promise<{ digest: string; viewer: DirectoryUser | null; profileValues: CustomProfileFieldValue[] }> {
  const [row] = await db.$queryRaw<Array<Record<string, unknown>>>`
    SELECT d.digest, v.* FROM (
      SELECT md5(string_agg(u.id::text || (CASE WHEN u.is_active THEN '+' ELSE '-' END) || ${USER_OBJECT_VERSION}, ',' ORDER BY u.id)) AS digest
      FROM ${usersWithVersionSources(realmId)}
    ) d LEFT JOIN (
      SELECT ${modelColumns(Prisma.UserScalarFieldEnum, 'u')}, COALESCE(s.email_address_visibility, 1) AS "emailVisibility",
        COALESCE((SELECT json_agg(json_build_object('userId', f.user_id, 'fieldId', f.field_id, 'value', f.value, 'renderedValue', f.rendered_value) ORDER BY f.field_id)
          FROM custom_profile_field_value f WHERE f.user_id = u.id), '[]'::json) AS "profileValues"
      FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
      WHERE u.realm_id = ${realmId} AND u.id = ${viewerId}
    ) v ON true`;
  const { digest, profileValues, ...user } = row ?? {};
  const text = typeof digest === 'string' ? digest : '';
  if (user.id === null || user.id === undefined) return { digest: text, viewer: null, profileValues: [] };
  // A json column: parsed by node-postgres, and by Prisma's client too (the fallback of tests counting statements).
  const values = (typeof profileValues === 'string' ? JSON.parse(profileValues) : profileValues) as CustomProfileFieldValue[];
  return { digest: text, viewer: user as DirectoryUser, profileValues: values };
}
