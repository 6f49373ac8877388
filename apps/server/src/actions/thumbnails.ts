// Thumbnails of uploaded images (Zulip's zerver/lib/thumbnail.py and zerver/worker/thumbnail.py):
// - at upload, an image's header is read (bounded: Zulip's pixel limits) and, when it decodes, its
//   image_attachment row is written with the upload's record and a `thumbnail` job queued with it
//   (it runs after commit, off the request);
// - rendering adds Zulip's inline preview block for each linked uploaded image: a loading placeholder
//   until its thumbnail exists, the thumbnail after;
// - the job makes the missing formats into storage, then re-renders the messages linking the image
//   and tells whoever may see each an `update_message` with `rendering_only: true`. An image that
//   fails to decode loses its row, and its preview blocks are removed from the messages (a plain link
//   remains), as Zulip does.
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import type { AfterCommit } from '../events/bus.ts';
import { findChannelById } from '../data/channels.repo.ts';
import { channelMessageCandidates, directMessageCandidates } from '../data/message-edits.repo.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import {
  deleteImageAttachment,
  findImageAttachment,
  imageAttachmentsByPathIds,
  insertImageAttachment,
  lockImageAttachment,
  lockMessagesLinking,
  attachmentIdsByPathIds,
  attachmentPathId,
  saveThumbnails,
  setRenderedContent,
  type ImageAttachmentRow,
} from '../data/image-attachments.repo.ts';
import { seesChannelMessage } from '../access/message-edits.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import { bareContentType } from '../lib/uploads.ts';
import {
  THUMBNAIL_ACCEPT_IMAGE_TYPES,
  makeThumbnail,
  missingFormats,
  pendingPreviewPathIds,
  probeImage,
  rewritePreview,
  thumbnailKey,
  thumbnailKeys,
  uploadLinks,
  withImagePreviews,
  type ImagePreview,
  type ProbedImage,
  type StoredThumbnail,
} from '../lib/thumbnails.ts';
import { fileKey } from './uploads.ts';

/** Images larger than this (bytes) are not read back for a preview (bounded memory per upload). */
export const MAX_THUMBNAIL_SOURCE_BYTES = 64 * 1024 * 1024;

