// Organization exports: the realm_export rows (Zulip's RealmExport) and every read the export writer
// (src/export/) makes of an organization. The writer reads messages a batch at a time by id (a
// cursor), so no query here returns an organization's whole history at once.
import { Prisma, type Db } from './db.ts';

/** Zulip's RealmExport.status values. */
export const ExportStatus = { REQUESTED: 1, STARTED: 2, SUCCEEDED: 3, FAILED: 4, DELETED: 5 } as const;
/** Zulip's RealmExport.type values. */
export const ExportType = { PUBLIC: 1, FULL_WITH_CONSENT: 2 } as const;
export type ExportTypeValue = (typeof ExportType)[keyof typeof ExportType];

export interface RealmExportRow {
  id: number;
  realmId: number;
  actingUserId: number | null;
  type: number;
  status: number;
  dateRequested: Date;
  dateStarted: Date | null;
  dateSucceeded: Date | null;
  dateFailed: Date | null;
  dateDeleted: Date | null;
  exportPath: string | null;
}

const exportSelect = {
  id: true, realmId: true, actingUserId: true, type: true, status: true, dateRequested: true, dateStarted: true,
  dateSucceeded: true, dateFailed: true, dateDeleted: true, exportPath: true,
} as const;

export const createRealmExport = (db: Db, realmId: number, actingUserId: number, type: number): Promise<RealmExportRow> =>
  db.realmExport.create({ data: { realmId, actingUserId, type, status: ExportStatus.REQUESTED }, select: exportSelect });

/** Exports requested since `since` (Zulip's rate limit counts every one, whatever became of it). */
export const countExportsSince = (db: Db, realmId: number, since: Date) => db.realmExport.count({ where: { realmId, dateRequested: { gte: since } } });

/** The organization's exports with an acting user, oldest first (Zulip's get_realm_exports_serialized). */
export const listRealmExports = (db: Db, realmId: number): Promise<RealmExportRow[]> =>
  db.realmExport.findMany({ where: { realmId, actingUserId: { not: null } }, orderBy: { id: 'asc' }, select: exportSelect });

export const findRealmExport = (db: Db, realmId: number, id: number): Promise<RealmExportRow | null> =>
  db.realmExport.findFirst({ where: { realmId, id }, select: exportSelect });

/** The export, locked for the rest of the transaction. */
export async function lockRealmExport(db: Db, id: number): Promise<RealmExportRow | null> {
  await db.$queryRaw`SELECT id FROM realm_export WHERE id = ${id}::int FOR UPDATE`;
  return db.realmExport.findUnique({ where: { id }, select: exportSelect });
}

export const updateRealmExport = (
  db: Db,
  id: number,
  data: Partial<{ status: number; dateStarted: Date; dateSucceeded: Date; dateFailed: Date; dateDeleted: Date; exportPath: string; tarballSizeBytes: bigint; sha256sumHex: string; stats: Prisma.InputJsonValue }>,
) => db.realmExport.update({ where: { id }, data });

/**
 * How long an export's download link works after the export succeeded: 7 days. Long enough to fetch a
 * large tarball across a week-end or time zones, short enough that a link that leaked (pasted in a chat,
 * kept in a browser's history or a proxy's log) stops exposing the organization's data; the
 * administrators can make a new export at any time (five a week).
 */
export const EXPORT_LINK_LIFETIME_MS = 7 * 24 * 3600 * 1000;

/** A succeeded export by the path of its download URL (null once deleted, failed, expired or unknown). */
export const findDownloadableExport = (db: Db, realmId: number, exportPath: string, now = new Date()) =>
  db.realmExport.findFirst({
    where: { realmId, exportPath, status: ExportStatus.SUCCEEDED, dateSucceeded: { gt: new Date(now.getTime() - EXPORT_LINK_LIFETIME_MS) } },
    select: { id: true },
  });

/** Active human administrators and owners: who hears of exports and consents (Zulip's get_human_admin_users). */
export async function humanAdminIds(db: Db, realmId: number): Promise<number[]> {
  const rows = await db.$queryRaw<{ id: number }[]>`
    SELECT id FROM "user" WHERE realm_id = ${realmId}::int AND is_active AND NOT is_bot AND role IN (100, 200) ORDER BY id`;
  return rows.map((r) => r.id);
}

export interface ExportConsentRow {
  user_id: number;
  consented: boolean;
  email_address_visibility: number;
  role: number;
}

