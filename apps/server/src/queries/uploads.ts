// Reading uploaded files: the access decision (access/uploads.ts) with Zulip's answers, and the
// temporary URL of a file (security/upload-tokens.ts).
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { fileAccess } from '../access/uploads.ts';
import type { AttachmentRow } from '../data/attachments.repo.ts';
import { JsonableError } from '../errors.ts';

export const fileNotFound = () => new JsonableError('This file does not exist or has been deleted.', { status: 404 });
export const fileForbidden = () => new JsonableError('You are not authorized to view this file.', { status: 403 });

/** The file at `pathId` if `viewer` (null: a spectator) may read it; Zulip's 404 and 403 otherwise. */
export async function readableFile(deps: Pick<AppDeps, 'db'>, realm: Realm, viewer: User | null, pathId: string): Promise<AttachmentRow> {
  const access = await fileAccess(deps.db, realm, viewer, pathId);
  if (access.kind === 'not-found') throw fileNotFound();
  if (access.kind === 'forbidden') throw fileForbidden();
  return access.attachment;
}

/** `/user_uploads/temporary/<token>/<name>`: the file without credentials, for the next 60 seconds. */
export async function temporaryFileUrl(deps: Pick<AppDeps, 'db' | 'uploadTokens'>, realm: Realm, user: User, pathId: string): Promise<string> {
  const attachment = await readableFile(deps, realm, user, pathId);
  const name = attachment.pathId.slice(attachment.pathId.lastIndexOf('/') + 1);
  return `/user_uploads/temporary/${deps.uploadTokens.sign(attachment.pathId)}/${encodeURIComponent(name)}`;
}
