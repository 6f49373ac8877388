// Event queues (POST /register, GET /events) and reading stored events back for delivery. Queues live
// in PostgreSQL, so that any server process can serve any queue.
import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';

export interface EventQueueRow {
  id: string;
  realmId: number;
  userId: number;
  eventTypes: string[] | null;
  allPublicStreams: boolean;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  narrow: unknown;
  clientCapabilities: Record<string, boolean>;
  lifespanSecs: number;
  lastEventId: number;
  /** When the queue was registered (database clock, ms): ephemeral events from before it are not for it. */
  createdAtMs: number;
}

/** A queue to create: its row without the creation time (the database's clock). */
export type NewEventQueue = Omit<EventQueueRow, 'createdAtMs' | 'narrow'> & { narrow: unknown[] };

/** `eventTypes` null (every type) is stored as SQL NULL, distinct from an empty list (no types). */
export async function createEventQueue(db: RawSql, q: NewEventQueue): Promise<void> {
  await db.$executeRaw`
    INSERT INTO event_queue (id, realm_id, user_id, event_types, all_public_streams, apply_markdown, client_gravatar, narrow,
      client_capabilities, lifespan_secs, last_event_id)
    VALUES (${q.id}, ${q.realmId}::int, ${q.userId}::int, ${q.eventTypes}::text[], ${q.allPublicStreams}, ${q.applyMarkdown}, ${q.clientGravatar},
      ${JSON.stringify(q.narrow)}::jsonb, ${JSON.stringify(q.clientCapabilities)}::jsonb, ${q.lifespanSecs}::int, ${q.lastEventId}::bigint)`;
}

interface QueueSqlRow {
  id: string;
  realm_id: number;
  user_id: number;
  event_types: string[] | null;
  all_public_streams: boolean;
  apply_markdown: boolean;
  client_gravatar: boolean;
  narrow: unknown;
  client_capabilities: Record<string, boolean>;
  lifespan_secs: number;
  last_event_id: bigint;
  created_ms: number;
}

function toQueueRow(r: QueueSqlRow): EventQueueRow {
  return {
    id: r.id,
    realmId: r.realm_id,
    userId: r.user_id,
    eventTypes: r.event_types,
    allPublicStreams: r.all_public_streams,
    applyMarkdown: r.apply_markdown,
    clientGravatar: r.client_gravatar,
    narrow: r.narrow,
    clientCapabilities: r.client_capabilities,
    lifespanSecs: r.lifespan_secs,
    lastEventId: Number(r.last_event_id),
    createdAtMs: r.created_ms,
  };
}

/** NOTIFY channel on which a process that starts serving a queue tells the others (payload: "<process token> <queue id>"). */
export const QUEUE_MOVED_CHANNEL = 'parley_queue_moved';
/** NOTIFY channel of deleted queues (payload: queue ids separated by commas), from the event_queue trigger. */
export const QUEUE_GONE_CHANNEL = 'parley_queue_gone';

/**
 * Reads the user's queue without writing it (a process starting to serve it: events/queue-cache.ts), and
 * tells the other processes, at once, that `token`'s process serves it now. Null when the queue does
 * not exist, belongs to someone else, or has expired. `recentlyPolled`: a poll of it was recorded in
 * the row less than `recentSecs` ago (never, for a queue not polled since its registration).
 */
export async function readEventQueue(db: Db, queueId: string, userId: number, token: string, recentSecs: number): Promise<{ queue: EventQueueRow; recentlyPolled: boolean } | null> {
  const rows = await db.$queryRaw<(QueueSqlRow & { recently_polled: boolean })[]>`
    SELECT id, realm_id, user_id, event_types, all_public_streams, apply_markdown, client_gravatar, narrow,
      client_capabilities, lifespan_secs, last_event_id, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
      (last_accessed_at > created_at AND last_accessed_at > now() - make_interval(secs => ${recentSecs}::float8)) AS recently_polled,
      pg_notify(${QUEUE_MOVED_CHANNEL}::text, ${token}::text || ' ' || id) IS NULL AS notified
    FROM event_queue
    WHERE id = ${queueId} AND user_id = ${userId}::int AND last_accessed_at > now() - make_interval(secs => lifespan_secs)`;
  const r = rows[0];
  return r ? { queue: toQueueRow(r), recentlyPolled: r.recently_polled } : null;
}

/**
 * Records polls of many queues in one statement: each queue's acknowledged event id (never moving
 * backwards) and when it was last polled (`idleSecs` before now, on the database's clock; never moving
 * backwards). Queues deleted meanwhile are skipped.
 */
export async function recordQueuePolls(db: Db, marks: { id: string; acknowledged: number; idleSecs: number }[]): Promise<void> {
  if (!marks.length) return;
  await db.$executeRaw`
    UPDATE event_queue q SET
      last_event_id = GREATEST(q.last_event_id, m.acknowledged),
      last_accessed_at = GREATEST(q.last_accessed_at, now() - make_interval(secs => m.idle_secs))
    FROM unnest(${marks.map((m) => m.id)}::text[], ${marks.map((m) => m.acknowledged)}::bigint[], ${marks.map((m) => m.idleSecs)}::float8[]) AS m(id, acknowledged, idle_secs)
    WHERE q.id = m.id`;
}

