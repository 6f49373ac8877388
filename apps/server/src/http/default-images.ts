// The images Parley names without anyone having uploaded them, at the paths Zulip's clients are given
// (they resolve them against the server's URL, as Zulip's own static files):
//   GET|HEAD /static/images/logo/zulip-org-logo.svg     the organization's logo (day and night) while
//                                                       none is uploaded (lib/realm-images.ts realmLogoUrl)
//   GET|HEAD /static/images/loading/loader-black.svg    the placeholder of an image whose thumbnail is
//                                                       still being made (lib/thumbnails.ts)
// Parley's own drawings (not Zulip's artwork), held in memory; no script, and served with the same
// sandboxing policy as every file. The organization's default icon is a gravatar URL, as Zulip's.
import { Router, type Request, type Response } from 'express';

/** A plain speech bubble on a rounded square: Parley's default organization logo. */
const ORGANIZATION_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" viewBox="0 0 100 100"><rect width="100" height="100" rx="22" fill="#6492fe"/><path d="M26 30h48a6 6 0 0 1 6 6v24a6 6 0 0 1-6 6H46L32 77V66h-6a6 6 0 0 1-6-6V36a6 6 0 0 1 6-6z" fill="#fff"/></svg>\n`;
/** Three dots: an image on its way. */
const LOADING = `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" viewBox="0 0 40 40"><g fill="#000"><circle cx="8" cy="20" r="4" opacity=".3"/><circle cx="20" cy="20" r="4" opacity=".6"/><circle cx="32" cy="20" r="4"/></g></svg>\n`;

const CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

export const DEFAULT_IMAGE_PATHS = {
  organizationLogo: '/static/images/logo/zulip-org-logo.svg',
  loading: '/static/images/loading/loader-black.svg',
} as const;

export function defaultImagesRouter(): Router {
  const router = Router({ caseSensitive: true, strict: true });
  const serve = (svg: string) => {
    const body = Buffer.from(svg, 'utf8');
    return (req: Request, res: Response) => {
      res.status(200);
      res.setHeader('Content-Type', 'image/svg+xml');
      res.setHeader('Content-Length', String(body.length));
      res.setHeader('Content-Security-Policy', CSP);
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Cache-Control', 'public, max-age=86400');
      res.end(req.method === 'HEAD' ? undefined : body);
    };
  };
  router.get(DEFAULT_IMAGE_PATHS.organizationLogo, serve(ORGANIZATION_LOGO));
  router.get(DEFAULT_IMAGE_PATHS.loading, serve(LOADING));
  return router;
}
