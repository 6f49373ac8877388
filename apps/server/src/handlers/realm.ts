import type { Handler } from '../http/handler.ts';
import { doUpdateRealm } from '../actions/realm.ts';
import { doUpdateRealmUserSettingsDefaults } from '../actions/realm-user-defaults.ts';

export const updateRealm: Handler<'update-realm'> = async ({ params, realm, user, deps }) => doUpdateRealm(deps, realm, user, params);

export const updateRealmUserSettingsDefaults: Handler<'update-realm-user-settings-defaults'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  await doUpdateRealmUserSettingsDefaults(deps, realm, user, params);
  // The defaults are no table a per-process cache follows.
  cachedTableWrites.none();
  return {};
};
