// A channel's e-mail address and its reading, as Zulip's email_mirror_helpers: the local part is
// `<channel name slug>.<token>[.<option>…]` (`+` is read as `.` too, for older addresses), the domain
// is the gateway's.

export interface AddressOptions {
  /** Start the message with the mail's `From:` line. */
  show_sender?: boolean;
  /** Keep a signature after a `--` line. */
  include_footer?: boolean;
  /** Keep quoted replies (otherwise they are removed, except in forwarded mail). */
  include_quotes?: boolean;
  /** Use the plain-text part (true, the default) or the HTML part (false) when a mail has both. */
  prefer_text?: boolean;
}

const OPTION_PARTS: Record<string, (options: AddressOptions) => void> = {
  'show-sender': (o) => (o.show_sender = true),
  'include-footer': (o) => (o.include_footer = true),
  'include-quotes': (o) => (o.include_quotes = true),
  'prefer-text': (o) => (o.prefer_text = true),
  'prefer-html': (o) => (o.prefer_text = false),
};

/** Why an address is not a gateway address (Zulip's ZulipEmailForwardError messages). */
export class GatewayAddressError extends Error {}

/**
 * Django's slugify (ASCII): compatibility-decomposed, non-ASCII dropped, lower case, anything but
 * letters, digits, `_`, `-` and spaces removed, runs of dashes and spaces made one dash, dashes and
 * underscores trimmed from the ends.
 */
function slugify(value: string): string {
  const ascii = [...value.normalize('NFKD')].filter((ch) => ch.codePointAt(0)! < 0x80).join('');
  return ascii
    .toLowerCase()
    .replace(/[^\w\s-]/g, '')
    .replace(/[-\s]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '');
}

/**
 * The name part of a channel's address (Zulip's encode_email_address): runs of characters other than
 * letters, digits and `_` become one dash, then the result is slugified; when that loses characters
 * (letters with no ASCII form, leading or trailing punctuation) the name part is `channel`.
 */
export function channelAddressName(name: string): string {
  const dashed = name.replace(/[^\p{L}\p{N}_]+/gu, '-');
  const slug = slugify(dashed);
  return slug !== '' && [...slug].length === [...dashed].length ? slug : 'channel';
}

/** `<name>.<token>[.show-sender]@<domain>` */
export function encodeEmailAddress(channelName: string, token: string, showSender: boolean, domain: string): string {
  return `${channelAddressName(channelName)}.${token}${showSender ? '.show-sender' : ''}@${domain}`;
}

/** The local part of an address at the gateway's domain (case-insensitive), or an error. */
export function gatewayLocalPart(address: string, domain: string): string {
  const at = address.lastIndexOf('@');
  if (at <= 0 || address.slice(at + 1).toLowerCase() !== domain.toLowerCase()) throw new GatewayAddressError('Address not recognized by gateway.');
  return address.slice(0, at);
}

/**
 * The token and options of a gateway address (Zulip's decode_email_address): its parts, split on `.`
 * and `+`; the option words set options; of the rest, the token is the only one or the second.
 */
export function decodeEmailAddress(address: string, domain: string): { token: string; options: AddressOptions } {
  const parts = gatewayLocalPart(address, domain).replace(/\./g, '+').split('+');
  const options: AddressOptions = {};
  const rest: string[] = [];
  for (const part of parts) {
    const set = OPTION_PARTS[part];
    if (set) set(options);
    else rest.push(part);
  }
  const token = rest.length === 1 ? rest[0]! : (rest[1] ?? '');
  return { token, options };
}
