// Messages: storing a message with its per-recipient rows, and the reads sending needs (recipients,
// mention targets, people shown in messages).
import type { Db } from './db.ts';
import { Prisma } from './db.ts';
import { eventOrderLockSql } from './events.repo.ts';
import type { Channel, User } from './models.ts';
import { channelColumns, channelOf } from './channels.repo.ts';
import { containingGroupsCte } from './user-groups.repo.ts';
import type { MessagePerson, MessageRow } from '../lib/message-format.ts';
// Pure functions: which address of a user is shown to, and may be used by, whom.
import { addressNames, publicEmailOf, userIdOfHiddenAddress, type AddressOwner } from '../access/users.ts';

export const MESSAGE_COLUMNS = Prisma.sql`m.id, m.sender_id, m.channel_id, m.topic, m.direct_user_ids, m.content, m.rendered_content, m.date_sent, m.last_edit_time, m.sending_client, m.edit_history, m.last_moved_time`;

export interface NewMessage {
  realmId: number;
  senderId: number;
  channelId: number | null;
  topic: string;
  /** Direct messages: every participant, sender included, ascending. */
  directUserIds: number[];
  content: string;
  renderedContent: string;
  sendingClient: string;
}

/**
 * A `message` event's payload as storeMessage's statement stores it: `payload` (formatted before the
 * message had an id) with the new row's id and timestamp filled in.
 */
export const messageEventPayloadSql = (payload: Record<string, unknown>): Prisma.Sql =>
  Prisma.sql`(SELECT jsonb_set(jsonb_set(${JSON.stringify(payload)}::jsonb, '{message,id}', to_jsonb(stored.id)),
    '{message,timestamp}', to_jsonb(floor(extract(epoch FROM stored.date_sent))::bigint)) FROM stored)`;

/** Integers as one comma-separated text parameter: 1,000 of them cost Node and pg far less than an array parameter. */
const intList = (values: number[]) => values.join(',');

/**
 * Stores the message, its recipients' user_message rows and, with `events` (the INSERT that
 * EventBus.publishAlong hands over), its event, in one statement. Recipients in `deferred` (flags 0)
 * get no row now: the message lists them, and their rows are written when they next read
 * (writeDeferredRows); the others get their row (flags aligned with userIds). It takes the
 * organization's event-order lock first, so that message ids, and the ids of the events announcing
 * them, follow commit order: a client never sees message n+1 before message n; catching up relies on
 * it too. The events' payloads may read the new row as `stored` (see messageEventPayloadSql).
 */
export async function storeMessage(
  tx: Db,
  m: NewMessage,
  recipients: { userIds: number[]; flags: number[]; deferred: ReadonlySet<number> },
  events: Prisma.Sql | null,
): Promise<MessageRow> {
  const deferredIds: number[] = [];
  const rowIds: number[] = [];
  const rowFlags: number[] = [];
  recipients.userIds.forEach((id, i) => {
    if (recipients.deferred.has(id)) deferredIds.push(id);
    else {
      rowIds.push(id);
      rowFlags.push(recipients.flags[i]!);
    }
  });
  const [row] = await tx.$queryRaw<MessageRow[]>`
    WITH ordered AS (${eventOrderLockSql(m.realmId)}),
    stored AS (
      INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, sending_client, deferred_recipient_ids)
      SELECT ${m.realmId}::int, ${m.senderId}::int, ${m.channelId}::int, ${m.topic}, ${m.directUserIds}::int[], ${m.content}, ${m.renderedContent}, ${m.sendingClient},
        string_to_array(${intList(deferredIds)}, ',')::int[]
      FROM ordered
      RETURNING *
    ),
    rows AS (
      INSERT INTO user_message (user_id, message_id, flags)
      SELECT r.user_id, stored.id, r.flags FROM stored,
        unnest(string_to_array(${intList(rowIds)}, ',')::int[], string_to_array(${intList(rowFlags)}, ',')::int[]) AS r(user_id, flags)
    )${events ? Prisma.sql`, announced AS (${events})` : Prisma.empty}
    SELECT ${MESSAGE_COLUMNS} FROM stored m`;
  return row!;
}

/**
 * Active subscribers of the channel who are active users (ascending). Read as one text value: a
 * thousand rows, or an int[], cost Node (Prisma, pg) several times more. Deactivated users are taken
 * out through their own small index (user_inactive_idx) rather than by looking up every subscriber.
 */
export async function channelRecipientIds(db: Db, channelId: number): Promise<number[]> {
  const [row] = await db.$queryRaw<{ ids: string | null }[]>`SELECT (${recipientIdsSql(Prisma.sql`${channelId}::int`)}) AS ids`;
  return idsOf(row?.ids ?? null);
}

/** The channel's active subscribers who are active users, ascending, as comma-separated text (NULL: none). */
const recipientIdsSql = (channel: Prisma.Sql) => Prisma.sql`
    SELECT string_agg(s.user_id::text, ',' ORDER BY s.user_id) FROM subscription s
    WHERE s.channel_id = ${channel} AND s.active
      AND NOT EXISTS (SELECT 1 FROM "user" u WHERE u.id = s.user_id AND NOT u.is_active)`;

