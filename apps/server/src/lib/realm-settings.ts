// The organization settings of PATCH /realm as data (as lib/user-settings.ts declares personal settings
// and lib/group-settings.ts the permission settings): for each, its type and the values it may take,
// Zulip's default for a new organization, the column storing it, who may change it, the `realm` event
// announcing a change, and what it does in Parley (`effect`, null when it is stored and returned only;
// the README's table is this column). Names are typed from the spec (the operation's parameters) and
// columns from the stored row, so the table cannot name a setting the contract lacks or a column the
// schema lacks. The permission settings (`can_*_group`…) are lib/group-settings.ts's; the two
// parameters that are not settings (`authentication_methods`, `string_id`) are handled by the action.
import type { RequestParams } from '@parley/api-types';
import type { Realm } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import type { GroupSettingName } from './group-settings.ts';
import { AVAILABLE_LANGUAGE_CODES } from './user-settings.ts';

type Params = RequestParams<'update-realm'>;
/** Parameters of PATCH /realm that are not settings of this table or of the group-settings table. */
export const SPECIAL_REALM_PARAMETERS = ['authentication_methods', 'string_id'] as const;
export type RealmSettingName = Exclude<keyof Params & string, GroupSettingName<'realm'> | (typeof SPECIAL_REALM_PARAMETERS)[number]>;

/** Columns of the realm row whose type is exactly `V`. */
type ColumnOf<V> = { [K in keyof Realm]-?: [Realm[K]] extends [V] ? ([V] extends [Realm[K]] ? K : never) : never }[keyof Realm] & string;

/** A setting's value as the API carries it (`/register`, events). */
export type RealmSettingValue = boolean | number | string | null;

interface Common {
  name: RealmSettingName;
  /** Who may change it: any administrator, or only owners (Zulip answers `Must be an organization owner`). */
  changedBy: 'administrators' | 'owners';
  /**
   * Its `realm` event: `update` (`property`, `value`), or `update_dict` with `property: default` and
   * `data: {<name>: value}` for the settings Zulip announces that way (a matter of their history).
   */
  event: 'update' | 'update_dict';
  /** What it does in Parley; null when Parley stores and returns it only (the feature is missing). */
  effect: string | null;
}

export type RealmSettingDefinition =
  | (Common & { type: 'boolean'; column: ColumnOf<boolean>; defaultValue: boolean })
  | (Common & {
      type: 'integer';
      column: ColumnOf<number>;
      defaultValue: number;
      /** Allowed values; a value outside answers `Invalid <name>` (`plain`) or `Invalid <name> <value>` (`valued`). */
      allowed?: readonly number[];
      invalid?: 'plain' | 'valued';
      minimum?: number;
    })
  | (Common & { type: 'string'; column: ColumnOf<string>; defaultValue: string; maxLength?: number; check?: 'language' })
  /** A string enumeration stored by name, which Zulip echoes by its number. */
  | (Common & { type: 'choice'; column: ColumnOf<string>; defaultValue: string; codes: Readonly<Record<string, number>> })
  /** A positive number of seconds, or "unlimited" (null). */
  | (Common & { type: 'time-limit'; column: ColumnOf<number | null>; defaultValue: number | null })
  /** A positive number of days, or "unlimited": -1 in the API, null stored. */
  | (Common & { type: 'retention'; column: ColumnOf<number | null>; defaultValue: -1 })
  /** A URL (a JSON string) of at most `maxLength` characters, or "default": the server's (null). */
  | (Common & { type: 'url'; column: ColumnOf<string | null>; defaultValue: null; maxLength: number })
  /** A channel of the organization, or -1 for none (null stored); `privateOnly` refuses public channels. */
  | (Common & { type: 'channel'; column: ColumnOf<number | null>; defaultValue: -1; privateOnly?: string });

const ADMINS = 'administrators' as const;
const OWNERS = 'owners' as const;

const bool = (name: RealmSettingName, column: ColumnOf<boolean>, defaultValue: boolean, effect: string | null, more: Partial<Common> = {}): RealmSettingDefinition => ({
  name,
  type: 'boolean',
  column,
  defaultValue,
  changedBy: ADMINS,
  event: 'update',
  effect,
  ...more,
});

const limit = (name: RealmSettingName, column: ColumnOf<number | null>, defaultValue: number, effect: string, event: Common['event'] = 'update'): RealmSettingDefinition => ({
  name,
  type: 'time-limit',
  column,
  defaultValue,
  changedBy: ADMINS,
  event,
  effect,
});

const channel = (name: RealmSettingName, column: ColumnOf<number | null>, effect: string | null, privateOnly?: string): RealmSettingDefinition => ({
  name,
  type: 'channel',
  column,
  defaultValue: -1,
  changedBy: ADMINS,
  event: 'update',
  effect,
  ...(privateOnly ? { privateOnly } : {}),
});

