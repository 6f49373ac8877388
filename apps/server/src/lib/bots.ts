// Bots: Zulip's bot types, service interfaces, limits and the pure checks on what a request names
// (short names, payload URLs, configuration sizes). Who may do what with a bot is in access/bots.ts.
import { JsonableError } from '../errors.ts';

/** Zulip's UserProfile bot types. */
export const BotType = { GENERIC: 1, INCOMING_WEBHOOK: 2, OUTGOING_WEBHOOK: 3, EMBEDDED: 4 } as const;

/** Zulip's Service interfaces: 1 generic (Zulip's payload), 2 Slack-compatible. */
export const ServiceInterface = { GENERIC: 1, SLACK: 2 } as const;
const ALLOWED_INTERFACE_TYPES: readonly number[] = [ServiceInterface.GENERIC, ServiceInterface.SLACK];

/** Zulip's USER_STATE_SIZE_LIMIT: characters (keys and values) of one bot's storage. */
export const BOT_STORAGE_SIZE_LIMIT = 10_000_000;
/** Zulip's BOT_CONFIG_SIZE_LIMIT: characters (keys and values) of one bot's configuration. */
export const BOT_CONFIG_SIZE_LIMIT = 10_000;

/** Characters as Zulip (Python's len) and PostgreSQL's length() count them: code points. */
export function characterCount(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A surrogate pair is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * Zulip's check_short_name and the address it builds: the short name stripped (`Bad name or username`
 * when blank), and `<short name>-bot@<host>`. Zulip quotes a local part that needs quoting; Parley
 * refuses such short names (spaces, `@`, quotes, control characters…) with the same error, so that a
 * bot's address is a plain one every client can put in a zuliprc.
 */
export function botShortNameAndEmail(raw: string, host: string): { shortName: string; email: string } {
  const shortName = raw.trim();
  if (shortName === '') throw new JsonableError('Bad name or username');
  const local = `${shortName}-bot`;
  if (!/^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/.test(local) || local.length > 64) {
    throw new JsonableError('Bad name or username');
  }
  return { shortName, email: `${local}@${host}` };
}

/** Zulip's check_valid_interface_type. */
export function checkValidInterfaceType(interfaceType: number): void {
  if (!ALLOWED_INTERFACE_TYPES.includes(interfaceType)) throw new JsonableError('Invalid interface type');
}

/**
 * Zulip's check_url (Django's URLValidator) on a JSON-encoded URL parameter: an http, https, ftp or
 * ftps URL with a host (a name with a top-level domain, `localhost`, or an IP address).
 */
export function checkUrlParameter(name: string, value: string): string {
  const fail = () => new JsonableError(`Invalid ${name}: Value error, Not a URL`);
  if (value !== value.trim() || /\s/.test(value)) throw fail();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw fail();
  }
  if (!['http:', 'https:', 'ftp:', 'ftps:'].includes(url.protocol) || !/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) throw fail();
  const host = url.hostname;
  const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(host);
  const ipv6 = host.startsWith('[') && host.endsWith(']');
  const named = /^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,63}\.?$/i.test(host) || /^xn--/i.test(host.split('.').pop() ?? '');
  if (!(host === 'localhost' || ipv4 || ipv6 || named)) throw fail();
  return value;
}

/** Zulip's set_bot_config limit, for the configuration a request leaves a bot with. */
export function checkBotConfigSize(entries: ReadonlyMap<string, string>): void {
  let size = 0;
  for (const [key, value] of entries) size += characterCount(key) + characterCount(value);
  if (size > BOT_CONFIG_SIZE_LIMIT) {
    throw new JsonableError(
      `Cannot store configuration. Request would require ${size} characters. The current configuration size limit is ${BOT_CONFIG_SIZE_LIMIT} characters.`,
    );
  }
}

/** Zulip's set_bot_storage limit: the storage a request would leave a bot with. */
export function checkBotStorageSize(newSize: number, limit: number = BOT_STORAGE_SIZE_LIMIT): void {
  if (newSize > limit) {
    throw new JsonableError(`Request exceeds storage limit by ${newSize - limit} characters. The limit is ${limit} characters.`);
  }
}
