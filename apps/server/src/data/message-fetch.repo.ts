// Reading messages (GET /messages, GET /messages/{id}, GET /users/me/{stream_id}/topics): narrow
// conditions (lib/narrow.ts) compiled to SQL over the viewer's user_message rows or over channel
// history, a page of them around an anchor in one statement, and the channels and topics these reads
// need.
import { VisibilityPolicy } from './user-topics.repo.ts';
import type { Db } from './db.ts';
import { Prisma } from './db.ts';
import type { Channel } from './models.ts';
import { MESSAGE_COLUMNS } from './messages.repo.ts';
import type { MessageRow } from '../lib/message-format.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import { TS_START, TS_STOP, type MessageCondition, type NarrowCondition } from '../lib/narrow.ts';
import { reactionsJsonSql } from './reactions.repo.ts';
import type { MessageReaction } from '../lib/reactions.ts';

/**
 * Which messages a read starts from, before any narrow condition:
 * - `received`: the viewer's user_message rows, minus channels the viewer can no longer read;
 * - `history`: every message of the organization (the narrow then limits it to channels whose history
 *   the viewer may read), with the viewer's row when there is one; `userId` null for spectators.
 */
export type MessageScope =
  | { kind: 'received'; realmId: number; userId: number; hiddenChannelIds: number[] }
  | { kind: 'history'; realmId: number; userId: number | null };

/** Flags of a history message without a row of the viewer, for conditions on flags: read, historical. */
const HISTORICAL_FLAGS = MESSAGE_FLAG_BITS.read | MESSAGE_FLAG_BITS.historical;

interface Base {
  from: Prisma.Sql;
  where: Prisma.Sql[];
  /**
   * Reads in id order that walk the viewer's per-user index (user_id, flags & 1, message_id): its
   * ranges to walk, one per read state, each in id order (null: the narrow's own index leads, e.g.
   * (channel_id, lower(topic), id), and the viewer's row is probed by message).
   */
  readStates: Prisma.Sql[] | null;
  /** The id column to bound and order by (the index's own column). */
  id: Prisma.Sql;
  /** The viewer's flags (NULL without a row). */
  flags: Prisma.Sql;
  userId: number | null;
  realmId: number;
}

/** Conditions that an index of message leads with (the viewer's rows are then probed by message). */
const MESSAGE_INDEXED = new Set<MessageCondition['kind']>(['channel', 'topic', 'sender', 'conversation', 'direct-including', 'search', 'id']);
const UNREAD_RANGE = Prisma.sql`(um.flags & 1) = 0`;
const READ_RANGE = Prisma.sql`(um.flags & 1) = 1`;

/**
 * The ranges of the per-user index an ordered read of the viewer's rows walks: none when a condition
 * on the message leads; only the unread one for is:unread, only the read one for -is:unread.
 */
function readStatesOf(conditions: NarrowCondition[]): Prisma.Sql[] | null {
  if (conditions.some((c) => !c.negated && MESSAGE_INDEXED.has(c.condition.kind))) return null;
  const unread = conditions.filter((c) => c.condition.kind === 'unread');
  if (unread.some((c) => !c.negated)) return [UNREAD_RANGE];
  if (unread.some((c) => c.negated)) return [READ_RANGE];
  return [UNREAD_RANGE, READ_RANGE];
}

function baseOf(scope: MessageScope, conditions: NarrowCondition[]): Base {
  if (scope.kind === 'received') {
    const where = [Prisma.sql`um.user_id = ${scope.userId}::int`];
    if (scope.hiddenChannelIds.length > 0) where.push(Prisma.sql`(m.channel_id IS NULL OR m.channel_id <> ALL(${scope.hiddenChannelIds}::int[]))`);
    return {
      from: Prisma.sql`user_message um JOIN message m ON m.id = um.message_id`,
      where,
      readStates: readStatesOf(conditions),
      id: Prisma.sql`um.message_id`,
      flags: Prisma.sql`um.flags::int`,
      userId: scope.userId,
      realmId: scope.realmId,
    };
  }
  return {
    from:
      scope.userId === null
        ? Prisma.sql`message m`
        : Prisma.sql`message m LEFT JOIN user_message um ON um.user_id = ${scope.userId}::int AND um.message_id = m.id`,
    where: [Prisma.sql`m.realm_id = ${scope.realmId}::int`],
    readStates: null,
    id: Prisma.sql`m.id`,
    flags: scope.userId === null ? Prisma.sql`NULL::int` : Prisma.sql`um.flags::int`,
    userId: scope.userId,
    realmId: scope.realmId,
  };
}

