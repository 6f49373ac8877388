// The organization's system bots as users (actions/system-bots.ts says what they are for), created in
// the transaction that first needs one. Apart from system-bots.ts so that what only needs the bot
// (the import) does not load the message path that sending through it needs.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findSystemBot, lockSystemBots } from '../data/users.repo.ts';
import { Role } from '../access/roles.ts';
import { hostnameOf } from '../access/users.ts';
import { insertUser } from './users.ts';

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
