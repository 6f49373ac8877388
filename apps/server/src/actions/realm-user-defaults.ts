// The settings new users start with (Zulip's RealmUserDefault): PATCH /realm/user_settings_defaults,
// and their use when an account is created (every path: sign-up from an invitation, POST /users, the
// manage command, first start).
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { writeNewUserSettings, lockUserDefaults, readUserDefaults, writeUserDefaults } from '../data/realm-settings.repo.ts';
import { checkCanChangeNewUserDefaults } from '../access/realm.ts';
import { reloadActor } from '../access/users.ts';
import { currentDefault, newUserSettingsRow, userDefaultParams, type UserDefaultName } from '../lib/realm-user-defaults.ts';
import { validateSettingValues } from '../lib/user-settings.ts';

/**
 * PATCH /realm/user_settings_defaults: administrators. Every value is checked (as PATCH /settings
 * checks them) before any changes; each changed default is announced to every active user by a
 * `realm_user_settings_defaults` event (Zulip's do_set_realm_user_default_setting).
 */
export async function doUpdateRealmUserSettingsDefaults(deps: AppDeps, realm: Realm, actor: User, params: { [K in UserDefaultName]?: unknown }): Promise<void> {
  const changes = userDefaultParams(params);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    checkCanChangeNewUserDefaults(await reloadActor(tx, realm, actor));
    const checked = validateSettingValues(changes);
    if (checked.length === 0) return;
    const stored = await lockUserDefaults(tx, realm.id);
    const next = { ...stored };
    const events: Record<string, unknown>[] = [];
    for (const { setting, value } of checked) {
      if (currentDefault(setting, next) === value) continue;
      next[setting.name] = value;
      events.push({ type: 'realm_user_settings_defaults', op: 'update', property: setting.name, value });
    }
    if (events.length === 0) return;
    await writeUserDefaults(tx, realm.id, next);
    await deps.events.publish(tx, afterCommit, realm.id, events.map((payload) => ({ realmWide: true as const, payload })));
  });
}

/**
 * Creates a new user's settings row from the organization's defaults, inside the creating
 * transaction; `language` is the user's language when the sign-up knew it (the browser's), else the
 * organization's default_language. Answers the user's email_address_visibility (for the events that
 * introduce them).
 */
export async function applyNewUserDefaults(tx: Db, realm: Realm, userId: number, language?: string): Promise<{ emailAddressVisibility: number }> {
  const row = newUserSettingsRow(await readUserDefaults(tx, realm.id), language ?? realm.defaultLanguage);
  await writeNewUserSettings(tx, userId, row);
  return { emailAddressVisibility: row.emailAddressVisibility };
}