/** `%text%` for ILIKE, with LIKE's special characters escaped (Django's prep_for_like_query). */
const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Django's escape() of the topic, in SQL (search highlighting runs on the escaped topic, as Zulip's does). */
const ESCAPED_TOPIC = Prisma.sql`replace(replace(replace(replace(replace(m.topic, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&#x27;')`;

function compileCondition(c: MessageCondition, base: Base): Prisma.Sql {
  const flags = Prisma.sql`COALESCE(${base.flags}, ${HISTORICAL_FLAGS}::int)`;
  switch (c.kind) {
    case 'channel':
      return Prisma.sql`m.channel_id = ${c.channelId}::int`;
    case 'public-channels':
      return Prisma.sql`m.channel_id IN (SELECT c.id FROM channel c WHERE c.realm_id = ${base.realmId}::int AND NOT c.invite_only AND c.history_public_to_subscribers)`;
    case 'web-public-channels':
      return Prisma.sql`m.channel_id IN (SELECT c.id FROM channel c WHERE c.realm_id = ${base.realmId}::int AND c.is_web_public)`;
    case 'topic':
      return Prisma.sql`(m.channel_id IS NOT NULL AND lower(m.topic) = lower(${c.topic}::text))`;
    case 'direct':
      return Prisma.sql`m.channel_id IS NULL`;
    case 'conversation':
      return Prisma.sql`(m.channel_id IS NULL AND m.realm_id = ${base.realmId}::int AND m.direct_user_ids = ${c.userIds}::int[])`;
    case 'direct-including':
      return c.groupsOnly
        ? Prisma.sql`(m.channel_id IS NULL AND m.direct_user_ids @> ARRAY[${c.userId}::int] AND cardinality(m.direct_user_ids) >= 3)`
        : Prisma.sql`(m.channel_id IS NULL AND m.direct_user_ids @> ARRAY[${c.userId}::int])`;
    case 'sender':
      return Prisma.sql`m.sender_id = ${c.userId}::int`;
    case 'flags-set':
      return Prisma.sql`(${flags} & ${c.mask}::int) <> 0`;
    case 'unread':
      return Prisma.sql`(${flags} & ${MESSAGE_FLAG_BITS.read}::int) = 0`;
    case 'resolved':
      return Prisma.sql`left(m.topic, 2) = ${'\u2714 '}::text`;
    case 'muted': {
      // Zulip's muting conditions: a muted topic, or a topic of a muted channel that the viewer did not
      // unmute or follow.
      if (base.userId === null) return Prisma.sql`FALSE`;
      const policy = Prisma.sql`COALESCE((SELECT ut.visibility_policy FROM user_topic ut
        WHERE ut.user_id = ${base.userId}::int AND ut.channel_id = m.channel_id AND ut.topic_key = lower(m.topic)), 0)`;
      if (c.topicsOnly) return Prisma.sql`(m.channel_id IS NOT NULL AND ${policy} = ${VisibilityPolicy.MUTED}::int)`;
      return Prisma.sql`(m.channel_id IS NOT NULL AND (${policy} = ${VisibilityPolicy.MUTED}::int
        OR (EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${base.userId}::int AND s.channel_id = m.channel_id AND s.active AND s.is_muted)
          AND ${policy} NOT IN (${VisibilityPolicy.UNMUTED}::int, ${VisibilityPolicy.FOLLOWED}::int))))`;
    }
    case 'followed':
      return base.userId === null
        ? Prisma.sql`FALSE`
        : Prisma.sql`EXISTS (SELECT 1 FROM user_topic ut WHERE ut.user_id = ${base.userId}::int AND ut.channel_id = m.channel_id
            AND ut.topic_key = lower(m.topic) AND ut.visibility_policy = ${VisibilityPolicy.FOLLOWED}::int)`;
    case 'id':
      return Prisma.sql`${base.id} = ${c.id}::int`;
    case 'has':
      // Zulip's Message.content_has_link / _attachment / _image, on the Markdown source; has:reaction,
      // any reaction of anyone.
      switch (c.what) {
        case 'link':
          return Prisma.sql`(strpos(m.content, 'http://') > 0 OR strpos(m.content, 'https://') > 0 OR strpos(m.content, '/user_uploads') > 0 OR strpos(m.content, 'bitcoin:') > 0)`;
        case 'attachment':
          return Prisma.sql`m.content ~ '[/\\-]user[\\-_]uploads[/\\.-]'`;
        case 'image':
          return Prisma.sql`m.content ~* '[/\\-]user[\\-_]uploads[/\\.-]\\S+\\.(bmp|gif|jpg|jpeg|png|webp)'`;
        case 'reaction':
          return Prisma.sql`EXISTS (SELECT 1 FROM reaction r WHERE r.message_id = ${base.id})`;
      }
      break;
    case 'search': {
      // The search vector of topic and content lives in message_search (kept by triggers on message).
      const parts = [Prisma.sql`EXISTS (SELECT 1 FROM message_search s WHERE s.message_id = m.id AND s.tsv @@ plainto_tsquery('english', ${c.query}::text))`];
      for (const phrase of c.phrases) {
        const pattern = likePattern(phrase);
        parts.push(Prisma.sql`(m.content ILIKE ${pattern}::text OR m.topic ILIKE ${pattern}::text)`);
      }
      return Prisma.sql`(${Prisma.join(parts, ' AND ')})`;
    }
    case 'never':
      return Prisma.sql`FALSE`;
  }
  throw new Error(`unknown condition ${(c as { kind: string }).kind}`);
}