/** Every active human user's consent and e-mail visibility (Zulip's defaults when no settings row). */
export const exportConsents = (db: Db, realmId: number) =>
  db.$queryRaw<ExportConsentRow[]>`
    SELECT u.id AS user_id, COALESCE(s.allow_private_data_export, false) AS consented,
           COALESCE(s.email_address_visibility, 1) AS email_address_visibility, u.role
      FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
     WHERE u.realm_id = ${realmId}::int AND u.is_active AND NOT u.is_bot
     ORDER BY u.id`;

/** The ids of the active human users who consent to the export of their private data (Zulip's get_consented_user_ids). */
export async function consentedUserIds(db: Db, realmId: number): Promise<number[]> {
  return (await exportConsents(db, realmId)).filter((r) => r.consented).map((r) => r.user_id);
}

/** The bytes of the organization's uploaded files. */
export async function uploadSpaceUsed(db: Db, realmId: number): Promise<bigint> {
  const [row] = await db.$queryRaw<{ total: bigint | null }[]>`SELECT sum(size)::bigint AS total FROM attachment WHERE realm_id = ${realmId}::int`;
  return row?.total ?? 0n;
}

// ---------------------------------------------------------------------------------------------
// What an export contains

/**
 * The condition on `m` (a row of message) of being in an export of the type: public channels'
 * messages; for a consent export also private channels' messages and direct messages of the members
 * who consented (Zulip's export_partial_message_files): a private channel with shared history a
 * consenting member is (or was) subscribed to, whole; one with protected history, the messages a
 * consenting member received; a direct message conversation a consenting member is part of.
 */
export function exportedMessageCondition(realmId: number, type: ExportTypeValue, consented: readonly number[]): Prisma.Sql {
  const publicChannels = Prisma.sql`SELECT c.id FROM channel c WHERE c.realm_id = ${realmId}::int AND NOT c.invite_only`;
  if (type === ExportType.PUBLIC || consented.length === 0) return Prisma.sql`(m.realm_id = ${realmId}::int AND m.channel_id IN (${publicChannels}))`;
  const ids = [...consented];
  const consentedChannels = (historyPublic: boolean) => Prisma.sql`
    SELECT c.id FROM channel c WHERE c.realm_id = ${realmId}::int AND c.invite_only AND c.history_public_to_subscribers = ${historyPublic}
       AND EXISTS (SELECT 1 FROM subscription s WHERE s.channel_id = c.id AND s.user_id = ANY(${ids}::int[]))`;
  return Prisma.sql`(m.realm_id = ${realmId}::int AND (
      m.channel_id IN (${publicChannels})
      OR m.channel_id IN (${consentedChannels(true)})
      OR (m.channel_id IN (${consentedChannels(false)}) AND (m.deferred_recipient_ids && ${ids}::int[]
          OR EXISTS (SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_id = ANY(${ids}::int[]))))
      OR (m.channel_id IS NULL AND m.direct_user_ids && ${ids}::int[])))`;
}

export interface ExportMessageRow {
  id: number;
  sender_id: number;
  channel_id: number | null;
  direct_user_ids: number[];
  topic: string;
  content: string;
  rendered_content: string;
  date_sent: Date;
  last_edit_time: Date | null;
  sending_client: string;
  edit_history: unknown;
  has_attachment: boolean;
  /** How many user_message rows (written or deferred) the message has, to bound a file's size. */
  recipients: number;
}

/** The next exported messages after `afterId`, in id order (the cursor of the export's message files). */
export const exportMessageBatch = (db: Db, condition: Prisma.Sql, afterId: number, limit: number) =>
  db.$queryRaw<ExportMessageRow[]>`
    SELECT m.id, m.sender_id, m.channel_id, m.direct_user_ids, m.topic, m.content, m.rendered_content, m.date_sent,
           m.last_edit_time, m.sending_client, m.edit_history,
           EXISTS (SELECT 1 FROM attachment_message am WHERE am.message_id = m.id) AS has_attachment,
           (cardinality(m.deferred_recipient_ids) + (SELECT count(*) FROM user_message um WHERE um.message_id = m.id))::int AS recipients
      FROM message m
     WHERE ${condition} AND m.id > ${afterId}::int
     ORDER BY m.id
     LIMIT ${limit}::int`;

export interface ExportUserMessageRow {
  message_id: number;
  user_id: number;
  flags: bigint;
}

/**
 * The per-user rows of these messages for these users: the written ones with their flags, and the
 * deferred ones (message.deferred_recipient_ids, flags 0) not written yet.
 */