/** Zulip's MessageEditHistoryVisibilityPolicyEnum and RealmTopicsPolicyEnum (names stored, numbers echoed). */
export const EDIT_HISTORY_POLICY_CODES = { all: 1, moves: 2, none: 3 } as const;
export const REALM_TOPICS_POLICY_CODES = { allow_empty_topic: 2, disable_empty_topic: 3 } as const;

/** Zulip's OrgTypeEnum values. */
export const ORG_TYPE_IDS = [0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000] as const;

/**
 * Video call providers: Zulip's VIDEO_CHAT_PROVIDERS that need no server configuration (Zoom and
 * BigBlueButton need credentials Parley has no setting for, so Zulip would not offer them either).
 */
export const VIDEO_CHAT_PROVIDERS = {
  disabled: { name: 'None', id: 0 },
  jitsi_meet: { name: 'Jitsi Meet', id: 1 },
} as const;

/** Zulip's GIPHY_RATING_OPTIONS (register's `giphy_rating_options`). */
export const GIPHY_RATING_OPTIONS = {
  disabled: { name: 'GIPHY integration disabled', id: 0 },
  y: { name: 'Allow GIFs rated Y (Very young audience)', id: 1 },
  g: { name: 'Allow GIFs rated G (General audience)', id: 2 },
  pg: { name: 'Allow GIFs rated PG (Parental guidance)', id: 3 },
  'pg-13': { name: 'Allow GIFs rated PG-13 (Parental guidance - under 13)', id: 4 },
  r: { name: 'Allow GIFs rated R (Restricted)', id: 5 },
} as const;

const BY_CLIENTS = 'applied by clients (returned in /register)';