/** NULL-safe negation: a negated term keeps the messages the term does not match, direct messages included. */
const compile = (c: NarrowCondition, base: Base) => (c.negated ? Prisma.sql`NOT COALESCE(${compileCondition(c.condition, base)}, FALSE)` : compileCondition(c.condition, base));

function whereOf(base: Base, conditions: NarrowCondition[], extra: Prisma.Sql[] = []): Prisma.Sql {
  return Prisma.join([...base.where, ...conditions.map((c) => compile(c, base)), ...extra], ' AND ');
}

/**
 * `SELECT columns … ORDER BY id LIMIT limit` over the base, as a parenthesized query. Over the viewer's
 * per-user index, each read-state range is walked in id order up to the limit and the ranges merged.
 */
function orderedSql(base: Base, conditions: NarrowCondition[], extra: Prisma.Sql[], columns: Prisma.Sql, order: 'ASC' | 'DESC', limit: number): Prisma.Sql {
  // A range is ordered by the per-user index's whole key (constant but for the id within a range), so
  // that it is walked through that index and never through the key (message_id, user_id), which would
  // read every row of every user from the anchor on.
  const direction = Prisma.raw(order);
  const one = (range: Prisma.Sql | null) =>
    Prisma.sql`(SELECT ${columns} FROM ${base.from} WHERE ${whereOf(base, conditions, range ? [...extra, range] : extra)}
      ORDER BY ${range ? Prisma.sql`um.user_id ${direction}, (um.flags & 1) ${direction}, ` : Prisma.empty}${base.id} ${direction} LIMIT ${limit}::int)`;
  const ranges = base.readStates;
  if (ranges === null) return one(null);
  if (ranges.length === 1) return one(ranges[0]!);
  return Prisma.sql`(SELECT * FROM (${Prisma.join(ranges.map(one), ' UNION ALL ')}) ranges ORDER BY id ${Prisma.raw(order)} LIMIT ${limit}::int)`;
}

