// Users' statuses (table `user_status`, Zulip's UserStatus): a row per user who ever set a status,
// empty strings for what is unset. The deprecated "away" flag is not stored here: it is the opposite
// of the user's `presence_enabled` setting (table user_settings), read alongside.
import type { Db, RawSql } from './db.ts';

/** A stored status and the owner's `presence_enabled` setting. */
export interface UserStatusRow {
  userId: number;
  presenceEnabled: boolean;
  statusText: string;
  emojiName: string;
  emojiCode: string;
  reactionType: string;
}

/** What a change sets; a field left undefined keeps its stored value (or the default for a new row). */
export interface UserStatusChange {
  statusText?: string;
  /** The emoji: name, code and type together. */
  emoji?: { name: string; code: string; type: string };
}

/** Creates or updates the user's row with the given fields (Zulip's update_or_create), stamping client and time. */
export async function upsertUserStatus(db: Db, q: { realmId: number; userId: number; change: UserStatusChange; client: string; at: Date }): Promise<void> {
  const { statusText, emoji } = q.change;
  await db.$executeRaw`
    INSERT INTO user_status (user_id, realm_id, status_text, emoji_name, emoji_code, reaction_type, client, updated_at)
    VALUES (${q.userId}::int, ${q.realmId}::int, ${statusText ?? ''}::text, ${emoji?.name ?? ''}::text, ${emoji?.code ?? ''}::text,
            ${emoji?.type ?? 'unicode_emoji'}::text, ${q.client}::text, (${q.at.toISOString()}::timestamptz AT TIME ZONE 'UTC'))
    ON CONFLICT (user_id) DO UPDATE SET
      status_text = CASE WHEN ${statusText === undefined}::boolean THEN user_status.status_text ELSE EXCLUDED.status_text END,
      emoji_name = CASE WHEN ${emoji === undefined}::boolean THEN user_status.emoji_name ELSE EXCLUDED.emoji_name END,
      emoji_code = CASE WHEN ${emoji === undefined}::boolean THEN user_status.emoji_code ELSE EXCLUDED.emoji_code END,
      reaction_type = CASE WHEN ${emoji === undefined}::boolean THEN user_status.reaction_type ELSE EXCLUDED.reaction_type END,
      client = EXCLUDED.client,
      updated_at = EXCLUDED.updated_at`;
}

/** The user's status row, or null when they never set one. */
export async function findUserStatus(db: Db, userId: number): Promise<UserStatusRow | null> {
  const rows = await db.$queryRaw<UserStatusRow[]>`
    SELECT s.user_id AS "userId", COALESCE(us.presence_enabled, TRUE) AS "presenceEnabled", s.status_text AS "statusText",
           s.emoji_name AS "emojiName", s.emoji_code AS "emojiCode", s.reaction_type AS "reactionType"
    FROM user_status s LEFT JOIN user_settings us ON us.user_id = s.user_id
    WHERE s.user_id = ${userId}::int`;
  return rows[0] ?? null;
}

/**
 * The rows of the organization's active users that hold something (a text, an emoji, or a user whose
 * presence_enabled is off), as Zulip's get_all_users_status_dict selects them; by user id.
 */
export async function userStatusesOfRealm(db: RawSql, realmId: number): Promise<UserStatusRow[]> {
  return db.$queryRaw<UserStatusRow[]>`
    SELECT s.user_id AS "userId", COALESCE(us.presence_enabled, TRUE) AS "presenceEnabled", s.status_text AS "statusText",
           s.emoji_name AS "emojiName", s.emoji_code AS "emojiCode", s.reaction_type AS "reactionType"
    FROM user_status s
    JOIN "user" u ON u.id = s.user_id AND u.is_active
    LEFT JOIN user_settings us ON us.user_id = s.user_id
    WHERE s.realm_id = ${realmId}::int
      AND NOT (COALESCE(us.presence_enabled, TRUE) AND s.status_text = '' AND s.emoji_name = '' AND s.emoji_code = '' AND s.reaction_type = 'unicode_emoji')
    ORDER BY s.user_id`;
}
