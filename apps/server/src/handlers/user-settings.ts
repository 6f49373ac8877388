// PATCH /settings and its deprecated aliases /settings/display and /settings/notifications (same
// parameters, same behaviour, as in Zulip): a thin mapping to the action.
import type { OperationName } from '@parley/api-types';
import type { Handler, HandlerContext } from '../http/handler.ts';
import { doUpdateSettings } from '../actions/user-settings.ts';

type SettingsOperation = 'update-settings' | 'update-display-settings' | 'update-notification-settings';

async function changeSettings<K extends SettingsOperation & OperationName>({ params, realm, user, deps }: HandlerContext<K>): Promise<Record<string, never>> {
  const { full_name, email, old_password, new_password, ...settings } = params;
  await doUpdateSettings(deps, realm, user, {
    ...(full_name !== undefined ? { fullName: full_name } : {}),
    ...(email !== undefined ? { email } : {}),
    ...(old_password !== undefined ? { oldPassword: old_password } : {}),
    ...(new_password !== undefined ? { newPassword: new_password } : {}),
    settings,
  });
  return {};
}

export const updateSettings: Handler<'update-settings'> = changeSettings;
export const updateDisplaySettings: Handler<'update-display-settings'> = changeSettings;
export const updateNotificationSettings: Handler<'update-notification-settings'> = changeSettings;
