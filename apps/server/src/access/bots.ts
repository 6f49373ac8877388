// Every decision about bots: who may create which kind (the organization's can_create_bots_group and
// can_create_write_only_bots_group), who may administer a bot, who is told about a bot (its API key
// travels in realm_bot events and state), who may use bot storage, and where an incoming webhook
// bot's key works.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { activeHumanAdministratorIds, type BotDefaults } from '../data/bots.repo.ts';
import { findUserById, lockUser } from '../data/users.repo.ts';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import { BotType } from '../lib/bots.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { checkCanAdministerUser, isAdmin, isGuest, Role } from './roles.ts';

/**
 * Zulip's allowed_bot_types: every kind for members of can_create_bots_group, incoming webhook bots
 * only for members of can_create_write_only_bots_group. Embedded bots are not enabled on Parley (as on
 * a Zulip server without EMBEDDED_BOTS_ENABLED). Guests hold neither setting (neither allows the
 * everyone group).
 */
export function allowedBotTypes(subject: PermissionSubject, realm: Pick<Realm, 'canCreateBotsGroupId' | 'canCreateWriteOnlyBotsGroupId'>): number[] {
  if (isGuest(subject.user)) return [];
  if (holds(subject, realm.canCreateBotsGroupId)) return [BotType.GENERIC, BotType.INCOMING_WEBHOOK, BotType.OUTGOING_WEBHOOK];
  if (holds(subject, realm.canCreateWriteOnlyBotsGroupId)) return [BotType.INCOMING_WEBHOOK];
  return [];
}

/** Zulip's check_can_create_bot: may the user create (or reactivate) a bot of this type? */
export function checkCanCreateBot(subject: PermissionSubject, realm: Pick<Realm, 'canCreateBotsGroupId' | 'canCreateWriteOnlyBotsGroupId'>, botType: number): void {
  if (isGuest(subject.user)) throw new JsonableError('Insufficient permission');
  if (holds(subject, realm.canCreateBotsGroupId)) return;
  if (botType === BotType.INCOMING_WEBHOOK && holds(subject, realm.canCreateWriteOnlyBotsGroupId)) return;
  throw new JsonableError('Insufficient permission');
}

/** Zulip's check_valid_bot_type: the type is one the user may create. */
export function checkValidBotType(subject: PermissionSubject, realm: Pick<Realm, 'canCreateBotsGroupId' | 'canCreateWriteOnlyBotsGroupId'>, botType: number): void {
  if (!allowedBotTypes(subject, realm).includes(botType)) throw new JsonableError('Invalid bot type');
}

/** A bot the server's operator creates (manage create-bot) is of a kind Parley runs: generic or webhook. */
export function checkKnownBotType(botType: number): void {
  if (![BotType.GENERIC, BotType.INCOMING_WEBHOOK, BotType.OUTGOING_WEBHOOK].includes(botType as 1 | 2 | 3)) throw new JsonableError('Invalid bot type');
}

/** Who may own a bot: an active human of the organization (Zulip's rule for a new owner). */
export function checkCanOwnBot(owner: Pick<User, 'isActive' | 'isBot'>): void {
  if (!owner.isActive) throw new JsonableError('Failed to change owner, user is deactivated');
  if (owner.isBot) throw new JsonableError("Failed to change owner, bots can't own other bots");
}

/**
 * Zulip's access_bot_by_id: a bot of the organization the caller may administer (its owner, or an
 * administrator). Users who are not bots, and the server's own bots, are `No such bot`. With `lock`,
 * the bot's row is locked first (inside the caller's transaction).
 */
export async function accessBotById(db: Db, realm: Realm, actor: User, botId: number, options: { lock: boolean }): Promise<User> {
  const bot = options.lock ? await lockUser(db, realm.id, botId) : await findUserById(db, realm.id, botId);
  if (!bot || !bot.isBot || bot.systemBot !== null) throw new JsonableError('No such bot');
  checkCanAdministerUser(actor, bot);
  return bot;
}

/** Does this user's list of bots (realm_bots) hold every bot of the organization (administrators), rather than their own? */
export const seesEveryBot = (user: Pick<User, 'role'>) => isAdmin(user);

/**
 * Zulip's bot_owner_user_ids: who receives a bot's realm_bot events (they carry its API key). The
 * owner, and the organization's active human administrators unless one of the bot's default channels
 * is private (then the owner alone).
 */
export async function botEventRecipientIds(db: Db, realmId: number, bot: Pick<User, 'botOwnerId'>, defaults: BotDefaults): Promise<number[]> {
  const ids = new Set<number>();
  const privateBot = defaults.defaultSendingStream?.inviteOnly === true || defaults.defaultEventsRegisterStream?.inviteOnly === true;
  if (!privateBot) for (const id of await activeHumanAdministratorIds(db, realmId, [Role.OWNER, Role.ADMINISTRATOR])) ids.add(id);
  if (bot.botOwnerId !== null) ids.add(bot.botOwnerId);
  return [...ids].sort((a, b) => a - b);
}

/**
 * Bot storage is a bot's own (Zulip since feature level 494; before, any user had one). Zulip answers
 * others with its BotRequiredError, code PERMISSION_DENIED.
 */
export function checkCanUseBotStorage(user: Pick<User, 'isBot'>): void {
  if (!user.isBot) throw new JsonableError('Must be a bot user', { code: 'PERMISSION_DENIED' });
}

/**
 * Zulip's validate_api_key: an incoming webhook bot's key works only where the operation allows it
 * (sending messages, and the integrations' URLs); elsewhere it is refused (401 on the API's basic
 * authentication path).
 */
export function checkIncomingWebhookBotAccess(user: Pick<User, 'isBot' | 'botType'>, operationAllowsIt: boolean): void {
  if (user.isBot && user.botType === BotType.INCOMING_WEBHOOK && !operationAllowsIt) {
    throw new UnauthorizedError('This API is not available to incoming webhook bots.');
  }
}
