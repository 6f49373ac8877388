// The bots Parley itself speaks through, as Zulip's system bots: the notification bot sends the direct
// messages that tell a user something happened (their scheduled message could not be sent, someone they
// invited joined); the welcome bot greets a new organization. Each organization gets its own, created in the transaction that first needs it; it
// is listed like any other bot (GET /users, realm_user events), owns nothing, joins no channel, and
// nobody can log in as it.
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { checkMessage, internalDirectMessage, storeCheckedMessage } from './messages.ts';
import { notificationBot } from './system-bot-users.ts';

// The bots themselves are made in system-bot-users.ts, which does not load the message path (the
// import creates the notification bot without sending anything).
export { NOTIFICATION_BOT, notificationBot, systemBot, WELCOME_BOT, type SystemBotKind } from './system-bot-users.ts';

/**
 * A direct message from the notification bot to `recipient`, stored inside `tx` (it exists exactly when
 * the change that prompted it commits). Returns false, sending nothing, when it cannot be sent (the
 * recipient is no longer active, or the message is refused); the change itself never fails for it.
 */
export async function sendNotificationMessage(
  tx: Db,
  afterCommit: AfterCommit,
  deps: Pick<AppDeps, 'cipher' | 'events' | 'jobs' | 'config'>,
  realm: Realm,
  recipient: User,
  content: string,
): Promise<boolean> {
  if (!recipient.isActive) return false;
  let checked;
  let bot: User;
  try {
    bot = await notificationBot(tx, deps, realm); // refused if a person holds the bot's address
    checked = await checkMessage(tx, realm, bot, internalDirectMessage(recipient.id, content, true));
  } catch (error) {
    if (error instanceof JsonableError) return false;
    throw error;
  }
  await storeCheckedMessage(tx, afterCommit, deps, realm, bot, checked, { client: 'Internal' });
  return true;
}
