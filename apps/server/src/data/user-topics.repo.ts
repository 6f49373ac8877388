// Users' visibility policies for topics (table `user_topic`, Zulip's UserTopic): a row per topic a
// user muted, unmuted or followed; no row is the "inherit" policy. A topic is one per user and channel
// whatever its letter case: `topic_key` is PostgreSQL's lower() of the name, set on every write, and
// every reader compares lower(message topic) with it.
import type { Db, RawSql } from './db.ts';

/** Zulip's UserTopic.VisibilityPolicy. */
export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;
export type VisibilityPolicyValue = (typeof VisibilityPolicy)[keyof typeof VisibilityPolicy];

export interface UserTopicRow {
  channelId: number;
  topicName: string;
  visibilityPolicy: number;
  lastUpdated: Date;
}

/**
 * Gives the user's topic the policy (INHERIT removes its row). True when something changed; setting the
 * policy the topic already has changes nothing (not even the spelling or time kept).
 */
export async function setUserTopicPolicy(db: Db, q: { userId: number; channelId: number; topic: string; policy: number; at: Date }): Promise<boolean> {
  if (q.policy === VisibilityPolicy.INHERIT) {
    const removed = await db.$executeRaw`
      DELETE FROM user_topic WHERE user_id = ${q.userId}::int AND channel_id = ${q.channelId}::int AND topic_key = lower(${q.topic}::text)`;
    return removed > 0;
  }
  const written = await db.$executeRaw`
    INSERT INTO user_topic (user_id, channel_id, topic_name, topic_key, visibility_policy, last_updated)
    VALUES (${q.userId}::int, ${q.channelId}::int, ${q.topic}::text, lower(${q.topic}::text), ${q.policy}::int, (${q.at.toISOString()}::timestamptz AT TIME ZONE 'UTC'))
    ON CONFLICT (user_id, channel_id, topic_key) DO UPDATE
      SET topic_name = EXCLUDED.topic_name, visibility_policy = EXCLUDED.visibility_policy, last_updated = EXCLUDED.last_updated
      WHERE user_topic.visibility_policy <> EXCLUDED.visibility_policy`;
  return written > 0;
}

/** The user's policies in channels that are not archived, oldest change first (POST /register's user_topics). */
export async function userTopicsOfUser(db: RawSql, userId: number): Promise<UserTopicRow[]> {
  return db.$queryRaw<UserTopicRow[]>`
    SELECT t.channel_id AS "channelId", t.topic_name AS "topicName", t.visibility_policy AS "visibilityPolicy", t.last_updated AS "lastUpdated"
    FROM user_topic t JOIN channel c ON c.id = t.channel_id AND NOT c.is_archived
    WHERE t.user_id = ${userId}::int
    ORDER BY t.last_updated, t.id`;
}

/** The user's muted topics in channels that are not archived, as the older `muted_topics` lists them. */
export async function mutedTopicsOfUser(db: RawSql, userId: number): Promise<[string, string, number][]> {
  const rows = await db.$queryRaw<{ name: string; topic: string; at: Date }[]>`
    SELECT c.name, t.topic_name AS topic, t.last_updated AS at
    FROM user_topic t JOIN channel c ON c.id = t.channel_id AND NOT c.is_archived
    WHERE t.user_id = ${userId}::int AND t.visibility_policy = ${VisibilityPolicy.MUTED}::int
    ORDER BY t.last_updated, t.id`;
  return rows.map((r) => [r.name, r.topic, Math.floor(r.at.getTime() / 1000)]);
}

/** What deciding the sender's automatic policy for a topic needs (see actions/user-topics.ts). */
export interface SenderTopicState {
  followPolicy: number;
  unmutePolicy: number;
  /** The sender's policy for the topic now (0 none). */
  current: number;
  /** The sender's subscription to the channel is muted. */
  channelMuted: boolean;
  /** Another message of the topic exists that the sender can read (so the sender did not start it). */
  topicHasOtherMessages: boolean;
}

/**
 * Read before the sender's message is stored: the sender's settings, policy and channel mute for the
 * topic, and whether the topic has a message the sender can read (other than the one being sent):
 * with `historyPublic`, any of the channel; otherwise one the sender received, with a row or a deferred
 * one (so that a protected history does not leak through the answer).
 */
export async function senderTopicState(
  db: Db,
  q: { senderId: number; channelId: number; topic: string; historyPublic: boolean },
): Promise<SenderTopicState> {
  const [row] = await db.$queryRaw<SenderTopicState[]>`
    SELECT COALESCE(us.automatically_follow_topics_policy, 3) AS "followPolicy",
      COALESCE(us.automatically_unmute_topics_in_muted_streams_policy, 2) AS "unmutePolicy",
      COALESCE(ut.visibility_policy, 0) AS current,
      COALESCE(s.is_muted, false) AS "channelMuted",
      EXISTS (
        SELECT 1 FROM message m
        WHERE m.channel_id = ${q.channelId}::int AND lower(m.topic) = lower(${q.topic}::text)
          AND (${q.historyPublic}::boolean OR m.deferred_recipient_ids @> ARRAY[${q.senderId}::int]
            OR EXISTS (SELECT 1 FROM user_message um WHERE um.user_id = ${q.senderId}::int AND um.message_id = m.id))
      ) AS "topicHasOtherMessages"
    FROM "user" u
    LEFT JOIN user_settings us ON us.user_id = u.id
    LEFT JOIN user_topic ut ON ut.user_id = u.id AND ut.channel_id = ${q.channelId}::int AND ut.topic_key = lower(${q.topic}::text)
    LEFT JOIN subscription s ON s.user_id = u.id AND s.channel_id = ${q.channelId}::int AND s.active
    WHERE u.id = ${q.senderId}::int`;
  return row!;
}

/**
 * Of `userIds`, the active humans who follow topics where they are mentioned and have neither muted nor
 * followed this topic (Zulip: an explicit mute wins over the setting).
 */
export async function usersToFollowWhenMentioned(db: Db, q: { userIds: number[]; channelId: number; topic: string }): Promise<number[]> {
  if (q.userIds.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT u.id FROM "user" u
    LEFT JOIN user_settings us ON us.user_id = u.id
    LEFT JOIN user_topic ut ON ut.user_id = u.id AND ut.channel_id = ${q.channelId}::int AND ut.topic_key = lower(${q.topic}::text)
    WHERE u.id = ANY(${q.userIds}::int[]) AND u.is_active AND NOT u.is_bot
      AND COALESCE(us.automatically_follow_topics_where_mentioned, true)
      AND COALESCE(ut.visibility_policy, 0) NOT IN (${VisibilityPolicy.MUTED}::int, ${VisibilityPolicy.FOLLOWED}::int)
    ORDER BY u.id`;
  return rows.map((r) => r.id);
}
