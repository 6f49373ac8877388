// Custom profile fields: their types, Zulip's checks of a field's configuration (label, hint,
// field_data) and of a user's value for a field, and the API form of a field. Pure functions; the
// checks that need the database (users of a users field) take what they need as arguments.
import { JsonableError } from '../errors.ts';
import type { CustomProfileField } from '../data/models.ts';
import { renderMarkdown } from './markdown.ts';

export const FieldType = { SHORT_TEXT: 1, LONG_TEXT: 2, SELECT: 3, DATE: 4, URL: 5, USER: 6, EXTERNAL_ACCOUNT: 7, PRONOUNS: 8 } as const;
export const FIELD_TYPES: readonly number[] = Object.values(FieldType);

export const NAME_MAX_LENGTH = 40;
export const HINT_MAX_LENGTH = 80;
/** At most this many fields are shown in the profile summary card. */
export const MAX_SUMMARY_FIELDS = 2;

/** A predefined external account: a field of this subtype takes Zulip's label and hint. */
interface ExternalAccount {
  text: string;
  urlPattern: string;
  name: string;
  hint: string;
}

const account = (text: string, urlPattern: string, name: string, hint = ''): ExternalAccount => ({ text, urlPattern, name, hint });

/** Zulip's predefined external accounts (DEFAULT_EXTERNAL_ACCOUNTS), by subtype. */
const DEFAULT_EXTERNAL_ACCOUNTS: Readonly<Record<string, ExternalAccount>> = {
  behance: account('Behance', 'https://www.behance.net/%(username)s', 'Behance username'),
  bitbucket: account('Bitbucket', 'https://bitbucket.org/%(username)s', 'Bitbucket username'),
  bluesky: account('Bluesky', 'https://bsky.app/profile/%(username)s', 'Bluesky handle'),
  codeberg: account('Codeberg', 'https://codeberg.org/%(username)s', 'Codeberg username'),
  discord: account('Discord', '', 'Discord tag'),
  dribbble: account('Dribbble', 'https://dribbble.com/%(username)s', 'Dribbble username'),
  facebook: account('Facebook', 'https://www.facebook.com/%(username)s', 'Facebook username'),
  github: account('GitHub', 'https://github.com/%(username)s', 'GitHub username'),
  gitlab: account('GitLab', 'https://gitlab.com/%(username)s', 'GitLab username'),
  instagram: account('Instagram', 'https://www.instagram.com/%(username)s', 'Instagram username'),
  linkedin: account('LinkedIn', 'https://www.linkedin.com/in/%(username)s', 'LinkedIn profile name'),
  mastodon: account('Mastodon', '%(username)s', 'Mastodon profile', 'The full URL to your profile'),
  medium: account('Medium', 'https://%(username)s.medium.com', 'Medium username'),
  pinterest: account('Pinterest', 'https://www.pinterest.com/%(username)s', 'Pinterest username'),
  reddit: account('Reddit', 'https://www.reddit.com/user/%(username)s', 'Reddit username'),
  snapchat: account('Snapchat', 'https://www.snapchat.com/@%(username)s', 'Snapchat username'),
  threads: account('Threads', 'https://www.threads.com/@%(username)s', 'Threads username'),
  tiktok: account('TikTok', 'https://www.tiktok.com/@%(username)s', 'TikTok username'),
  twitch: account('Twitch', 'https://www.twitch.tv/%(username)s', 'Twitch username'),
  x: account('X', 'https://x.com/%(username)s', 'X username'),
  youtube: account('YouTube', 'https://www.youtube.com/%(username)s', 'YouTube handle'),
};

/** `realm_default_external_accounts` of /register: every predefined account by subtype. */
export function defaultExternalAccounts(): Record<string, { text: string; url_pattern: string; name: string; hint: string }> {
  return Object.fromEntries(Object.entries(DEFAULT_EXTERNAL_ACCOUNTS).map(([subtype, a]) => [subtype, { text: a.text, url_pattern: a.urlPattern, name: a.name, hint: a.hint }]));
}

/** The predefined account of an external-account field's configuration, if it is one (not `custom`). */
export function predefinedAccount(fieldType: number, fieldData: Record<string, unknown>): ExternalAccount | null {
  if (fieldType !== FieldType.EXTERNAL_ACCOUNT) return null;
  const subtype = fieldData.subtype;
  return typeof subtype === 'string' && Object.hasOwn(DEFAULT_EXTERNAL_ACCOUNTS, subtype) ? DEFAULT_EXTERNAL_ACCOUNTS[subtype]! : null;
}

// ---------------------------------------------------------------------------------------------
// Zulip's validators (zerver/lib/validator.py), restated

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function requiredString(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
  if (value.trim() === '') throw new JsonableError(`${name} cannot be blank.`);
  return value;
}

