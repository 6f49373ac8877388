// A bot's own storage: thin handlers over the read model (queries/bot-storage.ts) and the actions
// (actions/bot-storage.ts). None of these touches a table the per-process caches follow.
import type { Handler } from '../http/handler.ts';
import { botStorageOf } from '../queries/bot-storage.ts';
import { doRemoveBotStorage, doUpdateBotStorage } from '../actions/bot-storage.ts';

export const getBotStorage: Handler<'get-bot-storage'> = async ({ params, user, deps }) => ({
  storage: await botStorageOf(deps.db, user, params.keys),
});

export const updateBotStorage: Handler<'update-bot-storage'> = async ({ params, user, deps, cachedTableWrites }) => {
  await doUpdateBotStorage(deps, user, params.storage);
  cachedTableWrites.none();
  return {};
};

export const removeBotStorage: Handler<'remove-bot-storage'> = async ({ params, user, deps, cachedTableWrites }) => {
  await doRemoveBotStorage(deps, user, params.keys);
  cachedTableWrites.none();
  return {};
};
