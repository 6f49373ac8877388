// Emoji reactions: POST and DELETE /messages/{message_id}/reactions (actions/reactions.ts).
import type { Handler } from '../http/handler.ts';
import { doAddReaction, doRemoveReaction } from '../actions/reactions.ts';

export const addReaction: Handler<'add-reaction'> = async ({ params, path, realm, user, deps, cachedTableWrites }) => {
  const request = { emojiName: params.emoji_name, emojiCode: params.emoji_code, reactionType: params.reaction_type };
  await doAddReaction(deps, realm, user, path.message_id, request, cachedTableWrites);
  return {};
};

export const removeReaction: Handler<'remove-reaction'> = async ({ params, path, realm, user, deps, cachedTableWrites }) => {
  const request = { emojiName: params.emoji_name, emojiCode: params.emoji_code, reactionType: params.reaction_type };
  await doRemoveReaction(deps, realm, user, path.message_id, request, cachedTableWrites);
  return {};
};
