// Uploaded files and the messages that link to them (Zulip's zerver/actions/uploads.py):
// - at sending and at a content edit, the `/user_uploads/…` links of the rendered content link the
//   message to those files: only files the sender may read (Zulip's do_claim_attachments checks the
//   sender's access; an uploader always may), and the uploader's clients get an `attachment` event
//   with `op` `update`;
// - an edit that drops a link unlinks the file; the editor's own files no message links to any more
//   are answered as `detached_uploads` (Zulip's check_attachment_reference_change);
// - DELETE /attachments/{id}: the file and its record, `op` `remove`;
// - the periodic clean-up (jobs: delete-unclaimed-attachments, daily): files uploaded more than five
//   weeks ago (Zulip's delete_old_unclaimed_attachments default) that no message links to any more,
//   links to messages deleted since, and what interrupted writes left in storage.
import type { EventData, Schema } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import {
  attachmentsByPathIds,
  attachmentsOfMessage,
  attachmentsWithMessages,
  deleteAttachment,
  deleteAttachments,
  deleteLinksToDeletedMessages,
  existingPathIds,
  linkAttachments,
  lockOwnAttachment,
  oldUnclaimedAttachments,
  unlinkAttachments,
  unlinkedAttachmentIds,
  usedUploadSpace,
} from '../data/attachments.repo.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import { mayReadAttachment, withMessagesOwnerMayRead } from '../access/uploads.ts';
import { findUserById } from '../data/users.repo.ts';
import { JsonableError } from '../errors.ts';
import { uploadPathIdsOf } from '../lib/upload-links.ts';
import { queuePendingPreviews } from './thumbnails.ts';
import { formatAttachment } from '../queries/attachments.ts';
import { fileKey } from './uploads.ts';
import { thumbnailKeys } from '../lib/thumbnails.ts';

interface Publishing {
  tx: Db;
  afterCommit: AfterCommit;
  deps: Pick<AppDeps, 'events' | 'jobs'>;
  realm: Realm;
}

// ---------------------------------------------------------------------------------------------
// Links from messages

/**
 * Links a message just stored to the files its rendered content links to (those the sender may
 * read). Costs nothing for content without such a link. Inside the transaction storing the message.
 */
export async function claimAttachmentLinks(t: Publishing, sender: User, message: { id: number; renderedContent: string }): Promise<void> {
  const pathIds = uploadPathIdsOf(message.renderedContent, t.realm.url);
  if (pathIds.length === 0) return;
  await claim(t, sender, message.id, pathIds);
  // Pending image previews: a thumbnail job after commit re-renders them (actions/thumbnails.ts).
  await queuePendingPreviews(t.deps, t.tx, t.realm.id, message.renderedContent);
}

/**
 * After a content edit (inside its transaction): the message's links follow its new content. Returns
 * the editor's files the edit left without any message linking to them (Zulip's detached_uploads).
 */
export async function updateAttachmentLinks(t: Publishing, editor: User, message: { id: number; renderedContent: string }): Promise<Schema<'Attachment'>[]> {
  const wanted = new Set(uploadPathIdsOf(message.renderedContent, t.realm.url));
  const linked = await attachmentsOfMessage(t.tx, message.id);
  if (wanted.size === 0 && linked.length === 0) return [];
  const dropped = linked.filter((a) => !wanted.has(a.pathId));
  await unlinkAttachments(t.tx, dropped.map((a) => a.id), message.id);
  const detachedIds = await unlinkedAttachmentIds(t.tx, dropped.filter((a) => a.ownerId === editor.id).map((a) => a.id));
  const detached = (await attachmentsWithMessages(t.tx, detachedIds)).map(formatAttachment);
  const already = new Set(linked.map((a) => a.pathId));
  const added = [...wanted].filter((p) => !already.has(p));
  if (added.length > 0) await claim(t, editor, message.id, added);
  await queuePendingPreviews(t.deps, t.tx, t.realm.id, message.renderedContent);
  return detached;
}

async function claim(t: Publishing, sender: User, messageId: number, pathIds: string[]): Promise<void> {
  const candidates = await attachmentsByPathIds(t.tx, t.realm.id, pathIds);
  const claimed: number[] = [];
  for (const attachment of candidates) {
    // Uploads of others only when the sender may read them (a forward of a file they were shown).
    if (attachment.ownerId === sender.id || (await mayReadAttachment(t.tx, t.realm, sender, attachment))) claimed.push(attachment.id);
  }
  if (claimed.length === 0) return;
  await linkAttachments(t.tx, claimed, messageId);
  const space = await usedUploadSpace(t.tx, t.realm.id);
  const events: StoredEvent[] = [];
  for (const a of await attachmentsWithMessages(t.tx, claimed)) {
    // To the uploader (Zulip tells the sender, who is the uploader but for forwarded files; a
    // file's record is its uploader's to know), with the linking messages they may read.
    const owner = a.ownerId === sender.id ? sender : await findUserById(t.tx, t.realm.id, a.ownerId);
    if (!owner) continue;
    const shown = await withMessagesOwnerMayRead(t.tx, owner, a);
    const payload: EventData<'attachment', 'update'> = { type: 'attachment', op: 'update', attachment: formatAttachment(shown), upload_space_used: space };
    events.push({ userIds: [owner.id], payload });
  }
  await t.deps.events.publish(t.tx, t.afterCommit, t.realm.id, events);
}

