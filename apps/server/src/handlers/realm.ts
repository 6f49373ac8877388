import type { Handler } from '../http/handler.ts';
import { doUpdateRealm } from '../actions/realm.ts';
import { doUpdateRealmUserSettingsDefaults } from '../actions/realm-user-defaults.ts';
import { doDeleteRealmIcon, doDeleteRealmLogo, doUploadRealmIcon, doUploadRealmLogo } from '../actions/realm-images.ts';

export const updateRealm: Handler<'update-realm'> = async ({ params, realm, user, deps }) => doUpdateRealm(deps, realm, user, params);

export const updateRealmUserSettingsDefaults: Handler<'update-realm-user-settings-defaults'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  await doUpdateRealmUserSettingsDefaults(deps, realm, user, params);
  // The defaults are no table a per-process cache follows.
  cachedTableWrites.none();
  return {};
};

// The organization's icon and logos (actions/realm-images.ts; served by http/user-avatars.ts).
export const uploadRealmIcon: Handler<'upload-realm-icon'> = async ({ realm, user, deps, multipart }) => doUploadRealmIcon(deps, realm, user, multipart);

export const deleteRealmIcon: Handler<'delete-realm-icon'> = async ({ realm, user, deps }) => doDeleteRealmIcon(deps, realm, user);

export const uploadRealmLogo: Handler<'upload-realm-logo'> = async ({ params, realm, user, deps, files }) => {
  await doUploadRealmLogo(deps, realm, user, params.night, files);
  return {};
};

export const deleteRealmLogo: Handler<'delete-realm-logo'> = async ({ params, realm, user, deps }) => {
  await doDeleteRealmLogo(deps, realm, user, params.night);
  return {};
};
