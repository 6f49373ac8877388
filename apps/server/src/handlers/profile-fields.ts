import type { Handler } from '../http/handler.ts';
import { createProfileField, findProfileFieldByName, listProfileFields } from '../data/profile-fields.repo.ts';
import { requireAdmin } from '../access/roles.ts';
import { JsonableError } from '../errors.ts';
import { FIELD_TYPES, FieldType } from '../lib/profile-fields.ts';

export const getCustomProfileFields: Handler<'get-custom-profile-fields'> = async ({ realm, deps }) => {
  const fields = await listProfileFields(deps.db, realm.id);
  return {
    custom_fields: fields.map((f) => ({
      id: f.id,
      type: f.fieldType,
      name: f.name,
      hint: f.hint,
      field_data: f.fieldType === FieldType.SELECT || f.fieldType === FieldType.EXTERNAL_ACCOUNT ? JSON.stringify(f.fieldData) : '',
      order: f.order,
      ...(f.displayInProfileSummary ? { display_in_profile_summary: true } : {}),
      required: f.required,
      editable_by_user: f.editableByUser,
    })),
  } as any;
};

export const createCustomProfileField: Handler<'create-custom-profile-field'> = async ({ params, realm, user, deps }) => {
  requireAdmin(user);
  const externalDefault = params.field_type === FieldType.EXTERNAL_ACCOUNT ? EXTERNAL_ACCOUNT_DEFAULTS[String((params.field_data as Record<string, unknown> | undefined)?.subtype)] : undefined;
  const name = (params.name ?? '').trim() || externalDefault?.name || '';
  if (!name) throw new JsonableError('Label cannot be blank.');
  if (name.length > 40) throw new JsonableError('name is too long (limit: 40 characters)');
  if (!FIELD_TYPES.includes(params.field_type)) throw new JsonableError('Invalid field type.');
  const hint = (params.hint ?? '').trim() || externalDefault?.hint || '';
  if (params.display_in_profile_summary) {
    if (params.field_type === FieldType.LONG_TEXT || params.field_type === FieldType.USER) {
      throw new JsonableError('Field type not supported for display in profile summary.');
    }
    const shown = (await listProfileFields(deps.db, realm.id)).filter((f) => f.displayInProfileSummary).length;
    if (shown >= 2) throw new JsonableError('Only 2 custom profile fields can be displayed in the profile summary.');
  }
  if (hint.length > 80) throw new JsonableError('hint is too long (limit: 80 characters)');
  let fieldData: unknown = {};
  if (params.field_type === FieldType.SELECT) {
    const options = (params.field_data ?? {}) as Record<string, { text?: unknown; order?: unknown }>;
    if (Object.keys(options).length === 0) throw new JsonableError('Field must have at least one choice.');
    for (const [key, option] of Object.entries(options)) {
      if (typeof option?.text !== 'string' || option.text.trim() === '') throw new JsonableError(`field_data["${key}"]["text"] cannot be blank.`);
    }
    fieldData = options;
  } else if (params.field_type === FieldType.EXTERNAL_ACCOUNT) {
    fieldData = params.field_data ?? {};
  }
  if (await findProfileFieldByName(deps.db, realm.id, name)) throw new JsonableError('A field with that label already exists.');
  const field = await createProfileField(deps.db, {
    realmId: realm.id,
    fieldType: params.field_type,
    name,
    hint,
    fieldData,
    displayInProfileSummary: params.display_in_profile_summary ?? false,
    required: params.required ?? false,
    editableByUser: params.editable_by_user ?? true,
  });
  return { id: field.id };
};

/** Predefined external-account fields: created without a name, they take these. */
const EXTERNAL_ACCOUNT_DEFAULTS: Record<string, { name: string; hint: string }> = {
  github: { name: 'GitHub username', hint: 'Enter your GitHub username' },
  twitter: { name: 'Twitter username', hint: 'Enter your Twitter username' },
};