/** What storage holds for an uploaded file: the file and whichever thumbnails were made of it. */
export const attachmentObjectKeys = (pathId: string): string[] => [fileKey(pathId), ...thumbnailKeys(pathId)];

// ---------------------------------------------------------------------------------------------
// DELETE /attachments/{attachment_id}

export async function doRemoveAttachment(deps: AppDeps, realm: Realm, user: User, attachmentId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const attachment = await lockOwnAttachment(tx, user.id, attachmentId);
    if (!attachment) throw new JsonableError('Invalid attachment');
    try {
      await deps.storage.delete(attachmentObjectKeys(attachment.pathId));
    } catch (error) {
      deps.logger.error({ err: error, attachment_id: attachment.id }, 'storage could not delete an attachment');
      throw new JsonableError('An error occurred while deleting the attachment. Please try again later.');
    }
    await deleteAttachment(tx, attachment.id);
    const payload: EventData<'attachment', 'remove'> = { type: 'attachment', op: 'remove', attachment: { id: attachment.id }, upload_space_used: await usedUploadSpace(tx, realm.id) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
}

// ---------------------------------------------------------------------------------------------
// The periodic clean-up

/** Zulip's delete_old_unclaimed_attachments keeps unclaimed files five weeks. */
export const UNCLAIMED_ATTACHMENT_WEEKS = 5;
const BATCH = 1_000;
/** What an interrupted write leaves (or a record that was never written) is left this long first. */
const INCOMPLETE_GRACE_MS = 24 * 3600 * 1000;

export interface CleanupResult {
  deletedAttachments: number;
  deletedLinks: number;
  strayObjects: number;
  incompleteWrites: number;
}

/**
 * Deletes files uploaded before `before` that nothing links to, their records first, then their bytes
 * (a file is never served without its record, so it is unreachable from the moment its record goes).
 */
export async function doDeleteOldUnclaimedAttachments(deps: AppDeps, options: { before?: Date; strayBefore?: Date } = {}): Promise<CleanupResult> {
  const before = options.before ?? new Date(Date.now() - UNCLAIMED_ATTACHMENT_WEEKS * 7 * 24 * 3600 * 1000);
  const result: CleanupResult = { deletedAttachments: 0, deletedLinks: await deleteLinksToDeletedMessages(deps.db), strayObjects: 0, incompleteWrites: 0 };
  for (;;) {
    const batch = await oldUnclaimedAttachments(deps.db, before, BATCH);
    if (batch.length === 0) break;
    await deleteAttachments(deps.db, batch.map((a) => a.id));
    await deps.storage.delete(batch.flatMap((a) => attachmentObjectKeys(a.pathId)));
    result.deletedAttachments += batch.length;
    if (batch.length < BATCH) break;
  }
  // Files in storage without a record: a process that stopped between storing a file and recording it.
  const strayBefore = options.strayBefore ?? new Date(Date.now() - INCOMPLETE_GRACE_MS);
  let page: Array<{ key: string; lastModified: Date }> = [];
  const sweep = async () => {
    const known = await existingPathIds(deps.db, page.map((o) => o.key.slice('files/'.length)));
    const stray = page.filter((o) => !known.has(o.key.slice('files/'.length)) && o.lastModified < strayBefore).map((o) => o.key);
    await deps.storage.delete(stray);
    result.strayObjects += stray.length;
    page = [];
  };
  for await (const object of deps.storage.list('files/')) {
    page.push(object);
    if (page.length === BATCH) await sweep();
  }
  await sweep();
  // Thumbnails whose file has no record (a thumbnail job that finished after its file was deleted).
  let thumbs: Array<{ key: string; pathId: string; lastModified: Date }> = [];
  const sweepThumbnails = async () => {
    const known = await existingPathIds(deps.db, [...new Set(thumbs.map((t) => t.pathId))]);
    const stray = thumbs.filter((t) => !known.has(t.pathId) && t.lastModified < strayBefore).map((t) => t.key);
    await deps.storage.delete(stray);
    result.strayObjects += stray.length;
    thumbs = [];
  };
  for await (const object of deps.storage.list('thumbnails/')) {
    // thumbnails/<path id>/<format>
    thumbs.push({ key: object.key, pathId: object.key.slice('thumbnails/'.length, object.key.lastIndexOf('/')), lastModified: object.lastModified });
    if (thumbs.length === BATCH) await sweepThumbnails();
  }
  await sweepThumbnails();
  result.incompleteWrites = await deps.storage.removeIncomplete(strayBefore);
  return result;
}
