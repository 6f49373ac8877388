// Mobile devices registered for push notifications (table `push_device`): one row per user, kind
// ("apns" or "fcm") and token, as Zulip's PushDeviceToken.
import type { PushDevice } from '@parley/db';
import type { Db } from './db.ts';
import { Prisma } from './db.ts';

export type PushDeviceRow = PushDevice;
export type PushKind = 'apns' | 'fcm';

/** Registers the token for the user; a token already registered (for this kind) is kept as it is. */
export async function addPushDevice(db: Db, userId: number, kind: PushKind, token: string, appId: string | null): Promise<void> {
  await db.pushDevice.createMany({ data: [{ userId, kind, token, appId }], skipDuplicates: true });
}

/** Removes the user's registration of the token; false when the user had none. */
export async function removePushDevice(db: Db, userId: number, kind: PushKind, token: string): Promise<boolean> {
  const { count } = await db.pushDevice.deleteMany({ where: { userId, kind, token } });
  return count > 0;
}

/** Every registration of a token, whoever made it (APNs said the token is dead); returns how many. */
export async function removeTokenEverywhere(db: Db, kind: PushKind, token: string): Promise<number> {
  const { count } = await db.pushDevice.deleteMany({ where: { kind, token } });
  return count;
}

/** The user's devices (only those with this token, of either kind, when given), oldest first. */
export function pushDevicesOfUser(db: Db, userId: number, token?: string): Promise<PushDeviceRow[]> {
  return db.pushDevice.findMany({ where: { userId, ...(token !== undefined ? { token } : {}) }, orderBy: { id: 'asc' } });
}

export async function pushDeviceExists(db: Db, deviceId: number): Promise<boolean> {
  return (await db.pushDevice.count({ where: { id: deviceId } })) > 0;
}

/** A device of a possible recipient of a message push, with what deciding on the push needs. */
export interface PushTargetRow {
  device_id: number;
  user_id: number;
  kind: string;
  token: string;
  app_id: string | null;
  offline_push: boolean;
  online_push: boolean;
  stream_push: boolean;
  wildcard_mentions_notify: boolean;
  followed_topic_push: boolean;
  followed_topic_wildcard_mentions_notify: boolean;
  /** Channel messages: the recipient's visibility policy for the topic (0 when none). */
  topic_policy: number;
  /** Channel messages: the recipient's subscription. */
  sub_is_muted: boolean | null;
  sub_push_notifications: boolean | null;
  sub_wildcard_mentions_notify: boolean | null;
  /**
   * Not idle, by Zulip's rule: a queue accepting message events was polled in the last
   * `queueOfflineSeconds`, and (unless `activeSince` is null: presence turned off) the user's presence
   * says active at or after `activeSince`.
   */
  active: boolean;
}

/**
 * The devices of active human users who might be pushed a message: the channel's active subscribers
 * (channel messages) or the listed users (direct messages), the sender and those who muted the sender
 * excluded, with their settings,
 * subscription, policy for the message's topic and whether a client of theirs is active. Starts from push_device, so a message whose
 * recipients have no devices costs one index probe.
 */
export function pushTargets(
  db: Db,
  q: { channel: { id: number; topic: string } | null; userIds: number[]; senderId: number; queueOfflineSeconds: number; activeSince: Date | null },
): Promise<PushTargetRow[]> {
  const scope =
    q.channel !== null
      ? Prisma.sql`JOIN subscription s ON s.user_id = d.user_id AND s.channel_id = ${q.channel.id}::int AND s.active
          LEFT JOIN user_topic ut ON ut.user_id = d.user_id AND ut.channel_id = ${q.channel.id}::int AND ut.topic_key = lower(${q.channel.topic}::text)`
      : Prisma.sql`LEFT JOIN subscription s ON false LEFT JOIN user_topic ut ON false`;
  const filter = q.channel !== null ? Prisma.empty : Prisma.sql`AND d.user_id = ANY(${q.userIds}::int[])`;
  return db.$queryRaw<PushTargetRow[]>`
    SELECT d.id AS device_id, d.user_id, d.kind, d.token, d.app_id,
      COALESCE(us.enable_offline_push_notifications, true) AS offline_push,
      COALESCE(us.enable_online_push_notifications, true) AS online_push,
      COALESCE(us.enable_stream_push_notifications, false) AS stream_push,
      COALESCE(us.wildcard_mentions_notify, true) AS wildcard_mentions_notify,
      COALESCE(us.enable_followed_topic_push_notifications, true) AS followed_topic_push,
      COALESCE(us.enable_followed_topic_wildcard_mentions_notify, true) AS followed_topic_wildcard_mentions_notify,
      COALESCE(ut.visibility_policy, 0) AS topic_policy,
      s.is_muted AS sub_is_muted, s.push_notifications AS sub_push_notifications, s.wildcard_mentions_notify AS sub_wildcard_mentions_notify,
      EXISTS (
        SELECT 1 FROM event_queue q
        WHERE q.user_id = d.user_id AND q.last_accessed_at >= now() - make_interval(secs => ${q.queueOfflineSeconds}::int)
          AND (q.event_types IS NULL OR 'message' = ANY(q.event_types))
      ) AND ${q.activeSince === null ? Prisma.sql`TRUE` : Prisma.sql`EXISTS (SELECT 1 FROM user_presence p WHERE p.user_id = d.user_id AND p.last_active_time >= ${q.activeSince.toISOString()}::timestamp(3))`} AS active
    FROM push_device d
    JOIN "user" u ON u.id = d.user_id AND u.is_active AND NOT u.is_bot
    LEFT JOIN user_settings us ON us.user_id = d.user_id
    ${scope}
    WHERE d.user_id <> ${q.senderId}::int ${filter}
      -- Those who muted the sender get no push (Zulip's muted_sender_user_ids).
      AND NOT EXISTS (SELECT 1 FROM muted_user mu WHERE mu.user_id = d.user_id AND mu.muted_user_id = ${q.senderId}::int)
    ORDER BY d.user_id, d.id`;
}
