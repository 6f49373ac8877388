// GET|HEAD /user_uploads/thumbnail/<realm id>/<path>/<format> (Zulip's serve_file with a
// thumbnail_format): the thumbnail of an uploaded image, to whoever may read the image itself
// (access/uploads.ts through queries/uploads.ts readableFile). A current format not made yet is made
// now, as Zulip does (the job's code; sharp runs on libuv's thread pool); a format that is not current
// gets the closest one made. Served with the same nosniff and sandboxing CSP as the files.
import type { NextFunction, Request, Response } from 'express';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { findImageAttachment } from '../data/image-attachments.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { readableFile, fileNotFound } from '../queries/uploads.ts';
import { doMakeThumbnails } from '../actions/thumbnails.ts';
import { THUMBNAIL_FORMATS, formatName, thumbnailKey, type StoredThumbnail, type ThumbnailFormat } from '../lib/thumbnails.ts';
import { FILE_CSP } from './user-uploads.ts';
import { streamStoredBody } from './stored-body.ts';

/** The path id and format name of a thumbnail URL's path, or null. */
function thumbnailPathOf(urlPath: string): { pathId: string; format: string } | null {
  const m = /^\/user_uploads\/thumbnail\/(\d+\/.+)\/([^/]+)$/.exec(urlPath);
  if (!m) return null;
  try {
    return { pathId: decodeURIComponent(m[1]!), format: decodeURIComponent(m[2]!) };
  } catch {
    return null;
  }
}

const asFormat = (t: StoredThumbnail): ThumbnailFormat => ({ extension: 'webp', maxWidth: t.max_width, maxHeight: t.max_height, animated: t.animated });

export function serveThumbnail(deps: AppDeps, reader: (req: Request) => Promise<{ user: User | null; realm: Realm }>) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const parsed = thumbnailPathOf(req.path);
      if (parsed === null) throw fileNotFound();
      const { user, realm } = await reader(req);
      let attachmentId: number;
      try {
        attachmentId = (await readableFile(deps, realm, user, parsed.pathId)).id;
      } catch (error) {
        if (user === null && error instanceof JsonableError && error.status === 403) throw new UnauthorizedError('Missing authorization header for basic auth');
        throw error;
      }
      let image = await findImageAttachment(deps.db, attachmentId);
      // Not an image we thumbnail, or not a format name at all (Zulip's `<w>x<h>[-anim].<ext>`).
      if (!image || !/^\d+x\d+(?:-anim)?\.\w+$/.test(parsed.format)) throw fileNotFound();
      const current = THUMBNAIL_FORMATS.filter((f) => image!.frames > 1 || !f.animated);
      const wanted = current.find((f) => formatName(f) === parsed.format);
      if (wanted && !image.thumbnails.some((t) => formatName(asFormat(t)) === parsed.format)) {
        await doMakeThumbnails(deps, attachmentId);
        image = await findImageAttachment(deps.db, attachmentId);
        if (!image) throw fileNotFound(); // it did not decode
      }
      const made = image.thumbnails.map(asFormat);
      const requestedAnimated = /-anim\.\w+$/.test(parsed.format);
      const format = made.find((f) => formatName(f) === parsed.format) ?? made.find((f) => f.animated === requestedAnimated) ?? made[0];
      if (!format) throw fileNotFound();
      const read = await deps.storage.get(thumbnailKey(image.pathId, format));
      if (read === null || 'unsatisfiable' in read) throw fileNotFound();
      res.status(200);
      res.setHeader('Content-Type', 'image/webp');
      res.setHeader('Content-Disposition', `inline; filename="${formatName(format)}"`);
      res.setHeader('Content-Security-Policy', FILE_CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cache-Control', 'private, immutable');
      res.setHeader('Content-Length', String(read.size));
      await streamStoredBody(req, res, read, deps.logger, { msg: 'reading a thumbnail failed' });
    } catch (error) {
      next(error);
    }
  };
}