export const exportUserMessages = (db: Db, messageIds: readonly number[], userIds: readonly number[]) =>
  db.$queryRaw<ExportUserMessageRow[]>`
    SELECT um.message_id, um.user_id, um.flags FROM user_message um
     WHERE um.message_id = ANY(${[...messageIds]}::int[]) AND um.user_id = ANY(${[...userIds]}::int[])
    UNION ALL
    SELECT m.id AS message_id, d.uid AS user_id, 0::bigint AS flags
      FROM message m CROSS JOIN LATERAL unnest(m.deferred_recipient_ids) AS d(uid)
     WHERE m.id = ANY(${[...messageIds]}::int[]) AND d.uid = ANY(${[...userIds]}::int[])
       AND NOT EXISTS (SELECT 1 FROM user_message um WHERE um.message_id = m.id AND um.user_id = d.uid)
    ORDER BY 1, 2`;

/** The reactions to the exported messages after reaction `afterId`, in id order, `limit` at most (a page of the export's cursor). */
export const exportReactions = (db: Db, condition: Prisma.Sql, afterId: number, limit: number) =>
  db.$queryRaw<Array<{ id: number; user_id: number; message_id: number; emoji_name: string; emoji_code: string; reaction_type: string }>>`
    SELECT r.id, r.user_id, r.message_id, r.emoji_name, r.emoji_code, r.reaction_type
      FROM reaction r JOIN message m ON m.id = r.message_id WHERE ${condition} AND r.id > ${afterId}::int ORDER BY r.id LIMIT ${limit}::int`;

/** The clients that sent the exported messages (Zulip's zerver_client), by name. */
export async function exportClientNames(db: Db, condition: Prisma.Sql): Promise<string[]> {
  const rows = await db.$queryRaw<{ name: string }[]>`SELECT DISTINCT m.sending_client AS name FROM message m WHERE ${condition} ORDER BY 1`;
  return rows.map((r) => r.name);
}

/** The participant sets of the organization's group direct messages (three or more people). */
export async function directMessageGroups(db: Db, realmId: number): Promise<number[][]> {
  const rows = await db.$queryRaw<{ ids: number[] }[]>`
    SELECT DISTINCT direct_user_ids AS ids FROM message
     WHERE realm_id = ${realmId}::int AND channel_id IS NULL AND cardinality(direct_user_ids) >= 3 ORDER BY 1`;
  return rows.map((r) => r.ids);
}

/**
 * Attachments linked to the exported messages, with the exported messages they are linked to: a page,
 * ids after `afterId` in id order, `limit` at most.
 */
export const exportAttachments = (db: Db, condition: Prisma.Sql, afterId: number, limit: number) =>
  db.$queryRaw<Array<{ id: number; owner_id: number; owner_email: string; path_id: string; file_name: string; size: bigint; content_type: string | null; create_time: Date; message_ids: number[] }>>`
    SELECT a.id, a.owner_id, u.email AS owner_email, a.path_id, a.file_name, a.size, a.content_type, a.create_time,
           array_agg(am.message_id ORDER BY am.message_id) AS message_ids
      FROM attachment a
      JOIN attachment_message am ON am.attachment_id = a.id
      JOIN message m ON m.id = am.message_id
      JOIN "user" u ON u.id = a.owner_id
     WHERE ${condition} AND a.id > ${afterId}::int
     GROUP BY a.id, u.email
     ORDER BY a.id
     LIMIT ${limit}::int`;

// The organization's smaller tables, each read whole.

export const exportRealmRow = (db: Db, realmId: number) => db.realm.findUniqueOrThrow({ where: { id: realmId } });
export const exportUsers = (db: Db, realmId: number) => db.user.findMany({ where: { realmId }, orderBy: { id: 'asc' }, include: { settings: true } });
export const exportBotProfiles = (db: Db, realmId: number) =>
  db.$queryRaw<Array<{ user_id: number; default_sending_stream_id: number | null; default_events_register_stream_id: number | null; default_all_public_streams: boolean }>>`
    SELECT b.* FROM bot_profile b JOIN "user" u ON u.id = b.user_id WHERE u.realm_id = ${realmId}::int ORDER BY b.user_id`;
export const exportChannels = (db: Db, realmId: number) => db.channel.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
/** A page of one channel's subscriptions: its subscribers after user `afterUserId`, in user id order, `limit` at most. */
export const exportSubscriptions = (db: Db, channelId: number, afterUserId: number, limit: number) =>
  db.$queryRaw<Array<{ user_id: number; channel_id: number; active: boolean; is_user_active: boolean; color: string; is_muted: boolean; pin_to_top: boolean; desktop_notifications: boolean | null; audible_notifications: boolean | null; push_notifications: boolean | null; email_notifications: boolean | null; wildcard_mentions_notify: boolean | null }>>`
    SELECT s.user_id, s.channel_id, s.active, u.is_active AS is_user_active, s.color, s.is_muted, s.pin_to_top, s.desktop_notifications,
           s.audible_notifications, s.push_notifications, s.email_notifications, s.wildcard_mentions_notify
      FROM subscription s JOIN "user" u ON u.id = s.user_id
     WHERE s.channel_id = ${channelId}::int AND s.user_id > ${afterUserId}::int ORDER BY s.user_id LIMIT ${limit}::int`;
