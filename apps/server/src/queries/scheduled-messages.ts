// GET /scheduled_messages and the `scheduled_messages` state of /register: the caller's undelivered
// scheduled messages, by delivery time.
import type { Db } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { pendingScheduledMessagesOf } from '../data/scheduled-messages.repo.ts';
import { formatScheduledMessage } from '../lib/scheduled-message-format.ts';

export async function scheduledMessagesOf(db: Db, user: User) {
  return (await pendingScheduledMessagesOf(db, user.id)).map(formatScheduledMessage);
}
