// Emoji reactions (table `reaction`, one row per user, message and emoji; unique on (message_id,
// user_id, emoji_code, reaction_type)): the reads and writes of POST/DELETE
// /messages/{message_id}/reactions, each with the ids of the event's audience in the same statement,
// and the reactions of a page of messages.
import type { Db } from './db.ts';
import { Prisma } from './db.ts';
import type { MessageEventAudience } from '../access/reactions.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import type { MessageReaction } from '../lib/reactions.ts';

/** The flags of a historical row (Zulip's create_historical_user_messages): read, and historical. */
const HISTORICAL_FLAGS = MESSAGE_FLAG_BITS.read | MESSAGE_FLAG_BITS.historical;

/** The message whose event the audience is for, and the user whose historical row the change creates (if any). */
interface AudienceOf {
  messageId: number;
  channelId: number | null;
  audience: MessageEventAudience;
  newRowOf: number | null;
}

/**
 * The audience's user ids (ascending, active users only) as one comma-separated text value, from the
 * message's own rows and its channel's subscriptions, never a scan of the organization's users:
 * deactivated users are taken out through their own small index (as data/messages.repo.ts
 * channelRecipientIds does), and only row holders who are not subscribed are looked up for their role.
 */
function audienceIdsSql(a: AudienceOf): Prisma.Sql {
  const subscribers = Prisma.sql`SELECT s.user_id FROM subscription s WHERE s.channel_id = ${a.channelId}::int AND s.active`;
  const rows = Prisma.sql`SELECT um.user_id FROM user_message um WHERE um.message_id = ${a.messageId}::int
    UNION SELECT unnest(m.deferred_recipient_ids) FROM message m WHERE m.id = ${a.messageId}::int
    UNION SELECT ${a.newRowOf}::int WHERE ${a.newRowOf}::int IS NOT NULL`;
  let candidates: Prisma.Sql;
  switch (a.audience.kind) {
    case 'rows':
      candidates = rows;
      break;
    case 'subscribers':
      candidates = subscribers;
      break;
    case 'subscribers-with-rows':
      candidates = Prisma.sql`${subscribers} INTERSECT (${rows})`;
      break;
    case 'subscribers-or-rows':
      candidates = Prisma.sql`${subscribers} UNION SELECT r.user_id FROM ((${rows}) EXCEPT (${subscribers})) r(user_id)
        JOIN "user" u ON u.id = r.user_id WHERE u.role <> ALL(${a.audience.rowRolesExcluded}::int[])`;
      break;
  }
  return Prisma.sql`(SELECT string_agg(c.user_id::text, ',' ORDER BY c.user_id) FROM (${candidates}) c(user_id)
    WHERE NOT EXISTS (SELECT 1 FROM "user" u WHERE u.id = c.user_id AND NOT u.is_active))`;
}

const idList = (text: string | null) => (text ? text.split(',').map(Number) : []);

/** What adding a reaction found and did, in one statement. */
export interface AddedReaction {
  /** The user already had this reaction: nothing was stored. */
  mine: boolean;
  /** The name of the first reaction with this emoji (code and type) already there, or null: a new emoji. */
  votedName: string | null;
  /** The name stored, or null when nothing was stored. */
  addedName: string | null;
  /** The user's email_address_visibility (for the event's `user.email`). */
  emailAddressVisibility: number;
  /** The user's automatic topic policy settings, policy for the message's topic and channel mute (channel messages). */
  followPolicy: number;
  unmutePolicy: number;
  current: number;
  channelMuted: boolean;
  /** The event's audience once the reaction and the historical row are stored (empty when nothing was). */
  audienceIds: number[];
}

/**
 * Stores the user's reaction, in one statement, unless they have it already (`mine`). When someone
 * already reacted with the same emoji (same code and type), the new reaction is a vote for it and takes
 * its name; otherwise it is stored with `name` only if `emojiValid` (the caller's check of the emoji,
 * Zulip's check_emoji_request, whose error the caller raises when nothing was stored for that reason).
 * With the reaction, `audience.newRowOf`'s historical row of the message is written. Answers what it
 * found, the user's settings the event and the topic policy need, and the event's audience.
 */
