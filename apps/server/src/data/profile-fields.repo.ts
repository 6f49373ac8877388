import type { Db } from './db.ts';
import { Prisma } from './db.ts';

export const listProfileFields = (db: Db, realmId: number) =>
  db.customProfileField.findMany({ where: { realmId }, orderBy: [{ order: 'asc' }, { id: 'asc' }] });

export const findProfileFieldsByIds = (db: Db, realmId: number, ids: number[]) =>
  db.customProfileField.findMany({ where: { realmId, id: { in: ids } } });

export const findProfileFieldByName = (db: Db, realmId: number, name: string) =>
  db.customProfileField.findFirst({ where: { realmId, name: { equals: name, mode: 'insensitive' } } });

export async function createProfileField(
  db: Db,
  data: { realmId: number; fieldType: number; name: string; hint: string; fieldData: unknown; displayInProfileSummary: boolean; required: boolean; editableByUser: boolean },
) {
  const last = await db.customProfileField.aggregate({ where: { realmId: data.realmId }, _max: { order: true } });
  return db.customProfileField.create({
    data: { ...data, fieldData: data.fieldData as Prisma.InputJsonValue, order: (last._max.order ?? 0) + 1 },
  });
}

export const profileValuesOfUsers = (db: Db, userIds: number[]) =>
  db.customProfileFieldValue.findMany({ where: { userId: { in: userIds } }, orderBy: { fieldId: 'asc' } });

export const upsertProfileValue = (db: Db, userId: number, fieldId: number, value: string, renderedValue: string | null) =>
  db.customProfileFieldValue.upsert({
    where: { userId_fieldId: { userId, fieldId } },
    create: { userId, fieldId, value, renderedValue },
    update: { value, renderedValue },
  });

export const deleteProfileValue = (db: Db, userId: number, fieldId: number) =>
  db.customProfileFieldValue.deleteMany({ where: { userId, fieldId } });

/** Every custom profile field value of the organization's users, in one statement. */
export const profileValuesOfRealm = (db: Db, realmId: number) =>
  db.customProfileFieldValue.findMany({ where: { user: { realmId } }, orderBy: [{ userId: 'asc' }, { fieldId: 'asc' }] });
