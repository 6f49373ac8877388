// Scheduled messages (table scheduled_message): the sender's list, and the row locked for edits and
// for delivery.
import type { Db } from './db.ts';

export interface ScheduledMessageRow {
  id: number;
  realmId: number;
  senderId: number;
  type: string;
  channelId: number | null;
  directUserIds: number[];
  topic: string;
  content: string;
  renderedContent: string;
  scheduledAt: Date;
  readBySender: boolean | null;
  delivered: boolean;
  deliveredMessageId: number | null;
  failed: boolean;
  failureMessage: string | null;
}

export interface ScheduledMessageFields {
  type: 'stream' | 'private';
  channelId: number | null;
  directUserIds: number[];
  topic: string;
  content: string;
  renderedContent: string;
  scheduledAt: Date;
  readBySender: boolean | null;
}

export const insertScheduledMessage = (db: Db, realmId: number, senderId: number, f: ScheduledMessageFields) =>
  db.scheduledMessage.create({ data: { realmId, senderId, ...f } }) as Promise<ScheduledMessageRow>;

/** The sender's undelivered scheduled messages, by delivery time. */
export const pendingScheduledMessagesOf = (db: Db, senderId: number) =>
  db.scheduledMessage.findMany({ where: { senderId, delivered: false }, orderBy: [{ scheduledAt: 'asc' }, { id: 'asc' }] }) as Promise<ScheduledMessageRow[]>;

/** Locks the row (edits and delivery serialise on it); null when missing. */
export async function lockScheduledMessage(db: Db, id: number): Promise<ScheduledMessageRow | null> {
  const rows = await db.$queryRaw<{ id: number }[]>`SELECT id FROM scheduled_message WHERE id = ${id}::int FOR UPDATE`;
  if (!rows.length) return null;
  return db.scheduledMessage.findUnique({ where: { id } }) as Promise<ScheduledMessageRow | null>;
}

export const updateScheduledMessage = (db: Db, id: number, data: Partial<ScheduledMessageFields> & { failed?: boolean; failureMessage?: string | null; delivered?: boolean; deliveredMessageId?: number | null }) =>
  db.scheduledMessage.update({ where: { id }, data }) as Promise<ScheduledMessageRow>;

export const deleteScheduledMessage = (db: Db, id: number) => db.scheduledMessage.delete({ where: { id } });