export async function addReaction(
  tx: Db,
  r: { messageId: number; userId: number; name: string; code: string; type: string; emojiValid: boolean; topic: string },
  audience: AudienceOf,
): Promise<AddedReaction> {
  const [row] = await tx.$queryRaw<Array<Omit<AddedReaction, 'audienceIds'> & { ids: string | null }>>`
    WITH mine AS (
      SELECT 1 FROM reaction r WHERE r.message_id = ${r.messageId}::int AND r.user_id = ${r.userId}::int
        AND r.emoji_code = ${r.code}::text AND r.reaction_type = ${r.type}::text
    ), vote AS (
      SELECT r.emoji_name FROM reaction r WHERE r.message_id = ${r.messageId}::int AND r.emoji_code = ${r.code}::text
        AND r.reaction_type = ${r.type}::text ORDER BY r.id LIMIT 1
    ), added AS (
      INSERT INTO reaction (message_id, user_id, emoji_name, emoji_code, reaction_type)
      SELECT ${r.messageId}::int, ${r.userId}::int, COALESCE((SELECT emoji_name FROM vote), ${r.name}::text), ${r.code}::text, ${r.type}::text
      WHERE NOT EXISTS (SELECT 1 FROM mine) AND (EXISTS (SELECT 1 FROM vote) OR ${r.emojiValid}::boolean)
      ON CONFLICT DO NOTHING
      RETURNING emoji_name
    ), historical AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT ${audience.newRowOf}::int, ${r.messageId}::int, ${HISTORICAL_FLAGS}::int
      WHERE ${audience.newRowOf}::int IS NOT NULL AND EXISTS (SELECT 1 FROM added)
      ON CONFLICT DO NOTHING
    )
    SELECT
      EXISTS (SELECT 1 FROM mine) AS mine,
      (SELECT emoji_name FROM vote) AS "votedName",
      (SELECT emoji_name FROM added) AS "addedName",
      COALESCE(us.email_address_visibility, 1) AS "emailAddressVisibility",
      COALESCE(us.automatically_follow_topics_policy, 3) AS "followPolicy",
      COALESCE(us.automatically_unmute_topics_in_muted_streams_policy, 2) AS "unmutePolicy",
      COALESCE(ut.visibility_policy, 0) AS current,
      COALESCE(s.is_muted, false) AS "channelMuted",
      CASE WHEN EXISTS (SELECT 1 FROM added) THEN ${audienceIdsSql(audience)} END AS ids
    FROM "user" u
    LEFT JOIN user_settings us ON us.user_id = u.id
    LEFT JOIN user_topic ut ON ut.user_id = u.id AND ut.channel_id = ${audience.channelId}::int AND ut.topic_key = lower(${r.topic}::text)
    LEFT JOIN subscription s ON s.user_id = u.id AND s.channel_id = ${audience.channelId}::int AND s.active
    WHERE u.id = ${r.userId}::int`;
  const { ids, ...found } = row!;
  return { ...found, audienceIds: idList(ids) };
}

/**
 * Deletes the user's reaction with this emoji; answers its name and the user's
 * email_address_visibility, with the event's audience, or null when the user has no such reaction.
 */
export async function removeReaction(
  tx: Db,
  r: { messageId: number; userId: number; code: string; type: string },
  audience: AudienceOf,
): Promise<{ name: string; emailAddressVisibility: number; audienceIds: number[] } | null> {
  const [row] = await tx.$queryRaw<{ name: string | null; visibility: number; ids: string | null }[]>`
    WITH removed AS (
      DELETE FROM reaction
      WHERE message_id = ${r.messageId}::int AND user_id = ${r.userId}::int AND emoji_code = ${r.code}::text AND reaction_type = ${r.type}::text
      RETURNING emoji_name
    )
    SELECT (SELECT emoji_name FROM removed LIMIT 1) AS name,
      COALESCE((SELECT us.email_address_visibility FROM user_settings us WHERE us.user_id = ${r.userId}::int), 1) AS visibility,
      CASE WHEN EXISTS (SELECT 1 FROM removed) THEN ${audienceIdsSql(audience)} END AS ids`;
  if (!row || row.name === null) return null;
  return { name: row.name, emailAddressVisibility: row.visibility, audienceIds: idList(row.ids) };
}

/**
 * The reactions of the message whose id `messageId` gives, as a JSON list in reaction order (null when
 * it has none): a column of the statement reading a page of messages (data/message-fetch.repo.ts
 * fetchMessagePage), one index probe per message.
 */
export function reactionsJsonSql(messageId: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT json_agg(json_build_object('emoji_name', r.emoji_name, 'emoji_code', r.emoji_code,
    'reaction_type', r.reaction_type, 'user_id', r.user_id) ORDER BY r.id) FROM reaction r WHERE r.message_id = ${messageId})`;
}

/** The reactions of the messages (one statement), by message id, each in reaction order: for messages read otherwise than as a page (GET /messages/{message_id}). */
export async function reactionsOfMessages(db: Db, messageIds: number[]): Promise<Map<number, MessageReaction[]>> {
  const byMessage = new Map<number, MessageReaction[]>();
  if (messageIds.length === 0) return byMessage;
  const rows = await db.$queryRaw<Array<MessageReaction & { message_id: number }>>`
    SELECT r.message_id, r.emoji_name, r.emoji_code, r.reaction_type, r.user_id
    FROM reaction r WHERE r.message_id = ANY(${messageIds}::int[])
    ORDER BY r.id`;
  for (const { message_id, ...reaction } of rows) {
    const list = byMessage.get(message_id);
    if (list) list.push(reaction);
    else byMessage.set(message_id, [reaction]);
  }
  return byMessage;
}
