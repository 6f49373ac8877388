// Read side of custom emoji: the organization's EmojiInfo objects by id (GET /realm/emoji, /register's
// realm_emoji, `realm_emoji` events) and the index reactions, statuses and Markdown look names up in.
import type { Db, RawSql } from '../data/db.ts';
import { listRealmEmoji } from '../data/realm-emoji.repo.ts';
import { emojiDict, emojiIndex, type EmojiInfo, type RealmEmojiIndex } from '../lib/realm-emoji.ts';

export async function realmEmojiDict(db: RawSql, realmId: number): Promise<Record<string, EmojiInfo>> {
  return emojiDict(await listRealmEmoji(db, realmId));
}

export async function realmEmojiIndex(db: Db, realmId: number): Promise<RealmEmojiIndex> {
  return emojiIndex(await listRealmEmoji(db, realmId));
}
