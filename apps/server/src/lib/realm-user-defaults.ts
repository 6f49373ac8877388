// The settings new users start with (Zulip's RealmUserDefault): the same table as the personal
// settings (lib/user-settings.ts), minus those an organization may not choose for its users. Only the
// defaults an administrator changed are stored; the others are the table's.
import type { RequestParams } from '@parley/api-types';
import type { UserSettings } from '../data/models.ts';
import {
  AVAILABLE_LANGUAGE_CODES,
  AVAILABLE_NOTIFICATION_SOUNDS,
  EMOJISET_CHOICES,
  USER_SETTINGS,
  checkSettingValue,
  defaultSettingsRow,
  type UserSettingDefinition,
  type UserSettingValue,
} from './user-settings.ts';

/**
 * Personal settings PATCH /realm/user_settings_defaults does not take (Zulip's
 * update_realm_user_settings_defaults): the language (new users take the organization's
 * default_language), the time zone, and the security-sensitive e-mail and export choices.
 */
const NOT_DEFAULTABLE: ReadonlySet<string> = new Set(['default_language', 'timezone', 'enable_login_emails', 'enable_marketing_emails', 'allow_private_data_export']);

type DefaultsParams = RequestParams<'update-realm-user-settings-defaults'>;
export type UserDefaultName = keyof DefaultsParams & string;

/** The settings an organization chooses for its new users, in the table's order. */
export const USER_DEFAULT_SETTINGS: readonly UserSettingDefinition[] = USER_SETTINGS.filter((s) => !NOT_DEFAULTABLE.has(s.name));

/** The settings present in decoded request parameters, in the table's order. */
export function userDefaultParams(params: { [K in UserDefaultName]?: unknown }): Array<{ setting: UserSettingDefinition; value: unknown }> {
  const sent = params as Record<string, unknown>;
  return USER_DEFAULT_SETTINGS.filter((s) => sent[s.name] !== undefined).map((setting) => ({ setting, value: sent[setting.name] }));
}

/** A stored default, when it is still a valid value of its setting; else the table's default. */
function defaultOf(setting: UserSettingDefinition, stored: Record<string, unknown>): UserSettingValue {
  if (!NOT_DEFAULTABLE.has(setting.name) && stored[setting.name] !== undefined) {
    try {
      return checkSettingValue(setting, stored[setting.name]);
    } catch {
      // A value stored under an older table that no longer fits: the table's default.
    }
  }
  return setting.defaultValue;
}

/**
 * `realm_user_settings_defaults` of POST /register: every setting of Zulip's RealmUserDefault (all
 * personal settings but the time zone), with the choices clients offer, as `user_settings` has them.
 */
export function userDefaultsState(stored: Record<string, unknown>): Record<string, unknown> {
  const values = Object.fromEntries(USER_SETTINGS.filter((s) => s.name !== 'timezone').map((s) => [s.name, defaultOf(s, stored)]));
  return { ...values, emojiset_choices: EMOJISET_CHOICES.map((e) => ({ ...e })), available_notification_sounds: [...AVAILABLE_NOTIFICATION_SOUNDS] };
}

/** The current default of a setting an organization may choose. */
export const currentDefault = (setting: UserSettingDefinition, stored: Record<string, unknown>): UserSettingValue => defaultOf(setting, stored);

/**
 * A new user's settings row: the organization's defaults (Zulip's copy_default_settings), and its
 * default_language as the user's language (or the sign-up's browser language, when Zulip knows it).
 */
export function newUserSettingsRow(stored: Record<string, unknown>, language: string): Omit<UserSettings, 'userId'> {
  const row: Record<string, UserSettingValue> = { ...(defaultSettingsRow() as unknown as Record<string, UserSettingValue>) };
  for (const s of USER_DEFAULT_SETTINGS) if (s.store.table === 'user_settings') row[s.store.column] = defaultOf(s, stored);
  row.defaultLanguage = language;
  return row as unknown as Omit<UserSettings, 'userId'>;
}

/**
 * The language a sign-up's browser asks for (Zulip's get_browser_language_code): the first of the
 * Accept-Language entries, by preference, that Zulip has translations for; none after a `*`.
 */
export function browserLanguage(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const entries = header
    .split(',')
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { tag: tag.trim().toLowerCase(), q: q === undefined ? 1 : Number(q), index };
    })
    .filter((e) => e.tag !== '' && e.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { tag } of entries) {
    if (tag === '*') return undefined;
    if ((AVAILABLE_LANGUAGE_CODES as readonly string[]).includes(tag)) return tag;
  }
  return undefined;
}
