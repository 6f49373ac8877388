// The files themselves, outside the API (Zulip serves them at the same URLs, for web and API clients):
//   GET|HEAD /user_uploads/<realm id>/<path>            the file, to whoever may read it
//   GET|HEAD /user_uploads/download/<realm id>/<path>   the same, always as a download
//   GET|HEAD /user_uploads/temporary/<token>/<name>     the file, to anyone with a token not 60 s old
// Credentials as Zulip's API clients send them: HTTP Basic (email:api_key), or the API key alone in an
// `api_key` query parameter (the mobile app's way); without either, a spectator (web-public files).
// Who may read is access/uploads.ts. Every answer carries the file's type as uploaded, an
// `attachment` disposition for any type not on Zulip's inline-safe list (so HTML, SVG and scripts are
// downloaded, never rendered here), `X-Content-Type-Options: nosniff` and a Content-Security-Policy
// that sandboxes the document and forbids every script and connection, so that even a file a browser
// does render cannot act in Parley's origin. Single byte ranges are answered (206), as Zulip's nginx
// does; the bytes stream from storage, which may instead redirect the reader to a presigned URL.
import { Router, type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { findFirstRealm } from '../data/realms.repo.ts';
import { findAttachmentByPathId, type AttachmentRow } from '../data/attachments.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { fileKey } from '../actions/uploads.ts';
import { readableFile, fileNotFound } from '../queries/uploads.ts';
import { contentDisposition, guessContentType, isInlineContentType, bareContentType } from '../lib/uploads.ts';
import { parseRangeHeader } from '../storage/index.ts';
import { UPLOAD_TOKEN_VALIDITY_SECONDS } from '../security/upload-tokens.ts';
import { authenticateApiKeyAlone, createHeaderAuthenticator } from './authenticate.ts';
import { serveThumbnail } from './thumbnails.ts';
import { streamStoredBody } from './stored-body.ts';

/** The policy of every file answer: nothing runs, nothing loads but the file itself (Zulip's, plus a sandbox). */
const CSP = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; sandbox";
/** PDFs are shown by the browser's viewer, which a sandbox stops; they run no script in the origin either. */
/** The same policy, for the thumbnails (http/thumbnails.ts). */
export const FILE_CSP = CSP;
const CSP_PDF = "default-src 'none'; img-src 'self'; media-src 'self'; style-src 'unsafe-inline'; object-src 'self'";

export function userUploadsRouter(deps: AppDeps): Router {
  const router = Router({ caseSensitive: true, strict: false });
  const authenticateHeader = createHeaderAuthenticator(deps);

  /** The reader: a user by their credentials, or null (a spectator of the organization). */
  const reader = async (req: Request): Promise<{ user: User | null; realm: Realm }> => {
    if (req.headers.authorization) {
      const identity = await authenticateHeader(req);
      if (identity) return identity;
    }
    const apiKey = new URL(req.originalUrl, 'http://parley.invalid').searchParams.get('api_key');
    if (apiKey !== null) return authenticateApiKeyAlone(deps, apiKey);
    const realm = await deps.credentials.defaultRealm(() => findFirstRealm(deps.db));
    if (!realm) throw new JsonableError('No organization exists on this server yet');
    return { user: null, realm };
  };

  const serveByPath = (forceDownload: boolean) => async (req: Request, res: Response, next: NextFunction) => {
    try {
      const pathId = pathIdOf(req.path);
      if (pathId === null) throw fileNotFound();
      const { user, realm } = await reader(req);
      let attachment: AttachmentRow;
      try {
        attachment = await readableFile(deps, realm, user, pathId);
      } catch (error) {
        // Without credentials, a file one cannot read asks for them (Zulip sends spectators to log in).
        if (user === null && error instanceof JsonableError && error.status === 403) throw new UnauthorizedError('Missing authorization header for basic auth');
        throw error;
      }
      await serveFile(deps, req, res, attachment, forceDownload);
    } catch (error) {
      next(error);
    }
  };

  router.get('/user_uploads/temporary/:token/:filename', async (req, res, next) => {
    try {
      const pathId = deps.uploadTokens.verify(String(req.params['token']));
      if (pathId === null) throw new JsonableError('Invalid token');
      if (pathId.slice(pathId.lastIndexOf('/') + 1) !== req.params['filename']) throw new JsonableError('Invalid filename');
      const attachment = await findAttachmentByPathId(deps.db, pathId);
      if (!attachment) throw new JsonableError('Invalid token');
      await serveFile(deps, req, res, attachment, false);
    } catch (error) {
      next(error);
    }
  });
  router.get(/^\/user_uploads\/thumbnail\/.+/, serveThumbnail(deps, reader)); // http/thumbnails.ts
  router.get(/^\/user_uploads\/download\/.+/, serveByPath(true));
  router.get(/^\/user_uploads\/(?!temporary\/|download\/).+/, serveByPath(false));
  return router;
}

/** The path id of a file URL's path (`/user_uploads/[download/]<realm id>/<rest>`), decoded; null when it cannot be one. */
function pathIdOf(urlPath: string): string | null {
  const m = /^\/user_uploads\/(?:download\/)?(\d+)\/(.+?)\/?$/.exec(urlPath);
  if (!m) return null;
  try {
    return `${m[1]}/${decodeURIComponent(m[2]!)}`;
  } catch {
    return null; // malformed escapes
  }
}

async function serveFile(deps: AppDeps, req: Request, res: Response, attachment: AttachmentRow, forceDownload: boolean): Promise<void> {
  const contentType = attachment.contentType ?? guessContentType(attachment.fileName) ?? 'application/octet-stream';
  const download = forceDownload || !isInlineContentType(contentType);
  const disposition = contentDisposition(download, attachment.fileName);
  const key = fileKey(attachment.pathId);

  const redirect = await deps.storage.redirectUrl(key, { expiresInSeconds: UPLOAD_TOKEN_VALIDITY_SECONDS, contentType, contentDisposition: disposition });
  if (redirect !== null) {
    res.setHeader('Cache-Control', 'private, no-store');
    res.redirect(302, redirect);
    return;
  }

  const range = parseRangeHeader(req.headers.range);
  const read = await deps.storage.get(key, range);
  if (read === null) throw fileNotFound(); // the record outlived its file (a failed deletion)
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Disposition', disposition);
  res.setHeader('Content-Security-Policy', bareContentType(contentType) === 'application/pdf' ? CSP_PDF : CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Cache-Control', 'private, immutable');
  res.setHeader('Accept-Ranges', 'bytes');
  if ('unsatisfiable' in read) {
    res.status(416).setHeader('Content-Range', `bytes */${read.size}`);
    res.removeHeader('Content-Disposition');
    res.end();
    return;
  }
  if (read.range) {
    res.status(206);
    res.setHeader('Content-Range', `bytes ${read.range.start}-${read.range.end}/${read.size}`);
    res.setHeader('Content-Length', String(read.range.end - read.range.start + 1));
  } else {
    res.status(200);
    res.setHeader('Content-Length', String(read.size));
  }
  await streamStoredBody(req, res, read, deps.logger, { msg: 'reading an uploaded file failed', attachment_id: attachment.id });
}
