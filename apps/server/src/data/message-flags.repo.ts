// Per-user message flags (user_message.flags): setting and clearing bits, on given messages or in
// bounded batches for "mark everything read".
import type { Db, RawSql } from './db.ts';
import { Prisma } from './db.ts';

/**
 * Sets or clears `bit` on the user's rows among `messageIds`; the ids whose flag changed, ascending.
 * With `allOwn`, only when every one of `messageIds` (distinct) is a message the user has a row for:
 * one statement counts the rows and changes them in the same snapshot, and answers the count (`owned`
 * below messageIds.length: nothing changed). Without, `owned` is null.
 *
 * `unlessPushDevices`: changes nothing when the user has a mobile device registered for pushes (and
 * answers `devices: true`): the caller then needs a transaction to queue the pushes' removal with the
 * change. `events`: the INSERT of the events announcing the change (EventBus.publishAlong), stored by
 * this statement; their payloads may read the changed ids (flagEventPayloadSql).
 */
export async function changeFlag(
  db: Db,
  userId: number,
  messageIds: number[],
  bit: number,
  set: boolean,
  options: { allOwn: boolean; unlessPushDevices?: boolean; events?: Prisma.Sql | null },
): Promise<{ owned: number | null; changed: number[]; devices: boolean }> {
  const devices = options.unlessPushDevices ? Prisma.sql`EXISTS (SELECT 1 FROM push_device WHERE user_id = ${userId}::int)` : Prisma.sql`FALSE`;
  const rows = await db.$queryRaw<{ owned: number | null; ids: number[] | null; devices: boolean }[]>`
    WITH own AS (
      SELECT ${options.allOwn ? Prisma.sql`count(*)::int` : Prisma.sql`NULL::int`} AS n
      ${options.allOwn ? Prisma.sql`FROM user_message WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[])` : Prisma.empty}
    ),
    devices AS (SELECT ${devices} AS found),
    changed AS (
      UPDATE user_message SET flags = ${set ? Prisma.sql`flags | ${bit}::bigint` : Prisma.sql`flags & ~${bit}::bigint`}
      WHERE user_id = ${userId}::int AND message_id = ANY(${messageIds}::int[]) AND (flags & ${bit}::bigint) ${set ? Prisma.sql`= 0` : Prisma.sql`<> 0`}
        ${options.allOwn ? Prisma.sql`AND (SELECT n FROM own) = ${messageIds.length}::int` : Prisma.empty}
        AND NOT (SELECT found FROM devices)
      RETURNING message_id AS id
    )${options.events ? Prisma.sql`, announced AS (${options.events})` : Prisma.empty}
    SELECT (SELECT n FROM own) AS owned, (SELECT array_agg(id ORDER BY id) FROM changed) AS ids, (SELECT found FROM devices) AS devices`;
  const row = rows[0]!;
  return { owned: row.owned, changed: row.ids ?? [], devices: row.devices };
}

/**
 * The payload of the `update_message_flags` event announcing changeFlag's change, as an SQL text
 * expression reading the statement's `changed` ids: `payload` with `messages` set to them, ascending;
 * NULL when none changed (no event is stored then).
 */
export const flagEventPayloadSql = (payload: Record<string, unknown>): Prisma.Sql =>
  Prisma.sql`(SELECT CASE WHEN count(*) > 0 THEN jsonb_set(${JSON.stringify(payload)}::jsonb, '{messages}', jsonb_agg(id ORDER BY id))::text END FROM changed)`;

/**
 * The channel messages among `messageIds` that the user received (has a row for) and whose channel they
 * are not (or no longer) subscribed to, with their channel. Messages the user never received are not
 * among them (their channels are nobody's business of theirs).
 */
export async function messagesOfUnsubscribedChannels(db: Db, userId: number, messageIds: number[]): Promise<{ id: number; channel_id: number }[]> {
  return db.$queryRaw`
    SELECT m.id, m.channel_id FROM message m
    JOIN user_message um ON um.user_id = ${userId}::int AND um.message_id = m.id
    WHERE m.id = ANY(${messageIds}::int[]) AND m.channel_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${userId}::int AND s.channel_id = m.channel_id AND s.active)`;
}

