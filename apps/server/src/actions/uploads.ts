// POST /user_uploads (Zulip's upload_file_backend): the one file of a multipart body, streamed into
// storage as it arrives, then its record and the uploader's `attachment` event in one transaction.
// Zulip's checks, in its words: a body without a file, more than one file, a file over the server's
// limit (refused as soon as the limit is passed, not after reading it all), the organization's quota.
// Whatever fails, nothing is left in storage: the backend removes an interrupted write, and a stored
// file whose record could not be written, or that came with a second file, is deleted.
import { randomBytes, randomInt } from 'node:crypto';
import { Transform, type Readable } from 'node:stream';
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { insertAttachment, usedUploadSpace } from '../data/attachments.repo.ts';
import { JsonableError } from '../errors.ts';
import type { IncomingFile, StreamedMultipart } from '../lib/multipart-body.ts';
import {
  CHARSET_SNIFF_BYTES,
  contentDisposition,
  isInlineContentType,
  pathFileName,
  sniffCharset,
  uploadContentType,
  uploadedFileName,
  wantsCharset,
  withCharset,
} from '../lib/uploads.ts';
import { formatAttachment } from '../queries/attachments.ts';
import { probeUploadedImage, recordUploadedImage } from './thumbnails.ts';

/** Storage key of an uploaded file. */
export const fileKey = (pathId: string) => `files/${pathId}`;

/** The organization's upload quota in bytes (Zulip's upload_quota_bytes: GiB), or null for none. */
export const uploadQuotaBytes = (realm: Realm): number | null => (realm.customUploadQuotaGb === null ? null : realm.customUploadQuotaGb * 2 ** 30);

export class RealmUploadQuotaError extends JsonableError {
  constructor() {
    super("Upload would exceed your organization's upload quota.", { code: 'REALM_UPLOAD_QUOTA' });
  }
}

const fileTooLarge = (limitMib: number) => new JsonableError(`File is larger than this server's configured maximum upload size (${limitMib} MiB).`);

/**
 * The path of a new upload (Zulip's local backend's layout): the organization, one of 256 folders,
 * 24 random URL-safe characters (144 bits: the URL cannot be guessed) and the sanitized name.
 */
export function newPathId(realmId: number, fileName: string): string {
  return `${realmId}/${randomInt(0, 256).toString(16)}/${randomBytes(18).toString('base64url')}/${pathFileName(fileName)}`;
}

export async function doUploadFile(deps: AppDeps, realm: Realm, user: User, body: StreamedMultipart): Promise<{ url: string; uri: string; filename: string }> {
  const limitMib = deps.config.maxFileUploadSizeMib;
  const limitBytes = limitMib * 1024 * 1024;
  // Don't read on for ever after a failure: the rest of a refused body is dropped up to this much more.
  const abandonAfter = Math.max(limitBytes, 64 * 1024 * 1024);
  let file: IncomingFile | null;
  let name: string;
  try {
    // The first part that is a file: parts without a usable file name are not files (Django's parser).
    do {
      file = await body.nextFile();
      if (file === null) throw new JsonableError('You must specify a file to upload');
      name = uploadedFileName(file.filename);
    } while (name === '');
  } catch (error) {
    body.abandon(abandonAfter);
    throw error;
  }

  const quota = uploadQuotaBytes(realm);
  const used = quota === null ? 0 : await usedUploadSpace(deps.db, realm.id);
  if (quota !== null && used > quota) {
    body.abandon(abandonAfter);
    throw new RealmUploadQuotaError();
  }
  const pathId = newPathId(realm.id, name);
  const key = fileKey(pathId);
  let contentType = uploadContentType(file.contentType, name);
  let stored = false;
  try {
    let source: Readable = file.stream;
    if (wantsCharset(contentType)) {
      const peeked = await peek(file.stream, CHARSET_SNIFF_BYTES);
      const charset = sniffCharset(peeked.head, peeked.complete);
      if (charset) contentType = withCharset(contentType, charset);
      source = peeked.stream;
    }
    const limited = limitSize(source, (received) => {
      if (received > limitBytes) return fileTooLarge(limitMib);
      if (quota !== null && used + received > quota) return new RealmUploadQuotaError();
      return null;
    });
    const { size } = await deps.storage.put(key, limited, {
      contentType,
      contentDisposition: contentDisposition(!isInlineContentType(contentType), name),
    });
    stored = true;
    // Zulip refuses a body with several files; here the first is stored by the time a second shows.
    const others = (await body.discardRest()).filter((f) => uploadedFileName(f) !== '');
    if (others.length > 0) throw new JsonableError('You may only upload one file at a time');
    // An image: its header read back (bounded), for previews and a thumbnail job (actions/thumbnails.ts).
    const image = await probeUploadedImage(deps, pathId, contentType, size);

    await inTransaction(deps.db, async (tx, afterCommit) => {
      const row = await insertAttachment(tx, { realmId: realm.id, ownerId: user.id, pathId, fileName: name, size, contentType });
      if (image) await recordUploadedImage(deps, tx, { attachmentId: row.id, realmId: realm.id, pathId, contentType }, image);
      const payload: EventData<'attachment', 'add'> = {
        type: 'attachment',
        op: 'add',
        attachment: formatAttachment({ ...row, messages: [] }),
        upload_space_used: await usedUploadSpace(tx, realm.id),
      };
      await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
    });
  } catch (error) {
    body.abandon(abandonAfter);
    if (stored) await deps.storage.delete([key]).catch((e: unknown) => deps.logger.error({ err: e, key }, 'could not delete an upload that failed'));
    throw error;
  }
  // The URL is relative to the server, as Zulip's (clients join it to the site).
  const url = `/user_uploads/${pathId}`;
  return { uri: url, url, filename: name };
}

/**
 * `source` with a byte counter: `check` is asked after every chunk with the bytes so far, and a failure
 * it answers ends the stream with that failure (the storage write then fails, leaving nothing). Not a
 * stage of its own (a Transform would hold up to its high-water mark of the body's chunks, which then
 * live long enough to reach V8's old generation): the counter listens to the chunks the reader takes
 * (a paused stream emits 'data' for each read without starting to flow).
 */
function limitSize(source: Readable, check: (received: number) => JsonableError | null): Readable {
  let received = 0;
  source.pause();
  source.on('data', (chunk: Buffer) => {
    received += chunk.length;
    const failure = check(received);
    if (failure) source.destroy(failure);
  });
  return source;
}

/**
 * The first `bytes` of a stream (fewer when it ends first: `complete`), and a stream that yields the
 * whole content again, those bytes first. Only the head is held in memory.
 */
async function peek(source: Readable, bytes: number): Promise<{ head: Buffer; complete: boolean; stream: Readable }> {
  const chunks: Buffer[] = [];
  let length = 0;
  let complete = false;
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
      if (length >= bytes) finish();
    };
    const onEnd = () => {
      complete = true;
      finish();
    };
    const finish = () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', reject);
      source.pause();
      resolve();
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', reject);
  });
  const head = Buffer.concat(chunks);
  const replay = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      callback(null, chunk);
    },
  });
  replay.write(head);
  if (complete) replay.end();
  else {
    source.on('error', (error) => replay.destroy(error));
    source.pipe(replay);
  }
  return { head: head.subarray(0, bytes), complete: complete || length < bytes, stream: replay };
}
