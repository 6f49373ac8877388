// Small reads for the /register state that no other read model needs.
import type { RawSql } from './db.ts';
import { newestOwnMessageId } from './message-flags.repo.ts';

/** The newest message the user has received (-1 when none). */
export async function maxMessageIdOfUser(db: RawSql, userId: number): Promise<number> {
  return (await newestOwnMessageId(db, userId)) || -1;
}

/** Tables /register reads kinds of state from, whose rows are usually absent (see stateSourcesPresent). */
export type StateSource =
  | 'draft'
  | 'scheduled_message'
  | 'user_topic'
  | 'alert_word'
  | 'muted_user'
  | 'saved_snippet'
  | 'bot'
  | 'realm_emoji'
  | 'realm_linkifier'
  | 'realm_playground'
  | 'default_channel_group'
  | 'custom_profile_field'
  | 'user_status';

/**
 * Which of the sources have any row the user's state could be read from: one statement instead of
 * one per kind (most users have no drafts, alert words or muted users; most organizations no custom
 * emoji or linkifiers). A superset of what each kind's read selects: present means "read it".
 */
export async function stateSourcesPresent(db: RawSql, realmId: number, userId: number, options: { everyBot: boolean }): Promise<Record<StateSource, boolean>> {
  const [row] = await db.$queryRaw<Array<Record<StateSource, boolean>>>`
    SELECT
      EXISTS (SELECT 1 FROM draft WHERE user_id = ${userId}) AS draft,
      EXISTS (SELECT 1 FROM scheduled_message WHERE sender_id = ${userId}) AS scheduled_message,
      EXISTS (SELECT 1 FROM user_topic WHERE user_id = ${userId}) AS user_topic,
      EXISTS (SELECT 1 FROM alert_word WHERE user_id = ${userId}) AS alert_word,
      EXISTS (SELECT 1 FROM muted_user WHERE user_id = ${userId}) AS muted_user,
      EXISTS (SELECT 1 FROM saved_snippet WHERE user_id = ${userId}) AS saved_snippet,
      EXISTS (SELECT 1 FROM "user" WHERE realm_id = ${realmId} AND is_bot AND (${options.everyBot} OR bot_owner_id = ${userId})) AS bot,
      EXISTS (SELECT 1 FROM realm_emoji WHERE realm_id = ${realmId}) AS realm_emoji,
      EXISTS (SELECT 1 FROM realm_linkifier WHERE realm_id = ${realmId}) AS realm_linkifier,
      EXISTS (SELECT 1 FROM realm_playground WHERE realm_id = ${realmId}) AS realm_playground,
      EXISTS (SELECT 1 FROM default_channel_group WHERE realm_id = ${realmId}) AS default_channel_group,
      EXISTS (SELECT 1 FROM custom_profile_field WHERE realm_id = ${realmId}) AS custom_profile_field,
      EXISTS (SELECT 1 FROM user_status WHERE realm_id = ${realmId}) AS user_status`;
  return row!;
}
