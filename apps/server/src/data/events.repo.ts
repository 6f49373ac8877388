import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';

/** An event for the listed users. */
export interface StoredEvent {
  userIds: number[];
  payload: Record<string, unknown>;
  /** Message events: each recipient's flag bits, aligned with `userIds`. */
  flags?: number[];
  /** Message events of public channels: also for queues registered with all_public_streams. */
  allPublicStreams?: boolean;
  /**
   * The payload as an SQL text expression, for an event stored by the very statement that writes what
   * it announces (EventBus.publishAlong): it may read that statement's CTEs (a new message's id).
   * `payload` then only documents it.
   */
  payloadSql?: Prisma.Sql;
}

/**
 * Event ids are handed out in commit order within an organization, under this lock: a long-poll that
 * has seen event n has therefore seen every event of the organization up to n, and never meets an
 * earlier one committing later. A stored event gets its final id as its transaction commits (the
 * deferred trigger of migration 20261129090000_event_ids_at_commit takes the lock then, so it is held
 * for the commit alone, not across the round trips before it); ephemeral events draw theirs under it
 * (publishEphemeralEvents); a message takes it when it is stored, its id following commit order too
 * (messages.repo.ts storeMessage).
 */
export const EVENT_ORDER_LOCK = 7265003;
export function eventOrderLockSql(realmId: number): Prisma.Sql {
  return Prisma.sql`SELECT pg_advisory_xact_lock(${EVENT_ORDER_LOCK}::int, ${realmId}::int)`;
}

/**
 * Who receives an event, described rather than listed: resolved by PostgreSQL in the statement that
 * stores the event, so that an audience of thousands never travels through Node. Every member is an
 * active user of the organization; the audience is the union of the kinds given, then restricted to
 * `only` and stripped of `except`. When it turns out to be every active user of the organization
 * (and neither `only` nor `except` is given), the event is stored realm-wide (no id list).
 */
export interface Audience {
  /** Every active user. */
  everyone?: boolean;
  /** Active users whose role is not one of these. */
  roleNotIn?: number[];
  /** Active users whose role is one of these. */
  roleIn?: number[];
  /** Active users actively subscribed to this channel. */
  subscribersOf?: number;
  /** Active users in these groups (directly or through subgroups) whose role is not one of `roleNotIn`. */
  membersOf?: { groupIds: number[]; roleNotIn: number[] };
  only?: number[];
  except?: number[];
}

/** An event for an audience resolved when it is stored (see Audience). */
export interface AudienceEvent {
  audience: Audience;
  payload: Record<string, unknown>;
}

/** …or for every active user of the organization at delivery time (`realmWide`). */
export type QueuedEvent = StoredEvent | { realmWide: true; payload: Record<string, unknown> } | AudienceEvent;

/** The condition on `u` (a row of "user" of the organization) of being in the audience, apart from only/except. */
function audienceCondition(a: Audience): Prisma.Sql {
  const terms: Prisma.Sql[] = [];
  if (a.everyone) terms.push(Prisma.sql`TRUE`);
  if (a.roleNotIn?.length) terms.push(Prisma.sql`u.role <> ALL(${a.roleNotIn}::int[])`);
  if (a.roleIn?.length) terms.push(Prisma.sql`u.role = ANY(${a.roleIn}::int[])`);
  if (a.subscribersOf !== undefined) {
    terms.push(Prisma.sql`EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = u.id AND s.channel_id = ${a.subscribersOf}::int AND s.active)`);
  }
  if (a.membersOf?.groupIds.length) {
    terms.push(Prisma.sql`(u.role <> ALL(${a.membersOf.roleNotIn}::int[]) AND u.id IN (
      SELECT m.user_id FROM user_group_member m WHERE m.group_id IN (
        WITH RECURSIVE sub(id) AS (
          SELECT unnest(${a.membersOf.groupIds}::int[])
          UNION
          SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
        )
        SELECT id FROM sub)))`);
  }
  return terms.length ? Prisma.sql`(${Prisma.join(terms, ' OR ')})` : Prisma.sql`FALSE`;
}

/** The audience's members (ascending ids), as an SQL expression of type int[]. */
function audienceIdsSql(realmId: number, a: Audience): Prisma.Sql {
  const restrict = [
    a.only ? Prisma.sql`AND u.id = ANY(${a.only}::int[])` : Prisma.empty,
    a.except?.length ? Prisma.sql`AND u.id <> ALL(${a.except}::int[])` : Prisma.empty,
  ];
  return Prisma.sql`ARRAY(SELECT u.id FROM "user" u WHERE u.realm_id = ${realmId}::int AND u.is_active AND ${audienceCondition(a)} ${restrict[0]!} ${restrict[1]!} ORDER BY u.id)`;
}

/** The ids of an audience now (one statement). */
export async function audienceUserIds(db: Db, realmId: number, audience: Audience): Promise<number[]> {
  const [row] = await db.$queryRaw<{ ids: number[] }[]>`SELECT ${audienceIdsSql(realmId, audience)} AS ids`;
  return row?.ids ?? [];
}

/**
 * One SELECT per event (or run of consecutive events sharing an audience object) giving
 * (ord, user_ids, realm_wide, payload); rows with no recipient are dropped by the caller's WHERE.
 */
