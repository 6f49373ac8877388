// THE way Parley sends e-mail: an action stores the e-mail in the outbox inside its own transaction
// and enqueues its 'send-email' job in that same transaction, so the e-mail exists (and goes out)
// exactly when the change that sends it commits. The job (mail/jobs.ts) delivers it through SMTP with
// retries, or, when no SMTP server is configured, keeps it in the outbox (`pnpm manage outbox`,
// GET /devtools/outbox).
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import { findOutboxEmail, insertOutboxEmail, listOutboxEmails, type OutboxEmailRow } from '../data/email-outbox.repo.ts';
import { isPlausibleEmail } from '../lib/validation.ts';

export interface OutgoingEmail {
  /** One bare address (no display name, no list). */
  to: string;
  /** One line. */
  subject: string;
  text: string;
  html: string;
  /** optional */
  replyTo?: string;
}

export type { OutboxEmailRow };

/** Stores the e-mail in the outbox table inside `tx` and enqueues its 'send-email' job in the same transaction; returns its id. */
export async function enqueueEmail(tx: Db, deps: Pick<AppDeps, 'jobs'>, email: OutgoingEmail): Promise<number> {
  checkHeaders(email);
  const id = await insertOutboxEmail(tx, { to: email.to, subject: email.subject, text: email.text, html: email.html, replyTo: email.replyTo ?? null });
  await deps.jobs.send(tx, 'send-email', { emailId: id }, {});
  return id;
}

/**
 * Header values come from user input (names, addresses): a line break in one would start a header of
 * its own. Callers validate and flatten their values; this is the last line of defence, and a
 * programming error when it fires.
 */
function checkHeaders(email: OutgoingEmail): void {
  for (const [name, value] of [['to', email.to], ['replyTo', email.replyTo]] as const) {
    if (value !== undefined && !isPlausibleEmail(value)) throw new Error(`enqueueEmail: ${name} must be one plain e-mail address, got ${JSON.stringify(value)}`);
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(email.subject)) throw new Error(`enqueueEmail: the subject must be one line, got ${JSON.stringify(email.subject)}`);
}

/** Makes a value safe for a one-line header such as the subject: control characters become spaces. */
export function oneLine(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

/** Where an e-mail of the outbox stands. */
export function outboxStatus(email: Pick<OutboxEmailRow, 'sentAt' | 'kept' | 'attempts' | 'lastError'>): string {
  if (email.sentAt) return 'sent';
  if (email.kept) return 'kept (no SMTP configured)';
  if (email.lastError) return `failing (${email.attempts} attempt${email.attempts === 1 ? '' : 's'}): ${email.lastError}`;
  return 'queued';
}

export const listOutbox = (db: Db, limit = 50) => listOutboxEmails(db, limit);
export const outboxEmail = (db: Db, id: number) => findOutboxEmail(db, id);
