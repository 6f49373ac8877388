// POST /messages/{message_id}/typing: "someone is editing this message", an ephemeral
// `typing_edit_message` event as POST /typing's (actions/typing.ts): no stored row and no transaction.
// The editor must be allowed to edit the message's content right now (the content-edit checks of PATCH
// /messages/{message_id}, without their grace period), and have typing notifications on for the kind of
// message. The event goes to the people of the conversation who receive typing notifications and may
// read the message.
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import { channelTypingAudience } from '../data/typing.repo.ts';
import { messageReachedUsers } from '../data/message-typing.repo.ts';
import { typingPeopleCache } from '../events/typing-people.ts';
import { JsonableError } from '../errors.ts';
import { checkCanEditContent, seesChannelMessage } from '../access/message-edits.ts';
import { MAX_CHANNEL_SIZE_FOR_TYPING } from '../lib/message-limits.ts';
import { changeableMessage, isPossibleMessageId } from '../queries/messages.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';

/** Zulip's edit_limit_buffer for edit-typing: none (an edit itself gets access/message-edits.ts EDIT_LIMIT_GRACE_SECONDS). */
const EDIT_TYPING_GRACE_SECONDS = 0;

/**
 * Writes none of the cached tables (at most the editor's deferred rows, caught up to read the message),
 * which it says through `writes`.
 */
export async function doSetMessageEditTyping(
  deps: AppDeps,
  realm: Realm,
  editor: User,
  messageId: number,
  op: 'start' | 'stop',
  writes: CachedTableWrites,
): Promise<Record<string, never>> {
  // Access to a protected history comes from the editor's row, which may still be deferred.
  if (isPossibleMessageId(messageId)) await catchUpDeferredRows(deps.db, realm, editor);
  const found = await changeableMessage(deps.db, realm, editor, messageId);
  const message = found.message;
  checkCanEditContent(realm, editor, { senderId: message.sender_id, dateSent: message.date_sent }, new Date(), EDIT_TYPING_GRACE_SECONDS);
  const people = typingPeopleCache(deps.listener);

  if (found.channel === null || message.channel_id === null) {
    const participants = await people.people(deps.db, realm.id, message.direct_user_ids);
    const self = participants.find((p) => p.id === editor.id);
    if (self?.sends_direct === false) throw new JsonableError('User has disabled typing notifications for direct messages');
    const receivers = participants.filter((p) => p.is_active && p.receives).map((p) => p.id);
    await deps.events.publishEphemeral(realm.id, receivers, {
      type: 'typing_edit_message',
      op,
      sender_id: editor.id,
      message_id: message.id,
      recipient: { type: 'direct', user_ids: receivers },
    });
  } else {
    const [self] = await people.people(deps.db, realm.id, [editor.id]);
    if (self?.sends_channel === false) throw new JsonableError('User has disabled typing notifications for channel messages');
    const audienceIds = await channelTypingAudience(deps.db, message.channel_id, MAX_CHANNEL_SIZE_FOR_TYPING);
    if (audienceIds !== null) {
      // Subscribers who joined a channel with protected history after the message cannot read it.
      const channel = found.channel;
      const reached = await messageReachedUsers(deps.db, message.id, audienceIds);
      const receivers = reached
        .filter((u) => seesChannelMessage({ userId: u.id, role: u.role, flags: u.received ? 0 : null, subscribed: true }, channel))
        .map((u) => u.id);
      await deps.events.publishEphemeral(realm.id, receivers, {
        type: 'typing_edit_message',
        op,
        sender_id: editor.id,
        message_id: message.id,
        recipient: { type: 'channel', channel_id: message.channel_id, topic: message.topic },
      });
    }
  }
  writes.none();
  return {};
}