/** THE table, in the order of Zulip's update_realm. */
export const REALM_SETTINGS: readonly RealmSettingDefinition[] = [
  bool('allow_message_editing', 'allowMessageEditing', true, 'senders may edit message content (PATCH /messages/{id})', { event: 'update_dict' }),
  bool('avatar_changes_disabled', 'avatarChangesDisabled', false, null),
  { name: 'default_code_block_language', type: 'string', column: 'defaultCodeBlockLanguage', defaultValue: '', changedBy: ADMINS, event: 'update', effect: null },
  { name: 'default_language', type: 'string', column: 'defaultLanguage', defaultValue: 'en', check: 'language', changedBy: ADMINS, event: 'update', effect: "new users' default_language (every way an account is created)" },
  { name: 'description', type: 'string', column: 'description', defaultValue: '', maxLength: 1000, changedBy: ADMINS, event: 'update', effect: 'shown by /server_settings and /register' },
  bool('digest_emails_enabled', 'digestEmailsEnabled', false, null),
  { name: 'digest_weekday', type: 'integer', column: 'digestWeekday', defaultValue: 1, allowed: [0, 1, 2, 3, 4, 5, 6], invalid: 'plain', changedBy: ADMINS, event: 'update', effect: null },
  bool('disallow_disposable_email_addresses', 'disallowDisposableEmailAddresses', true, null, { changedBy: OWNERS }),
  bool('email_changes_disabled', 'emailChangesDisabled', false, 'members cannot change their e-mail address (PATCH /settings)'),
  bool('emails_restricted_to_domains', 'emailsRestrictedToDomains', false, null, { changedBy: OWNERS }),
  bool('enable_guest_user_dm_warning', 'enableGuestUserDmWarning', true, BY_CLIENTS),
  bool('enable_guest_user_indicator', 'enableGuestUserIndicator', true, BY_CLIENTS),
  bool('enable_read_receipts', 'enableReadReceipts', true, 'GET /messages/{id}/read_receipts'),
  bool('enable_spectator_access', 'enableSpectatorAccess', false, 'spectators read web-public channels; web-public channels may be created'),
  { name: 'giphy_rating', type: 'integer', column: 'giphyRating', defaultValue: 2, allowed: Object.values(GIPHY_RATING_OPTIONS).map((o) => o.id), invalid: 'valued', changedBy: ADMINS, event: 'update', effect: null },
  bool('inline_image_preview', 'inlineImagePreview', true, null),
  bool('inline_url_embed_preview', 'inlineUrlEmbedPreview', false, null),
  bool('invite_required', 'inviteRequired', true, 'with it off, members of fewer than 3 days cannot invite (POST /invites)', { changedBy: OWNERS }),
  { name: 'jitsi_server_url', type: 'url', column: 'jitsiServerUrl', defaultValue: null, maxLength: 200, changedBy: ADMINS, event: 'update', effect: BY_CLIENTS },
  bool('message_content_allowed_in_email_notifications', 'messageContentAllowedInEmailNotifications', true, null),
  limit('message_content_delete_limit_seconds', 'messageContentDeleteLimitSeconds', 600, 'DELETE /messages/{id} by the sender'),
  limit('message_content_edit_limit_seconds', 'messageContentEditLimitSeconds', 600, 'content edits (PATCH /messages/{id})', 'update_dict'),
  {
    name: 'message_edit_history_visibility_policy',
    type: 'choice',
    column: 'messageEditHistoryVisibilityPolicy',
    defaultValue: 'all',
    codes: EDIT_HISTORY_POLICY_CODES,
    changedBy: ADMINS,
    event: 'update',
    effect: 'GET /messages/{id}/history and edit_history',
  },
  { name: 'message_retention_days', type: 'retention', column: 'messageRetentionDays', defaultValue: -1, changedBy: OWNERS, event: 'update', effect: 'older messages are deleted by the hourly retention job' },
  channel('moderation_request_channel_id', 'moderationRequestChannelId', null, 'Moderation request channel must be private.'),
  limit('move_messages_between_streams_limit_seconds', 'moveMessagesBetweenStreamsLimitSeconds', 604800, 'moves to another channel (PATCH /messages/{id})'),
  limit('move_messages_within_stream_limit_seconds', 'moveMessagesWithinStreamLimitSeconds', 604800, 'moves to another topic (PATCH /messages/{id})'),
  { name: 'name', type: 'string', column: 'name', defaultValue: '', maxLength: 40, changedBy: ADMINS, event: 'update', effect: 'shown by /server_settings, /register, e-mails' },
  bool('name_changes_disabled', 'nameChangesDisabled', false, 'members cannot change their name (PATCH /settings)'),
  channel('new_stream_announcements_stream_id', 'newStreamAnnouncementsStreamId', null),
  { name: 'org_type', type: 'integer', column: 'orgType', defaultValue: 0, allowed: ORG_TYPE_IDS, invalid: 'plain', changedBy: ADMINS, event: 'update', effect: null },
  bool('require_e2ee_push_notifications', 'requireE2eePushNotifications', false, null),
  bool('require_unique_names', 'requireUniqueNames', false, null),
  bool('send_channel_events_messages', 'sendChannelEventsMessages', false, null),
  bool('send_welcome_emails', 'sendWelcomeEmails', true, null),
  channel('signup_announcements_stream_id', 'signupAnnouncementsStreamId', null),
  {
    name: 'topics_policy',
    type: 'choice',
    column: 'topicsPolicy',
    defaultValue: 'allow_empty_topic',
    codes: REALM_TOPICS_POLICY_CODES,
    changedBy: ADMINS,
    event: 'update_dict',
    effect: 'the empty topic in channels that inherit the policy (sending, moving)',
  },
  {
    name: 'video_chat_provider',
    type: 'integer',
    column: 'videoChatProvider',
    defaultValue: VIDEO_CHAT_PROVIDERS.jitsi_meet.id,
    allowed: Object.values(VIDEO_CHAT_PROVIDERS).map((p) => p.id),
    invalid: 'valued',
    changedBy: ADMINS,
    event: 'update',
    effect: BY_CLIENTS,
  },
  { name: 'waiting_period_threshold', type: 'integer', column: 'waitingPeriodThreshold', defaultValue: 0, minimum: 0, changedBy: OWNERS, event: 'update', effect: 'members join role:fullmembers once their account is this many days old' },
  bool('want_advertise_in_communities_directory', 'wantAdvertiseInCommunitiesDirectory', false, null),
  { name: 'welcome_message_custom_text', type: 'string', column: 'welcomeMessageCustomText', defaultValue: '', maxLength: 8000, changedBy: ADMINS, event: 'update', effect: null },
  channel('zulip_update_announcements_stream_id', 'zulipUpdateAnnouncementsStreamId', null),
];

const BY_NAME: ReadonlyMap<string, RealmSettingDefinition> = new Map(REALM_SETTINGS.map((s) => [s.name, s]));

export function realmSettingDefinition(name: string): RealmSettingDefinition | undefined {
  return BY_NAME.get(name);
}

/** The settings present in decoded request parameters, in the table's order. */
export function realmSettingParams(params: Record<string, unknown>): Array<{ setting: RealmSettingDefinition; value: unknown }> {
  return REALM_SETTINGS.filter((s) => params[s.name] !== undefined).map((setting) => ({ setting, value: params[setting.name] }));
}

// ---------------------------------------------------------------------------------------------
// Values: stored ⇄ API

