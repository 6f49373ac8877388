import type { Handler } from '../http/handler.ts';
import { listProfileFields } from '../data/profile-fields.repo.ts';
import { requireAdmin } from '../access/roles.ts';
import { doCreateCustomProfileField } from '../actions/profile-fields.ts';
import { formatProfileField } from '../lib/profile-fields.ts';

export const getCustomProfileFields: Handler<'get-custom-profile-fields'> = async ({ realm, deps }) => ({
  custom_fields: (await listProfileFields(deps.db, realm.id)).map(formatProfileField) as any,
});

export const createCustomProfileField: Handler<'create-custom-profile-field'> = async ({ params, realm, user, deps }) => {
  requireAdmin(user);
  const id = await doCreateCustomProfileField(deps, realm, {
    name: params.name ?? '',
    hint: params.hint ?? '',
    fieldType: params.field_type,
    fieldData: params.field_data as Record<string, unknown> | undefined,
    displayInProfileSummary: params.display_in_profile_summary ?? false,
    required: params.required ?? false,
    editableByUser: params.editable_by_user ?? true,
  });
  return { id };
};