const idsOf = (text: string | null): number[] => (text ? text.split(',').map(Number) : []);

/** What sending to a channel decides with and needs (channelSendingContext). */
export interface ChannelSendingContext {
  channel: Channel;
  /** Every group containing the sender, directly or through subgroups (access/group-settings.ts's subject). */
  senderGroupIds: number[];
  subscribed: boolean;
  /** channelRecipientIds of the channel. */
  recipientIds: number[];
}

/**
 * The organization's channel of that id, or of that name (case-insensitively: the unique index on
 * lower(name)), with the sender's groups, whether the sender is subscribed, and its recipients: one
 * statement where these were four; null when there is no such channel. The recipients are read
 * before the caller decides whether the sender may send there, and only used when they may.
 */
export async function channelSendingContext(db: Db, realmId: number, address: { id: number } | { name: string }, senderId: number): Promise<ChannelSendingContext | null> {
  const which = 'id' in address ? Prisma.sql`c.id = ${address.id}::int` : Prisma.sql`lower(c.name) = lower(${address.name})`;
  const [row] = await db.$queryRaw<Array<Channel & { sender_groups: number[]; subscribed: boolean; recipient_ids: string | null }>>`
    WITH RECURSIVE ${containingGroupsCte(senderId)}
    SELECT ${channelColumns('c')},
      ARRAY(SELECT id FROM containing) AS sender_groups,
      EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${senderId}::int AND s.channel_id = c.id AND s.active) AS subscribed,
      (${recipientIdsSql(Prisma.sql`c.id`)}) AS recipient_ids
    FROM channel c
    WHERE c.realm_id = ${realmId}::int AND ${which}`;
  if (!row) return null;
  return { channel: channelOf(row), senderGroupIds: row.sender_groups, subscribed: row.subscribed, recipientIds: idsOf(row.recipient_ids) };
}

