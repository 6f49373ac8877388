import type { Handler } from '../http/handler.ts';
import { customProfileFields } from '../queries/profile-fields.ts';
import { doCreateCustomProfileField } from '../actions/profile-fields.ts';

export const getCustomProfileFields: Handler<'get-custom-profile-fields'> = async ({ realm, deps }) => ({
  custom_fields: await customProfileFields(deps.db, realm),
});

export const createCustomProfileField: Handler<'create-custom-profile-field'> = async ({ params, realm, user, deps }) => ({
  id: await doCreateCustomProfileField(deps, realm, user, {
    name: params.name ?? '',
    hint: params.hint ?? '',
    fieldType: params.field_type,
    fieldData: params.field_data,
    displayInProfileSummary: params.display_in_profile_summary ?? false,
    required: params.required ?? false,
    editableByUser: params.editable_by_user ?? true,
  }),
});
