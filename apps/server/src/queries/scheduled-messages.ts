// GET /scheduled_messages and GET /reminders, and their states in /register.
import type { RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { DeliveryType, pendingScheduledMessagesOf } from '../data/scheduled-messages.repo.ts';
import { formatReminder, formatScheduledMessage } from '../lib/scheduled-message-format.ts';

export async function scheduledMessagesOf(db: RawSql, user: User) {
  return (await pendingScheduledMessagesOf(db, user.id, DeliveryType.SEND_LATER)).map(formatScheduledMessage);
}

/** GET /reminders and the `reminders` state of /register: the caller's undelivered reminders, by time. */
export async function remindersOf(db: RawSql, user: User) {
  return (await pendingScheduledMessagesOf(db, user.id, DeliveryType.REMIND)).map(formatReminder);
}
