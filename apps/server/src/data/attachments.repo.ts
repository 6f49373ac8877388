// Uploaded files' records (table `attachment`) and the messages that link to them
// (`attachment_message`). A link to a message that no longer exists counts for nothing: every read
// joins `message` (messages are deleted without touching these links; the periodic clean-up removes
// such links). The file's bytes are in storage (src/storage), under `files/<path_id>`.
import { Prisma, type Db } from './db.ts';
import type { FetchChannel } from './message-fetch.repo.ts';

export interface AttachmentRow {
  id: number;
  realmId: number;
  ownerId: number;
  pathId: string;
  fileName: string;
  size: number;
  contentType: string | null;
  createTime: Date;
}

/** An attachment with the messages (that still exist) linking to it: Zulip's Attachment.to_dict. */
export interface AttachmentWithMessages extends AttachmentRow {
  messages: Array<{ id: number; dateSent: Date }>;
}

const COLUMNS = Prisma.sql`a.id, a.realm_id AS "realmId", a.owner_id AS "ownerId", a.path_id AS "pathId", a.file_name AS "fileName",
  a.size::float8 AS size, a.content_type AS "contentType", a.create_time AS "createTime"`;

const MESSAGES = Prisma.sql`COALESCE((
    SELECT json_agg(json_build_object('id', m.id, 'dateSent', m.date_sent) ORDER BY m.id)
    FROM attachment_message am JOIN message m ON m.id = am.message_id
    WHERE am.attachment_id = a.id), '[]'::json) AS messages`;

function withDates(row: AttachmentRow & { messages: Array<{ id: number; dateSent: string | Date }> }): AttachmentWithMessages {
  return { ...row, messages: row.messages.map((m) => ({ id: m.id, dateSent: new Date(m.dateSent) })) };
}

export async function insertAttachment(
  db: Db,
  row: { realmId: number; ownerId: number; pathId: string; fileName: string; size: number; contentType: string },
): Promise<AttachmentRow> {
  const rows = await db.$queryRaw<AttachmentRow[]>`
    INSERT INTO attachment AS a (realm_id, owner_id, path_id, file_name, size, content_type)
    VALUES (${row.realmId}::int, ${row.ownerId}::int, ${row.pathId}, ${row.fileName}, ${row.size}::bigint, ${row.contentType})
    RETURNING ${COLUMNS}`;
  return rows[0]!;
}

/** Bytes taken by the organization's uploaded files (Zulip's currently_used_upload_space_bytes). */
export async function usedUploadSpace(db: Db, realmId: number): Promise<number> {
  const rows = await db.$queryRaw<Array<{ used: number }>>`SELECT COALESCE(sum(size), 0)::float8 AS used FROM attachment WHERE realm_id = ${realmId}::int`;
  return rows[0]!.used;
}

export async function findAttachmentByPathId(db: Db, pathId: string): Promise<AttachmentRow | null> {
  const rows = await db.$queryRaw<AttachmentRow[]>`SELECT ${COLUMNS} FROM attachment a WHERE a.path_id = ${pathId}`;
  return rows[0] ?? null;
}

/** The organization's attachments at these paths (unknown paths are left out). */
export async function attachmentsByPathIds(db: Db, realmId: number, pathIds: string[]): Promise<AttachmentRow[]> {
  if (pathIds.length === 0) return [];
  return db.$queryRaw<AttachmentRow[]>`
    SELECT ${COLUMNS} FROM attachment a WHERE a.realm_id = ${realmId}::int AND a.path_id = ANY(${pathIds}::text[]) ORDER BY a.id`;
}

/** One of the owner's attachments, locked until the transaction ends; null when it is not theirs or does not exist. */
export async function lockOwnAttachment(db: Db, ownerId: number, attachmentId: number): Promise<AttachmentRow | null> {
  const rows = await db.$queryRaw<AttachmentRow[]>`
    SELECT ${COLUMNS} FROM attachment a WHERE a.id = ${attachmentId}::int AND a.owner_id = ${ownerId}::int FOR UPDATE`;
  return rows[0] ?? null;
}

/** The user's attachments (oldest first) with the messages linking to each. */
export async function attachmentsOfOwner(db: Db, ownerId: number): Promise<AttachmentWithMessages[]> {
  const rows = await db.$queryRaw<Array<AttachmentRow & { messages: Array<{ id: number; dateSent: string }> }>>`
    SELECT ${COLUMNS}, ${MESSAGES} FROM attachment a WHERE a.owner_id = ${ownerId}::int ORDER BY a.id`;
  return rows.map(withDates);
}

export async function attachmentsWithMessages(db: Db, ids: number[]): Promise<AttachmentWithMessages[]> {
  if (ids.length === 0) return [];
  const rows = await db.$queryRaw<Array<AttachmentRow & { messages: Array<{ id: number; dateSent: string }> }>>`
    SELECT ${COLUMNS}, ${MESSAGES} FROM attachment a WHERE a.id = ANY(${ids}::int[]) ORDER BY a.id`;
  return rows.map(withDates);
}

export async function deleteAttachment(db: Db, id: number): Promise<void> {
  await db.$executeRaw`DELETE FROM attachment WHERE id = ${id}::int`;
}

/**
 * The messages (that exist) linking to an attachment, each with what deciding the viewer's access to
 * it needs (data/message-fetch.repo.ts's shape): the viewer's flags (0 for a row deferred until they
 * next read, null without one) and the message's channel with whether the viewer is subscribed.
 */
