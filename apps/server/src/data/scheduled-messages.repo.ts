// Scheduled messages (table scheduled_message): the sender's list, the row locked for edits and for
// delivery, and the rows of a delivery batch.
import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';

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
  /** DeliveryType: a message sent later, or a reminder. */
  deliveryType: number;
  reminderTargetMessageId: number | null;
}

/** Zulip's kinds of scheduled message. */
export const DeliveryType = { SEND_LATER: 1, REMIND: 2 } as const;

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

/** A reminder: a note to the user themself, about a message, delivered by the notification bot. */
export const insertReminder = (db: Db, realmId: number, userId: number, f: { content: string; renderedContent: string; scheduledAt: Date; targetMessageId: number }) =>
  db.scheduledMessage.create({
    data: {
      realmId,
      senderId: userId,
      type: 'private',
      channelId: null,
      directUserIds: [userId],
      topic: '',
      content: f.content,
      renderedContent: f.renderedContent,
      scheduledAt: f.scheduledAt,
      readBySender: false,
      deliveryType: DeliveryType.REMIND,
      reminderTargetMessageId: f.targetMessageId,
    },
  }) as Promise<ScheduledMessageRow>;

/** The sender's undelivered scheduled messages of one kind (messages sent later, or reminders), by delivery time. */
export const pendingScheduledMessagesOf = async (db: RawSql, senderId: number, deliveryType: number): Promise<ScheduledMessageRow[]> =>
  db.$queryRaw<ScheduledMessageRow[]>`
    SELECT ${modelColumns(Prisma.ScheduledMessageScalarFieldEnum, 'm')} FROM scheduled_message m
    WHERE m.sender_id = ${senderId}::int AND NOT m.delivered AND m.delivery_type = ${deliveryType}::int
    ORDER BY m.scheduled_at, m.id`;

/** Locks the row (edits and delivery serialise on it); null when missing. */
export async function lockScheduledMessage(db: Db, id: number): Promise<ScheduledMessageRow | null> {
  const rows = await db.$queryRaw<{ id: number }[]>`SELECT id FROM scheduled_message WHERE id = ${id}::int FOR UPDATE`;
  if (!rows.length) return null;
  return db.scheduledMessage.findUnique({ where: { id } }) as Promise<ScheduledMessageRow | null>;
}

/**
 * Locks the rows of a delivery batch, in id order (so that batches overlapping in any way cannot
 * deadlock), and returns those that exist.
 */
export async function lockScheduledMessages(db: Db, ids: number[]): Promise<ScheduledMessageRow[]> {
  const locked = await db.$queryRaw<{ id: number }[]>`SELECT id FROM scheduled_message WHERE id = ANY(${ids}::int[]) ORDER BY id FOR UPDATE`;
  if (!locked.length) return [];
  return db.scheduledMessage.findMany({ where: { id: { in: locked.map((r) => r.id) } }, orderBy: { id: 'asc' } }) as Promise<ScheduledMessageRow[]>;
}

/** Marks scheduled messages delivered, each with the message it became, in one statement. */
export async function markScheduledMessagesDelivered(db: Db, deliveries: Array<{ id: number; messageId: number }>): Promise<void> {
  if (!deliveries.length) return;
  await db.$executeRaw`
    UPDATE scheduled_message s SET delivered = true, delivered_message_id = d.message_id
    FROM unnest(${deliveries.map((d) => d.id)}::int[], ${deliveries.map((d) => d.messageId)}::int[]) AS d(id, message_id)
    WHERE s.id = d.id`;
}

export const updateScheduledMessage = (db: Db, id: number, data: Partial<ScheduledMessageFields> & { failed?: boolean; failureMessage?: string | null; delivered?: boolean; deliveredMessageId?: number | null }) =>
  db.scheduledMessage.update({ where: { id }, data }) as Promise<ScheduledMessageRow>;

export const deleteScheduledMessage = (db: Db, id: number) => db.scheduledMessage.delete({ where: { id } });
