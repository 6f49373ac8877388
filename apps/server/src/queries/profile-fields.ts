// Read model of the organization's custom profile fields (GET /realm/profile_fields, /register).
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import type { CustomProfileField, Realm } from '../data/models.ts';
import { listProfileFields } from '../data/profile-fields.repo.ts';
import { formatProfileField } from '../lib/profile-fields.ts';

/** The CustomProfileField object; the stored type is one of the spec's field types (checked on creation). */
export const presentProfileField = (field: CustomProfileField): Schema<'CustomProfileField'> => ({
  ...formatProfileField(field),
  type: field.fieldType as Schema<'CustomProfileFieldType'>,
});

export async function customProfileFields(db: RawSql, realm: Realm): Promise<Schema<'CustomProfileField'>[]> {
  return (await listProfileFields(db, realm.id)).map(presentProfileField);
}