/**
 * The user's newest message id (0 when none): "mark all" stops there, so later messages stay unread.
 * The newer of the ends of the per-user index's two ranges (unread and read rows), each ordered by the
 * index's whole key so that no other index can serve it (the key (message_id, user_id) would read every
 * row after the user's newest, other users' included).
 */
export async function newestOwnMessageId(db: RawSql, userId: number): Promise<number> {
  const [row] = await db.$queryRaw<{ id: number | null }[]>`
    SELECT GREATEST(
      (SELECT message_id FROM user_message WHERE user_id = ${userId}::int AND (flags & 1) = 0 ORDER BY user_id DESC, (flags & 1) DESC, message_id DESC LIMIT 1),
      (SELECT message_id FROM user_message WHERE user_id = ${userId}::int AND (flags & 1) = 1 ORDER BY user_id DESC, (flags & 1) DESC, message_id DESC LIMIT 1)) AS id`;
  return row?.id ?? 0;
}

const empty = Prisma.empty;
function channelFilter(channelId: number, topic: string | undefined): Prisma.Sql {
  return topic === undefined
    ? Prisma.sql`AND m.channel_id = ${channelId}::int`
    : Prisma.sql`AND m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic})`;
}

/**
 * Marks read the newest `limit` unread messages of the user, up to `upTo` when given (optionally of one
 * channel, and one topic), in one statement; returns their ids, ascending. The oldest of them is found
 * on the unread index first, by a scalar subquery (evaluated once, whatever the planner believes of
 * the table's size); then every unread row from it on is updated, a plain range of the index (no
 * join to the batch, no separate row locks: as cheap per row as one UPDATE of them all). A row
 * another transaction is marking is waited for, then left alone (it is read by then).
 */
export async function markReadBatch(
  db: Db,
  userId: number,
  upTo: number | null,
  limit: number,
  scope: { channelId?: number; topic?: string } = {},
): Promise<number[]> {
  const inScope = scope.channelId !== undefined;
  const atMostUpTo = (column: string) => (upTo === null ? empty : Prisma.sql`AND ${Prisma.raw(column)} <= ${upTo}::int`);
  const [row] = await db.$queryRaw<{ ids: number[] }[]>`
    WITH marked AS (
      UPDATE user_message u SET flags = u.flags | 1
      ${inScope ? Prisma.sql`FROM message m` : empty}
      WHERE u.user_id = ${userId}::int AND (u.flags & 1) = 0 ${atMostUpTo('u.message_id')}
        AND u.message_id >= (
          SELECT min(message_id) FROM (
            SELECT um.message_id FROM user_message um
            ${inScope ? Prisma.sql`JOIN message m ON m.id = um.message_id` : empty}
            WHERE um.user_id = ${userId}::int AND (um.flags & 1) = 0 ${atMostUpTo('um.message_id')}
              ${inScope ? channelFilter(scope.channelId!, scope.topic) : empty}
            ORDER BY um.message_id DESC LIMIT ${limit}::int
          ) newest
        )
        ${inScope ? Prisma.sql`AND m.id = u.message_id ${channelFilter(scope.channelId!, scope.topic)}` : empty}
      RETURNING u.message_id
    )
    SELECT coalesce(array_agg(message_id ORDER BY message_id), '{}') AS ids FROM marked`;
  return row?.ids ?? [];
}

/** Whether the user has any message in the channel's topic (case-insensitive). */
export async function userHasTopic(db: Db, userId: number, channelId: number, topic: string): Promise<boolean> {
  const rows = await db.$queryRaw<unknown[]>`
    SELECT 1 FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_id = ${userId}::int
    WHERE m.channel_id = ${channelId}::int AND lower(m.topic) = lower(${topic}) LIMIT 1`;
  return rows.length > 0;
}

/** Where each message is, for `update_message_flags` removal events (message_details). */
export async function messageDetails(db: Db, userId: number, messageIds: number[]) {
  return db.$queryRaw<{ id: number; channel_id: number | null; topic: string; direct_user_ids: number[]; flags: number; muted: boolean | null }[]>`
    SELECT m.id, m.channel_id, m.topic, m.direct_user_ids, um.flags::int AS flags, s.is_muted AS muted
    FROM message m JOIN user_message um ON um.message_id = m.id AND um.user_id = ${userId}::int
    LEFT JOIN subscription s ON s.channel_id = m.channel_id AND s.user_id = ${userId}::int
    WHERE m.id = ANY(${messageIds}::int[])`;
}
