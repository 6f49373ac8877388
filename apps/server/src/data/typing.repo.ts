// The reads POST /typing needs: who the recipients are (and the address they are shown by) and whether
// they want typing notifications.
import { Prisma, type Db } from './db.ts';
import type { Channel } from './models.ts';
import { channelColumns, channelOf } from './channels.repo.ts';
import { containingGroupsCte } from './user-groups.repo.ts';

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
  const [row] = await db.$queryRaw<{ n: number; receivers: number[] }[]>(audienceSql(Prisma.sql`${channelId}::int`, limit));
  return audienceOf(row, limit);
}

/**
 * The count of a channel's active subscribers, up to `limit` + 1, and those of them who receive typing
 * notifications (ascending ids): one row. `channel` is the channel's id (a value, or a column of an
 * enclosing statement).
 */
const audienceSql = (channel: Prisma.Sql, limit: number) => Prisma.sql`
  SELECT count(*)::int AS n, COALESCE(array_agg(t.id ORDER BY t.id) FILTER (WHERE t.receives), '{}') AS receivers
  FROM (
    SELECT u.id, COALESCE(s.receives_typing_notifications, TRUE) AS receives
    FROM subscription sub JOIN "user" u ON u.id = sub.user_id LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE sub.channel_id = ${channel} AND sub.active AND u.is_active
    LIMIT ${limit + 1}::int
  ) t`;

const audienceOf = (row: { n: number; receivers: number[] } | undefined, limit: number): number[] | null => ((row?.n ?? 0) > limit ? null : (row?.receivers ?? []));

/** What POST /typing to a channel decides with, read in one statement (channelTypingContext). */
export interface ChannelTypingContext {
  channel: Channel;
  /** Every group containing the sender, directly or through subgroups (access/group-settings.ts's subject). */
  senderGroupIds: number[];
  /** Is the sender actively subscribed? */
  subscribed: boolean;
  /** channelTypingAudience's answer: null when the channel has more than `limit` active subscribers. */
  audience: number[] | null;
}

/**
 * The channel (null: none of the organization's), the sender's groups, whether they are subscribed and
 * the typing audience (as channelTypingAudience): one round trip where these were four. The audience
 * is read before the caller decides whether the sender may type there; it is only used when they may.
 */
export async function channelTypingContext(db: Db, realmId: number, channelId: number, senderId: number, limit: number): Promise<ChannelTypingContext | null> {
  const [row] = await db.$queryRaw<Array<Channel & { sender_groups: number[]; subscribed: boolean; n: number; receivers: number[] }>>`
    WITH RECURSIVE ${containingGroupsCte(senderId)}
    SELECT ${channelColumns('c')},
      ARRAY(SELECT id FROM containing) AS sender_groups,
      EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${senderId}::int AND s.channel_id = c.id AND s.active) AS subscribed,
      a.n, a.receivers
    FROM channel c
    CROSS JOIN LATERAL (${audienceSql(Prisma.sql`c.id`, limit)}) a
    WHERE c.id = ${channelId}::int AND c.realm_id = ${realmId}::int`;
  if (!row) return null;
  return { channel: channelOf(row), senderGroupIds: row.sender_groups, subscribed: row.subscribed, audience: audienceOf(row, limit) };
}