export const exportUserGroups = (db: Db, realmId: number) => db.userGroup.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
/** A page of one group's direct members: after user `afterUserId`, in user id order, `limit` at most. */
export const exportGroupMembers = (db: Db, groupId: number, afterUserId: number, limit: number) =>
  db.$queryRaw<Array<{ group_id: number; user_id: number }>>`
    SELECT m.group_id, m.user_id FROM user_group_member m WHERE m.group_id = ${groupId}::int AND m.user_id > ${afterUserId}::int ORDER BY m.user_id LIMIT ${limit}::int`;
export const exportGroupSubgroups = (db: Db, realmId: number) =>
  db.$queryRaw<Array<{ supergroup_id: number; subgroup_id: number }>>`
    SELECT s.supergroup_id, s.subgroup_id FROM user_group_subgroup s JOIN user_group g ON g.id = s.supergroup_id WHERE g.realm_id = ${realmId}::int ORDER BY 1, 2`;
export const exportProfileFields = (db: Db, realmId: number) => db.customProfileField.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
export const exportProfileFieldValues = (db: Db, realmId: number) =>
  db.customProfileFieldValue.findMany({ where: { field: { realmId } }, orderBy: [{ userId: 'asc' }, { fieldId: 'asc' }] });
export const exportRealmEmoji = (db: Db, realmId: number) => db.realmEmoji.findMany({ where: { realmId, fileName: { not: null } }, orderBy: { id: 'asc' } });
export const exportLinkifiers = (db: Db, realmId: number) => db.realmLinkifier.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
export const exportPlaygrounds = (db: Db, realmId: number) => db.realmPlayground.findMany({ where: { realmId }, orderBy: { id: 'asc' } });
export const exportRealmUserDefault = (db: Db, realmId: number) => db.realmUserDefault.findUnique({ where: { realmId } });
export const exportPresence = (db: Db, realmId: number) => db.userPresence.findMany({ where: { realmId }, orderBy: { userId: 'asc' } });
export const exportUserStatuses = (db: Db, realmId: number) => db.userStatus.findMany({ where: { realmId }, orderBy: { userId: 'asc' } });
export const exportUserTopics = (db: Db, userIds: readonly number[]) =>
  db.userTopic.findMany({ where: { userId: { in: [...userIds] } }, orderBy: { id: 'asc' } });
export const exportMutedUsers = (db: Db, userIds: readonly number[]) =>
  db.mutedUser.findMany({ where: { userId: { in: [...userIds] } }, orderBy: [{ userId: 'asc' }, { mutedUserId: 'asc' }] });
export const exportAlertWords = (db: Db, userIds: readonly number[]) => db.alertWord.findMany({ where: { userId: { in: [...userIds] } }, orderBy: { id: 'asc' } });
export const exportScheduledMessages = (db: Db, userIds: readonly number[]) =>
  db.scheduledMessage.findMany({ where: { senderId: { in: [...userIds] }, delivered: false }, orderBy: { id: 'asc' } });
export const exportBotServices = (db: Db, botIds: readonly number[]) => db.botService.findMany({ where: { botId: { in: [...botIds] } }, orderBy: { id: 'asc' } });
export const exportBotConfigData = (db: Db, botIds: readonly number[]) => db.botConfigData.findMany({ where: { botId: { in: [...botIds] } }, orderBy: [{ botId: 'asc' }, { key: 'asc' }] });
export const exportBotStorageData = (db: Db, botIds: readonly number[]) => db.botStorageData.findMany({ where: { botId: { in: [...botIds] } }, orderBy: [{ botId: 'asc' }, { key: 'asc' }] });

/** How many messages an export of this condition holds, counted up to `limit`. */
export async function countExportableMessages(db: Db, condition: Prisma.Sql, limit: number): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM (SELECT 1 FROM message m WHERE ${condition} LIMIT ${limit}::int) s`;
  return row?.n ?? 0;
}

/** The migrations the database has applied (Prisma's history table), by name, in order: the export's migration_status.json. */
export async function appliedMigrationNames(db: Db): Promise<string[]> {
  const rows = await db.$queryRaw<{ name: string }[]>`
    SELECT migration_name AS name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`;
  return rows.map((r) => r.name);
}
