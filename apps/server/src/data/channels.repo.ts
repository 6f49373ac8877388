// Channels, channel folders and the per-channel facts responses need (subscribers, first message,
// activity, the groups of their settings), with the locks of channel changes and subscriptions.
import type { Db, RawSql } from './db.ts';
import { Prisma, columnOf, modelColumns } from './db.ts';
import { queryKeptByDigest } from './digest-cache.ts';
import type { Channel, Subscription } from './models.ts';

export const findChannelById = (db: Db, realmId: number, id: number) => db.channel.findFirst({ where: { id, realmId } });

export const findChannelsByIds = (db: Db, realmId: number, ids: number[]) =>
  db.channel.findMany({ where: { realmId, id: { in: ids } }, orderBy: { id: 'asc' } });

/**
 * The columns of a channel row under the model's field names, so that raw statements (which lock,
 * join or write in one round trip) return the same objects as the client's queries.
 */
const CHANNEL_FIELDS: ReadonlyArray<keyof Channel> = Object.values(Prisma.ChannelScalarFieldEnum);

export const channelColumns = (alias: string) => modelColumns(CHANNEL_FIELDS, alias);

/** Keeps only the model's fields of a raw row (a row may carry extra columns). */
export function channelOf(row: Record<string, unknown>): Channel {
  const out: Record<string, unknown> = {};
  for (const f of CHANNEL_FIELDS) out[f] = row[f];
  return out as unknown as Channel;
}

/** Channels whose lower(name) is one of lower(names) (uses the unique index on lower(name)), by id. */
export async function findChannelsByNames(db: Db, realmId: number, names: string[]): Promise<Channel[]> {
  if (names.length === 0) return [];
  const rows = await db.$queryRaw<Channel[]>`
    SELECT ${channelColumns('c')} FROM channel c
    WHERE c.realm_id = ${realmId} AND lower(c.name) IN (SELECT lower(n) FROM unnest(${names}::text[]) AS n)
    ORDER BY c.id`;
  return rows.map(channelOf);
}

/**
 * The channel row locked FOR UPDATE for the rest of the transaction (serialises changes of one
 * channel, and excludes subscription changes, which share-lock it), with whether `userId` is actively
 * subscribed to it: one statement.
 */
export async function lockChannelForUser(db: Db, realmId: number, id: number, userId: number): Promise<{ channel: Channel; subscribed: boolean } | null> {
  const rows = await db.$queryRaw<Array<Channel & { subscribed: boolean }>>`
    SELECT ${channelColumns('c')},
      EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${userId} AND s.channel_id = c.id AND s.active) AS subscribed
    FROM channel c WHERE c.id = ${id} AND c.realm_id = ${realmId} FOR UPDATE OF c`;
  const row = rows[0];
  return row ? { channel: channelOf(row), subscribed: row.subscribed } : null;
}

/** A channel found by name and share-locked, with one user's row on it (null: none) and the user's colors. */
export interface SharedChannel {
  channel: Channel;
  /** The user's subscription row on the channel, active or not; null when there is none. */
  subscription: Subscription | null;
}

/**
 * The channels named (case-insensitively), share-locked in id order, each with `userId`'s subscription
 * row on it, and every color `userId` uses on any channel: one statement. A share lock lets subscription
 * changes of one channel run concurrently (their rows are kept exact by the unique key of
 * (user, channel)) while excluding changes of the channel itself (PATCH, archiving), which lock it
 * FOR UPDATE.
 */
export async function shareLockChannelsByNames(db: RawSql, realmId: number, names: string[], userId: number): Promise<{ channels: SharedChannel[]; usedColors: Set<string> }> {
  if (names.length === 0) return { channels: [], usedColors: new Set() };
  const rows = await db.$queryRaw<Array<Record<string, unknown>>>`
    SELECT ${channelColumns('c')}, to_jsonb(s) AS subscription,
      ARRAY(SELECT DISTINCT o.color FROM subscription o WHERE o.user_id = ${userId}) AS used_colors
    FROM channel c LEFT JOIN subscription s ON s.channel_id = c.id AND s.user_id = ${userId}
    WHERE c.realm_id = ${realmId} AND lower(c.name) IN (SELECT lower(n) FROM unnest(${names}::text[]) AS n)
    ORDER BY c.id FOR SHARE OF c`;
  return sharedChannelsOf(rows);
}

function sharedChannelsOf(rows: Array<Record<string, unknown>>): { channels: SharedChannel[]; usedColors: Set<string> } {
  return {
    channels: rows.map((r) => ({ channel: channelOf(r), subscription: r.subscription ? subscriptionOfJson(r.subscription as Record<string, unknown>) : null })),
    usedColors: new Set((rows[0]?.used_colors as string[] | undefined) ?? []),
  };
}

