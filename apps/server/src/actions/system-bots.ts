// The bots Parley itself speaks through, as Zulip's system bots: the notification bot sends the direct
// messages that tell a user something happened (their scheduled message could not be sent, someone they
// invited joined); the welcome bot greets a new organization. Each organization gets its own, created in the transaction that first needs it; it
// is listed like any other bot (GET /users, realm_user events), owns nothing, joins no channel, and
// nobody can log in as it.
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findSystemBot, lockSystemBots } from '../data/users.repo.ts';
import { JsonableError } from '../errors.ts';
import { Role } from '../access/roles.ts';
import { hostnameOf } from '../access/users.ts';
import { insertUser } from './users.ts';
import { checkMessage, internalDirectMessage, storeCheckedMessage } from './messages.ts';

export interface SystemBotKind {
  kind: string;
  fullName: string;
  botType: number;
}

export const NOTIFICATION_BOT: SystemBotKind = { kind: 'notification-bot', fullName: 'Notification Bot', botType: 1 };
/** Greets a new organization (actions/onboarding.ts), as Zulip's Welcome Bot. */
export const WELCOME_BOT: SystemBotKind = { kind: 'welcome-bot', fullName: 'Welcome Bot', botType: 1 };

/** The organization's system bot of this kind, created inside `tx` the first time it is needed. */
export async function systemBot(tx: Db, deps: Pick<AppDeps, 'cipher' | 'events'>, realm: Realm, bot: SystemBotKind): Promise<User> {
  const existing = await findSystemBot(tx, realm.id, bot.kind);
  if (existing) return existing;
  await lockSystemBots(tx, realm.id);
  const raced = await findSystemBot(tx, realm.id, bot.kind);
  if (raced) return raced;
  const { user } = await insertUser(tx, deps, realm, {
    email: `${bot.kind}@${hostnameOf(realm.url)}`,
    fullName: bot.fullName,
    passwordHash: null,
    role: Role.MEMBER,
    systemBot: { kind: bot.kind, botType: bot.botType },
  });
  return user;
}

/** The organization's notification bot, created inside `tx` the first time it is needed. */
export const notificationBot = (tx: Db, deps: Pick<AppDeps, 'cipher' | 'events'>, realm: Realm): Promise<User> => systemBot(tx, deps, realm, NOTIFICATION_BOT);

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
