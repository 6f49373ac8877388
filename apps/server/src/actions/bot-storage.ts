// A bot's key/value storage (Zulip's zerver/lib/bot_storage.py): only bots have one, each its own.
// Writes are serialised per bot, so the size limit holds under concurrent requests; a refused request
// changes nothing. No event is sent (Zulip sends none).
import type { AppDeps } from '../deps.ts';
import type { User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { botStorageSizes, deleteBotStorage, lockBotStorage, writeBotStorage } from '../data/bot-storage.repo.ts';
import { checkCanUseBotStorage } from '../access/bots.ts';
import { JsonableError } from '../errors.ts';
import { characterCount, checkBotStorageSize } from '../lib/bots.ts';

const keyDoesNotExist = () => new JsonableError('Key does not exist.');

/** PUT /bot_storage: adds entries or replaces values, unless the storage would go over its limit. */
export async function doUpdateBotStorage(deps: Pick<AppDeps, 'db' | 'config'>, bot: User, storage: Record<string, string>): Promise<void> {
  checkCanUseBotStorage(bot);
  const entries = new Map(Object.entries(storage));
  let added = 0;
  for (const [key, value] of entries) added += characterCount(key) + characterCount(value);
  await inTransaction(deps.db, async (tx) => {
    await lockBotStorage(tx, bot.id);
    const sizes = await botStorageSizes(tx, bot.id, [...entries.keys()]);
    checkBotStorageSize(sizes.total - sizes.ofKeys + added, deps.config.botStorageSizeLimit);
    await writeBotStorage(tx, bot.id, entries);
  });
}

/** DELETE /bot_storage: removes `keys` (every one must exist, else nothing is removed), or everything. */
export async function doRemoveBotStorage(deps: Pick<AppDeps, 'db'>, bot: User, keys: string[] | undefined): Promise<void> {
  checkCanUseBotStorage(bot);
  await inTransaction(deps.db, async (tx) => {
    await lockBotStorage(tx, bot.id);
    if (keys === undefined) {
      await deleteBotStorage(tx, bot.id);
      return;
    }
    const unique = [...new Set(keys)];
    const removed = await deleteBotStorage(tx, bot.id, unique);
    // Zulip counts the keys asked for against the rows found, then deletes only if all exist.
    if (removed < keys.length) throw keyDoesNotExist();
  });
}