async function readObject(deps: Pick<AppDeps, 'storage'>, key: string, maxBytes: number): Promise<Buffer | null> {
  const read = await deps.storage.get(key);
  if (read === null || 'unsatisfiable' in read) return null;
  if (read.size > maxBytes) {
    read.body.destroy();
    return null;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of read.body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * At upload, once the file is stored: whether it is an image worth previewing (Zulip's
 * maybe_thumbnail): a claimed type Zulip thumbnails, and a header that decodes within the pixel limits.
 * Only the header is decoded (sharp, on libuv's thread pool). Null for anything else; never throws.
 */
export async function probeUploadedImage(deps: Pick<AppDeps, 'storage' | 'logger'>, pathId: string, contentType: string, size: number): Promise<ProbedImage | null> {
  const type = bareContentType(contentType);
  if (type === null || !THUMBNAIL_ACCEPT_IMAGE_TYPES.has(type) || size > MAX_THUMBNAIL_SOURCE_BYTES) return null;
  try {
    const bytes = await readObject(deps, fileKey(pathId), MAX_THUMBNAIL_SOURCE_BYTES);
    return bytes === null ? null : await probeImage(bytes);
  } catch (error) {
    deps.logger.warn({ err: error, path_id: pathId }, 'could not read an uploaded image back');
    return null;
  }
}

/** In the upload's transaction: the image's row, and its thumbnail job (runs only if `tx` commits). */
export async function recordUploadedImage(
  deps: Pick<AppDeps, 'jobs'>,
  tx: Db,
  upload: { attachmentId: number; realmId: number; pathId: string; contentType: string },
  image: ProbedImage,
): Promise<void> {
  await insertImageAttachment(tx, { attachmentId: upload.attachmentId, realmId: upload.realmId, pathId: upload.pathId, width: image.width, height: image.height, frames: image.frames, contentType: bareContentType(upload.contentType) });
  await deps.jobs.send(tx, 'thumbnail', { attachmentId: upload.attachmentId });
}

const previewOf = (row: ImageAttachmentRow): ImagePreview => ({
  pathId: row.pathId,
  width: row.width,
  height: row.height,
  contentType: row.contentType,
  frames: row.frames,
  ready: row.thumbnails.length > 0,
});

/**
 * Rendered message HTML with the inline previews of the uploaded images it links (when the
 * organization's inline_image_preview is on), as it stands now: placeholders for pending thumbnails.
 */
export async function addImagePreviews(db: Db, realm: Pick<Realm, 'id' | 'inlineImagePreview'>, html: string): Promise<string> {
  if (!realm.inlineImagePreview || !html.includes('<a href="/user_uploads/')) return html;
  const pathIds = [...new Set(uploadLinks(html).map((l) => l.pathId))];
  const rows = await imageAttachmentsByPathIds(db, realm.id, pathIds);
  if (rows.length === 0) return html;
  return withImagePreviews(html, new Map(rows.map((r) => [r.pathId, previewOf(r)])));
}

/**
 * The `thumbnail` job: makes the image's missing thumbnails (one image at a time per process; sharp
 * decodes on libuv's thread pool with the pixel limit), stores them, then in one transaction records
 * them and re-renders the messages linking the image. Idempotent: a re-run finds nothing missing.
 */
export async function doMakeThumbnails(deps: AppDeps, attachmentId: number): Promise<{ made: number; failed: boolean }> {
  const row = await findImageAttachment(deps.db, attachmentId);
  const missing = row ? missingFormats(row) : [];
  const made: StoredThumbnail[] = [];
  let failed = false;
  if (row && missing.length > 0) {
    // Storage failures throw (the queue retries the job); a decoding failure means no preview.
    const bytes = await readObject(deps, fileKey(row.pathId), MAX_THUMBNAIL_SOURCE_BYTES);
    if (bytes === null) failed = true; // the original is gone (or too large to read back)
    for (const format of bytes === null ? [] : missing) {
      let thumb: Awaited<ReturnType<typeof makeThumbnail>>;
      try {
        thumb = await makeThumbnail(bytes!, row, format);
      } catch (error) {
        failed = true;
        deps.logger.warn({ err: error, path_id: row.pathId }, 'thumbnailing an uploaded image failed');
        break;
      }
      await deps.storage.put(thumbnailKey(row.pathId, format), Readable.from([thumb.data]), { contentType: thumb.meta.content_type });
      made.push(thumb.meta);
    }
  }

  await inTransaction(deps.db, async (tx, afterCommit) => {
    const locked = await lockImageAttachment(tx, attachmentId);
    let pathId: string;
    let preview: ImagePreview | null;
    if (!locked) {
      // Not (or no longer) an image: messages rendered with its placeholder lose the preview block.
      const path = await attachmentPathId(tx, attachmentId);
      if (path === null) {
        // The file was deleted while its thumbnails were being made: they go too.
        if (row && made.length > 0) afterCommit(() => void deps.storage.delete(thumbnailKeys(row.pathId)).catch((e: unknown) => deps.logger.error({ err: e, path_id: row.pathId }, 'could not delete the thumbnails of a deleted file')));
        return;
      }
      pathId = path;
      preview = null;
    } else if (failed && made.length === 0 && locked.thumbnails.length === 0) {
      // Never thumbnailed: most likely bad data. Not an image to preview after all.
      await deleteImageAttachment(tx, attachmentId);
      pathId = locked.pathId;
      preview = null;
    } else {
      const known = new Set(locked.thumbnails.map((t) => `${t.max_width}x${t.max_height}${t.animated}`));
      const fresh = made.filter((t) => !known.has(`${t.max_width}x${t.max_height}${t.animated}`));
      const thumbnails = [...locked.thumbnails, ...fresh];
      if (fresh.length > 0) await saveThumbnails(tx, attachmentId, thumbnails);
      pathId = locked.pathId;
      preview = previewOf({ ...locked, thumbnails });
      if (!preview.ready) return; // another run is making them
    }
    await rerenderMessages(deps, tx, afterCommit, locked?.realmId ?? null, attachmentId, pathId, preview);
  });
  return { made: made.length, failed };
}

/**
 * The messages linking the image whose preview is still a placeholder: rewritten to `preview` (or
 * without the block), each announced to whoever may see it (Zulip's do_update_embedded_data).
 */
async function rerenderMessages(deps: AppDeps, tx: Db, afterCommit: AfterCommit, realmId: number | null, attachmentId: number, pathId: string, preview: ImagePreview | null): Promise<void> {
  const at = Math.floor(Date.now() / 1000);
  const events: StoredEvent[] = [];
  let realm = realmId;
  for (const message of await lockMessagesLinking(tx, attachmentId)) {
    const rendered = rewritePreview(message.renderedContent, pathId, preview);
    if (rendered === null) continue;
    realm = message.realmId;
    await setRenderedContent(tx, message.id, rendered);
    const audience = await audienceOf(tx, message.realmId, message);
    if (audience.length === 0) continue;
    events.push({
      userIds: audience.map((a) => a.userId),
      flags: audience.map((a) => a.flags),
      payload: {
        type: 'update_message',
        user_id: null,
        edit_timestamp: at,
        message_id: message.id,
        message_ids: [message.id],
        content: message.content,
        rendered_content: rendered,
        rendering_only: true,
      },
    });
  }
  if (events.length > 0 && realm !== null) await deps.events.publish(tx, afterCommit, realm, events);
}

/**
 * In the transaction storing or editing a message: a `thumbnail` job (after commit) for each image
 * its rendering shows as pending, as Zulip re-queues them. The job then finds the message linked, so
 * one whose thumbnail was finished (or found bad) while it was being sent is re-rendered too.
 */
export async function queuePendingPreviews(deps: Pick<AppDeps, 'jobs'>, tx: Db, realmId: number, renderedContent: string): Promise<void> {
  if (!renderedContent.includes('image-loading-placeholder')) return;
  const ids = await attachmentIdsByPathIds(tx, realmId, pendingPreviewPathIds(renderedContent));
  if (ids.length > 0) await deps.jobs.sendMany(tx, 'thumbnail', ids.map((attachmentId) => ({ data: { attachmentId } })));
}

/** Who may see the message now, with their flags (as an edit's update_message goes). */
async function audienceOf(tx: Db, realmId: number, message: { id: number; channelId: number | null }): Promise<Array<{ userId: number; flags: number }>> {
  if (message.channelId === null) return directMessageCandidates(tx, message.id);
  const channel = await findChannelById(tx, realmId, message.channelId);
  if (!channel) return [];
  const candidates = await channelMessageCandidates(tx, message.id, channel.id);
  return candidates.filter((c) => seesChannelMessage(c, channel)).map((c) => ({ userId: c.userId, flags: c.flags ?? MESSAGE_FLAG_BITS.read }));
}
