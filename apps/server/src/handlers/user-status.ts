// User status operations: thin handlers mapping decoded parameters to the status action
// (actions/user-status.ts) or read model (queries/user-status.ts).
import type { Handler } from '../http/handler.ts';
import { doUpdateOwnStatus, doUpdateStatusForUser } from '../actions/user-status.ts';
import { userStatusOf } from '../queries/user-status.ts';

export const updateStatus: Handler<'update-status'> = async ({ params, realm, user, client, deps, cachedTableWrites }) => {
  await doUpdateOwnStatus(
    deps,
    realm,
    user,
    {
      ...(params.away !== undefined ? { away: params.away } : {}),
      ...(params.status_text !== undefined ? { statusText: params.status_text } : {}),
      ...(params.emoji_name !== undefined ? { emojiName: params.emoji_name } : {}),
      ...(params.emoji_code !== undefined ? { emojiCode: params.emoji_code } : {}),
      ...(params.reaction_type !== undefined ? { reactionType: params.reaction_type } : {}),
    },
    client,
    cachedTableWrites,
  );
  return {};
};

export const updateStatusForUser: Handler<'update-status-for-user'> = async ({ params, path, realm, user, client, deps, cachedTableWrites }) => {
  await doUpdateStatusForUser(
    deps,
    realm,
    user,
    path.user_id,
    {
      ...(params.status_text !== undefined ? { statusText: params.status_text } : {}),
      ...(params.emoji_name !== undefined ? { emojiName: params.emoji_name } : {}),
      ...(params.emoji_code !== undefined ? { emojiCode: params.emoji_code } : {}),
      ...(params.reaction_type !== undefined ? { reactionType: params.reaction_type } : {}),
    },
    client,
    cachedTableWrites,
  );
  return {};
};

export const getUserStatus: Handler<'get-user-status'> = async ({ path, realm, user, deps }) => ({
  status: await userStatusOf(deps.db, realm, user, path.user_id),
});