/**
 * shareLockChannelsByNames, and in the same statement the display facts of the channels found
 * (channelDisplayFacts with subscriber lists, the groups named by the channels' `groupFields`), read
 * once the locks are held. The facts come from the statement's snapshot: a group a concurrent change
 * of a channel created after it began is missing from them (the caller checks).
 */
export async function shareLockChannelsWithFacts(
  db: RawSql,
  realmId: number,
  names: string[],
  userId: number,
  facts: { groupFields: ReadonlyArray<keyof Channel>; recentDays: number },
): Promise<{ channels: SharedChannel[]; usedColors: Set<string>; facts: ChannelFacts }> {
  if (names.length === 0) return { channels: [], usedColors: new Set(), facts: channelFactsOf([]) };
  const groupColumns = Prisma.raw(facts.groupFields.map((f) => `l.${columnOf(f)}`).join(', '));
  const factsSql = channelFactsSql(realmId, { channelIds: [], groupIds: [], recentDays: facts.recentDays, withSubscribers: true }, undefined, {
    channelIds: Prisma.sql`SELECT l.id FROM locked l`,
    groupIds: Prisma.sql`SELECT unnest(ARRAY[${groupColumns}]) FROM locked l`,
  });
  const rows = await db.$queryRaw<Array<Record<string, unknown>>>`
    WITH locked AS (
      SELECT c.* FROM channel c
      WHERE c.realm_id = ${realmId} AND lower(c.name) IN (SELECT lower(n) FROM unnest(${names}::text[]) AS n)
      ORDER BY c.id FOR SHARE OF c
    )
    SELECT ${channelColumns('c')}, to_jsonb(s) AS subscription,
      ARRAY(SELECT DISTINCT o.color FROM subscription o WHERE o.user_id = ${userId}) AS used_colors,
      (SELECT jsonb_agg(to_jsonb(f)) FROM (${factsSql}) f) AS facts
    FROM locked c LEFT JOIN subscription s ON s.channel_id = c.id AND s.user_id = ${userId}
    ORDER BY c.id`;
  return { ...sharedChannelsOf(rows), facts: channelFactsOf((rows[0]?.facts as FactsRow[] | null | undefined) ?? []) };
}

/** A subscription row from its to_jsonb form. */
export function subscriptionOfJson(j: Record<string, unknown>): Subscription {
  return {
    userId: j.user_id as number,
    channelId: j.channel_id as number,
    active: j.active as boolean,
    color: j.color as string,
    isMuted: j.is_muted as boolean,
    pinToTop: j.pin_to_top as boolean,
    desktopNotifications: j.desktop_notifications as boolean | null,
    audibleNotifications: j.audible_notifications as boolean | null,
    pushNotifications: j.push_notifications as boolean | null,
    emailNotifications: j.email_notifications as boolean | null,
    wildcardMentionsNotify: j.wildcard_mentions_notify as boolean | null,
  };
}

/** Share-locks several channel rows in id order and reads them (one statement; see shareLockChannelsByNames). */
export async function shareLockChannels(db: Db, realmId: number, ids: number[]): Promise<Channel[]> {
  if (ids.length === 0) return [];
  const rows = await db.$queryRaw<Channel[]>`
    SELECT ${channelColumns('c')} FROM channel c WHERE c.realm_id = ${realmId} AND c.id = ANY(${[...new Set(ids)]}::int[]) ORDER BY c.id FOR SHARE OF c`;
  return rows.map(channelOf);
}

/** Values of an update of a channel row, by model field. */
export type ChannelChanges = Partial<Omit<Channel, 'id' | 'realmId' | 'createdAt'>>;

/**
 * Updates the channel and runs `alongside` (a data-modifying statement, e.g. storing the events of the
 * change) in the same statement: one round trip while the channel row is locked.
 */
export async function updateChannelAlong(db: Db, id: number, changes: ChannelChanges, alongside: Prisma.Sql | null): Promise<void> {
  const sets = Object.entries(changes)
    .filter(([, v]) => v !== undefined)
    .map(([field, value]) => Prisma.sql`${Prisma.raw(columnOf(field))} = ${value}`);
  if (sets.length === 0 && !alongside) return;
  const update = sets.length ? Prisma.sql`UPDATE channel SET ${Prisma.join(sets, ', ')} WHERE id = ${id}` : Prisma.sql`SELECT 1`;
  if (!alongside) {
    await db.$executeRaw(update);
    return;
  }
  await db.$executeRaw`WITH changed AS (${update}), stored AS (${alongside}) SELECT 1`;
}

