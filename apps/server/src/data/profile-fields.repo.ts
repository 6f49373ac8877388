import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';
import type { CustomProfileField, CustomProfileFieldValue } from './models.ts';

export const listProfileFields = async (db: RawSql, realmId: number): Promise<CustomProfileField[]> =>
  db.$queryRaw<CustomProfileField[]>`
    SELECT ${modelColumns(Prisma.CustomProfileFieldScalarFieldEnum, 'f')} FROM custom_profile_field f WHERE f.realm_id = ${realmId}::int ORDER BY f."order", f.id`;

export const findProfileFieldsByIds = (db: Db, realmId: number, ids: number[]) =>
  db.customProfileField.findMany({ where: { realmId, id: { in: ids } } });

export const findProfileFieldById = (db: Db, realmId: number, id: number) => db.customProfileField.findFirst({ where: { realmId, id } });

/** The organization's field with this label in any case (labels are unique regardless of case: migration 20261122004500). */
export async function findProfileFieldByName(db: Db, realmId: number, name: string): Promise<CustomProfileField | null> {
  // lower() = lower(), never Prisma's case-insensitive `equals` (an ILIKE: `_` and `%` would match other labels).
  const [row] = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM custom_profile_field WHERE realm_id = ${realmId}::int AND lower(name) = lower(${name}) LIMIT 1`;
  return row ? db.customProfileField.findFirst({ where: { realmId, id: row.id } }) : null;
}

/**
 * The organization's fields among `ids`, share-locked until the transaction ends: a value written for
 * one of them cannot race the field's deletion or a change of its options.
 */
export async function shareLockProfileFields(db: Db, realmId: number, ids: number[]): Promise<CustomProfileField[]> {
  if (ids.length === 0) return [];
  const locked = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM custom_profile_field WHERE realm_id = ${realmId} AND id = ANY(${[...new Set(ids)]}::int[]) ORDER BY id FOR SHARE`;
  return findProfileFieldsByIds(db, realmId, locked.map((r) => r.id));
}

/** How many of the organization's fields are shown in the profile summary, `exceptId` aside. */
export const countSummaryFields = (db: Db, realmId: number, exceptId?: number) =>
  db.customProfileField.count({ where: { realmId, displayInProfileSummary: true, ...(exceptId !== undefined ? { id: { not: exceptId } } : {}) } });

/** A new field; its `order` is its id (Zulip's), so it comes after the fields that exist. */
export async function createProfileField(
  db: Db,
  data: { realmId: number; fieldType: number; name: string; hint: string; fieldData: unknown; displayInProfileSummary: boolean; required: boolean; editableByUser: boolean },
) {
  const created = await db.customProfileField.create({ data: { ...data, fieldData: data.fieldData as Prisma.InputJsonValue } });
  return db.customProfileField.update({ where: { id: created.id }, data: { order: created.id } });
}

export const updateProfileField = (
  db: Db,
  id: number,
  { fieldData, ...data }: Partial<{ name: string; hint: string; fieldData: unknown; displayInProfileSummary: boolean; required: boolean; editableByUser: boolean }>,
) => db.customProfileField.update({ where: { id }, data: { ...data, ...(fieldData !== undefined ? { fieldData: fieldData as Prisma.InputJsonValue } : {}) } });

/** Deletes a field; its users' values go with it (cascade). */
export const deleteProfileField = (db: Db, id: number) => db.customProfileField.delete({ where: { id } });

/** Sets each field's `order` (one statement). */
export async function setProfileFieldOrders(db: Db, realmId: number, orders: Map<number, number>): Promise<void> {
  if (orders.size === 0) return;
  const ids = [...orders.keys()];
  const positions = ids.map((id) => orders.get(id)!);
  await db.$executeRaw`
    UPDATE custom_profile_field f SET "order" = o.position
    FROM unnest(${ids}::int[], ${positions}::int[]) AS o(id, position)
    WHERE f.id = o.id AND f.realm_id = ${realmId}`;
}

/** Removes the values of a list-of-options field that chose none of `keptOptions`. */
export const deleteValuesOutside = (db: Db, fieldId: number, keptOptions: string[]) =>
  db.customProfileFieldValue.deleteMany({ where: { fieldId, value: { notIn: keptOptions } } });

export const profileValuesOfUsers = async (db: RawSql, userIds: number[]): Promise<CustomProfileFieldValue[]> =>
  db.$queryRaw<CustomProfileFieldValue[]>`
    SELECT ${modelColumns(Prisma.CustomProfileFieldValueScalarFieldEnum, 'v')} FROM custom_profile_field_value v
    WHERE v.user_id = ANY(${userIds}::int[]) ORDER BY v.field_id`;

/** One user's values of the given fields. */
export const profileValuesOfUser = (db: Db, userId: number, fieldIds: number[]) =>
  db.customProfileFieldValue.findMany({ where: { userId, fieldId: { in: fieldIds } } });

export const upsertProfileValue = (db: Db, userId: number, fieldId: number, value: string, renderedValue: string | null) =>
  db.customProfileFieldValue.upsert({
    where: { userId_fieldId: { userId, fieldId } },
    create: { userId, fieldId, value, renderedValue },
    update: { value, renderedValue },
  });

/** Deletes a user's value of a field; the number of values deleted (0 or 1). */
export const deleteProfileValue = async (db: Db, userId: number, fieldId: number): Promise<number> =>
  (await db.customProfileFieldValue.deleteMany({ where: { userId, fieldId } })).count;

/** Every custom profile field value of the organization's users, in one statement. */
export const profileValuesOfRealm = async (db: RawSql, realmId: number): Promise<CustomProfileFieldValue[]> =>
  db.$queryRaw<CustomProfileFieldValue[]>`
    SELECT ${modelColumns(Prisma.CustomProfileFieldValueScalarFieldEnum, 'v')} FROM custom_profile_field_value v JOIN "user" u ON u.id = v.user_id
    WHERE u.realm_id = ${realmId}::int ORDER BY v.user_id, v.field_id`;
