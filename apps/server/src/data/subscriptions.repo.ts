// Subscriptions (user × channel rows, kept with active=false when unsubscribed so that personal
// settings survive) and the subscriber queries. Subscribers are always active users.
import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';
import type { Channel, Subscription, User } from './models.ts';
import { directRecipientsByEmails } from './messages.repo.ts';
import { channelColumns, channelFactsOf, channelFactsSql, channelOf, subscriptionOfJson, type ChannelFacts, type ChannelFactsRequest } from './channels.repo.ts';

/** Of `channelIds`, the channels the user is actively subscribed to. */
export async function subscribedChannelIds(db: Db, userId: number, channelIds?: number[]): Promise<Set<number>> {
  const rows = await db.subscription.findMany({
    where: { userId, active: true, ...(channelIds ? { channelId: { in: channelIds } } : {}) },
    select: { channelId: true },
  });
  return new Set(rows.map((r) => r.channelId));
}

/** Every row (active or not) of the given users on the given channels. */
export const subscriptionRows = (db: Db, userIds: number[], channelIds: number[]) =>
  db.subscription.findMany({ where: { userId: { in: userIds }, channelId: { in: channelIds } } });

/** The pairs in (user, channel) order. */
const byPair = <T extends { userId: number; channelId: number }>(pairs: T[]): T[] =>
  [...pairs].sort((a, b) => a.userId - b.userId || a.channelId - b.channelId);

/**
 * The common table expressions that make each (user, channel) pair an active subscription: `inserted`
 * (pairs with no row get one, with the pair's color; a row another transaction inserted meanwhile meets
 * the unique key and is left alone), `reactivated` (inactive rows made active) and `changed` (the rows
 * of both, as the table has them now). Shared by activateSubscriptions and activateExpectedSql. Rows
 * are written in (user, channel) order, so that concurrent requests wait on each other's keys in one
 * order (no deadlocks).
 */
function activationCtes(pairs: Array<{ userId: number; channelId: number; color: string }>): Prisma.Sql {
  const ordered = byPair(pairs);
  const users = ordered.map((p) => p.userId);
  const channels = ordered.map((p) => p.channelId);
  const colors = ordered.map((p) => p.color);
  return Prisma.sql`WITH inserted AS (
      INSERT INTO subscription (user_id, channel_id, color, active)
      SELECT p.u, p.c, p.color, true FROM unnest(${users}::int[], ${channels}::int[], ${colors}::text[]) AS p(u, c, color)
      ON CONFLICT (user_id, channel_id) DO NOTHING
      RETURNING *
    ), reactivated AS (
      UPDATE subscription s SET active = true
      FROM unnest(${users}::int[], ${channels}::int[]) AS p(u, c)
      WHERE s.user_id = p.u AND s.channel_id = p.c AND NOT s.active
      RETURNING s.*
    ), changed AS (
      SELECT * FROM inserted UNION ALL SELECT * FROM reactivated
    )`;
}

/**
 * Makes each (user, channel) pair an active subscription, in one statement, and returns the rows it
 * changed: pairs with no row get one (with the pair's color), inactive rows are reactivated. A pair
 * another transaction subscribed meanwhile is left alone and not returned (its insert meets the unique
 * key and does nothing; its reactivation finds the row active), so the caller reports exactly the
 * subscriptions it made even when the channel is only share-locked. With `facts`, the same statement
 * also reads the channels' display facts, subscriber lists including the rows it changed.
 */
export async function activateSubscriptions(
  db: RawSql,
  realmId: number,
  pairs: Array<{ userId: number; channelId: number; color: string }>,
  facts?: ChannelFactsRequest,
): Promise<{ rows: Subscription[]; facts: ChannelFacts | null }> {
  if (pairs.length === 0) return { rows: [], facts: null };
  const factsRows = facts ? Prisma.sql`UNION ALL SELECT 'facts', to_jsonb(f) FROM (${channelFactsSql(realmId, facts, Prisma.sql`changed`)}) f` : Prisma.empty;
  const out = await db.$queryRaw<Array<{ kind: string; data: Record<string, unknown> }>>`
    ${activationCtes(pairs)}
    SELECT 'row' AS kind, to_jsonb(changed) AS data FROM changed ${factsRows}`;
  return {
    rows: out.filter((r) => r.kind === 'row').map((r) => subscriptionOfJson(r.data)),
    facts: facts ? channelFactsOf(out.filter((r) => r.kind === 'facts').map((r) => r.data as Parameters<typeof channelFactsOf>[0][number])) : null,
  };
}

