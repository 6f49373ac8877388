// The events that tell a bot's owner and the organization's administrators about the bot (realm_bot),
// built inside the transaction of the change they announce; shared by the bot operations
// (actions/bots.ts) and the user lifecycle that bots share with people (actions/users.ts:
// deactivation, reactivation). Their recipients are decided in access/bots.ts.
import type { EventData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import type { Realm, User } from '../data/models.ts';
import { activeUserNamed, botDefaultsOf } from '../data/bots.repo.ts';
import { findUserById } from '../data/users.repo.ts';
import { loadPermissionSubject } from '../access/group-settings.ts';
import { botEventRecipientIds, checkCanCreateBot, seesEveryBot } from '../access/bots.ts';
import { JsonableError } from '../errors.ts';
import type { ApiKeyCipher } from '../security/secrets.ts';
import { botDetailsOf, formatBot } from '../queries/bots.ts';

type BotChange = EventData<'realm_bot', 'update'>['bot'];

/** A realm_bot `update` for the bot's owner and administrators, as the bot is now in `tx`. */
export async function realmBotUpdate(tx: Db, realmId: number, bot: Pick<User, 'id' | 'botOwnerId'>, change: BotChange): Promise<StoredEvent> {
  const defaults = (await botDefaultsOf(tx, [bot.id])).get(bot.id)!;
  const payload: EventData<'realm_bot', 'update'> = { type: 'realm_bot', op: 'update', bot: change };
  return { userIds: await botEventRecipientIds(tx, realmId, bot, defaults), payload };
}

/** Zulip's created_bot_event: the whole bot (with its API key), as it is now in `tx`. */
export async function realmBotAdd(tx: Db, cipher: ApiKeyCipher, bot: User): Promise<EventData<'realm_bot', 'add'>> {
  const details = (await botDetailsOf(tx, cipher, [bot])).get(bot.id)!;
  return { type: 'realm_bot', op: 'add', bot: formatBot(bot, details, { forEvent: true }) };
}

/** Zulip's notify_created_bot: the new bot, to its owner and the administrators. */
export async function createdBotEvent(tx: Db, cipher: ApiKeyCipher, realmId: number, bot: User): Promise<StoredEvent> {
  const defaults = (await botDefaultsOf(tx, [bot.id])).get(bot.id)!;
  return { userIds: await botEventRecipientIds(tx, realmId, bot, defaults), payload: await realmBotAdd(tx, cipher, bot) };
}

/**
 * Zulip's send_bot_owner_update_events, for a bot whose owner is now `newOwner` (the bot row as
 * changed in `tx`): a previous owner who is not an administrator loses the bot from their list
 * (`delete`), a new owner who is not one gains it (`add`), the other recipients get an `update`, and
 * every user the `realm_user` change of `bot_owner_id`.
 */
export async function botOwnerChangeEvents(
  tx: Db,
  cipher: ApiKeyCipher,
  realm: Pick<Realm, 'id'>,
  bot: User,
  newOwner: User,
  previousOwnerId: number | null,
): Promise<Array<StoredEvent | { realmWide: true; payload: Record<string, unknown> }>> {
  const defaults = (await botDefaultsOf(tx, [bot.id])).get(bot.id)!;
  const updateTo = new Set(await botEventRecipientIds(tx, realm.id, bot, defaults));
  const events: Array<StoredEvent | { realmWide: true; payload: Record<string, unknown> }> = [];
  const previousOwner = previousOwnerId === null ? null : await findUserById(tx, realm.id, previousOwnerId);
  if (previousOwner && !seesEveryBot(previousOwner)) {
    const payload: EventData<'realm_bot', 'delete'> = { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } };
    events.push({ userIds: [previousOwner.id], payload });
    updateTo.delete(previousOwner.id);
  }
  if (!seesEveryBot(newOwner)) {
    events.push({ userIds: [newOwner.id], payload: await realmBotAdd(tx, cipher, bot) });
    updateTo.delete(newOwner.id);
  }
  if (updateTo.size) {
    const payload: EventData<'realm_bot', 'update'> = { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, owner_id: newOwner.id } };
    events.push({ userIds: [...updateTo].sort((a, b) => a - b), payload });
  }
  events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: bot.id, bot_owner_id: newOwner.id } } });
  return events;
}

/**
 * Zulip's reactivate_user_backend checks for a bot: the caller may create a bot of its type, and no
 * active user has its name.
 */
export async function checkBotReactivation(tx: Db, realm: Realm, actor: User, bot: User): Promise<void> {
  checkCanCreateBot(await loadPermissionSubject(tx, actor), realm, bot.botType ?? 1);
  if (await activeUserNamed(tx, realm.id, bot.fullName)) {
    throw new JsonableError(
      `There is already an active bot named "${bot.fullName}" in this organization. To reactivate this bot, you must rename or deactivate the other one first.`,
    );
  }
}
