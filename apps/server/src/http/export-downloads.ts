// The tarballs of finished organization exports, outside the API: GET|HEAD
// /user_avatars/exports/<realm id>/<random>/<name>.tar.gz, the `export_url` of GET /export/realm.
// As Zulip's (which serves them from its avatars directory, or a signed S3 URL), no credentials are
// asked: the 24-character random segment (18 random bytes) is the secret, and it is only ever shown to
// the organization's administrators. The link works for 7 days after the export succeeded
// (data/exports.repo.ts EXPORT_LINK_LIFETIME_MS says why), then answers 404; GET /export/realm still lists
// the export with its export_url, as Zulip's does until it is deleted. A path of an export that is
// unknown, failed, deleted or expired, or of another organization, answers 404; with presigned S3 downloads configured, the answer redirects to a
// presigned URL of the bucket that expires within a minute.
import { Router } from 'express';
import type { AppDeps } from '../deps.ts';
import { ResourceNotFoundError } from '../errors.ts';
import { streamStoredBody } from './stored-body.ts';
import { isDownloadableExport } from '../queries/exports.ts';

const EXPORT_PATH = /^\/user_avatars\/exports\/(\d{1,10})\/[A-Za-z0-9_-]{24}\/(zulip-export-[a-z0-9]{8}\.tar\.gz)$/;

export function exportDownloadsRouter(deps: AppDeps): Router {
  const router = Router({ caseSensitive: true, strict: true });
  router.get(EXPORT_PATH, async (req, res, next) => {
    try {
      const m = EXPORT_PATH.exec(req.path)!;
      const realmId = Number(m[1]);
      if (!(await isDownloadableExport(deps.db, realmId, req.path))) throw new ResourceNotFoundError('Not Found');
      const key = req.path.replace(/^\/user_avatars\//, '');
      const disposition = `attachment; filename="${m[2]}"`;
      const redirect = await deps.storage.redirectUrl(key, { expiresInSeconds: 60, contentType: 'application/gzip', contentDisposition: disposition });
      if (redirect) {
        res.setHeader('Cache-Control', 'private, no-store');
        res.redirect(302, redirect);
        return;
      }
      const read = await deps.storage.get(key);
      if (read === null || 'unsatisfiable' in read) throw new ResourceNotFoundError('Not Found');
      res.status(200);
      res.setHeader('Content-Type', 'application/gzip');
      res.setHeader('Content-Length', String(read.size));
      res.setHeader('Content-Disposition', disposition);
      res.setHeader('Cache-Control', 'private, no-store');
      res.setHeader('X-Content-Type-Options', 'nosniff');
      await streamStoredBody(req, res, read, deps.logger, { msg: 'reading an export failed' });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
