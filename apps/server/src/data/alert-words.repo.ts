// Alert words (table `alert_word`): a user's words as typed (`word`) with the key they compare by
// (`word_key`, lib/alert-words.ts alertWordKey), one row per key and user; and the reads and flag
// writes that sending and editing a message need.
import type { Db, RawSql } from './db.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';

/** The user's alert words as typed, in the order they were added. */
export async function alertWordsOfUser(db: RawSql, userId: number): Promise<string[]> {
  const rows = await db.$queryRaw<Array<{ word: string }>>`SELECT word FROM alert_word WHERE user_id = ${userId}::int ORDER BY id`;
  return rows.map((r) => r.word);
}

/**
 * Adds the words (in their order); a word whose key the user has already is left as it is (the
 * spelling kept is the existing one). Concurrent adds of one key store it once.
 */
export async function insertAlertWords(db: Db, userId: number, words: Array<{ word: string; key: string }>): Promise<void> {
  if (words.length === 0) return;
  await db.$executeRaw`
    INSERT INTO alert_word (user_id, word, word_key)
    SELECT ${userId}::int, w.word, w.word_key
    FROM unnest(${words.map((w) => w.word)}::text[], ${words.map((w) => w.key)}::text[]) WITH ORDINALITY AS w(word, word_key, position)
    ORDER BY w.position
    ON CONFLICT (user_id, word_key) DO NOTHING`;
}

/** Removes the user's words with these keys (keys the user does not have are ignored). */
export async function deleteAlertWords(db: Db, userId: number, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  await db.$executeRaw`DELETE FROM alert_word WHERE user_id = ${userId}::int AND word_key = ANY(${keys}::text[])`;
}

/** Integers as one comma-separated text parameter (cheaper than an array parameter for long lists). */
const intList = (values: readonly number[]) => values.join(',');

/**
 * The alert words (user, key) that occur somewhere in `text` (lower-cased) of everyone who has the
 * message: its rows and its deferred recipients, active users only (Zulip matches the words of active
 * users). The matcher then checks them as whole words.
 */
export async function alertWordCandidatesOfMessage(db: RawSql, messageId: number, text: string): Promise<Array<{ userId: number; key: string }>> {
  return db.$queryRaw<Array<{ userId: number; key: string }>>`
    WITH audience AS (
      SELECT um.user_id FROM user_message um WHERE um.message_id = ${messageId}::int
      UNION
      SELECT unnest(m.deferred_recipient_ids) FROM message m WHERE m.id = ${messageId}::int
    )
    SELECT aw.user_id AS "userId", aw.word_key AS key
    FROM alert_word aw JOIN audience a ON a.user_id = aw.user_id JOIN "user" u ON u.id = aw.user_id AND u.is_active
    WHERE strpos(${text}::text, aw.word_key) > 0`;
}

const ALERT = MESSAGE_FLAG_BITS.has_alert_word;

/**
 * After an edit: `has_alert_word` on the message's rows of `userIds` and off on every other row; a
 * deferred recipient among `userIds` gets their row now (flag set) and leaves the deferred list.
 */
export async function rewriteAlertWordFlags(db: RawSql, messageId: number, userIds: readonly number[]): Promise<void> {
  const ids = intList(userIds);
  await db.$executeRaw`
    UPDATE user_message um
    SET flags = CASE WHEN um.user_id = ANY(string_to_array(${ids}, ',')::int[]) THEN um.flags | ${ALERT}::int ELSE um.flags & ~${ALERT}::int END
    WHERE um.message_id = ${messageId}::int
      AND ((um.flags & ${ALERT}::int) <> 0) <> (um.user_id = ANY(string_to_array(${ids}, ',')::int[]))`;
  if (userIds.length === 0) return;
  await db.$executeRaw`
    WITH deferred AS (
      SELECT unnest(m.deferred_recipient_ids) AS user_id FROM message m WHERE m.id = ${messageId}::int
    ), written AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT d.user_id, ${messageId}::int, ${ALERT}::int FROM deferred d WHERE d.user_id = ANY(string_to_array(${ids}, ',')::int[])
      ON CONFLICT DO NOTHING
    )
    UPDATE message SET deferred_recipient_ids = ARRAY(
      SELECT d.user_id FROM deferred d WHERE NOT d.user_id = ANY(string_to_array(${ids}, ',')::int[]) ORDER BY d.user_id)
    WHERE id = ${messageId}::int AND EXISTS (SELECT 1 FROM deferred d WHERE d.user_id = ANY(string_to_array(${ids}, ',')::int[]))`;
}