export async function linkingMessagesFor(
  db: Db,
  attachmentId: number,
  viewerId: number | null,
): Promise<Array<{ messageId: number; flags: number | null; channel: FetchChannel | null }>> {
  const viewer = viewerId ?? -1;
  return db.$queryRaw`
    SELECT m.id AS "messageId",
      CASE WHEN ${viewerId === null}::boolean THEN NULL
           ELSE COALESCE((SELECT um.flags::int FROM user_message um WHERE um.user_id = ${viewer}::int AND um.message_id = m.id),
                         CASE WHEN ${viewer}::int = ANY(m.deferred_recipient_ids) THEN 0 END) END AS flags,
      (SELECT row_to_json(x) FROM (
         SELECT c.id, c.name, c.invite_only AS "inviteOnly", c.is_web_public AS "isWebPublic",
           c.history_public_to_subscribers AS "historyPublicToSubscribers", c.is_archived AS "isArchived",
           c.can_administer_channel_group_id AS "canAdministerChannelGroupId", c.can_add_subscribers_group_id AS "canAddSubscribersGroupId",
           c.can_subscribe_group_id AS "canSubscribeGroupId", c.can_remove_subscribers_group_id AS "canRemoveSubscribersGroupId",
           EXISTS (SELECT 1 FROM subscription s WHERE s.user_id = ${viewer}::int AND s.channel_id = c.id AND s.active) AS subscribed
         FROM channel c WHERE c.id = m.channel_id) x) AS channel
    FROM attachment_message am JOIN message m ON m.id = am.message_id
    WHERE am.attachment_id = ${attachmentId}::int
    ORDER BY m.id`;
}

/** The attachments a message links to. */
export async function attachmentsOfMessage(db: Db, messageId: number): Promise<Array<{ id: number; pathId: string; ownerId: number }>> {
  return db.$queryRaw`
    SELECT a.id, a.path_id AS "pathId", a.owner_id AS "ownerId"
    FROM attachment_message am JOIN attachment a ON a.id = am.attachment_id
    WHERE am.message_id = ${messageId}::int ORDER BY a.id`;
}

export async function linkAttachments(db: Db, attachmentIds: number[], messageId: number): Promise<void> {
  if (attachmentIds.length === 0) return;
  await db.$executeRaw`
    INSERT INTO attachment_message (attachment_id, message_id)
    SELECT id, ${messageId}::int FROM unnest(${attachmentIds}::int[]) AS id
    ON CONFLICT DO NOTHING`;
}

export async function unlinkAttachments(db: Db, attachmentIds: number[], messageId: number): Promise<void> {
  if (attachmentIds.length === 0) return;
  await db.$executeRaw`DELETE FROM attachment_message WHERE message_id = ${messageId}::int AND attachment_id = ANY(${attachmentIds}::int[])`;
}

/** Of these attachments, those no existing message links to any more. */
export async function unlinkedAttachmentIds(db: Db, attachmentIds: number[]): Promise<number[]> {
  if (attachmentIds.length === 0) return [];
  const rows = await db.$queryRaw<Array<{ id: number }>>`
    SELECT a.id FROM attachment a WHERE a.id = ANY(${attachmentIds}::int[])
      AND NOT EXISTS (SELECT 1 FROM attachment_message am JOIN message m ON m.id = am.message_id WHERE am.attachment_id = a.id)
    ORDER BY a.id`;
  return rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// The periodic clean-up (actions/attachments.ts)

/** Removes the links to messages that no longer exist; the number removed. */
export async function deleteLinksToDeletedMessages(db: Db): Promise<number> {
  return db.$executeRaw`DELETE FROM attachment_message am WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = am.message_id)`;
}

/**
 * Attachments made before `before` that nothing links to: no existing message, and no scheduled
 * message still waiting to be sent (Zulip's ScheduledMessage claims; here found in their content).
 */
export async function oldUnclaimedAttachments(db: Db, before: Date, limit: number): Promise<Array<{ id: number; pathId: string; ownerId: number; realmId: number }>> {
  return db.$queryRaw`
    SELECT a.id, a.path_id AS "pathId", a.owner_id AS "ownerId", a.realm_id AS "realmId" FROM attachment a
    WHERE a.create_time < ${before}
      AND NOT EXISTS (SELECT 1 FROM attachment_message am JOIN message m ON m.id = am.message_id WHERE am.attachment_id = a.id)
      AND NOT EXISTS (SELECT 1 FROM scheduled_message s
                      WHERE s.realm_id = a.realm_id AND NOT s.delivered AND NOT s.failed AND strpos(s.content, '/user_uploads/' || a.path_id) > 0)
    ORDER BY a.id LIMIT ${limit}::int`;
}

export async function deleteAttachments(db: Db, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.$executeRaw`DELETE FROM attachment WHERE id = ANY(${ids}::int[])`;
}

/** Which of these paths have a record. */
export async function existingPathIds(db: Db, pathIds: string[]): Promise<Set<string>> {
  if (pathIds.length === 0) return new Set();
  const rows = await db.$queryRaw<Array<{ path_id: string }>>`SELECT path_id FROM attachment WHERE path_id = ANY(${pathIds}::text[])`;
  return new Set(rows.map((r) => r.path_id));
}
