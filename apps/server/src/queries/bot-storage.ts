// Read model of a bot's storage: GET /bot_storage (only bots have one, each its own).
import type { Db } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { readBotStorage } from '../data/bot-storage.repo.ts';
import { checkCanUseBotStorage } from '../access/bots.ts';
import { JsonableError } from '../errors.ts';

/** The entries of `keys` (a key the bot has not stored fails the whole read), or every entry. */
export async function botStorageOf(db: Db, bot: User, keys: string[] | undefined): Promise<Record<string, string>> {
  checkCanUseBotStorage(bot);
  const found = await readBotStorage(db, bot.id, keys);
  if (keys && keys.some((k) => !found.has(k))) throw new JsonableError('Key does not exist.');
  return Object.fromEntries(keys ? keys.map((k) => [k, found.get(k)!]) : found);
}