export const createChannel = (db: Db, data: Prisma.ChannelUncheckedCreateInput) => db.channel.create({ data });

export const updateChannel = (db: Db, id: number, data: Prisma.ChannelUncheckedUpdateInput) => db.channel.update({ where: { id }, data });

const channelsOfRealmSql = (realmId: number, options: { excludeArchived: boolean }) => Prisma.sql`
    SELECT ${channelColumns('c')} FROM channel c
    WHERE c.realm_id = ${realmId}::int ${options.excludeArchived ? Prisma.sql`AND NOT c.is_archived` : Prisma.empty}
    ORDER BY c.id`;

export const listChannelsOfRealm = (db: RawSql, realmId: number, options: { excludeArchived: boolean }): Promise<Channel[]> =>
  Promise.resolve(db.$queryRaw<Channel[]>(channelsOfRealmSql(realmId, options)));

/**
 * listChannelsOfRealm for a transaction of one snapshot (POST /register's), its rows kept in this
 * process while unchanged (data/digest-cache.ts): frozen channel objects, shared with other readers.
 */
export const listChannelsOfRealmKept = (db: RawSql, realmId: number, options: { excludeArchived: boolean }): Promise<readonly Readonly<Channel>[]> =>
  // The kept array itself (frozen, and typed so: a change does not compile), the same while unchanged.
  queryKeptByDigest<Channel>(db, channelsOfRealmSql(realmId, options), `channels|${realmId}|${options.excludeArchived}`);

