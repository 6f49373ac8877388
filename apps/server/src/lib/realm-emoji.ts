// Custom emoji of an organization (Zulip's RealmEmoji, zerver/lib/emoji.py): name rules, file names,
// URLs and storage keys, and the EmojiInfo objects of GET /realm/emoji, /register and `realm_emoji`
// events. The image of emoji N is `<8 hex of a secret-salted hash of N><ext>` (Zulip's
// get_emoji_file_name), served publicly at `/user_avatars/<realm id>/emoji/images/<file name>` (Zulip's
// local URL shape); an animated one also has a still PNG at `…/images/still/<file name sans ext>.png`.
import { createHash } from 'node:crypto';
import { JsonableError } from '../errors.ts';
import { avatarSalt } from './avatar.ts';

/** Zulip's DEFAULT_EMOJI_SIZE (pixels, square) and MAX_EMOJI_FILE_SIZE_MIB. */
export const EMOJI_SIZE = 64;
export const MAX_EMOJI_FILE_SIZE_MIB = 5;

export interface RealmEmojiRow {
  id: number;
  realmId: number;
  authorId: number | null;
  name: string;
  fileName: string | null;
  isAnimated: boolean;
  deactivated: boolean;
  dateCreated: Date;
}

export interface EmojiInfo {
  id: string;
  name: string;
  source_url: string;
  deactivated: boolean;
  author_id: number | null;
  still_url: string | null;
  date_created: number;
}

/** Zulip's check_valid_emoji_name (applied after its strip() and spaces → underscores). */
export function checkValidEmojiName(name: string): void {
  if (name === '') throw new JsonableError('Emoji name is missing');
  if (/^[0-9a-z_-]+$/.test(name)) {
    if (/[_-]$/.test(name)) throw new JsonableError('Emoji names must end with either a letter or digit.');
    return;
  }
  throw new JsonableError('Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
}

/** The name as Zulip's upload_emoji takes it: stripped, spaces as underscores. */
export const normalizeEmojiName = (raw: string) => raw.trim().replaceAll(' ', '_');

/** File extensions of the accepted image types (Zulip's guess_extension of the content type). */
export const EMOJI_EXTENSIONS: Readonly<Record<string, string>> = {
  'image/avif': '.avif',
  'image/gif': '.gif',
  'image/jpeg': '.jpg',
  'image/png': '.png',
  'image/webp': '.webp',
};

export function emojiFileName(contentType: string, emojiId: number): string {
  const ext = EMOJI_EXTENSIONS[contentType];
  if (!ext) throw new JsonableError('Invalid image format');
  return `${createHash('sha256').update(`${avatarSalt()}:${emojiId}`).digest('hex').slice(0, 8)}${ext}`;
}

const stillName = (fileName: string) => `${fileName.replace(/\.[^.]*$/, '')}.png`;

export function emojiKeys(realmId: number, fileName: string): { image: string; still: string } {
  return { image: `emoji/${realmId}/images/${fileName}`, still: `emoji/${realmId}/images/still/${stillName(fileName)}` };
}

export function emojiUrl(realmId: number, fileName: string, still = false): string {
  return still ? `/user_avatars/${realmId}/emoji/images/still/${stillName(fileName)}` : `/user_avatars/${realmId}/emoji/images/${fileName}`;
}

/** Zulip's EmojiInfo of a stored emoji (one with a file name). */
export function emojiInfo(row: RealmEmojiRow & { fileName: string }): EmojiInfo {
  return {
    id: String(row.id),
    name: row.name,
    source_url: emojiUrl(row.realmId, row.fileName),
    deactivated: row.deactivated,
    author_id: row.authorId,
    still_url: row.isAnimated ? emojiUrl(row.realmId, row.fileName, true) : null,
    date_created: Math.floor(row.dateCreated.getTime() / 1000),
  };
}

/** Zulip's get_all_custom_emoji_for_realm: every stored emoji (deactivated ones too), by id. */
export function emojiDict(rows: readonly RealmEmojiRow[]): Record<string, EmojiInfo> {
  const out: Record<string, EmojiInfo> = {};
  for (const row of rows) if (row.fileName !== null) out[String(row.id)] = emojiInfo({ ...row, fileName: row.fileName });
  return out;
}

/** The organization's emoji as reactions, statuses and Markdown look them up. */
export interface RealmEmojiIndex {
  byId: ReadonlyMap<string, EmojiInfo>;
  activeByName: ReadonlyMap<string, EmojiInfo>;
}

export function emojiIndex(rows: readonly RealmEmojiRow[]): RealmEmojiIndex {
  const byId = new Map(Object.entries(emojiDict(rows)));
  return { byId, activeByName: new Map([...byId.values()].filter((e) => !e.deactivated).map((e) => [e.name, e])) };
}

export const NO_REALM_EMOJI: RealmEmojiIndex = { byId: new Map(), activeByName: new Map() };
