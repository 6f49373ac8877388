// Who may change the organization's default channels and default channel groups: Zulip's
// can_manage_default_streams (organization administrators). The endpoints refuse others as Zulip's
// decorator does, with `Must be an organization administrator`; `is_default_stream` of
// PATCH /streams/{id} has its own error (access/channels.ts checkCanChangeDefaultChannels).
import { OrganizationAdministratorRequiredError } from '../errors.ts';
import { canManageDefaultChannels, type PermissionSubject } from './channels.ts';

export function checkCanManageDefaultChannels(subject: PermissionSubject): void {
  if (!canManageDefaultChannels(subject)) throw new OrganizationAdministratorRequiredError();
}