export async function defaultChannelIds(db: RawSql, realmId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM channel WHERE realm_id = ${realmId}::int AND is_default AND NOT is_archived ORDER BY id`;
  return rows.map((r) => r.id);
}

/** What responses show of channels beyond their rows (see channelDisplayFacts). */
export interface ChannelFacts {
  /** Active subscribers that are active users, by channel. */
  subscriberCount: Map<number, number>;
  /** Their ids ascending, when asked for. */
  subscribers: Map<number, number[]>;
  firstMessageId: Map<number, number>;
  /** Channels with a message sent in the last `recentDays` days. */
  withRecentMessages: Set<number>;
  /** Groups of the organization among `groupIds`: anonymous ones with their direct members (active) and subgroups, named ones as null. */
  groups: Map<number, { members: number[]; subgroups: number[] } | null>;
}

/** What channelDisplayFacts reads: channels, the groups their settings name, and how. */
export interface ChannelFactsRequest {
  channelIds: number[];
  groupIds: number[];
  recentDays: number;
  withSubscribers: boolean;
}

type FactsRow = { kind: string; id: number; count: number | null; ids: number[] | null; first: number | null; recent: boolean | null; anonymous: boolean | null; subgroups: number[] | null };

/**
 * The query of channelDisplayFacts. `alsoSubscribed` names a relation of (user_id, channel_id) rows that
 * the same statement made active (a data-modifying CTE): its statement snapshot does not show them, so
 * they are added to the subscriber lists.
 */
export function channelFactsSql(realmId: number, request: ChannelFactsRequest, alsoSubscribed?: Prisma.Sql, from?: FactsSource): Prisma.Sql {
  // Two shapes of one answer, by the number of channels: for a few (a subscribe, one channel's event),
  // a subquery per channel, whose joins PostgreSQL plans as index lookups; for many (/register's every
  // channel), one aggregate per table (bench/README.md, register-state.bench.ts).
  return !from && request.channelIds.length > FEW_CHANNELS
    ? setBasedFactsSql(realmId, request, alsoSubscribed)
    : perChannelFactsSql(realmId, request, alsoSubscribed, from);
}

/** Above this many channels, channelFactsSql reads their facts set-based. */
const FEW_CHANNELS = 10;

/**
 * Is the channel's newest message (by id: an index lookup) within the period? Message ids grow with
 * the time they were sent. Timestamps are stored in UTC without a zone.
 */
const recentSql = (days: number) => Prisma.sql`COALESCE((SELECT m.date_sent FROM message m WHERE m.channel_id = c.id ORDER BY m.id DESC LIMIT 1)
        >= (now() AT TIME ZONE 'UTC') - make_interval(days => ${days}::int), false)`;

function perChannelFactsSql(realmId: number, request: ChannelFactsRequest, alsoSubscribed?: Prisma.Sql, from?: FactsSource): Prisma.Sql {
  const activeSubscribers = (select: Prisma.Sql, order: Prisma.Sql = Prisma.empty) =>
    Prisma.sql`(SELECT ${select} FROM subscription s JOIN "user" u ON u.id = s.user_id WHERE s.channel_id = c.id AND s.active AND u.is_active ${order})`;
  const subscriberIds = !request.withSubscribers
    ? Prisma.sql`NULL::int[]`
    : alsoSubscribed
      ? Prisma.sql`ARRAY(SELECT s.user_id FROM subscription s JOIN "user" u ON u.id = s.user_id WHERE s.channel_id = c.id AND s.active AND u.is_active
          UNION SELECT a.user_id FROM ${alsoSubscribed} a JOIN "user" u ON u.id = a.user_id WHERE a.channel_id = c.id AND u.is_active ORDER BY 1)`
      : Prisma.sql`ARRAY${activeSubscribers(Prisma.sql`s.user_id`, Prisma.sql`ORDER BY s.user_id`)}`;
  return Prisma.sql`
    SELECT 'c' AS kind, c.id, ${request.withSubscribers ? Prisma.sql`NULL::int` : activeSubscribers(Prisma.sql`count(*)::int`)} AS count, ${subscriberIds} AS ids,
      (SELECT min(m.id) FROM message m WHERE m.channel_id = c.id) AS first,
      ${recentSql(request.recentDays)} AS recent,
      NULL::boolean AS anonymous, NULL::int[] AS subgroups
    FROM ${from ? Prisma.sql`(${from.channelIds})` : Prisma.sql`unnest(${request.channelIds}::int[])`} AS c(id)
    UNION ALL
    SELECT 'g', g.id, NULL,
      CASE WHEN g.name IS NULL THEN ARRAY(SELECT m.user_id FROM user_group_member m JOIN "user" u ON u.id = m.user_id WHERE m.group_id = g.id AND u.is_active ORDER BY m.user_id) END,
      NULL, NULL, g.name IS NULL,
      CASE WHEN g.name IS NULL THEN ARRAY(SELECT sg.subgroup_id FROM user_group_subgroup sg WHERE sg.supergroup_id = g.id ORDER BY sg.subgroup_id) END
    FROM user_group g WHERE g.realm_id = ${realmId} AND ${from ? Prisma.sql`g.id IN (${from.groupIds})` : Prisma.sql`g.id = ANY(${[...new Set(request.groupIds)]}::int[])`}`;
}

function setBasedFactsSql(realmId: number, request: ChannelFactsRequest, alsoSubscribed?: Prisma.Sql): Prisma.Sql {
  const channelIds = Prisma.sql`SELECT unnest(${request.channelIds}::int[])`;
  const groupIds = Prisma.sql`SELECT unnest(${[...new Set(request.groupIds)]}::int[])`;
  // A correlated subquery per channel joined to "user" made the planner hash the whole user table once
  // per channel (~2 ms each in a 2,000-user organization, 200 channels).
  const pairs =
    request.withSubscribers && alsoSubscribed
      ? Prisma.sql`SELECT s.channel_id, s.user_id FROM subscription s WHERE s.active AND s.channel_id IN (${channelIds})
          UNION SELECT a.channel_id, a.user_id FROM ${alsoSubscribed} a`
      : Prisma.sql`SELECT s.channel_id, s.user_id FROM subscription s WHERE s.active AND s.channel_id IN (${channelIds})`;
  const aggregate = request.withSubscribers ? Prisma.sql`array_agg(x.user_id ORDER BY x.user_id)` : Prisma.sql`NULL::int[]`;
  return Prisma.sql`
    SELECT 'c' AS kind, c.id, ${request.withSubscribers ? Prisma.sql`NULL::int` : Prisma.sql`COALESCE(sub.n, 0)`} AS count,
      ${request.withSubscribers ? Prisma.sql`COALESCE(sub.ids, '{}'::int[])` : Prisma.sql`NULL::int[]`} AS ids,
      (SELECT min(m.id) FROM message m WHERE m.channel_id = c.id) AS first,
      ${recentSql(request.recentDays)} AS recent,
      NULL::boolean AS anonymous, NULL::int[] AS subgroups
    FROM (${channelIds}) AS c(id)
    LEFT JOIN (
      SELECT x.channel_id, count(*)::int AS n, ${aggregate} AS ids
      FROM (${pairs}) x JOIN "user" u ON u.id = x.user_id AND u.is_active
      GROUP BY x.channel_id
    ) sub ON sub.channel_id = c.id
    UNION ALL
    SELECT 'g', g.id, NULL,
      CASE WHEN g.name IS NULL THEN COALESCE(gm.ids, '{}'::int[]) END,
      NULL, NULL, g.name IS NULL,
      CASE WHEN g.name IS NULL THEN COALESCE(gs.ids, '{}'::int[]) END
    FROM user_group g
    LEFT JOIN (
      SELECT m.group_id, array_agg(m.user_id ORDER BY m.user_id) AS ids
      FROM user_group_member m JOIN user_group a ON a.id = m.group_id AND a.name IS NULL JOIN "user" u ON u.id = m.user_id AND u.is_active
      WHERE m.group_id IN (${groupIds})
      GROUP BY m.group_id
    ) gm ON gm.group_id = g.id
    LEFT JOIN (
      SELECT sg.supergroup_id, array_agg(sg.subgroup_id ORDER BY sg.subgroup_id) AS ids
      FROM user_group_subgroup sg JOIN user_group a ON a.id = sg.supergroup_id AND a.name IS NULL
      WHERE sg.supergroup_id IN (${groupIds})
      GROUP BY sg.supergroup_id
    ) gs ON gs.supergroup_id = g.id
    WHERE g.realm_id = ${realmId} AND g.id IN (${groupIds})`;
}

/** Channel and group ids of channelFactsSql given as queries (one int column each) instead of lists. */
interface FactsSource {
  channelIds: Prisma.Sql;
  groupIds: Prisma.Sql;
}

/** The facts from the rows of channelFactsSql. */
export function channelFactsOf(rows: readonly FactsRow[]): ChannelFacts {
  const facts: ChannelFacts = { subscriberCount: new Map(), subscribers: new Map(), firstMessageId: new Map(), withRecentMessages: new Set(), groups: new Map() };
  for (const r of rows) {
    if (r.kind === 'c') {
      facts.subscriberCount.set(r.id, r.ids ? r.ids.length : (r.count ?? 0));
      if (r.ids) facts.subscribers.set(r.id, r.ids);
      if (r.first !== null) facts.firstMessageId.set(r.id, r.first);
      if (r.recent) facts.withRecentMessages.add(r.id);
    } else {
      facts.groups.set(r.id, r.anonymous ? { members: r.ids ?? [], subgroups: r.subgroups ?? [] } : null);
    }
  }
  return facts;
}

/**
 * Subscriber counts (and lists), first message ids and recent activity of channels, and the groups
 * their settings name: one statement.
 */
export async function channelDisplayFacts(db: RawSql, realmId: number, request: ChannelFactsRequest): Promise<ChannelFacts> {
  if (request.channelIds.length === 0 && request.groupIds.length === 0) return channelFactsOf([]);
  return channelFactsOf(await db.$queryRaw<FactsRow[]>(channelFactsSql(realmId, request)));
}

/**
 * channelDisplayFacts for a transaction of one snapshot (POST /register's every channel), its rows kept
 * in this process while unchanged (data/digest-cache.ts). The facts' recent activity is computed by the
 * statement (now()), so it is part of the digest too.
 */
export async function channelDisplayFactsKept(db: RawSql, realmId: number, request: ChannelFactsRequest): Promise<ChannelFacts> {
  if (request.channelIds.length === 0 && request.groupIds.length === 0) return channelFactsOf([]);
  const rows = await queryKeptByDigest<FactsRow>(db, channelFactsSql(realmId, request), `facts|${realmId}|${request.recentDays}|${request.withSubscribers}`);
  let facts = factsOfKeptRows.get(rows);
  if (!facts) factsOfKeptRows.set(rows, (facts = Object.freeze(channelFactsOf(rows))));
  return facts;
}
/**
 * The facts of kept rows, made once while they are kept (shared: readers must not change them; the
 * object is frozen, which tells readers so: queries/channels.ts presentChannels keys by it).
 */
const factsOfKeptRows = new WeakMap<readonly FactsRow[], ChannelFacts>();

/** Is there a message in the channel outside the empty topic? */
export async function channelHasNamedTopics(db: Db, channelId: number): Promise<boolean> {
  return (await db.message.findFirst({ where: { channelId, topic: { not: '' } }, select: { id: true } })) !== null;
}

export const findChannelFolder = (db: Db, realmId: number, id: number) => db.channelFolder.findFirst({ where: { id, realmId } });

/** Unsets the organization's moderation-request channel if it is `channelId`; true when it was. */
export async function clearModerationRequestChannel(db: Db, realmId: number, channelId: number): Promise<boolean> {
  const { count } = await db.realm.updateMany({ where: { id: realmId, moderationRequestChannelId: channelId }, data: { moderationRequestChannelId: null } });
  return count > 0;
}
