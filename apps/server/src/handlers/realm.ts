import type { Handler } from '../http/handler.ts';
import { requireAdmin, requireOwner } from '../access/roles.ts';
import { doUpdateRealm } from '../actions/realm-settings.ts';
import { settingsOf } from '../lib/group-settings.ts';

/** Settings only organization owners may change (as in Zulip). */
const OWNER_ONLY = ['invite_required', 'can_create_groups', 'can_invite_users_group', 'can_manage_all_groups'];

export const updateRealm: Handler<'update-realm'> = async ({ params, realm, user, deps }) => {
  requireAdmin(user);
  const given = params as Record<string, unknown>;
  if (OWNER_ONLY.some((name) => given[name] !== undefined)) requireOwner(user);
  const changed = await doUpdateRealm(deps, realm, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.description !== undefined ? { description: params.description } : {}),
    flags: {
      enableSpectatorAccess: params.enable_spectator_access,
      emailChangesDisabled: params.email_changes_disabled,
      nameChangesDisabled: params.name_changes_disabled,
      inviteRequired: params.invite_required,
    },
    settings: Object.fromEntries(settingsOf('realm').map((s) => [s.name, given[s.name]])) as Record<string, any>,
  });
  return changed as any;
};