function eventRowsSql(realmId: number, events: QueuedEvent[]): Prisma.Sql {
  const parts: Prisma.Sql[] = [];
  for (let i = 0; i < events.length; ) {
    const e = events[i]!;
    if ('audience' in e) {
      // Consecutive events with the same audience resolve it once.
      let j = i + 1;
      while (j < events.length && 'audience' in events[j]! && (events[j] as AudienceEvent).audience === e.audience) j++;
      const payloads = events.slice(i, j).map((x) => JSON.stringify(x.payload));
      const a = e.audience;
      const ids = audienceIdsSql(realmId, a);
      const everyoneCheck = a.only !== undefined || a.except?.length
        ? Prisma.sql`FALSE`
        : Prisma.sql`NOT EXISTS (SELECT 1 FROM "user" u WHERE u.realm_id = ${realmId}::int AND u.is_active AND NOT ${audienceCondition(a)})`;
      parts.push(Prisma.sql`
        SELECT ${i}::int + p.n::int - 1 AS ord, CASE WHEN w.wide THEN '{}'::int[] ELSE ${ids} END AS user_ids, w.wide AS realm_wide, p.payload,
          NULL::int[] AS flags, FALSE AS all_public
        FROM (SELECT ${everyoneCheck} AS wide) w, unnest(${payloads}::text[]) WITH ORDINALITY AS p(payload, n)`);
      i = j;
    } else {
      const wide = 'realmWide' in e;
      const ids = 'userIds' in e ? e.userIds : [];
      const flags = 'flags' in e && e.flags ? e.flags : null;
      const allPublic = 'allPublicStreams' in e && e.allPublicStreams === true;
      // Ids and flags as comma-separated text: a message's thousand recipients cost Node and pg far less so than as an array parameter.
      const flagsSql = flags ? Prisma.sql`string_to_array(${flags.join(',')}, ',')::int[]` : Prisma.sql`NULL::int[]`;
      parts.push(
        Prisma.sql`SELECT ${i}::int AS ord, string_to_array(${ids.join(',')}, ',')::int[] AS user_ids, ${wide}::boolean AS realm_wide, ${'payloadSql' in e && e.payloadSql ? e.payloadSql : Prisma.sql`${JSON.stringify(e.payload)}`}::text AS payload, ${flagsSql} AS flags, ${allPublic}::boolean AS all_public`,
      );
      i++;
    }
  }
  return Prisma.join(parts, ' UNION ALL ');
}

/**
 * The INSERT storing `events` in order (ids ascending in the order given), dropping events whose
 * audience is empty or whose payload is NULL (a payloadSql may decide there is nothing to announce);
 * null when there is nothing to store. Usable alone or as a data-modifying CTE.
 * The ids it draws are provisional: each row gets its final id, in the same order, when the
 * transaction commits (see EVENT_ORDER_LOCK).
 */
export function insertEventsSql(realmId: number, events: QueuedEvent[]): Prisma.Sql | null {
  if (events.length === 0) return null;
  return Prisma.sql`
    INSERT INTO event (realm_id, user_ids, realm_wide, payload, type, flags, all_public_streams)
    SELECT ${realmId}::int, e.user_ids, e.realm_wide, e.payload::jsonb, COALESCE(e.payload::jsonb->>'type', ''), e.flags, e.all_public
    -- OFFSET 0 keeps the filter below out of the union, so that each audience is resolved once.
    FROM (SELECT * FROM (${eventRowsSql(realmId, events)}) rows OFFSET 0) e
    WHERE (e.realm_wide OR e.all_public OR cardinality(e.user_ids) > 0) AND e.payload IS NOT NULL
    ORDER BY e.ord`;
}

export async function insertEvents(db: RawSql, realmId: number, events: QueuedEvent[]): Promise<void> {
  const sql = insertEventsSql(realmId, events);
  if (sql) await db.$executeRaw(sql);
}

/**
 * Ephemeral events (typing) of one organization, in one statement and no transaction of the caller's:
 * no row is stored. Under the organization's event-order lock it draws an id for each from the event
 * sequence (so every stored event of the organization with a smaller id has committed and every later
 * one gets a larger id), and notifies them to every server process, as few notifications as fit:
 * `{"realm_id", "at" (database clock, ms), "events": [{"id", "user_ids", "payload"}, …]}`, one per
 * chunk. `bodies[i]` is the JSON text of `{"user_ids": […], "payload": {…}}` without its opening brace
 * (the id is spliced in); `chunks[i]` the notification it goes in (each under NOTIFY's 8,000 bytes).
 */
export async function publishEphemeralEvents(db: Db, channel: string, realmId: number, bodies: string[], chunks: number[]): Promise<void> {
  await db.$executeRaw`
    WITH ordered AS (${eventOrderLockSql(realmId)}),
    stamped AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS at FROM ordered),
    drawn AS (
      SELECT nextval(pg_get_serial_sequence('event', 'id')) AS id, i.body, i.chunk, i.n
      FROM ordered, (SELECT * FROM unnest(${bodies}::text[], ${chunks}::int[]) WITH ORDINALITY AS p(body, chunk, n) ORDER BY n OFFSET 0) i
    )
    SELECT pg_notify(${channel}, '{"realm_id":' || ${realmId}::int || ',"at":' || stamped.at || ',"events":['
      || string_agg('{"id":' || drawn.id || ',' || drawn.body, ',' ORDER BY drawn.n) || ']}') IS NULL
    FROM drawn, stamped GROUP BY drawn.chunk, stamped.at`;
}

/** NOTIFY through a pooled connection (when the listener connection is down). */
export async function notifyThroughPool(db: Db, channel: string, payload: string): Promise<void> {
  await db.$executeRaw`SELECT pg_notify(${channel}, ${payload})`;
}
