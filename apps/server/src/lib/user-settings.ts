// The personal settings of PATCH /settings as data: for each, its type, the values it may take, its
// default for new accounts, where it is stored, and which events announce a change. Every rule about a
// setting lives in this table (as lib/group-settings.ts does for group permissions), not in one branch
// per field. Names are typed from the spec (the operation's parameters) and columns from the stored
// row, so the table cannot name a setting the contract lacks or a column the schema lacks; a test
// (test/api/user-settings/user-settings.test.ts) checks that the table, the spec, the database defaults and the notes'
// defaults agree.
import type { RequestParams } from '@parley/api-types';
import type { UserSettings } from '../data/models.ts';
import { JsonableError } from '../errors.ts';

/** The account fields of PATCH /settings, which are not settings. */
export const ACCOUNT_PARAMETERS = ['full_name', 'email', 'old_password', 'new_password'] as const;

type SettingParams = Omit<RequestParams<'update-settings'>, (typeof ACCOUNT_PARAMETERS)[number]>;
/** Keys of `T` whose value type is exactly `V` (optional keys included). */
type KeysOfExactly<T, V> = { [K in keyof T]-?: [Exclude<T[K], undefined>] extends [V] ? ([V] extends [Exclude<T[K], undefined>] ? K : never) : never }[keyof T];
/** Keys of `T` whose value type is `V` or a union of `V`'s literals (an enumeration). */
type KeysExtending<T, V> = { [K in keyof T]-?: [Exclude<T[K], undefined>] extends [V] ? K : never }[keyof T];
type ParamsOf<V> = KeysExtending<SettingParams, V> & string;
type StoredRow = Omit<UserSettings, 'userId'>;
type ColumnsOf<V> = KeysOfExactly<StoredRow, V> & string;

/** A setting's name, as the parameter of PATCH /settings, the key of `user_settings` and the event property. */
export type UserSettingName = keyof SettingParams & string;
export type UserSettingValue = boolean | number | string;

/**
 * Events sent when a setting changes, besides the `user_settings` update every setting sends: the
 * legacy event of the group the setting belonged to before feature level 89 (`update_display_settings`
 * or `update_global_notifications`, for clients without `user_settings_object`), or none.
 */
export type LegacyGroup = 'display' | 'notifications' | null;

/** Checks beyond the value's type and list, each with Zulip's error text. */
export type SettingCheck = 'language' | 'notification_sound' | 'timezone' | 'batching_period';

interface Common {
  name: UserSettingName;
  legacy: LegacyGroup;
  /** Whether a change sends events (`user_settings` update, plus the legacy one); every setting does in Zulip. */
  sendsEvent: true;
  /** Where the value lives: a column of user_settings, or the user row (the time zone, shown in GET /users). */
  store: { table: 'user_settings'; column: keyof StoredRow & string } | { table: 'user'; column: 'timezone' };
  check?: SettingCheck;
  /** A change is also announced to everyone as a `realm_user` update `{email, user_id, <name>}` (the time zone). */
  toEveryone?: true;
  /** Out-of-list values: `list` answers `Invalid <name>: Value error, Not in the list of possible values`, `plain` `Invalid <name>`. */
  invalidMessage?: 'list' | 'plain';
}
export type UserSettingDefinition =
  | (Common & { type: 'boolean'; defaultValue: boolean })
  | (Common & { type: 'integer'; defaultValue: number; allowed?: readonly number[] })
  | (Common & { type: 'string'; defaultValue: string; allowed?: readonly string[] });

const bool = <N extends ParamsOf<boolean>>(name: N, column: ColumnsOf<boolean>, defaultValue: boolean, legacy: LegacyGroup = null): UserSettingDefinition => ({
  name,
  type: 'boolean',
  defaultValue,
  legacy,
  sendsEvent: true,
  store: { table: 'user_settings', column },
});

const int = <N extends ParamsOf<number>>(
  name: N,
  column: ColumnsOf<number>,
  defaultValue: number,
  options: { allowed?: readonly number[]; legacy?: LegacyGroup; check?: SettingCheck } = {},
): UserSettingDefinition => ({
  name,
  type: 'integer',
  defaultValue,
  legacy: options.legacy ?? null,
  sendsEvent: true,
  store: { table: 'user_settings', column },
  ...(options.allowed ? { allowed: options.allowed, invalidMessage: 'list' as const } : {}),
  ...(options.check ? { check: options.check } : {}),
});