/** check_dict_only: the required keys, then the optional ones, then no other key. */
function checkDictOnly(name: string, value: unknown, required: Array<[string, (n: string, v: unknown) => unknown]>, optional: Array<[string, (n: string, v: unknown) => unknown]> = []): Record<string, unknown> {
  if (!isPlainObject(value)) throw new JsonableError(`${name} is not a dict`);
  for (const [key, check] of required) {
    if (!Object.hasOwn(value, key)) throw new JsonableError(`${key} key is missing from ${name}`);
    check(`${name}["${key}"]`, value[key]);
  }
  for (const [key, check] of optional) if (Object.hasOwn(value, key)) check(`${name}["${key}"]`, value[key]);
  const known = new Set([...required, ...optional].map(([k]) => k));
  const extra = Object.keys(value).filter((k) => !known.has(k));
  if (extra.length) throw new JsonableError(`Unexpected arguments: ${extra.join(', ')}`);
  return value;
}

// Django's URLValidator: schemes http, https, ftp, ftps; a host that is an IPv4 or IPv6 address,
// `localhost`, or a name with a top-level domain; at most 2048 characters, no whitespace.
const UL = '\u00a1-\uffff';
const IPV4 = '(?:0|25[0-5]|2[0-4][0-9]|1[0-9]?[0-9]?|[1-9][0-9]?)(?:\\.(?:0|25[0-5]|2[0-4][0-9]|1[0-9]?[0-9]?|[1-9][0-9]?)){3}';
const IPV6 = '\\[[0-9a-f:.]+\\]';
const HOSTNAME = `[a-z${UL}0-9](?:[a-z${UL}0-9-]{0,61}[a-z${UL}0-9])?`;
const DOMAIN = `(?:\\.(?!-)[a-z${UL}0-9-]{1,63}(?<!-))*`;
const TLD = `\\.(?!-)(?:[a-z${UL}-]{2,63}|xn--[a-z0-9]{1,59})(?<!-)\\.?`;
const URL_RE = new RegExp(
  `^(?:[a-z0-9.+-]*)://(?:[^\\s:@/]+(?::[^\\s:@/]*)?@)?(?:${IPV4}|${IPV6}|(?:${HOSTNAME}${DOMAIN}${TLD}|localhost))(?::[0-9]{1,5})?(?:[/?#][^\\s]*)?$`,
  'iu',
);
const URL_SCHEMES = new Set(['http', 'https', 'ftp', 'ftps']);

export function isValidUrl(value: string): boolean {
  if (value.length > 2048 || /[\t\r\n]/.test(value)) return false;
  const scheme = value.split('://')[0]!.toLowerCase();
  return URL_SCHEMES.has(scheme) && URL_RE.test(value);
}

function checkUrl(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
  if (!isValidUrl(value)) throw new JsonableError(`${name} is not a URL`);
  return value;
}

function checkUrlPattern(name: string, value: unknown): string {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
  if (value.split('%(username)s').length !== 2) throw new JsonableError("URL pattern must contain '%(username)s'.");
  checkUrl(name, value.replace('%(username)s', 'username'));
  return value;
}

function cappedString(name: string, value: unknown, max: number): string {
  if (typeof value !== 'string') throw new JsonableError(`${name} is not a string`);
  if ([...value].length > max) throw new JsonableError(`${name} is too long (limit: ${max} characters)`);
  return value;
}

/** Python's date.fromisoformat(v).isoformat() == v: `YYYY-MM-DD`, a real calendar day of years 1–9999. */
function isIsoDate(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (year < 1 || month < 1 || month > 12 || day < 1) return false;
  const d = new Date(Date.UTC(2000, month - 1, day));
  d.setUTCFullYear(year);
  return d.getUTCMonth() === month - 1 && d.getUTCDate() === day;
}

// ---------------------------------------------------------------------------------------------
// A field's configuration

/** The configuration a field is stored with: the options of a list, the account of an external-account field, else nothing. */
export const storedFieldData = (fieldType: number, fieldData: Record<string, unknown>): Record<string, unknown> =>
  fieldType === FieldType.SELECT || fieldType === FieldType.EXTERNAL_ACCOUNT ? fieldData : {};

/** Zulip's validate_custom_field_data: the options of a list-of-options field, the account of an external one. */
function validateFieldData(fieldType: number, fieldData: Record<string, unknown>): void {
  if (fieldType === FieldType.SELECT) {
    if (Object.keys(fieldData).length < 1) throw new JsonableError('Field must have at least one choice.');
    const texts = new Set<string>();
    for (const [key, option] of Object.entries(fieldData)) {
      if (key.trim() === '') throw new JsonableError("'value' cannot be blank.");
      const checked = checkDictOnly('field_data', option, [
        ['text', requiredString],
        ['order', requiredString],
      ]);
      texts.add(checked.text as string);
    }
    if (texts.size !== Object.keys(fieldData).length) throw new JsonableError('Field must not have duplicate choices.');
  } else if (fieldType === FieldType.EXTERNAL_ACCOUNT) {
    checkDictOnly('field_data', fieldData, [['subtype', requiredString]], [['url_pattern', checkUrlPattern]]);
    const subtype = fieldData.subtype as string;
    if (!Object.hasOwn(DEFAULT_EXTERNAL_ACCOUNTS, subtype) && subtype !== 'custom') throw new JsonableError('Invalid external account type');
  }
}

