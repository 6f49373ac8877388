// The reads POST /typing needs: who the recipients are (and the address they are shown by) and whether
// they want typing notifications.
import type { Db } from './db.ts';

export interface TypingPerson {
  id: number;
  /** The real address and who may see it: typing events show access/users.ts publicEmailOf of them. */
  delivery_email: string;
  is_bot: boolean;
  email_address_visibility: number;
  is_active: boolean;
  receives: boolean;
  /** send_private_typing_notifications (what the sender's own row is read for). */
  sends_direct: boolean;
  /** send_stream_typing_notifications (likewise). */
  sends_channel: boolean;
}

/**
 * Users of the organization among `ids`, with their receives_typing_notifications setting (and
 * send_private_typing_notifications: the sender is among them, so one round trip serves both).
 */
export async function typingPeople(db: Db, realmId: number, ids: number[]): Promise<TypingPerson[]> {
  return db.$queryRaw<TypingPerson[]>`
    SELECT u.id, u.delivery_email, u.is_bot, COALESCE(s.email_address_visibility, 1) AS email_address_visibility, u.is_active,
      COALESCE(s.receives_typing_notifications, TRUE) AS receives,
      COALESCE(s.send_private_typing_notifications, TRUE) AS sends_direct, COALESCE(s.send_stream_typing_notifications, TRUE) AS sends_channel
    FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE u.realm_id = ${realmId}::int AND u.id = ANY(${ids}::int[]) ORDER BY u.id`;
}

/**
 * A channel's active subscribers who receive typing notifications (ascending ids), when it has at most
 * `limit` active subscribers; null when it has more (typing is not sent to large channels). Stops
 * reading subscribers past the limit, so a channel of thousands costs as little as one of a hundred.
 */
export async function channelTypingAudience(db: Db, channelId: number, limit: number): Promise<number[] | null> {
  const [row] = await db.$queryRaw<{ n: number; receivers: number[] }[]>`
    SELECT count(*)::int AS n, COALESCE(array_agg(t.id ORDER BY t.id) FILTER (WHERE t.receives), '{}') AS receivers
    FROM (
      SELECT u.id, COALESCE(s.receives_typing_notifications, TRUE) AS receives
      FROM subscription sub JOIN "user" u ON u.id = sub.user_id LEFT JOIN user_settings s ON s.user_id = u.id
      WHERE sub.channel_id = ${channelId}::int AND sub.active AND u.is_active
      LIMIT ${limit + 1}::int
    ) t`;
  return (row?.n ?? 0) > limit ? null : (row?.receivers ?? []);
}
