// Who may change custom profile field values. Defining fields is for organization administrators
// (access/roles.ts requireAdmin); a user changes their own values of the fields marked
// `editable_by_user`, administrators every field (Zulip's validate_user_custom_profile_data and
// check_remove_custom_profile_field_value).
import type { CustomProfileField, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { isAdmin } from './roles.ts';

export function checkCanChangeProfileValue(actor: Pick<User, 'role'>, field: Pick<CustomProfileField, 'editableByUser'>): void {
  if (!isAdmin(actor) && !field.editableByUser) {
    throw new JsonableError('You are not allowed to change this field. Contact an administrator to update it.');
  }
}