/** A subscription row as the JSON the expectation of activateExpectedSql compares (snake_case columns). */
const subscriptionJsonSql = (alias: string) => Prisma.raw(
  `jsonb_build_object('user_id', ${alias}.user_id, 'channel_id', ${alias}.channel_id, 'active', ${alias}.active, 'color', ${alias}.color, ` +
    `'is_muted', ${alias}.is_muted, 'pin_to_top', ${alias}.pin_to_top, 'desktop_notifications', ${alias}.desktop_notifications, ` +
    `'audible_notifications', ${alias}.audible_notifications, 'push_notifications', ${alias}.push_notifications, ` +
    `'email_notifications', ${alias}.email_notifications, 'wildcard_mentions_notify', ${alias}.wildcard_mentions_notify)`,
);
const subscriptionJson = (r: Subscription) => ({
  user_id: r.userId,
  channel_id: r.channelId,
  active: r.active,
  color: r.color,
  is_muted: r.isMuted,
  pin_to_top: r.pinToTop,
  desktop_notifications: r.desktopNotifications,
  audible_notifications: r.audibleNotifications,
  push_notifications: r.pushNotifications,
  email_notifications: r.emailNotifications,
  wildcard_mentions_notify: r.wildcardMentionsNotify,
});

/** A new subscription row as the table's defaults make it (activateSubscriptions inserts only the pair and its color). */
export const newSubscriptionRow = (userId: number, channelId: number, color: string): Subscription => ({
  userId,
  channelId,
  active: true,
  color,
  isMuted: false,
  pinToTop: false,
  desktopNotifications: null,
  audibleNotifications: null,
  pushNotifications: null,
  emailNotifications: null,
  wildcardMentionsNotify: null,
});

/**
 * activateSubscriptions as one statement to send with COMMIT, when the caller has predicted what it
 * changes (`expected`: the rows the pairs will have, from rows read under the channels' share locks)
 * and built what follows from that (the events, stored by `alongside`, a data-modifying statement
 * run by the same statement). PostgreSQL fails the statement (parley_expect, SQLSTATE PX001: the
 * transaction rolls back, see isExpectationFailure) unless the rows it changed are exactly `expected`
 * (a concurrent request of the same user subscribed a pair, or changed a row, in between): nothing
 * is then stored, and the caller runs the change again the slow way.
 */
export function activateExpectedSql(expected: Subscription[], alongside: Prisma.Sql | null): Prisma.Sql {
  const ordered = byPair(expected);
  return Prisma.sql`
    ${activationCtes(ordered)}${alongside ? Prisma.sql`, stored AS (${alongside})` : Prisma.empty}
    SELECT parley_expect(
      (SELECT coalesce(jsonb_agg(${subscriptionJsonSql('ch')} ORDER BY ch.user_id, ch.channel_id), '[]'::jsonb) FROM changed ch) = ${JSON.stringify(ordered.map(subscriptionJson))}::jsonb,
      'subscription rows changed concurrently')`;
}

/** The statement of activateExpectedSql found other rows than expected (and its transaction rolled back). */
export function isExpectationFailure(error: unknown): boolean {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } } | null;
  return e?.code === 'PX001' || e?.cause?.code === 'PX001' || /write expectation failed/.test(`${e?.message ?? ''} ${e?.cause?.message ?? ''}`);
}

/** Deactivates the active subscriptions among the pairs (one statement); returns the pairs it changed. */
export async function deactivateSubscriptions(db: Db, pairs: Array<{ userId: number; channelId: number }>): Promise<Array<{ userId: number; channelId: number }>> {
  if (pairs.length === 0) return [];
  return db.$queryRaw<Array<{ userId: number; channelId: number }>>`
    UPDATE subscription s SET active = false
    FROM unnest(${pairs.map((p) => p.userId)}::int[], ${pairs.map((p) => p.channelId)}::int[]) AS p(u, c)
    WHERE s.user_id = p.u AND s.channel_id = p.c AND s.active
    RETURNING s.user_id AS "userId", s.channel_id AS "channelId"`;
}

/** Active subscribers (active users) of each channel, sorted by id. */
export async function subscriberIdsOfChannels(db: RawSql, channelIds: number[]): Promise<Map<number, number[]>> {
  return subscribersByChannel(db, channelIds, false);
}