/** A message of a page, with the viewer's flags (null without a row) and its channel's name. */
export interface PageRow extends MessageRow {
  flags: number | null;
  channel_name: string | null;
  /** The message's reactions in reaction order (data/reactions.repo.ts reactionsJsonSql), null when it has none. */
  reactions: MessageReaction[] | null;
  /** Search results: the rendered content with ts_headline's match delimiters (null when nothing is highlighted). */
  content_matches?: string | null;
  /** Search results: the HTML-escaped topic, and the same with match delimiters. */
  topic_html?: string;
  topic_matches?: string | null;
}

/** Which matching messages make the page. */
export type PageSelection =
  /** Zulip's limit_query_to_range: up to `limit` ids at most `maxId` (newest first), and up to `limit` at least `minId`. */
  | { kind: 'range'; before: { maxId: number | null; limit: number } | null; after: { minId: number | null; limit: number } | null }
  | { kind: 'exact'; id: number }
  | { kind: 'ids'; ids: number[] };

export interface PageQuery {
  scope: MessageScope;
  conditions: NarrowCondition[];
  selection: PageSelection;
  /** Search narrows: the words to highlight (null: none), for match_content and match_subject. */
  search: { highlight: string | null } | null;
}

/**
 * The ids (and the viewer's flags) of the page's messages, unordered: each side of the anchor ordered
 * by id with its limit, so that an index on the narrow's columns ending in id is walked, never the
 * whole history. Null when the page is empty by construction.
 */
function pageIdsSql(q: Pick<PageQuery, 'scope' | 'conditions' | 'selection'>): Prisma.Sql | null {
  const base = baseOf(q.scope, q.conditions);
  const side = (bound: Prisma.Sql | null, order: 'ASC' | 'DESC', limit: number) =>
    orderedSql(base, q.conditions, bound ? [bound] : [], Prisma.sql`${base.id} AS id, ${base.flags} AS flags`, order, limit);
  const s = q.selection;
  if (s.kind === 'range') {
    const sides: Prisma.Sql[] = [];
    // Over user_message rows the bound goes on both id columns: PostgreSQL does not carry inequalities
    // across the join, and the narrow's index (e.g. (channel_id, lower(topic), id)) must start at the anchor.
    const bounded = (op: '<=' | '>=', id: number) =>
      q.scope.kind === 'received'
        ? Prisma.sql`${base.id} ${Prisma.raw(op)} ${id}::bigint AND m.id ${Prisma.raw(op)} ${id}::bigint`
        : Prisma.sql`${base.id} ${Prisma.raw(op)} ${id}::bigint`;
    if (s.before) sides.push(side(s.before.maxId === null ? null : bounded('<=', s.before.maxId), 'DESC', s.before.limit));
    if (s.after) sides.push(side(s.after.minId === null ? null : bounded('>=', s.after.minId), 'ASC', s.after.limit));
    return sides.length === 0 ? null : Prisma.join(sides, ' UNION ALL ');
  }
  const bound = s.kind === 'exact' ? Prisma.sql`${base.id} = ${s.id}::bigint` : Prisma.sql`${base.id} = ANY(${s.ids}::int[])`;
  return Prisma.sql`SELECT ${base.id} AS id, ${base.flags} AS flags FROM ${base.from} WHERE ${whereOf(base, q.conditions, [bound])}`;
}

/** The ids of the page's messages, ascending, without the messages (for work on the ids only). */
export async function fetchPageIds(db: Db, q: Pick<PageQuery, 'scope' | 'conditions' | 'selection'>): Promise<number[]> {
  const page = pageIdsSql(q);
  if (!page) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`SELECT p.id FROM (${page}) p ORDER BY p.id`;
  return rows.map((r) => r.id);
}

/**
 * The page's messages, ascending, in one statement: the matching ids (see pageIdsSql), then the
 * messages, flags, channel names, reactions and search highlights of those ids only.
 */