/** Zulip's validate_field_name_and_hint: blank label, then the hint's length, then the label's. */
function validateNameAndHint(name: string, hint: string): void {
  if (name.trim() === '') throw new JsonableError('Label cannot be blank.');
  cappedString('hint', hint, HINT_MAX_LENGTH);
  cappedString('name', name, NAME_MAX_LENGTH);
}

export interface FieldDefinition {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: Record<string, unknown>;
  displayInProfileSummary: boolean;
}

/**
 * Zulip's validate_custom_profile_field, in its order: the configuration, the label and hint (not for
 * predefined external accounts, which take Zulip's), the type, the summary card.
 */
export function validateFieldDefinition(def: FieldDefinition): void {
  validateFieldData(def.fieldType, def.fieldData);
  if (!predefinedAccount(def.fieldType, def.fieldData)) validateNameAndHint(def.name, def.hint);
  if (!FIELD_TYPES.includes(def.fieldType)) throw new JsonableError('Invalid field type.');
  if (def.displayInProfileSummary && (def.fieldType === FieldType.LONG_TEXT || def.fieldType === FieldType.USER)) {
    throw new JsonableError('Field type not supported for display in profile summary.');
  }
}

/** Deep equality of JSON values (object keys in any order), as Python compares dicts. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameJson(a[k], b[k]));
  }
  return a === b;
}

// ---------------------------------------------------------------------------------------------
// A user's value for a field

export interface NormalizedValue {
  /** The value as stored (and sent): the text, or the JSON text of a users field's list. */
  value: string;
  renderedValue: string | null;
}

/** What a users field needs to know of the users its value names. */
export interface ReferencedUser {
  id: number;
  isActive: boolean;
  isBot: boolean;
}

/**
 * Zulip's validate_user_custom_profile_field: `raw` (a string, or a list of user IDs for users
 * fields) checked against the field's type; messages name the field by its label. `users` holds the
 * users of the organization among those a users field's value names.
 */
export function normalizeProfileValue(field: CustomProfileField, raw: unknown, users: ReadonlyMap<number, ReferencedUser>): NormalizedValue {
  const name = field.name;
  switch (field.fieldType) {
    case FieldType.USER: {
      if (!Array.isArray(raw)) throw new JsonableError('User IDs is not a list');
      raw.forEach((id, i) => {
        if (!Number.isInteger(id)) throw new JsonableError(`User IDs[${i}] is not an integer`);
      });
      const ids = raw as number[];
      const unknown = ids.filter((id) => !users.has(id));
      if (unknown.length) throw new JsonableError(`Invalid user IDs: ${unknown.join(', ')}`);
      for (const user of [...new Set(ids)].sort((a, b) => a - b).map((id) => users.get(id)!)) {
        if (!user.isActive) throw new JsonableError(`User with ID ${user.id} is deactivated`);
        if (user.isBot) throw new JsonableError(`User with ID ${user.id} is a bot`);
      }
      return { value: JSON.stringify(ids), renderedValue: null };
    }
    case FieldType.SELECT: {
      if (typeof raw !== 'string') throw new JsonableError(`${name} is not a string`);
      const options = (field.fieldData ?? {}) as Record<string, unknown>;
      if (!Object.hasOwn(options, raw)) throw new JsonableError(`'${raw}' is not a valid choice for '${name}'.`);
      return { value: raw, renderedValue: null };
    }
    case FieldType.DATE:
      if (typeof raw !== 'string') throw new JsonableError(`${name} is not a string`);
      if (!isIsoDate(raw)) throw new JsonableError(`${name} is not a date`);
      return { value: raw, renderedValue: null };
    case FieldType.URL:
      return { value: checkUrl(name, raw), renderedValue: null };
    case FieldType.LONG_TEXT: {
      const value = cappedString(name, raw, 500);
      return { value, renderedValue: renderMarkdown(value) };
    }
    case FieldType.SHORT_TEXT: {
      const value = cappedString(name, raw, 50);
      return { value, renderedValue: renderMarkdown(value) };
    }
    default:
      // External account and pronouns: short strings, not rendered.
      return { value: cappedString(name, raw, 50), renderedValue: null };
  }
}

/** The CustomProfileField object of the API (GET /realm/profile_fields, events). */
export function formatProfileField(f: CustomProfileField) {
  return {
    id: f.id,
    type: f.fieldType,
    name: f.name,
    hint: f.hint,
    field_data: f.fieldType === FieldType.SELECT || f.fieldType === FieldType.EXTERNAL_ACCOUNT ? JSON.stringify(f.fieldData) : '',
    order: f.order,
    ...(f.displayInProfileSummary ? { display_in_profile_summary: true } : {}),
    required: f.required,
    editable_by_user: f.editableByUser,
  };
}