/** Users who sent a message to the channel's topic (case-insensitive). */
export async function topicParticipantIds(db: Db, channelId: number, topic: string): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT DISTINCT sender_id AS id FROM message WHERE channel_id = ${channelId}::int AND lower(topic) = lower(${topic})`;
  return rows.map((r) => r.id);
}

/** Whether the topic has any message yet. */
export async function topicExists(db: Db, channelId: number, topic: string): Promise<boolean> {
  const rows = await db.$queryRaw<unknown[]>`SELECT 1 FROM message WHERE channel_id = ${channelId}::int AND lower(topic) = lower(${topic}) LIMIT 1`;
  return rows.length > 0;
}

/** A channel a message links to, with what deciding whether its sender may link it takes (access/channels.ts channelsLinkableBy). */
export interface LinkedChannel {
  id: number;
  name: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  canAdministerChannelGroupId: number;
  canAddSubscribersGroupId: number;
  canSubscribeGroupId: number;
  canRemoveSubscribersGroupId: number;
  /** The sender is an active subscriber. */
  subscribed: boolean;
}

export interface MentionTargets {
  users: { id: number; full_name: string }[];
  groups: { id: number; name: string; can_mention_group_id: number | null }[];
  /** Every active channel of the names, whether the sender may link it or not. */
  channels: LinkedChannel[];
}

/**
 * Users (active, by full name or id), named groups and channels the content mentions, in one round
 * trip; for channels, whether `senderId` is subscribed.
 */
export async function mentionTargets(
  db: Db,
  realmId: number,
  senderId: number,
  refs: { userNames: string[]; userIds: number[]; groupNames: string[]; channelNames: string[] },
): Promise<MentionTargets> {
  const [row] = await db.$queryRaw<{ users: MentionTargets['users'] | null; groups: MentionTargets['groups'] | null; channels: MentionTargets['channels'] | null }[]>`
    SELECT
      (SELECT json_agg(json_build_object('id', u.id, 'full_name', u.full_name)) FROM "user" u
        WHERE u.realm_id = ${realmId}::int AND u.is_active
          AND (lower(u.full_name) = ANY(SELECT lower(n) FROM unnest(${refs.userNames}::text[]) n) OR u.id = ANY(${refs.userIds}::int[]))) AS users,
      (SELECT json_agg(json_build_object('id', g.id, 'name', g.name, 'can_mention_group_id', g.can_mention_group_id)) FROM user_group g
        WHERE g.realm_id = ${realmId}::int AND g.name IS NOT NULL AND NOT g.deactivated
          AND g.name = ANY(${refs.groupNames}::text[])) AS groups,
      (SELECT json_agg(json_build_object('id', c.id, 'name', c.name, 'inviteOnly', c.invite_only, 'isWebPublic', c.is_web_public,
          'canAdministerChannelGroupId', c.can_administer_channel_group_id, 'canAddSubscribersGroupId', c.can_add_subscribers_group_id,
          'canSubscribeGroupId', c.can_subscribe_group_id, 'canRemoveSubscribersGroupId', c.can_remove_subscribers_group_id,
          'subscribed', EXISTS (SELECT 1 FROM subscription s WHERE s.channel_id = c.id AND s.user_id = ${senderId}::int AND s.active)))
        FROM channel c
        WHERE c.realm_id = ${realmId}::int AND NOT c.is_archived
          AND lower(c.name) = ANY(SELECT lower(n) FROM unnest(${refs.channelNames}::text[]) n)) AS channels`;
  return { users: row?.users ?? [], groups: row?.groups ?? [], channels: row?.channels ?? [] };
}

/** Every active member of the groups, directly or through subgroups. */
export async function activeMembersOfGroups(db: Db, groupIds: number[]): Promise<number[]> {
  if (groupIds.length === 0) return [];
  const rows = await db.$queryRaw<{ id: number }[]>`
    WITH RECURSIVE sub(id) AS (
      SELECT unnest(${groupIds}::int[])
      UNION
      SELECT s.subgroup_id FROM user_group_subgroup s JOIN sub ON s.supergroup_id = sub.id
    )
    SELECT DISTINCT m.user_id AS id FROM user_group_member m JOIN sub ON m.group_id = sub.id JOIN "user" u ON u.id = m.user_id
    WHERE u.is_active`;
  return rows.map((r) => r.id);
}

/** People as messages show them (sender, direct-message participants); their address is derived (messageEmailOf). */
export async function messagePeople(db: Db, realmId: number, ids: number[]): Promise<MessagePerson[]> {
  if (ids.length === 0) return [];
  return db.$queryRaw<MessagePerson[]>`
    SELECT u.id, u.full_name, u.delivery_email, u.is_bot, COALESCE(s.email_address_visibility, 1) AS email_address_visibility,
      u.avatar_version, u.avatar_source
    FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
    WHERE u.realm_id = ${realmId}::int AND u.id = ANY(${[...new Set(ids)]}::int[])`;
}

/** A possible direct-message recipient. */
export interface DirectRecipient {
  id: number;
  /** The address everyone sees (access/users.ts publicEmailOf): the one error messages name. */
  email: string;
  is_active: boolean;
  is_bot: boolean;
  delivery_email: string;
  email_address_visibility: number;
}

/** As read: the organization's URL (for `user{id}@{host}`) instead of the shown address. */
type DirectRecipientRow = Omit<DirectRecipient, 'email'> & { realm_url: string };

const directRecipientColumns = Prisma.sql`u.id, u.is_active, u.is_bot, u.delivery_email, COALESCE(s.email_address_visibility, 1) AS email_address_visibility, r.url AS realm_url`;
const directRecipientTables = Prisma.sql`"user" u JOIN realm r ON r.id = u.realm_id LEFT JOIN user_settings s ON s.user_id = u.id`;

const owner = (row: Omit<DirectRecipient, 'email'>): AddressOwner => ({ id: row.id, isBot: row.is_bot, deliveryEmail: row.delivery_email });
function withShownEmail({ realm_url, ...row }: DirectRecipientRow): DirectRecipient {
  return { ...row, email: publicEmailOf({ url: realm_url }, owner(row), row.email_address_visibility) };
}

/** Recipients of a direct message by id; unknown ones are left out. */
export async function directRecipientsByIds(db: Db, realmId: number, ids: number[]): Promise<DirectRecipient[]> {
  const rows = await db.$queryRaw<DirectRecipientRow[]>`
    SELECT ${directRecipientColumns} FROM ${directRecipientTables}
    WHERE u.realm_id = ${realmId}::int AND u.id = ANY(${ids}::int[])`;
  return rows.map(withShownEmail);
}

/**
 * The users `emails` may name (their real address, or the `user{id}@{host}` form), and `matches`,
 * which tells whether an address names a user for `viewer` (access/users.ts addressNames: the address
 * everyone sees always, the real one only when the viewer may see it; without a viewer, only the
 * former). Case-insensitive.
 */
export async function directRecipientsByEmails(db: Db, realm: { id: number; url: string }, emails: string[], viewer: Pick<User, 'id' | 'role'> | null = null) {
  const wanted = emails.map((e) => e.trim().toLowerCase());
  const hiddenIds = emails.map((e) => userIdOfHiddenAddress(realm, e)).filter((id): id is number => id !== null);
  const rows = await db.$queryRaw<DirectRecipientRow[]>`
    SELECT ${directRecipientColumns} FROM ${directRecipientTables}
    WHERE u.realm_id = ${realm.id}::int AND (lower(u.delivery_email) = ANY(${wanted}::text[]) OR u.id = ANY(${hiddenIds}::int[]))`;
  return {
    rows: rows.map(withShownEmail),
    matches: (row: DirectRecipient, email: string) => addressNames(realm, viewer, owner(row), row.email_address_visibility, email),
  };
}
