// The few pages Parley renders itself, outside /api/v1: plain HTML from template strings, every value
// escaped, no scripts.
//   GET/POST /accounts/do_confirm/<key>  sign-up from an e-mail invitation (or from the confirmation
//                                        e-mail of a reusable link): full name and password
//   GET/POST /accounts/join/<key>        a reusable invitation link: the visitor gives an address and
//                                        receives a single-use sign-up link by e-mail
//   POST     /accounts/zuliprc           the new user's zuliprc file, for their password
//   GET      /devtools/outbox            the e-mails kept in the outbox; only without SMTP, outside
//                                        production, and only to requests from this machine
// Keys travel in the URL, so pages are never cached nor sent as referrer. Forms need no CSRF token: no
// page acts on a session (the key in the URL, or the password in the form, is the authority). POSTs
// share the rate limit of anonymous API calls (per client address).
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { AppDeps } from '../deps.ts';
import type { Realm } from '../data/models.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { JsonableError } from '../errors.ts';
import { escapeHtml } from '../lib/html.ts';
import { doAcceptInvitation, doRequestSignupFromLink, type SignupProblem } from '../actions/invitations.ts';
import { doFetchApiKey } from '../actions/authentication.ts';
import { browserLanguage } from '../lib/realm-user-defaults.ts';
import { invitationLinkStateByKey } from '../queries/invitations.ts';
import { listOutbox, outboxStatus } from '../mail/outbox.ts';

const ROLE_NAMES: Record<number, string> = { 100: 'organization owner', 200: 'organization administrator', 300: 'moderator', 400: 'member', 600: 'guest' };

const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
};

const STYLE = `body{font-family:system-ui,sans-serif;max-width:36em;margin:3em auto;padding:0 1em;line-height:1.5;color:#222}
label{display:block;margin-top:1em;font-weight:600}input{font-size:1em;padding:.4em;width:100%;box-sizing:border-box}
button{margin-top:1.5em;font-size:1em;padding:.5em 1.2em}.error{color:#a00;font-weight:600}code,pre{background:#f4f4f4;padding:.1em .3em}
pre{padding:.8em;overflow-x:auto;white-space:pre-wrap}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em;text-align:left;vertical-align:top}`;

function sendPage(res: Response, status: number, title: string, body: string): void {
  for (const [name, value] of Object.entries(PAGE_HEADERS)) res.setHeader(name, value);
  res
    .status(status)
    .type('html')
    .send(`<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>\n<body>\n<h1>${escapeHtml(title)}</h1>\n${body}\n</body></html>\n`);
}

const p = (text: string) => `<p>${escapeHtml(text)}</p>`;

/** The page for a link that cannot be used (404 for an unknown link, 410 for one that was valid once). */
function sendProblem(res: Response, problem: SignupProblem, realm: Realm | null): void {
  const where = realm ? ` to ${realm.name}` : '';
  const pages: Record<SignupProblem, [number, string, string]> = {
    invalid: [404, 'Invalid link', 'This invitation link is not valid. Check that you copied the whole link from the e-mail, or ask for a new invitation.'],
    expired: [410, 'Invitation expired', `This invitation${where} has expired. Ask the person who invited you for a new invitation.`],
    revoked: [410, 'Invitation revoked', `This invitation${where} was revoked and can no longer be used. Ask an administrator of the organization for a new invitation.`],
    used: [410, 'Invitation already used', `This invitation${where} was already used to create an account. Log in with that account's e-mail address and password instead.`],
    'realm-deactivated': [410, 'Organization deactivated', `The organization${realm ? ` ${realm.name}` : ''} has been deactivated.`],
    'account-exists': [409, 'Account already exists', `An account with this e-mail address already exists${realm ? ` in ${realm.name}` : ''}. Log in with it instead.`],
    'daily-limit': [429, 'Too many sign-ups today', `${realm ? realm.name : 'This organization'} has sent as many invitation e-mails as it may today. Try again tomorrow.`],
  };
  const [status, title, text] = pages[problem];
  sendPage(res, status, title, p(text));
}