export async function fetchMessagePage(db: Db, q: PageQuery): Promise<PageRow[]> {
  const page = pageIdsSql(q);
  if (!page) return [];
  let searchColumns = Prisma.empty;
  if (q.search) {
    const options = `HighlightAll = TRUE, StartSel = ${TS_START}, StopSel = ${TS_STOP}`;
    const query = Prisma.sql`plainto_tsquery('english', ${q.search.highlight ?? ''}::text)`;
    searchColumns =
      q.search.highlight === null
        ? Prisma.sql`, NULL::text AS content_matches, ${ESCAPED_TOPIC} AS topic_html, NULL::text AS topic_matches`
        : Prisma.sql`, ts_headline('english', m.rendered_content, ${query}, ${options}::text) AS content_matches,
            ${ESCAPED_TOPIC} AS topic_html, ts_headline('english', ${ESCAPED_TOPIC}, ${query}, ${options}::text) AS topic_matches`;
  }
  return db.$queryRaw<PageRow[]>`
    WITH page AS (${page})
    SELECT ${MESSAGE_COLUMNS}, p.flags, c.name AS channel_name, ${reactionsJsonSql(Prisma.sql`m.id`)} AS reactions ${searchColumns}
    FROM page p JOIN message m ON m.id = p.id LEFT JOIN channel c ON c.id = m.channel_id
    ORDER BY m.id`;
}

/**
 * The id of the first (or last) matching message, optionally only among those sent at or after
 * `sentSince`; null when none matches.
 */
export async function firstMatchingId(
  db: Db,
  scope: MessageScope,
  conditions: NarrowCondition[],
  options: { order: 'ASC' | 'DESC'; sentSince?: Date },
): Promise<number | null> {
  const base = baseOf(scope, conditions);
  // date_sent is stored in UTC without a time zone.
  const extra = options.sentSince ? [Prisma.sql`m.date_sent >= (${options.sentSince.toISOString()}::timestamptz AT TIME ZONE 'UTC')`] : [];
  const rows = await db.$queryRaw<{ id: number }[]>`${orderedSql(base, conditions, extra, Prisma.sql`${base.id} AS id`, options.order, 1)}`;
  return rows[0]?.id ?? null;
}

/** What reads of messages need of a channel, with whether the viewer is subscribed. */
export type FetchChannel = Pick<
  Channel,
  | 'id'
  | 'name'
  | 'inviteOnly'
  | 'isWebPublic'
  | 'historyPublicToSubscribers'
  | 'isArchived'
  | 'canAdministerChannelGroupId'
  | 'canAddSubscribersGroupId'
  | 'canSubscribeGroupId'
  | 'canRemoveSubscribersGroupId'
> & { subscribed: boolean };

const FETCH_CHANNEL_COLUMNS = Prisma.sql`c.id, c.name, c.invite_only AS "inviteOnly", c.is_web_public AS "isWebPublic",
  c.history_public_to_subscribers AS "historyPublicToSubscribers", c.is_archived AS "isArchived",
  c.can_administer_channel_group_id AS "canAdministerChannelGroupId", c.can_add_subscribers_group_id AS "canAddSubscribersGroupId",
  c.can_subscribe_group_id AS "canSubscribeGroupId", c.can_remove_subscribers_group_id AS "canRemoveSubscribersGroupId"`;

const subscribedSql = (userId: number | null) =>
  userId === null ? Prisma.sql`FALSE` : Prisma.sql`EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${userId}::int AND s.channel_id = c.id AND s.active)`;

/**
 * In one statement: the channels named (case-insensitively) or numbered, and the channels the viewer
 * might not be able to read (`restricted`: private ones, or every channel but web-public ones for
 * guests, that the viewer is not subscribed to), each with whether the viewer is subscribed.
 */