/** Deletes the user's queue; false when there was none. */
export async function deleteEventQueue(db: Db, queueId: string, userId: number): Promise<boolean> {
  const n = await db.$executeRaw`DELETE FROM event_queue WHERE id = ${queueId} AND user_id = ${userId}::int`;
  return n > 0;
}

/** Deletes the user's queues registered with all_public_streams (a role change that loses that right). */
export async function deleteAllPublicStreamsQueuesOfUser(db: Db, userId: number): Promise<void> {
  await db.$executeRaw`DELETE FROM event_queue WHERE user_id = ${userId}::int AND all_public_streams`;
}

/** Deletes every queue of these users (deactivation). */
export async function deleteEventQueuesOfUsers(db: Db, userIds: number[]): Promise<void> {
  if (userIds.length) await db.$executeRaw`DELETE FROM event_queue WHERE user_id = ANY(${userIds}::int[])`;
}

/** A stored event as delivery reads it. */
export interface EventRow {
  id: number;
  /** null: realm-wide. */
  userIds: number[] | null;
  flags: number[] | null;
  allPublicStreams: boolean;
  type: string;
  payload: Record<string, unknown>;
}

interface EventSqlRow {
  id: bigint;
  user_ids: number[] | null;
  realm_wide: boolean;
  flags: number[] | null;
  all_public_streams: boolean;
  type: string;
  payload: Record<string, unknown>;
}

const toEventRow = (r: EventSqlRow): EventRow => ({
  id: Number(r.id),
  userIds: r.realm_wide ? null : (r.user_ids ?? []),
  flags: r.flags,
  allPublicStreams: r.all_public_streams,
  type: r.type,
  payload: r.payload,
});

/** Every event of the organization after `afterId`, oldest first, at most `limit`. */
export async function eventsOfRealmAfter(db: Db, realmId: number, afterId: number, limit: number): Promise<EventRow[]> {
  const rows = await db.$queryRaw<EventSqlRow[]>`
    SELECT id, user_ids, realm_wide, flags, all_public_streams, type, payload FROM event
    WHERE realm_id = ${realmId}::int AND id > ${afterId}::bigint ORDER BY id LIMIT ${limit}::int`;
  return rows.map(toEventRow);
}

/**
 * The events after `afterId` that may concern this user's queue (addressed to the user, realm-wide, or
 * public-channel messages for all_public_streams queues), of the given types (all when null) and the
 * realm_user events about the user, oldest first; and the organization's newest event id at the time of
 * reading.
 */
export async function eventsForQueueAfter(
  db: Db,
  q: { realmId: number; userId: number; allPublicStreams: boolean; eventTypes: string[] | null },
  afterId: number,
  limit: number,
): Promise<{ events: EventRow[]; newestId: number }> {
  // realm_user events about the queue's owner are read whatever the types: one may end the queue
  // (access/event-queues.ts eventEndsQueue).
  const typeFilter = q.eventTypes
    ? Prisma.sql`AND (type = ANY(${q.eventTypes}::text[]) OR (type = 'realm_user' AND payload->'person'->>'user_id' = ${String(q.userId)}))`
    : Prisma.empty;
  const publicFilter = q.allPublicStreams ? Prisma.sql`OR all_public_streams` : Prisma.empty;
  const rows = await db.$queryRaw<(EventSqlRow & { newest: bigint | null })[]>`
    SELECT e.*, n.newest FROM (SELECT max(id) AS newest FROM event WHERE realm_id = ${q.realmId}::int) n
    LEFT JOIN LATERAL (
      SELECT id, user_ids, realm_wide, flags, all_public_streams, type, payload FROM event
      WHERE realm_id = ${q.realmId}::int AND id > ${afterId}::bigint AND id <= n.newest
        AND (realm_wide OR user_ids @> ARRAY[${q.userId}::int] ${publicFilter}) ${typeFilter}
      ORDER BY id LIMIT ${limit}::int) e ON TRUE`;
  const newestId = Number(rows[0]?.newest ?? 0);
  return { events: rows.filter((r) => r.id !== null).map(toEventRow), newestId };
}

/** The organization's newest event id (0 when it has none). */
export async function newestEventId(db: RawSql, realmId: number): Promise<number> {
  const [row] = await db.$queryRaw<{ newest: bigint | null }[]>`SELECT max(id) AS newest FROM event WHERE realm_id = ${realmId}::int`;
  return Number(row?.newest ?? 0);
}

/**
 * Housekeeping, run periodically by any process: drops expired queues, then events that every live
 * queue of their organization has acknowledged (after a grace period, so a /register racing the pruning
 * finds them), and any event older than the longest queue lifetime.
 */
export async function pruneEventsAndQueues(db: Db, options: { graceSecs: number; maxAgeSecs: number }): Promise<{ queues: number; events: number }> {
  const queues = await db.$executeRaw`DELETE FROM event_queue WHERE last_accessed_at < now() - make_interval(secs => lifespan_secs)`;
  const events = await db.$executeRaw`
    DELETE FROM event e
    WHERE e.created_at < now() - make_interval(secs => ${options.graceSecs}::int)
      AND (e.created_at < now() - make_interval(secs => ${options.maxAgeSecs}::int)
        OR e.id <= COALESCE((SELECT min(q.last_event_id) FROM event_queue q WHERE q.realm_id = e.realm_id), 9223372036854775807))`;
  return { queues, events };
}