function signupForm(res: Response, status: number, view: { action: string; realm: Realm; email: string; inviter: string; role: number; fullName?: string; error?: string }): void {
  sendPage(
    res,
    status,
    `Join ${view.realm.name}`,
    [
      p(`${view.inviter} invited you to join ${view.realm.name} (${view.realm.url}) as ${ROLE_NAMES[view.role] ?? 'member'}.`),
      view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>` : '',
      `<form method="post" action="${escapeHtml(view.action)}">`,
      `<label for="email">E-mail address</label><input id="email" type="email" value="${escapeHtml(view.email)}" readonly>`,
      `<label for="full_name">Full name</label><input id="full_name" name="full_name" required minlength="2" maxlength="100" autocomplete="name" value="${escapeHtml(view.fullName ?? '')}">`,
      `<label for="password">Password</label><input id="password" name="password" type="password" required minlength="6" autocomplete="new-password">`,
      '<button type="submit">Create account</button>',
      '</form>',
    ].join('\n'),
  );
}

function accountCreatedPage(res: Response, realm: Realm, email: string): void {
  const curl = `curl -sS ${realm.url}/api/v1/fetch_api_key --data-urlencode username=${email} --data-urlencode password='YOUR PASSWORD'`;
  sendPage(
    res,
    200,
    'Your account is ready',
    [
      p(`Welcome to ${realm.name}! Your account ${email} has been created.`),
      p(`Zulip apps (mobile, desktop, terminal) work with this server: add the organization ${realm.url} and log in with your e-mail address and password.`),
      '<h2>API key</h2>',
      p('Programs and bots use your e-mail address and API key (HTTP Basic authentication). Get your API key with your password:'),
      `<pre>${escapeHtml(curl)}</pre>`,
      p('Or download a zuliprc file (for the Python zulip package and zulip-js) containing it:'),
      `<form method="post" action="/accounts/zuliprc">`,
      `<input type="hidden" name="realm_id" value="${realm.id}"><input type="hidden" name="email" value="${escapeHtml(email)}">`,
      '<label for="password">Password</label><input id="password" name="password" type="password" required autocomplete="current-password">',
      '<button type="submit">Download zuliprc</button>',
      '</form>',
    ].join('\n'),
  );
}

/** The POSTs of these pages share the anonymous API rate limit (per client address). */
function rateLimited(deps: AppDeps, req: Request, res: Response): boolean {
  if (!deps.rateLimiter) return false;
  const outcome = deps.rateLimiter.consume(`ip:${req.ip ?? 'unknown'}`);
  if (outcome.allowed) return false;
  res.setHeader('Retry-After', String(Math.max(1, Math.ceil(outcome.resetSeconds))));
  sendPage(res, 429, 'Too many requests', p('Too many attempts from your address. Wait a moment and try again.'));
  return true;
}

const field = (req: Request, name: string): string => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
};

/** The pages above as one router (mounted at the root, before the API). */
export function accountsRouter(deps: AppDeps): Router {
  const router = express.Router();
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const wrap = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => fn(req, res).catch(next);

  // --- sign-up from an e-mail invitation (or a reusable link's confirmation e-mail)
  router.get('/accounts/do_confirm/:key', wrap(async (req, res) => {
    const key = String(req.params.key);
    const state = await invitationLinkStateByKey(deps, key, 'single');
    if (!state.ok) return sendProblem(res, state.problem, state.realm);
    signupForm(res, 200, { action: `/accounts/do_confirm/${key}`, realm: state.realm, email: state.invitation.email!, inviter: state.referrer.fullName, role: state.invitation.invitedAs });
  }));

  router.post('/accounts/do_confirm/:key', form, wrap(async (req, res) => {
    if (rateLimited(deps, req, res)) return;
    const key = String(req.params.key);
    const fullName = field(req, 'full_name');
    try {
      const language = browserLanguage(req.headers['accept-language']);
      const result = await doAcceptInvitation(deps, key, { fullName, password: field(req, 'password'), ...(language ? { language } : {}) });
      if (!result.ok) return sendProblem(res, result.problem, result.realm);
      accountCreatedPage(res, result.realm, result.user.deliveryEmail);
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
      // A bad name or a weak password: the form again, with the message and the name as typed.
      const state = await invitationLinkStateByKey(deps, key, 'single');
      if (!state.ok) return sendProblem(res, state.problem, state.realm);
      signupForm(res, 400, {
        action: `/accounts/do_confirm/${key}`,
        realm: state.realm,
        email: state.invitation.email!,
        inviter: state.referrer.fullName,
        role: state.invitation.invitedAs,
        fullName,
        error: error.message,
      });
    }
  }));

  // --- reusable invitation links
  const joinForm = (res: Response, status: number, key: string, realm: Realm, inviter: string, role: number, email = '', error?: string) =>
    sendPage(
      res,
      status,
      `Join ${realm.name}`,
      [
        p(`${inviter} invites you to join ${realm.name} (${realm.url}) as ${ROLE_NAMES[role] ?? 'member'}.`),
        p('Enter your e-mail address: we will send you a link to create your account.'),
        error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '',
        `<form method="post" action="/accounts/join/${escapeHtml(key)}">`,
        `<label for="email">E-mail address</label><input id="email" name="email" type="email" required autocomplete="email" value="${escapeHtml(email)}">`,
        '<button type="submit">Continue</button>',
        '</form>',
      ].join('\n'),
    );

  router.get('/accounts/join/:key', wrap(async (req, res) => {
    const key = String(req.params.key);
    const state = await invitationLinkStateByKey(deps, key, 'reusable');
    if (!state.ok) return sendProblem(res, state.problem, state.realm);
    joinForm(res, 200, key, state.realm, state.referrer.fullName, state.invitation.invitedAs);
  }));

  router.post('/accounts/join/:key', form, wrap(async (req, res) => {
    if (rateLimited(deps, req, res)) return;
    const key = String(req.params.key);
    const email = field(req, 'email');
    try {
      const result = await doRequestSignupFromLink(deps, key, email);
      if (!result.ok) return sendProblem(res, result.problem, result.realm);
      sendPage(res, 200, 'Check your e-mail', p(`We sent a link to ${result.email}. Open it to create your account in ${result.realm.name}.`));
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
      const state = await invitationLinkStateByKey(deps, key, 'reusable');
      if (!state.ok) return sendProblem(res, state.problem, state.realm);
      joinForm(res, 400, key, state.realm, state.referrer.fullName, state.invitation.invitedAs, email, error.message);
    }
  }));

  // --- zuliprc download (after sign-up, or any time): the password is checked as by fetch_api_key
  router.post('/accounts/zuliprc', form, wrap(async (req, res) => {
    if (rateLimited(deps, req, res)) return;
    const realmId = Number(field(req, 'realm_id'));
    const realm = Number.isInteger(realmId) && realmId > 0 && realmId <= 2_147_483_647 ? await findRealmById(deps.db, realmId) : null;
    if (!realm) return sendProblem(res, 'invalid', null);
    try {
      const { api_key, email } = await doFetchApiKey(deps, realm, { username: field(req, 'email'), password: field(req, 'password') });
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Content-Disposition', 'attachment; filename="zuliprc"');
      res.type('text/plain').send(`[api]\nemail=${email}\nkey=${api_key}\nsite=${realm.url}\n`);
    } catch (error) {
      if (!(error instanceof JsonableError)) throw error;
      sendPage(res, error.status, 'Could not download zuliprc', p(error.message));
    }
  }));

  // --- the outbox, for trying a bare install (no SMTP) end to end on one's own machine
  router.get('/devtools/outbox', wrap(async (req, res) => {
    if (!devtoolsAllowed(deps, req)) return sendPage(res, 404, 'Not found', p('This page exists only in development, without SMTP, from this machine.'));
    const emails = await listOutbox(deps.db, 50);
    const rows = emails.map(
      (e) => `<tr><td>${e.id}</td><td>${escapeHtml(e.createdAt.toISOString())}</td><td>${escapeHtml(e.to)}</td><td>${escapeHtml(e.subject)}</td><td>${escapeHtml(outboxStatus(e))}</td></tr>
<tr><td colspan="5"><details><summary>Text</summary><pre>${escapeHtml(e.text)}</pre></details><details open><summary>HTML</summary><iframe sandbox="" title="E-mail ${e.id}" style="width:100%;height:22em;border:1px solid #ddd" srcdoc="${escapeHtml(e.html)}"></iframe></details></td></tr>`,
    );
    sendPage(
      res,
      200,
      'Outbox',
      [
        p('No SMTP server is configured (PARLEY_SMTP_URL), so e-mails stay here instead of being sent. Newest first, at most 50.'),
        emails.length ? `<table><tr><th>#</th><th>Created</th><th>To</th><th>Subject</th><th>Status</th></tr>\n${rows.join('\n')}</table>` : p('The outbox is empty.'),
      ].join('\n'),
    );
  }));

  return router;
}

/**
 * The outbox holds invitation links: it is shown only when no SMTP server is configured, outside
 * production, and to a client on this machine that came directly (no proxy header).
 */
function devtoolsAllowed(deps: AppDeps, req: Request): boolean {
  if (deps.config.smtpUrl || process.env.NODE_ENV === 'production') return false;
  if (req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined) return false;
  const address = req.socket.remoteAddress ?? '';
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
}