export async function channelsForMessageRead(
  db: Db,
  realmId: number,
  userId: number | null,
  request: { names: string[]; ids: number[]; restricted: 'private' | 'not-web-public' | null },
): Promise<FetchChannel[]> {
  // Channels one is subscribed to are always readable: only the others are candidates.
  const restricted =
    request.restricted === 'private'
      ? Prisma.sql`(c.invite_only AND NOT c.is_web_public AND NOT ${subscribedSql(userId)})`
      : request.restricted === 'not-web-public'
        ? Prisma.sql`(NOT c.is_web_public AND NOT ${subscribedSql(userId)})`
        : Prisma.sql`FALSE`;
  if (request.names.length === 0 && request.ids.length === 0 && request.restricted === null) return [];
  return db.$queryRaw<FetchChannel[]>`
    SELECT ${FETCH_CHANNEL_COLUMNS}, ${subscribedSql(userId)} AS subscribed
    FROM channel c
    WHERE c.realm_id = ${realmId}::int
      AND (lower(c.name) IN (SELECT lower(n) FROM unnest(${request.names}::text[]) AS n) OR c.id = ANY(${request.ids}::int[]) OR ${restricted})`;
}

/**
 * One message of the organization with the viewer's flags (null without a row) and its channel. With
 * `lock`, the message row is share-locked as it is read (FOR SHARE, until the caller's transaction
 * ends): no other transaction can change it (edit, move, delete) meanwhile, while others that only
 * share-lock it (reactions) are not held up.
 */
export async function messageWithViewerRow(
  db: Db,
  realmId: number,
  messageId: number,
  userId: number | null,
  lock = false,
): Promise<{ message: MessageRow; flags: number | null; channel: FetchChannel | null } | null> {
  const rows = await db.$queryRaw<Array<MessageRow & { flags: number | null; channel: FetchChannel | null }>>`
    SELECT ${MESSAGE_COLUMNS}, ${userId === null ? Prisma.sql`NULL::int` : Prisma.sql`(SELECT um.flags::int FROM user_message um WHERE um.user_id = ${userId}::int AND um.message_id = m.id)`} AS flags,
      (SELECT row_to_json(x) FROM (SELECT ${FETCH_CHANNEL_COLUMNS}, ${subscribedSql(userId)} AS subscribed FROM channel c WHERE c.id = m.channel_id) x) AS channel
    FROM message m WHERE m.id = ${messageId}::int AND m.realm_id = ${realmId}::int ${lock ? Prisma.sql`FOR SHARE OF m` : Prisma.empty}`;
  const row = rows[0];
  if (!row) return null;
  const { flags, channel, ...message } = row;
  return { message, flags, channel };
}

/**
 * The channel's topics, one per case-insensitive name with the casing and id of its newest message,
 * newest first: from the whole history (a skip scan of the (channel_id, lower(topic), id) index: one
 * probe per topic, whatever the number of messages), or only from the user's rows.
 */
export async function channelTopics(db: Db, channelId: number, onlyRowsOf: number | null): Promise<Array<{ name: string; max_id: number }>> {
  if (onlyRowsOf !== null) {
    return db.$queryRaw`
      SELECT name, max_id FROM (
        SELECT DISTINCT ON (lower(m.topic)) m.topic AS name, m.id AS max_id
        FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_id = ${onlyRowsOf}::int
        WHERE m.channel_id = ${channelId}::int
        ORDER BY lower(m.topic), m.id DESC
      ) t ORDER BY max_id DESC`;
  }
  return db.$queryRaw`
    WITH RECURSIVE topics(key) AS (
      (SELECT lower(m.topic) FROM message m WHERE m.channel_id = ${channelId}::int ORDER BY lower(m.topic) LIMIT 1)
      UNION ALL
      SELECT (SELECT lower(m.topic) FROM message m WHERE m.channel_id = ${channelId}::int AND lower(m.topic) > t.key ORDER BY lower(m.topic) LIMIT 1)
      FROM topics t WHERE t.key IS NOT NULL
    )
    SELECT newest.topic AS name, newest.id AS max_id
    FROM topics t
    CROSS JOIN LATERAL (
      SELECT m.topic, m.id FROM message m WHERE m.channel_id = ${channelId}::int AND lower(m.topic) = t.key ORDER BY m.id DESC LIMIT 1
    ) newest
    WHERE t.key IS NOT NULL
    ORDER BY newest.id DESC`;
}
