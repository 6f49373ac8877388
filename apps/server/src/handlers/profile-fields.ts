// Custom profile fields: the organization's fields (listing, creating, changing, deleting, ordering)
// and a user's own values of them. Thin: parameters mapped to the read model or to an action.
import type { Handler } from '../http/handler.ts';
import { customProfileFields } from '../queries/profile-fields.ts';
import {
  doCreateCustomProfileField,
  doDeleteCustomProfileField,
  doRemoveOwnProfileData,
  doReorderCustomProfileFields,
  doUpdateCustomProfileField,
  doUpdateOwnProfileData,
} from '../actions/profile-fields.ts';

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

export const updateCustomProfileField: Handler<'update-custom-profile-field'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateCustomProfileField(deps, realm, user, path.field_id, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.hint !== undefined ? { hint: params.hint } : {}),
    ...(params.field_data !== undefined ? { fieldData: params.field_data } : {}),
    ...(params.display_in_profile_summary !== undefined ? { displayInProfileSummary: params.display_in_profile_summary } : {}),
    ...(params.required !== undefined ? { required: params.required } : {}),
    ...(params.editable_by_user !== undefined ? { editableByUser: params.editable_by_user } : {}),
  });
  return {};
};

export const deleteCustomProfileField: Handler<'delete-custom-profile-field'> = async ({ path, realm, user, deps }) => {
  await doDeleteCustomProfileField(deps, realm, user, path.field_id);
  return {};
};

export const reorderCustomProfileFields: Handler<'reorder-custom-profile-fields'> = async ({ params, realm, user, deps }) => {
  await doReorderCustomProfileFields(deps, realm, user, params.order);
  return {};
};

export const updateProfileData: Handler<'update-profile-data'> = async ({ params, realm, user, deps }) => {
  await doUpdateOwnProfileData(deps, realm, user, params.data);
  return {};
};

export const removeProfileData: Handler<'remove-profile-data'> = async ({ params, realm, user, deps }) => {
  await doRemoveOwnProfileData(deps, realm, user, params.data);
  return {};
};
