// Uploaded avatars and custom emoji, outside the API: GET|HEAD /user_avatars/<realm id>/<hash>[-medium].png
// /user_avatars/<realm id>/realm/{icon,logo,night_logo}.png (the organization's images, lib/realm-images.ts)
// and /user_avatars/<realm id>/emoji/images/[still/]<file> (Zulip's URL shapes). Emoji images are
// public too (their names are a salted hash of the emoji's id), re-encoded by Parley in the type their
// extension names. As Zulip's, they are public: the path holds a secret-salted hash of the user and the
// avatar's version (lib/avatar.ts), so it can be neither guessed nor enumerated, and a new avatar gets
// a new path (the answer may be cached for good). Every answer is a PNG that Parley encoded itself,
// with `X-Content-Type-Options: nosniff` and the same sandboxing Content-Security-Policy as uploads.
import { Router } from 'express';
import type { AppDeps } from '../deps.ts';
import { ResourceNotFoundError } from '../errors.ts';
import { streamStoredBody } from './stored-body.ts';

const IMAGE_TYPES: Readonly<Record<string, string>> = { avif: 'image/avif', gif: 'image/gif', jpg: 'image/jpeg', png: 'image/png', webp: 'image/webp' };
const CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox";

export function userAvatarsRouter(deps: AppDeps): Router {
  const router = Router({ caseSensitive: true, strict: true });
  router.get(/^\/user_avatars\/\d+\/(?:[0-9a-f]{40}(?:-medium)?\.png|realm\/(?:icon|logo|night_logo)\.png|emoji\/images\/(?:[0-9a-f]{8}\.(?:avif|gif|jpg|png|webp)|still\/[0-9a-f]{8}\.png))$/, async (req, res, next) => {
    try {
      const m = /^\/user_avatars\/(\d+)\/(?:([0-9a-f]{40}(?:-medium)?\.png|realm\/[a-z_]+\.png)|emoji\/(images\/.+))$/.exec(req.path)!;
      const key = m[2] !== undefined ? `avatars/${m[1]}/${m[2]}` : `emoji/${m[1]}/${m[3]}`;
      const read = await deps.storage.get(key);
      if (read === null || 'unsatisfiable' in read) throw new ResourceNotFoundError('Not Found');
      res.status(200);
      res.setHeader('Content-Type', IMAGE_TYPES[key.slice(key.lastIndexOf('.') + 1)]!);
      res.setHeader('Content-Length', String(read.size));
      res.setHeader('Content-Security-Policy', CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      // The organization's images keep their path from one version to the next (as Zulip's): revalidated.
      res.setHeader('Cache-Control', key.includes('/realm/') ? 'no-cache' : 'public, max-age=31536000, immutable');
      await streamStoredBody(req, res, read, deps.logger, { msg: 'reading an avatar failed' });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