const str = <N extends ParamsOf<string>>(
  name: N,
  column: ColumnsOf<string>,
  defaultValue: string,
  options: { allowed?: readonly string[]; invalidMessage?: 'list' | 'plain'; legacy?: LegacyGroup; check?: SettingCheck } = {},
): UserSettingDefinition => ({
  name,
  type: 'string',
  defaultValue,
  legacy: options.legacy ?? null,
  sendsEvent: true,
  store: { table: 'user_settings', column },
  ...(options.allowed ? { allowed: options.allowed, invalidMessage: options.invalidMessage ?? 'list' } : {}),
  ...(options.check ? { check: options.check } : {}),
});

const D = { legacy: 'display' } as const;
const N = { legacy: 'notifications' } as const;
const ONE_TO_THREE = [1, 2, 3] as const;
const ONE_TO_FOUR = [1, 2, 3, 4] as const;

/** Zulip's emoji sets, with the names clients show (register's `emojiset_choices`). */
export const EMOJISET_CHOICES = [
  { key: 'google', text: 'Google' },
  { key: 'twitter', text: 'Twitter' },
  { key: 'text', text: 'Plain text' },
  { key: 'google-blob', text: 'Google blobs' },
] as const;

/** The notification sounds Zulip ships (register's `available_notification_sounds`); `none` is also accepted. */
export const AVAILABLE_NOTIFICATION_SOUNDS = [
  'ascend', 'beep_boop', 'bink', 'bright', 'brlip', 'chime', 'deep tom', 'ding', 'double tap', 'down', 'dry bongos', 'dutdut', 'fast ascend',
  'flute', 'friendly', 'kick roll', 'loud tintong', 'metallic snare', 'pan', 'shaker', 'simple', 'stairs', 'subtle', 'swish', 'tintong', 'up',
  'wood block', 'zaping', 'zing', 'zulip',
] as const;

/** Language codes Zulip has translations for (its locale directories, as `default_language` names them). */
export const AVAILABLE_LANGUAGE_CODES = [
  'ar', 'be', 'bg', 'bn', 'bqi', 'ca', 'cs', 'cy', 'da', 'de', 'el', 'en', 'en-gb', 'eo', 'es', 'et', 'fa', 'fi', 'fr', 'gl', 'gu', 'hi', 'hu', 'id',
  'id-id', 'it', 'ja', 'kk', 'ko', 'lt', 'lv', 'ml', 'mn', 'my', 'nb-no', 'nl', 'no', 'pl', 'pt', 'pt-br', 'pt-pt', 'ro', 'ru', 'si', 'sl', 'sr',
  'sv', 'ta', 'tl', 'tr', 'uk', 'vi', 'zh-hans', 'zh-hant', 'zh-tw',
] as const;

/** The longest e-mail batching period: one week. */
export const MAX_EMAIL_BATCHING_PERIOD_SECONDS = 7 * 24 * 60 * 60;

