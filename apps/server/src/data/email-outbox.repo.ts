// The e-mail outbox (table email_outbox): e-mails stored in the transaction of the change that sends
// them, delivered after commit by their 'send-email' job (mail/jobs.ts).
import type { Db } from './db.ts';

export interface OutboxEmailRow {
  id: number;
  to: string;
  subject: string;
  text: string;
  html: string;
  replyTo: string | null;
  createdAt: Date;
  sentAt: Date | null;
  kept: boolean;
  attempts: number;
  lastError: string | null;
  messageId: string | null;
}

export async function insertOutboxEmail(db: Db, email: { to: string; subject: string; text: string; html: string; replyTo: string | null }): Promise<number> {
  const row = await db.emailOutbox.create({ data: email, select: { id: true } });
  return row.id;
}

/** Locks the e-mail's row for the rest of the transaction (a second worker on the same e-mail waits) and reads it. */
export async function lockOutboxEmail(db: Db, id: number): Promise<OutboxEmailRow | null> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM email_outbox WHERE id = ${id} FOR UPDATE`;
  if (rows.length === 0) return null;
  return db.emailOutbox.findUnique({ where: { id } });
}

export const markEmailSent = (db: Db, id: number, messageId: string) =>
  db.emailOutbox.update({ where: { id }, data: { sentAt: new Date(), messageId, attempts: { increment: 1 } } });

export const markEmailKept = (db: Db, id: number) => db.emailOutbox.update({ where: { id }, data: { kept: true } });

export const recordEmailFailure = (db: Db, id: number, error: string) =>
  db.emailOutbox.update({ where: { id }, data: { lastError: error.slice(0, 2000), attempts: { increment: 1 } } });

/** The newest e-mails first. */
export const listOutboxEmails = (db: Db, limit: number): Promise<OutboxEmailRow[]> => db.emailOutbox.findMany({ orderBy: { id: 'desc' }, take: limit });

export const findOutboxEmail = (db: Db, id: number): Promise<OutboxEmailRow | null> => db.emailOutbox.findUnique({ where: { id } });

/**
 * Deletes e-mails sent more than `days` ago: they carry links with secrets (invitations), and once
 * delivered the outbox has no use for them. Kept and failed e-mails stay.
 */
export async function pruneSentEmails(db: Db, days: number): Promise<void> {
  await db.emailOutbox.deleteMany({ where: { sentAt: { lt: new Date(Date.now() - days * 86_400_000) } } });
}
