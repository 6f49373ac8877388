// Pure helpers of uploaded files, with Zulip's rules: the name shown and the name in the path, the
// content type kept, the types browsers may show inline, Content-Disposition, and the charset Zulip
// adds to plain text.
import mime from 'mime-types';

/**
 * Types a browser may show inline (Zulip's INLINE_MIME_TYPES); anything else is served as an
 * attachment (downloaded), whatever it claims to be: HTML, SVG, XML and scripts never render in
 * Parley's origin.
 */
export const INLINE_MIME_TYPES: ReadonlySet<string> = new Set([
  'audio/aac',
  'audio/flac',
  'audio/mp4',
  'audio/mpeg',
  'audio/wav',
  'audio/webm',
  'application/pdf',
  'image/apng',
  'image/avif',
  'image/gif',
  'image/jpeg',
  'image/png',
  'image/webp',
  'text/plain',
  'video/mp4',
  'video/webm',
]);

/** Characters Python's str.isprintable() rejects: controls, formats, surrogates, private use, unassigned, separators other than the space. */
const NOT_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]|(?! )\p{Zs}/gu;

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
/** html.unescape for the entities file names carry in practice (named basics and numeric references). */
function unescapeHtml(text: string): string {
  return text.replace(/&(?:#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6})|(amp|lt|gt|quot|apos));/g, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name) return ENTITIES[name]!;
    const code = dec !== undefined ? Number(dec) : parseInt(hex!, 16);
    return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : whole;
  });
}

/**
 * The name of an uploaded file as Zulip keeps it (Django's sanitize_file_name, then Zulip's unquote):
 * HTML entities decoded, only the last component of a path (after `/` or `\`), characters that do not
 * print removed, then percent-escapes decoded; non-printing characters a decoded escape brought are
 * removed as well (Parley: the name goes into a response header). '' (no file name) and `.`/`..`
 * mean the part is not a file.
 */
export function uploadedFileName(raw: string): string {
  let name = unescapeHtml(raw);
  name = name.slice(Math.max(name.lastIndexOf('/'), name.lastIndexOf('\\')) + 1);
  name = name.replace(NOT_PRINTABLE, '');
  if (name === '' || name === '.' || name === '..') return '';
  try {
    name = decodeURIComponent(name);
  } catch {
    // malformed escapes: Python's unquote leaves them as they are
    name = name.replace(/%([0-9a-fA-F]{2})/g, (whole, hex: string) => (parseInt(hex, 16) < 0x80 ? String.fromCharCode(parseInt(hex, 16)) : whole));
  }
  return name.replace(NOT_PRINTABLE, '');
}

/** The longest name, in UTF-8 bytes, of a path's last component (file systems allow 255). */
const MAX_PATH_NAME_BYTES = 200;

/**
 * The file name in the file's path and URL (Zulip's sanitize_name): NFKC, only letters, digits, `_`,
 * `.`, `-` and white space kept, runs of white space and dashes made one `-`; `uploaded-file` when
 * nothing is left. Parley also shortens it to 200 bytes, keeping the extension.
 */
export function pathFileName(name: string): string {
  let value = name.normalize('NFKC');
  value = value.replace(/[^\p{L}\p{N}_\s.-]/gu, '').trim();
  value = value.replace(/[-\s]+/gu, '-');
  if (value === '' || value === '.' || value === '..') return 'uploaded-file';
  if (Buffer.byteLength(value) <= MAX_PATH_NAME_BYTES) return value;
  const dot = value.lastIndexOf('.');
  const extension = dot > 0 && value.length - dot <= 20 ? value.slice(dot) : '';
  let stem = value.slice(0, value.length - extension.length);
  while (Buffer.byteLength(stem + extension) > MAX_PATH_NAME_BYTES) stem = [...stem].slice(0, -1).join('');
  return stem + extension;
}