/** THE table, in the order of the spec's parameters. */
export const USER_SETTINGS: readonly UserSettingDefinition[] = [
  // Display and behaviour
  bool('twenty_four_hour_time', 'twentyFourHourTime', false, 'display'),
  int('web_mark_read_on_scroll_policy', 'webMarkReadOnScrollPolicy', 1, { allowed: ONE_TO_THREE }),
  int('web_channel_default_view', 'webChannelDefaultView', 1, { allowed: ONE_TO_FOUR }),
  bool('starred_message_counts', 'starredMessageCounts', true, 'display'),
  bool('receives_typing_notifications', 'receivesTypingNotifications', true),
  bool('web_suggest_update_timezone', 'webSuggestUpdateTimezone', true),
  bool('fluid_layout_width', 'fluidLayoutWidth', false, 'display'),
  bool('high_contrast_mode', 'highContrastMode', false, 'display'),
  int('web_font_size_px', 'webFontSizePx', 16),
  int('web_line_height_percent', 'webLineHeightPercent', 140),
  int('color_scheme', 'colorScheme', 1, { allowed: ONE_TO_THREE, ...D }),
  bool('enable_drafts_synchronization', 'enableDraftsSynchronization', true, 'display'),
  bool('translate_emoticons', 'translateEmoticons', false, 'display'),
  bool('display_emoji_reaction_users', 'displayEmojiReactionUsers', true),
  str('default_language', 'defaultLanguage', 'en', { check: 'language', ...D }),
  str('web_home_view', 'webHomeView', 'inbox', { allowed: ['recent_topics', 'inbox', 'all_messages'], ...D }),
  bool('web_escape_navigates_to_home_view', 'webEscapeNavigatesToHomeView', true),
  bool('left_side_userlist', 'leftSideUserlist', false, 'display'),
  str('emojiset', 'emojiset', 'google', { allowed: EMOJISET_CHOICES.map((e) => e.key), ...D }),
  int('demote_inactive_streams', 'demoteInactiveStreams', 1, { allowed: ONE_TO_THREE, ...D }),
  int('user_list_style', 'userListStyle', 2, { allowed: ONE_TO_THREE }),
  str('web_animate_image_previews', 'webAnimateImagePreviews', 'on_hover', { allowed: ['always', 'on_hover', 'never'] }),
  int('web_stream_unreads_count_display_policy', 'webStreamUnreadsCountDisplayPolicy', 2, { allowed: ONE_TO_THREE }),
  bool('hide_ai_features', 'hideAiFeatures', false),
  bool('web_left_sidebar_show_channel_folders', 'webLeftSidebarShowChannelFolders', true),
  bool('web_left_sidebar_unreads_count_summary', 'webLeftSidebarUnreadsCountSummary', true),
  // The time zone is a column of the user (GET /users shows it); a change also tells everyone (realm_user).
  { name: 'timezone', type: 'string', defaultValue: '', legacy: 'display', sendsEvent: true, store: { table: 'user', column: 'timezone' }, check: 'timezone', toEveryone: true },
  // Notifications
  bool('enable_stream_desktop_notifications', 'enableStreamDesktopNotifications', false, 'notifications'),
  bool('enable_stream_email_notifications', 'enableStreamEmailNotifications', false, 'notifications'),
  bool('enable_stream_push_notifications', 'enableStreamPushNotifications', false, 'notifications'),
  bool('enable_stream_audible_notifications', 'enableStreamAudibleNotifications', false, 'notifications'),
  str('notification_sound', 'notificationSound', 'zulip', { check: 'notification_sound', ...N }),
  bool('enable_desktop_notifications', 'enableDesktopNotifications', true, 'notifications'),
  bool('enable_sounds', 'enableSounds', true, 'notifications'),
  int('email_notifications_batching_period_seconds', 'emailNotificationsBatchingPeriodSeconds', 120, { check: 'batching_period', ...N }),
  bool('enable_offline_email_notifications', 'enableOfflineEmailNotifications', true, 'notifications'),
  bool('enable_offline_push_notifications', 'enableOfflinePushNotifications', true, 'notifications'),
  bool('enable_online_push_notifications', 'enableOnlinePushNotifications', true, 'notifications'),
  bool('enable_followed_topic_desktop_notifications', 'enableFollowedTopicDesktopNotifications', true),
  bool('enable_followed_topic_email_notifications', 'enableFollowedTopicEmailNotifications', true),
  bool('enable_followed_topic_push_notifications', 'enableFollowedTopicPushNotifications', true),
  bool('enable_followed_topic_audible_notifications', 'enableFollowedTopicAudibleNotifications', true),
  bool('enable_digest_emails', 'enableDigestEmails', true, 'notifications'),
  bool('enable_marketing_emails', 'enableMarketingEmails', true, 'notifications'),
  bool('enable_login_emails', 'enableLoginEmails', true, 'notifications'),
  bool('message_content_in_email_notifications', 'messageContentInEmailNotifications', true, 'notifications'),
  bool('pm_content_in_desktop_notifications', 'pmContentInDesktopNotifications', true, 'notifications'),
  bool('wildcard_mentions_notify', 'wildcardMentionsNotify', true, 'notifications'),
  bool('enable_followed_topic_wildcard_mentions_notify', 'enableFollowedTopicWildcardMentionsNotify', true),
  int('desktop_icon_count_display', 'desktopIconCountDisplay', 1, { allowed: ONE_TO_FOUR, ...N }),
  int('realm_name_in_email_notifications_policy', 'realmNameInEmailNotificationsPolicy', 1, { allowed: ONE_TO_THREE, ...N }),
  int('automatically_follow_topics_policy', 'automaticallyFollowTopicsPolicy', 3, { allowed: ONE_TO_FOUR }),
  int('automatically_unmute_topics_in_muted_streams_policy', 'automaticallyUnmuteTopicsInMutedStreamsPolicy', 2, { allowed: ONE_TO_FOUR }),
  bool('automatically_follow_topics_where_mentioned', 'automaticallyFollowTopicsWhereMentioned', true),
  // Zulip parses this one as an enum name, whose failure reads plainly `Invalid <name>`.
  str('resolved_topic_notice_auto_read_policy', 'resolvedTopicNoticeAutoReadPolicy', 'except_followed', { allowed: ['always', 'except_followed', 'never'], invalidMessage: 'plain' }),
  bool('presence_enabled', 'presenceEnabled', true, 'notifications'),
  // Privacy and other preferences
  bool('enter_sends', 'enterSends', false, 'display'),
  bool('send_private_typing_notifications', 'sendPrivateTypingNotifications', true),
  bool('send_stream_typing_notifications', 'sendStreamTypingNotifications', true),
  bool('send_read_receipts', 'sendReadReceipts', true),
  bool('allow_private_data_export', 'allowPrivateDataExport', false),
  int('email_address_visibility', 'emailAddressVisibility', 1, { allowed: [1, 2, 3, 4, 5] }),
  bool('web_navigate_to_sent_message', 'webNavigateToSentMessage', true),
];

