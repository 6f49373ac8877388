// Custom profile fields of the organization. Creation runs in one transaction under the realm lock,
// so the caller's role (role changes take the same lock), the name check, the summary limit and the
// field order hold under concurrency.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Realm, User } from '../data/models.ts';
import { createProfileField, findProfileFieldByName, listProfileFields } from '../data/profile-fields.repo.ts';
import { lockRealm } from '../data/users.repo.ts';
import { JsonableError } from '../errors.ts';
import { FIELD_TYPES, FieldType, formatProfileField } from '../lib/profile-fields.ts';
import { requireAdmin } from '../access/roles.ts';
import { reloadActor } from '../access/users.ts';

export interface NewProfileField {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: Record<string, unknown> | undefined;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
}

/** Predefined external-account fields: created without a name, they take these. */
const EXTERNAL_ACCOUNT_DEFAULTS: Record<string, { name: string; hint: string }> = {
  github: { name: 'GitHub username', hint: 'Enter your GitHub username' },
  twitter: { name: 'Twitter username', hint: 'Enter your Twitter username' },
};

/** The field's label, hint and configuration, checked as Zulip does (no database access). */
function validateField(input: NewProfileField): { name: string; hint: string; fieldData: Record<string, unknown> } {
  const externalDefault = input.fieldType === FieldType.EXTERNAL_ACCOUNT ? EXTERNAL_ACCOUNT_DEFAULTS[String(input.fieldData?.subtype)] : undefined;
  const name = input.name.trim() || externalDefault?.name || '';
  if (!name) throw new JsonableError('Label cannot be blank.');
  if (name.length > 40) throw new JsonableError('name is too long (limit: 40 characters)');
  if (!FIELD_TYPES.includes(input.fieldType)) throw new JsonableError('Invalid field type.');
  const hint = input.hint.trim() || externalDefault?.hint || '';
  if (hint.length > 80) throw new JsonableError('hint is too long (limit: 80 characters)');
  if (input.displayInProfileSummary && (input.fieldType === FieldType.LONG_TEXT || input.fieldType === FieldType.USER)) {
    throw new JsonableError('Field type not supported for display in profile summary.');
  }
  let fieldData: Record<string, unknown> = {};
  if (input.fieldType === FieldType.SELECT) {
    const options = (input.fieldData ?? {}) as Record<string, { text?: unknown }>;
    if (Object.keys(options).length === 0) throw new JsonableError('Field must have at least one choice.');
    for (const [key, option] of Object.entries(options)) {
      if (typeof option?.text !== 'string' || option.text.trim() === '') throw new JsonableError(`field_data["${key}"]["text"] cannot be blank.`);
    }
    fieldData = options;
  } else if (input.fieldType === FieldType.EXTERNAL_ACCOUNT) {
    fieldData = input.fieldData ?? {};
  }
  return { name, hint, fieldData };
}

/** POST /realm/profile_fields: administrators; the checks in Zulip's order. */
export async function doCreateCustomProfileField(deps: AppDeps, realm: Realm, actor: User, input: NewProfileField): Promise<number> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    requireAdmin(await reloadActor(tx, realm, actor));
    const { name, hint, fieldData } = validateField(input);
    if (await findProfileFieldByName(tx, realm.id, name)) throw new JsonableError('A field with that label already exists.');
    const existing = await listProfileFields(tx, realm.id);
    if (input.displayInProfileSummary && existing.filter((f) => f.displayInProfileSummary).length >= 2) {
      throw new JsonableError('Only 2 custom profile fields can be displayed in the profile summary.');
    }
    const field = await createProfileField(tx, {
      realmId: realm.id,
      fieldType: input.fieldType,
      name,
      hint,
      fieldData,
      displayInProfileSummary: input.displayInProfileSummary,
      required: input.required,
      editableByUser: input.editableByUser,
    });
    await deps.events.publish(tx, afterCommit, realm.id, [
      { realmWide: true, payload: { type: 'custom_profile_fields', fields: [...existing, field].map(formatProfileField) } },
    ]);
    return field.id;
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError('A field with that label already exists.');
    throw error;
  });
}
