// Uploaded images (table `image_attachment`, Zulip's ImageAttachment): the image as rendered and the
// thumbnails made of it; and the messages that link to one, for re-rendering when its thumbnail is made.
import type { Db } from './db.ts';
import type { StoredThumbnail } from '../lib/thumbnails.ts';

export interface ImageAttachmentRow {
  attachmentId: number;
  realmId: number;
  pathId: string;
  width: number;
  height: number;
  frames: number;
  contentType: string | null;
  thumbnails: StoredThumbnail[];
}

const COLUMNS = `attachment_id AS "attachmentId", realm_id AS "realmId", path_id AS "pathId", original_width_px AS width,
  original_height_px AS height, frames, content_type AS "contentType", thumbnail_metadata AS thumbnails`;

export async function insertImageAttachment(db: Db, row: Omit<ImageAttachmentRow, 'thumbnails'>): Promise<void> {
  await db.$executeRaw`
    INSERT INTO image_attachment (attachment_id, realm_id, path_id, original_width_px, original_height_px, frames, content_type)
    VALUES (${row.attachmentId}::int, ${row.realmId}::int, ${row.pathId}, ${row.width}::int, ${row.height}::int, ${row.frames}::int, ${row.contentType})`;
}

/** The row, locked until commit (the thumbnail job's), or null when it is gone. */
export async function lockImageAttachment(tx: Db, attachmentId: number): Promise<ImageAttachmentRow | null> {
  const rows = await tx.$queryRawUnsafe<ImageAttachmentRow[]>(`SELECT ${COLUMNS} FROM image_attachment WHERE attachment_id = $1::int FOR UPDATE`, attachmentId);
  return rows[0] ?? null;
}

export async function findImageAttachment(db: Db, attachmentId: number): Promise<ImageAttachmentRow | null> {
  const rows = await db.$queryRawUnsafe<ImageAttachmentRow[]>(`SELECT ${COLUMNS} FROM image_attachment WHERE attachment_id = $1::int`, attachmentId);
  return rows[0] ?? null;
}

/** The organization's images at these paths (paths that are not images are left out). */
export async function imageAttachmentsByPathIds(db: Db, realmId: number, pathIds: string[]): Promise<ImageAttachmentRow[]> {
  if (pathIds.length === 0) return [];
  return db.$queryRawUnsafe<ImageAttachmentRow[]>(`SELECT ${COLUMNS} FROM image_attachment WHERE realm_id = $1::int AND path_id = ANY($2::text[])`, realmId, pathIds);
}

export async function saveThumbnails(tx: Db, attachmentId: number, thumbnails: StoredThumbnail[]): Promise<void> {
  await tx.$executeRaw`UPDATE image_attachment SET thumbnail_metadata = ${JSON.stringify(thumbnails)}::jsonb WHERE attachment_id = ${attachmentId}::int`;
}

export async function deleteImageAttachment(tx: Db, attachmentId: number): Promise<void> {
  await tx.$executeRaw`DELETE FROM image_attachment WHERE attachment_id = ${attachmentId}::int`;
}

/** The messages (that exist) linking to the attachment, locked in id order, with their rendering. */
export async function lockMessagesLinking(
  tx: Db,
  attachmentId: number,
): Promise<Array<{ id: number; realmId: number; senderId: number; channelId: number | null; content: string; renderedContent: string }>> {
  return tx.$queryRaw`
    SELECT m.id, m.realm_id AS "realmId", m.sender_id AS "senderId", m.channel_id AS "channelId", m.content, m.rendered_content AS "renderedContent"
    FROM attachment_message am JOIN message m ON m.id = am.message_id
    WHERE am.attachment_id = ${attachmentId}::int ORDER BY m.id FOR NO KEY UPDATE OF m`;
}

export async function setRenderedContent(tx: Db, messageId: number, renderedContent: string): Promise<void> {
  await tx.$executeRaw`UPDATE message SET rendered_content = ${renderedContent} WHERE id = ${messageId}::int`;
}

/** An uploaded file's path id, or null when it no longer exists. */
export async function attachmentPathId(db: Db, attachmentId: number): Promise<string | null> {
  const rows = await db.$queryRaw<Array<{ pathId: string }>>`SELECT path_id AS "pathId" FROM attachment WHERE id = ${attachmentId}::int`;
  return rows[0]?.pathId ?? null;
}

/** The ids of the organization's uploaded files at these paths. */
export async function attachmentIdsByPathIds(db: Db, realmId: number, pathIds: string[]): Promise<number[]> {
  if (pathIds.length === 0) return [];
  const rows = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM attachment WHERE realm_id = ${realmId}::int AND path_id = ANY(${pathIds}::text[]) ORDER BY id`;
  return rows.map((r) => r.id);
}