const BY_NAME: ReadonlyMap<string, UserSettingDefinition> = new Map(USER_SETTINGS.map((s) => [s.name, s]));

export function userSettingDefinition(name: string): UserSettingDefinition | undefined {
  return BY_NAME.get(name);
}

/** The settings present in decoded request parameters, in the table's order. */
export function settingParams(params: Record<string, unknown>): Array<{ setting: UserSettingDefinition; value: unknown }> {
  return USER_SETTINGS.filter((s) => params[s.name] !== undefined).map((setting) => ({ setting, value: params[setting.name] }));
}

// ---------------------------------------------------------------------------------------------
// Validation (the HTTP layer's spec validation catches type and list errors first, with the same
// texts; these checks make the rules hold for every caller of the action)

/** Whether the runtime can resolve an IANA time zone name exactly as written (no offsets, no case variants). */
export function isKnownTimezone(name: string): boolean {
  if (name === '' || name !== name.trim() || /^[+-]|^\d/.test(name)) return false;
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return false;
  }
  // ICU accepts names in any case; a zone file name is case-sensitive. A link (US/Eastern) resolves to
  // another name altogether, which is fine; the same name in other letters is not.
  return resolved === name || resolved.toLowerCase() !== name.toLowerCase() || supportedTimezones().has(name);
}

let timezones: Set<string> | null = null;
function supportedTimezones(): Set<string> {
  timezones ??= new Set(Intl.supportedValuesOf('timeZone'));
  return timezones;
}

/** The name of a language as its speakers write it (the `language_name` of events). */
export function languageName(code: string): string {
  const tag = code.replace(/-(hans|hant)$/, (_m, script: string) => `-${script[0]!.toUpperCase()}${script.slice(1)}`);
  try {
    const name = new Intl.DisplayNames([tag], { type: 'language' }).of(tag);
    if (name && name !== tag) return name.charAt(0).toLocaleUpperCase(tag) + name.slice(1);
  } catch {}
  return code;
}

const listError = (setting: UserSettingDefinition) =>
  new JsonableError(setting.invalidMessage === 'plain' ? `Invalid ${setting.name}` : `Invalid ${setting.name}: Value error, Not in the list of possible values`);

/** Checks one value against its definition; throws Zulip's error. */
export function checkSettingValue(setting: UserSettingDefinition, value: unknown): UserSettingValue {
  switch (setting.type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw new JsonableError(`${setting.name} is not a boolean`);
      return value;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw new JsonableError(`${setting.name} is not an integer`);
      if (setting.allowed && !setting.allowed.includes(value)) throw listError(setting);
      return value;
    case 'string':
      if (typeof value !== 'string') throw new JsonableError(`${setting.name} is not a string`);
      if (setting.allowed && !setting.allowed.includes(value)) throw listError(setting);
      return value;
  }
}

/**
 * Validates every setting of a request, in Zulip's order: types and lists (and the time zone, which
 * Zulip checks with the parameter's type), then the language, the sound and the batching period.
 */
