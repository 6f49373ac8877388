import type { Handler } from '../http/handler.ts';
import { doUpdateRealm } from '../actions/realm.ts';
import type { GroupSettingUpdate } from '../actions/group-settings.ts';
import { groupSettingParams } from '../lib/group-settings.ts';

export const updateRealm: Handler<'update-realm'> = async ({ params, realm, user, deps }) =>
  doUpdateRealm(deps, realm, user, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.description !== undefined ? { description: params.description } : {}),
    flags: {
      enableSpectatorAccess: params.enable_spectator_access,
      emailChangesDisabled: params.email_changes_disabled,
      nameChangesDisabled: params.name_changes_disabled,
      inviteRequired: params.invite_required,
    },
    settings: groupSettingParams<'realm', GroupSettingUpdate>('realm', params),
  });
