// The 'send-email' job: delivers one e-mail of the outbox. Idempotent, so that pg-boss may run it
// again (a retry after a failure, a job whose process died): the outbox row is locked for the whole
// delivery, and an e-mail already sent (or kept) is never sent again. A failure is recorded on the row
// (attempts, last_error) and rethrown, so that pg-boss retries with backoff.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { lockOutboxEmail, markEmailKept, markEmailSent, pruneSentEmails, recordEmailFailure } from '../data/email-outbox.repo.ts';
import { sendThroughSmtp } from './transport.ts';
import { countEmail } from '../metrics/metrics.ts';

/** Sent e-mails are deleted from the outbox after this many days (they may hold invitation links). */
const SENT_RETENTION_DAYS = 30;

export function registerEmailJobs(deps: AppDeps): void {
  deps.jobs.work('send-email', async ({ emailId }) => {
    const outcome = await deliverOutboxEmail(deps, emailId).catch((error: unknown) => {
      countEmail('failed');
      throw error;
    });
    countEmail(outcome);
    deps.logger.info({ email_id: emailId, outcome }, 'outbox e-mail');
  });
}

export type DeliveryOutcome = 'sent' | 'kept' | 'already-done' | 'missing';

/** Delivers (or keeps) the e-mail; throws when the SMTP server could not take it (after recording why). */
export async function deliverOutboxEmail(deps: Pick<AppDeps, 'db' | 'config'>, emailId: number): Promise<DeliveryOutcome> {
  const smtpUrl = deps.config.smtpUrl;
  const result = await inTransaction(deps.db, async (tx): Promise<{ outcome: DeliveryOutcome } | { failure: unknown }> => {
    const email = await lockOutboxEmail(tx, emailId);
    if (!email) return { outcome: 'missing' };
    if (email.sentAt || email.kept) return { outcome: 'already-done' };
    if (!smtpUrl) {
      await markEmailKept(tx, email.id);
      return { outcome: 'kept' };
    }
    try {
      const messageId = await sendThroughSmtp(smtpUrl, {
        from: deps.config.emailFrom,
        to: email.to,
        subject: email.subject,
        text: email.text,
        html: email.html,
        ...(email.replyTo ? { replyTo: email.replyTo } : {}),
        // The same Message-ID on every attempt: should a retry ever deliver twice (the server accepted the
        // message but the answer was lost), mail clients show one message.
        messageId: `<parley-${email.id}-${email.createdAt.getTime()}@${senderDomain(deps.config.emailFrom)}>`,
      });
      await markEmailSent(tx, email.id, messageId);
      await pruneSentEmails(tx, SENT_RETENTION_DAYS);
      return { outcome: 'sent' };
    } catch (error) {
      await recordEmailFailure(tx, email.id, error instanceof Error ? error.message : String(error));
      return { failure: error };
    }
  });
  // The failure is recorded (committed); throwing now makes pg-boss retry later.
  if ('failure' in result) throw result.failure;
  return result.outcome;
}

function senderDomain(from: string): string {
  const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
  return address.split('@').pop()!.trim() || 'parley.invalid';
}