export function validateSettingValues(changes: Array<{ setting: UserSettingDefinition; value: unknown }>): Array<{ setting: UserSettingDefinition; value: UserSettingValue }> {
  const checked = changes.map(({ setting, value }) => ({ setting, value: checkSettingValue(setting, value) }));
  const valueOf = (check: SettingCheck) => checked.find((c) => c.setting.check === check)?.value;
  const timezone = valueOf('timezone');
  if (timezone !== undefined && !isKnownTimezone(String(timezone))) throw new JsonableError('Invalid timezone: Value error, Not a recognized time zone');
  const language = valueOf('language');
  if (language !== undefined && !(AVAILABLE_LANGUAGE_CODES as readonly string[]).includes(String(language))) throw new JsonableError('Invalid default_language');
  const sound = valueOf('notification_sound');
  if (sound !== undefined && sound !== 'none' && !(AVAILABLE_NOTIFICATION_SOUNDS as readonly string[]).includes(String(sound))) {
    throw new JsonableError(`Invalid notification sound '${String(sound)}'`);
  }
  const period = valueOf('batching_period');
  if (period !== undefined && (Number(period) <= 0 || Number(period) > MAX_EMAIL_BATCHING_PERIOD_SECONDS)) {
    throw new JsonableError(`Invalid email batching period: ${String(period)} seconds`);
  }
  return checked;
}

// ---------------------------------------------------------------------------------------------
// Reading values and building events

/** A setting's current value from the user's rows. */
export function currentValue(setting: UserSettingDefinition, row: StoredRow, user: { timezone: string }): UserSettingValue {
  return setting.store.table === 'user' ? user.timezone : (row[setting.store.column as keyof StoredRow] as UserSettingValue);
}

/** The stored row of a new account: every user_settings column at its default. */
export function defaultSettingsRow(): StoredRow {
  const row: Record<string, UserSettingValue> = {};
  for (const s of USER_SETTINGS) if (s.store.table === 'user_settings') row[s.store.column] = s.defaultValue;
  return row as unknown as StoredRow;
}

/** Every setting's value, keyed by name, in the table's order. */
export function settingValues(row: StoredRow, user: { timezone: string }): Record<UserSettingName, UserSettingValue> {
  return Object.fromEntries(USER_SETTINGS.map((s) => [s.name, currentValue(s, row, user)])) as Record<UserSettingName, UserSettingValue>;
}

/**
 * `user_settings` of POST /register: every setting, with the choices clients offer (as Zulip's state
 * has them inside the object).
 */
export function userSettingsState(row: StoredRow, user: { timezone: string }): Record<string, unknown> {
  return {
    ...settingValues(row, user),
    emojiset_choices: EMOJISET_CHOICES.map((e) => ({ ...e })),
    available_notification_sounds: [...AVAILABLE_NOTIFICATION_SOUNDS],
  };
}

/** The legacy top-level keys of POST /register for clients without `user_settings_object`. */
export function legacySettingsState(group: 'display' | 'notifications', row: StoredRow, user: { timezone: string }): Record<string, unknown> {
  const values = Object.fromEntries(USER_SETTINGS.filter((s) => s.legacy === group).map((s) => [s.name, currentValue(s, row, user)]));
  return group === 'display'
    ? { ...values, emojiset_choices: EMOJISET_CHOICES.map((e) => ({ ...e })) }
    : { ...values, available_notification_sounds: [...AVAILABLE_NOTIFICATION_SOUNDS] };
}

/**
 * The events of one changed setting for the user's own clients: the `user_settings` update, then the
 * legacy event of its group (delivery drops it for clients with `user_settings_object`).
 * `shownEmail` is the user's `email` as other users see it (the legacy events' `user`).
 */
export function settingChangeEvents(setting: UserSettingDefinition, value: UserSettingValue, shownEmail: string): Array<Record<string, unknown>> {
  const language = setting.check === 'language' ? { language_name: languageName(String(value)) } : {};
  const events: Array<Record<string, unknown>> = [{ type: 'user_settings', op: 'update', property: setting.name, value, ...language }];
  if (setting.legacy === 'display') {
    events.push({ type: 'update_display_settings', user: shownEmail, setting_name: setting.name, setting: value, ...language });
  } else if (setting.legacy === 'notifications') {
    events.push({ type: 'update_global_notifications', user: shownEmail, notification_name: setting.name, setting: value });
  }
  return events;
}

/** The user_settings columns to write for changed settings (the time zone goes to the user row). */
export function settingsColumns(changes: Array<{ setting: UserSettingDefinition; value: UserSettingValue }>): Partial<StoredRow> {
  const data: Record<string, UserSettingValue> = {};
  // Each value was checked against its definition, whose column has the definition's type.
  for (const { setting, value } of changes) if (setting.store.table === 'user_settings') data[setting.store.column] = value;
  return data as Partial<StoredRow>;
}
