// The link of a password-reset e-mail (actions/password-reset.ts; sent to imported accounts):
//   GET  /accounts/password/reset/<key>  a form to choose the password (fetching the link changes nothing,
//                                         so a mail scanner that opens links cannot use it up);
//   POST /accounts/password/reset/<key>  (form field `new_password`) sets it; the link stops working.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.ts';
import { doResetPassword, inspectPasswordResetKey, PASSWORD_RESET_PATH } from '../actions/password-reset.ts';
import { JsonableError } from '../errors.ts';
import { escapeHtml } from '../lib/html.ts';
import { sendPage } from './html-page.ts';

const INVALID = 'The password reset link is malformed or invalid.';
const EXPIRED = 'The password reset link has expired or has already been used.';

function form(res: Response, status: number, key: string, email: string, error?: string): void {
  sendPage(
    res,
    status,
    'Choose your password',
    (error ? `<p role="alert">${escapeHtml(error)}</p>` : '') +
      `<form method="post" action="${PASSWORD_RESET_PATH}/${escapeHtml(key)}">` +
      `<p>Account: ${escapeHtml(email)}</p>` +
      `<label>New password <input type="password" name="new_password" autocomplete="new-password" required></label>` +
      `<button type="submit">Set password</button></form>`,
  );
}

export function passwordResetRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  router.get(`${PASSWORD_RESET_PATH}/:key`, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const key = String(req.params['key'] ?? '');
      const link = await inspectPasswordResetKey(deps, key);
      if (link.state === 'invalid') return sendPage(res, 404, 'Invalid link', `<p>${INVALID}</p>`);
      if (link.state === 'expired') return sendPage(res, 404, 'Expired link', `<p>${EXPIRED}</p>`);
      form(res, 200, key, link.user.deliveryEmail);
    } catch (error) {
      next(error);
    }
  });
  router.post(`${PASSWORD_RESET_PATH}/:key`, express.urlencoded({ extended: false, limit: '4kb' }), async (req: Request, res: Response, next: NextFunction) => {
    const key = String(req.params['key'] ?? '');
    try {
      const password = typeof req.body?.new_password === 'string' ? req.body.new_password : '';
      const outcome = await doResetPassword(deps, key, password);
      if (outcome.state === 'invalid') return sendPage(res, 404, 'Invalid link', `<p>${INVALID}</p>`);
      if (outcome.state === 'expired') return sendPage(res, 404, 'Expired link', `<p>${EXPIRED}</p>`);
      sendPage(res, 200, 'Password set', `<p>You can now log in to ${escapeHtml(outcome.realm.url)} as ${escapeHtml(outcome.user.deliveryEmail)}.</p>`);
    } catch (error) {
      if (error instanceof JsonableError) {
        const link = await inspectPasswordResetKey(deps, key).catch(() => null);
        if (link?.state === 'valid') return form(res, 400, key, link.user.deliveryEmail, error.message);
      }
      next(error);
    }
  });
  return router;
}