/** A value as stored in the realm row. */
export type StoredRealmValue = boolean | number | string | null;

/** The stored value of a setting. */
export const storedValue = (setting: RealmSettingDefinition, realm: Realm): StoredRealmValue => realm[setting.column] as StoredRealmValue;

/** The setting's value as `/register` (`realm_<name>`) and events carry it. */
export function apiValue(setting: RealmSettingDefinition, stored: StoredRealmValue): RealmSettingValue {
  switch (setting.type) {
    case 'retention':
    case 'channel':
      return stored ?? -1;
    default:
      return stored;
  }
}

/** What PATCH /realm echoes for a changed setting: strings as `updated` (Zulip's rule), choices by number. */
export function echoValue(setting: RealmSettingDefinition, stored: StoredRealmValue): RealmSettingValue {
  switch (setting.type) {
    case 'string':
      return 'updated';
    case 'url':
      return stored === null ? null : 'updated';
    case 'choice':
      return setting.codes[String(stored)] ?? null;
    default:
      return apiValue(setting, stored);
  }
}

/** The `realm` event announcing a changed setting, in the form Zulip sends for it. */
export function realmSettingEvent(setting: RealmSettingDefinition, stored: StoredRealmValue): Record<string, unknown> {
  const value = apiValue(setting, stored);
  if (setting.event === 'update') return { type: 'realm', op: 'update', property: setting.name, value };
  // topics_policy travels with its legacy boolean form (Zulip's do_set_realm_property).
  const extra = setting.name === 'topics_policy' ? { mandatory_topics: value === 'disable_empty_topic' } : {};
  return { type: 'realm', op: 'update_dict', property: 'default', data: { [setting.name]: value, ...extra } };
}

// ---------------------------------------------------------------------------------------------
// Validation: a value as sent, checked and turned into what is stored (Zulip's errors). Values reach
// here after the spec's validation (types, enums, lengths), which answers the same texts first; these
// checks make every rule hold for any caller of the action.

/** Zulip's RequestVariableConversionError, as parse_message_time_limit_setting and the retention parser raise it. */
const badValue = (name: string, value: unknown) =>
  new JsonableError(`Bad value for '${name}': ${String(value)}`, { code: 'REQUEST_VARIABLE_INVALID', data: { var_name: name, bad_value: value } });

/** Checks that need nothing but the value, in the table's terms (channels are checked by the action). */
export function parseRealmSettingValue(setting: RealmSettingDefinition, value: unknown): StoredRealmValue {
  const name = setting.name;
  switch (setting.type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw new JsonableError(`${name} is not a boolean`);
      return value;
    case 'integer':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw new JsonableError(`${name} is not an integer`);
      if (setting.minimum !== undefined && value < setting.minimum) throw new JsonableError(`${name} is too small`);
      if (setting.allowed && !setting.allowed.includes(value)) throw new JsonableError(setting.invalid === 'valued' ? `Invalid ${name} ${value}` : `Invalid ${name}`);
      return value;
    case 'string':
      if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
      if (setting.maxLength !== undefined && [...value].length > setting.maxLength) throw new JsonableError(`${name} is too long (limit: ${setting.maxLength} characters)`);
      if (setting.check === 'language' && !(AVAILABLE_LANGUAGE_CODES as readonly string[]).includes(value)) throw new JsonableError(`Invalid language '${value}'`);
      return value;
    case 'choice':
      if (typeof value !== 'string' || !(value in setting.codes)) throw new JsonableError(`Invalid ${name}`);
      return value;
    case 'time-limit':
      // Zulip's parse_message_time_limit_setting: "unlimited" is null; anything but a positive integer is refused.
      if (value === 'unlimited') return null;
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw badValue(name, value);
      return value;
    case 'retention':
      // Zulip's parse_message_retention_days with the organization's special values ("unlimited" only).
      if (value === 'unlimited') return null;
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) throw badValue(name, value);
      return value;
    case 'url': {
      // Zulip's check_jitsi_url: "default", or a URL Django's URLValidator accepts, of at most maxLength characters.
      if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
      if (value === 'default') return null;
      if (value.length > setting.maxLength || !isPlausibleUrl(value)) throw new JsonableError(`${name} is not an allowed_type`);
      return value;
    }
    case 'channel':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw new JsonableError(`${name} is not an integer`);
      return value < 0 ? null : value;
  }
}

/** An absolute http(s) or ftp(s) URL with a host, as Django's URLValidator requires. */
function isPlausibleUrl(value: string): boolean {
  if (/\s/.test(value)) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return ['http:', 'https:', 'ftp:', 'ftps:'].includes(url.protocol) && url.hostname.length > 0 && /^[a-z][a-z0-9+.-]*:\/\//i.test(value);
}