/** `type/subtype` of a content type, lower-case; null when it is not one. */
export function bareContentType(contentType: string | null | undefined): string | null {
  if (!contentType) return null;
  const bare = contentType.split(';')[0]!.trim().toLowerCase();
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(bare) ? bare : null;
}

/** Whether a file of this type may be shown inline (else it is served as an attachment). */
export const isInlineContentType = (contentType: string | null | undefined) => {
  const bare = bareContentType(contentType);
  return bare !== null && INLINE_MIME_TYPES.has(bare);
};

/** The type of a file from its name's extension (Python's guess_type), or null. */
export function guessContentType(fileName: string): string | null {
  const type = mime.lookup(fileName);
  return type === false ? null : type;
}

/**
 * The content type Zulip keeps for an upload (get_file_info): the part's Content-Type as sent, with
 * its parameters (values quoted, as Python's email package writes them); without one, the type its
 * name suggests, or application/octet-stream.
 */
export function uploadContentType(header: string | null, fileName: string): string {
  const bare = bareContentType(header);
  if (header === null || bare === null) return guessContentType(fileName) ?? 'application/octet-stream';
  const params: string[] = [];
  for (const m of header.slice(header.indexOf(';') < 0 ? header.length : header.indexOf(';')).matchAll(/;\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g)) {
    // eslint-disable-next-line no-control-regex
    const value = (m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!.trim()).replace(/[\u0000-\u001f\u007f"\\]/g, '');
    params.push(`; ${m[1]!.toLowerCase()}="${value}"`);
  }
  return bare + params.join('');
}

/** Whether a content type names a charset. */
const hasCharset = (contentType: string) => /;\s*charset\s*=/i.test(contentType);

/** Whether Zulip would look for a charset for this type (maybe_add_charset): text types served inline, without one. */
export function wantsCharset(contentType: string): boolean {
  return bareContentType(contentType) === 'text/plain' && !hasCharset(contentType);
}

/** Bytes of a text file examined for its charset (Zulip's detector stops there too). */
export const CHARSET_SNIFF_BYTES = 32 * 1024;

/**
 * The charset of a text file from its first bytes (`complete`: they are the whole file), as Zulip's
 * maybe_add_charset decides it in the common cases: `ascii` for a whole file without high bytes (a
 * longer one may have them later: none is given), `utf-8` for valid UTF-8 with high bytes, none
 * otherwise (Zulip asks chardet, which may name legacy encodings; Parley leaves those unnamed).
 */
export function sniffCharset(head: Buffer, complete: boolean): string | null {
  let high = false;
  for (const byte of head) {
    if (byte >= 0x80) {
      high = true;
      break;
    }
  }
  if (!high) return complete ? 'ascii' : null;
  // A multi-byte sequence cut at the end of an incomplete head is not held against it.
  let end = head.length;
  if (!complete) {
    let back = 0;
    while (back < 3 && end - back - 1 >= 0 && (head[end - back - 1]! & 0xc0) === 0x80) back++;
    if (end - back - 1 >= 0 && head[end - back - 1]! >= 0xc0) end = end - back - 1;
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head.subarray(0, end));
    return 'utf-8';
  } catch {
    return null;
  }
}

/** The content type with a charset parameter added. */
export const withCharset = (contentType: string, charset: string) => `${contentType}; charset="${charset}"`;

/** urllib.parse.quote: every byte but unreserved characters and `/` percent-encoded. */
function pythonQuote(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%2F/g, '/');
}

/**
 * Django's content_disposition_header: `attachment` or `inline`, with the file name quoted when it is
 * plain ASCII, else as RFC 8187 `filename*=utf-8''…`.
 */
export function contentDisposition(asAttachment: boolean, fileName: string): string {
  const disposition = asAttachment ? 'attachment' : 'inline';
  if (fileName === '') return disposition;
  if (/^[\t \x21-\x7e]*$/.test(fileName)) return `${disposition}; filename="${fileName.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  return `${disposition}; filename*=utf-8''${pythonQuote(fileName)}`;
}
