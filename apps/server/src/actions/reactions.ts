// Emoji reactions: POST and DELETE /messages/{message_id}/reactions (Zulip's check_add_reaction,
// remove_reaction, do_add_reaction and do_remove_reaction). Each runs in one transaction that
// share-locks the message row as it checks access to it, so that a reaction is checked against the
// message as it is (no edit, move or deletion can commit in between), while reactions to the same
// message do not wait for each other. Two identical requests at once are decided by the unique index:
// the second is told "Reaction already exists.". (Zulip locks the message exclusively, which also
// makes two users adding the same new emoji at the same moment with different names of it agree on
// one name; here each keeps the name it sent.) The `reaction` event goes to those who can see the
// message (access/reactions.ts), computed in the statement that writes the reaction.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { addReaction, removeReaction } from '../data/reactions.repo.ts';
import { JsonableError } from '../errors.ts';
import { messageEventAudience } from '../access/reactions.ts';
import { publicEmailOf } from '../access/users.ts';
import { changeableMessage, isPossibleMessageId } from '../queries/messages.ts';
import { emojiForName, emojiRequestError, ReactionDoesNotExistError, ReactionExistsError, ReactionType } from '../lib/reactions.ts';
import { NO_REALM_EMOJI } from '../lib/realm-emoji.ts';
import { realmEmojiIndex } from '../queries/realm-emoji.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { applyParticipationTopicPolicy } from './user-topics.ts';

export interface ReactionRequest {
  emojiName?: string | undefined;
  emojiCode?: string | undefined;
  reactionType?: string | undefined;
}

/**
 * The user's deferred rows caught up (access to a protected history, and whether they have a row,
 * depend on them), before the transaction; `Invalid message(s)` for an id no message can have.
 */
async function beforeTransaction(deps: AppDeps, realm: Realm, user: User, messageId: number): Promise<void> {
  if (!isPossibleMessageId(messageId)) throw new JsonableError('Invalid message(s)');
  await catchUpDeferredRows(deps.db, realm, user);
}

/** The message, share-locked until the transaction ends, if the user may react to it (Zulip's access_message with is_modifying_message). */
const lockedMessage = (tx: Db, realm: Realm, user: User, messageId: number) => changeableMessage(tx, realm, user, messageId, { lock: true });

/** The `reaction` event's payload. */
function reactionEvent(
  realm: Realm,
  user: User,
  emailAddressVisibility: number,
  op: 'add' | 'remove',
  messageId: number,
  emoji: { name: string; code: string; type: string },
): Record<string, unknown> {
  // The address every user sees: the event is one payload for all its recipients.
  const email = publicEmailOf(realm, { id: user.id, isBot: user.isBot, deliveryEmail: user.deliveryEmail }, emailAddressVisibility);
  const fields = {
    user_id: user.id,
    user: { user_id: user.id, email, full_name: user.fullName },
    message_id: messageId,
    emoji_name: emoji.name,
    emoji_code: emoji.code,
    reaction_type: emoji.type,
  };
  // Spelled out per op, so that test/contract/events.test.ts finds both kinds this code emits.
  return op === 'add' ? { type: 'reaction', op: 'add', ...fields } : { type: 'reaction', op: 'remove', ...fields };
}

/**
 * POST /messages/{message_id}/reactions. Zulip's order: message access, the code and type looked up
 * from the name when either is missing, the user's own duplicate, then either a vote for someone's
 * reaction with the same emoji (its name is taken, the emoji is not checked) or the emoji's checks.
 * A user without a row of the message (a public channel's history) gets a historical one.
 */
export async function doAddReaction(deps: AppDeps, realm: Realm, user: User, messageId: number, request: ReactionRequest & { emojiName: string }, writes: CachedTableWrites): Promise<void> {
  await beforeTransaction(deps, realm, user, messageId);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const found = await lockedMessage(tx, realm, user, messageId);
    let code = request.emojiCode;
    let type = request.reactionType;
    // The organization's custom emoji, when the request may name one.
    const realmEmoji = code === undefined || type === undefined || type === ReactionType.REALM ? await realmEmojiIndex(tx, realm.id) : NO_REALM_EMOJI;
    if (code === undefined || type === undefined) {
      const looked = emojiForName(request.emojiName, realmEmoji);
      code ??= looked.code;
      type ??= looked.type;
    }
    // Checked now, raised only if the reaction turns out to be no vote.
    const emojiError = emojiRequestError(request.emojiName, code, type, realmEmoji);
    const message = found.message;
    const result = await addReaction(
      tx,
      { messageId, userId: user.id, name: request.emojiName, code, type, emojiValid: emojiError === null, topic: message.topic },
      { messageId, channelId: message.channel_id, audience: messageEventAudience(found.channel), newRowOf: found.flags === null ? user.id : null },
    );
    if (result.mine) throw new ReactionExistsError();
    if (result.votedName === null && emojiError) throw emojiError;
    if (result.addedName === null) throw new ReactionExistsError();
    if (message.channel_id !== null) {
      await applyParticipationTopicPolicy({ tx, afterCommit, deps, realm }, { user, channelId: message.channel_id, topic: message.topic, state: result });
    }
    const payload = reactionEvent(realm, user, result.emailAddressVisibility, 'add', messageId, { name: result.addedName, code, type });
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: result.audienceIds, payload }]);
  });
  // Reactions, rows and topic policies are none of the tables per-process caches follow.
  writes.none();
}

/**
 * DELETE /messages/{message_id}/reactions: the user's own reaction, found by code and type (the code
 * looked up from the name when missing; the type defaults to unicode_emoji and is never looked up).
 * The emoji is not checked: a reaction stored once can always be taken back.
 */
export async function doRemoveReaction(deps: AppDeps, realm: Realm, user: User, messageId: number, request: ReactionRequest, writes: CachedTableWrites): Promise<void> {
  await beforeTransaction(deps, realm, user, messageId);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const found = await lockedMessage(tx, realm, user, messageId);
    let code = request.emojiCode;
    if (code === undefined) {
      if (request.emojiName === undefined) throw new JsonableError('At least one of the following arguments must be present: emoji_name, emoji_code');
      code = emojiForName(request.emojiName, await realmEmojiIndex(tx, realm.id)).code;
    }
    const type = request.reactionType ?? 'unicode_emoji';
    const message = found.message;
    const removed = await removeReaction(
      tx,
      { messageId, userId: user.id, code, type },
      { messageId, channelId: message.channel_id, audience: messageEventAudience(found.channel), newRowOf: null },
    );
    if (!removed) throw new ReactionDoesNotExistError();
    const payload = reactionEvent(realm, user, removed.emailAddressVisibility, 'remove', messageId, { name: removed.name, code, type });
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: removed.audienceIds, payload }]);
  });
  writes.none();
}
