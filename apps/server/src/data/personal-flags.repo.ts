// What sending a message reads, in one round trip, to give recipients the flags their own settings
// cause (actions/personal-flags.ts): who muted the sender, and the recipients' alert words that occur
// in the message.
import type { RawSql } from './db.ts';

/** Integers as one comma-separated text parameter (cheaper than an array parameter for long lists). */
const intList = (values: readonly number[]) => values.join(',');

/**
 * `muters`: the users who muted `senderId`; `words`: the alert words (user, key) of `recipientIds`
 * that occur somewhere in `text` (lower-cased), the candidates the matcher checks as whole words.
 */
export async function personalFlagSources(
  db: RawSql,
  senderId: number,
  recipientIds: readonly number[],
  text: string,
): Promise<{ muters: number[]; words: Array<{ userId: number; key: string }> }> {
  const [row] = await db.$queryRaw<Array<{ muters: string | null; words: Array<[number, string]> | null }>>`
    SELECT
      (SELECT string_agg(mu.user_id::text, ',') FROM muted_user mu WHERE mu.muted_user_id = ${senderId}::int) AS muters,
      (SELECT json_agg(json_build_array(aw.user_id, aw.word_key)) FROM alert_word aw
        WHERE aw.user_id = ANY(string_to_array(${intList(recipientIds)}, ',')::int[]) AND strpos(${text}::text, aw.word_key) > 0) AS words`;
  return {
    muters: row?.muters ? row.muters.split(',').map(Number) : [],
    words: (row?.words ?? []).map(([userId, key]) => ({ userId, key })),
  };
}
