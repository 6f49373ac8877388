// The confirmation link of an e-mail change (mailed to the new address by PATCH /settings):
//   GET  /accounts/confirm_new_email/<key>  a page that confirms with a POST (sent at once by a line of
//                                           script; a button without it), so that a mail scanner that
//                                           merely fetches links changes nothing (Zulip does the same);
//   POST /accounts/confirm_new_email        (form field `key`) changes the address and says so.
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.ts';
import { CONFIRM_NEW_EMAIL_PATH, doConfirmEmailChange, inspectEmailChangeKey } from '../actions/user-settings.ts';
import { escapeHtml } from '../lib/html.ts';
import { sendPage } from './html-page.ts';

const INVALID = 'The confirmation link is malformed or invalid.';
const EXPIRED = 'The confirmation link has expired or been deactivated.';

export function emailConfirmationRouter(deps: AppDeps): express.Router {
  const router = express.Router();

  router.get(`${CONFIRM_NEW_EMAIL_PATH}/:key`, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const key = String(req.params['key'] ?? '');
      const link = await inspectEmailChangeKey(deps, key);
      if (link.state === 'invalid') return sendPage(res, 404, 'Invalid link', `<p>${INVALID}</p>`);
      if (link.state === 'expired') return sendPage(res, 404, 'Expired link', `<p>${EXPIRED}</p>`);
      sendPage(
        res,
        200,
        'Confirm your new e-mail address',
        `<form id="confirm" method="post" action="${CONFIRM_NEW_EMAIL_PATH}">` +
          `<input type="hidden" name="key" value="${escapeHtml(key)}">` +
          `<p>Change the e-mail address of your account to ${escapeHtml(link.newEmail)}?</p>` +
          `<button type="submit">Confirm</button></form>\n<script>document.getElementById('confirm').submit();</script>`,
      );
    } catch (error) {
      next(error);
    }
  });

  router.post(CONFIRM_NEW_EMAIL_PATH, express.urlencoded({ extended: false, limit: '4kb' }), async (req: Request, res: Response, next: NextFunction) => {
    try {
      const key = typeof req.body?.key === 'string' ? req.body.key : '';
      const outcome = await doConfirmEmailChange(deps, key);
      switch (outcome.state) {
        case 'invalid':
          return sendPage(res, 404, 'Invalid link', `<p>${INVALID}</p>`);
        case 'expired':
          return sendPage(res, 404, 'Expired link', `<p>${EXPIRED}</p>`);
        case 'refused':
          return sendPage(res, 400, 'E-mail address not changed', `<p>${escapeHtml(outcome.message)}</p>`);
        case 'confirmed':
          return sendPage(
            res,
            200,
            'E-mail address changed',
            `<p>The e-mail address of your account in <a href="${escapeHtml(outcome.realmUrl)}">${escapeHtml(outcome.realmName)}</a> ` +
              `is now <a href="mailto:${escapeHtml(outcome.newEmail)}">${escapeHtml(outcome.newEmail)}</a> ` +
              `(it was <a href="mailto:${escapeHtml(outcome.oldEmail)}">${escapeHtml(outcome.oldEmail)}</a>).</p>`,
          );
      }
    } catch (error) {
      next(error);
    }
  });

  return router;
}