export async function subscriberIds(db: Db, channelId: number): Promise<number[]> {
  return (await subscriberIdsOfChannels(db, [channelId])).get(channelId)!;
}

/** Bot subscribers of each channel (for partial subscriber lists). */
export async function botSubscriberIdsOfChannels(db: RawSql, channelIds: number[]): Promise<Map<number, number[]>> {
  return subscribersByChannel(db, channelIds, true);
}

async function subscribersByChannel(db: RawSql, channelIds: number[], botsOnly: boolean): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>(channelIds.map((id) => [id, []]));
  if (channelIds.length === 0) return out;
  const rows = await db.$queryRaw<Array<{ channelId: number; userId: number }>>`
    SELECT s.channel_id AS "channelId", s.user_id AS "userId"
    FROM subscription s JOIN "user" u ON u.id = s.user_id AND u.is_active ${botsOnly ? Prisma.sql`AND u.is_bot` : Prisma.empty}
    WHERE s.channel_id = ANY(${channelIds}::int[]) AND s.active
    ORDER BY s.user_id`;
  for (const r of rows) out.get(r.channelId)!.push(r.userId);
  return out;
}

export type SubscriptionWithChannel = Subscription & { channel: Channel };

/**
 * The user's subscription rows with their channels, by channel id: `active` the current ones, `former`
 * the ones left, of channels not archived, `all` every row (POST /register reads them once).
 */
export async function subscriptionsWithChannels(db: RawSql, userId: number, which: 'active' | 'former' | 'all'): Promise<SubscriptionWithChannel[]> {
  const filter = which === 'active' ? Prisma.sql`AND s.active` : which === 'former' ? Prisma.sql`AND NOT s.active AND NOT c.is_archived` : Prisma.empty;
  const rows = await db.$queryRaw<Array<Record<string, unknown> & { subscription: Record<string, unknown> }>>`
    SELECT ${channelColumns('c')}, to_jsonb(s) AS subscription
    FROM subscription s JOIN channel c ON c.id = s.channel_id
    WHERE s.user_id = ${userId}::int ${filter}
    ORDER BY s.channel_id`;
  return rows.map((r) => ({ ...subscriptionOfJson(r.subscription), channel: channelOf(r) }));
}

/** The user's active subscriptions with their channels. */
export const activeSubscriptionsOfUser = (db: RawSql, userId: number) => subscriptionsWithChannels(db, userId, 'active');

/** The user's former subscriptions (unsubscribed) to channels that are not archived, with their channels. */
export const inactiveSubscriptionsOfUser = (db: RawSql, userId: number) => subscriptionsWithChannels(db, userId, 'former');

/** Colors each user already uses (active or not), to pick distinct ones for new subscriptions. */
export async function usedColorsOfUsers(db: Db, userIds: number[]): Promise<Map<number, Set<string>>> {
  const out = new Map<number, Set<string>>(userIds.map((id) => [id, new Set()]));
  if (userIds.length === 0) return out;
  const rows = await db.subscription.findMany({ where: { userId: { in: userIds } }, select: { userId: true, color: true } });
  for (const r of rows) out.get(r.userId)!.add(r.color);
  return out;
}

/** Users named by id (principals); null when any id is unknown in the organization. */
export async function findUsersByPrincipalIds(db: Db, realmId: number, ids: number[]) {
  const unique = [...new Set(ids)];
  const users = await db.user.findMany({ where: { realmId, id: { in: unique } }, orderBy: { id: 'asc' } });
  return users.length === unique.length ? users : null;
}

/**
 * Users named by e-mail (principals), matched case-insensitively against the address other users see:
 * the `email` column, or the `user<id>@<host>` form shown when the address is hidden. Null when any
 * address matches nobody.
 */
export async function findUsersByPrincipalEmails(db: Db, realm: { id: number; url: string }, emails: string[], actor: Pick<User, 'id' | 'role'>) {
  const wanted = [...new Set(emails.map((e) => e.trim().toLowerCase()))];
  // An address names a user as the caller may see it (access/users.ts addressNames): the shown form,
  // or the real address only for callers allowed to see it.
  const { rows, matches } = await directRecipientsByEmails(db, realm, wanted, actor);
  const named = new Set<number>();
  for (const email of wanted) {
    const row = rows.find((r) => matches(r, email));
    if (!row) return null;
    named.add(row.id);
  }
  return db.user.findMany({ where: { id: { in: [...named] } }, orderBy: { id: 'asc' } });
}
