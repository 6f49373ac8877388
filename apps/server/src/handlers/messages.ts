// Messages: POST /messages (sending, actions/messages.ts); GET /messages, GET /messages/{message_id} and
// GET /users/me/{stream_id}/topics (reading, read models in queries/messages.ts, which check what the
// caller may read). Spectators (no credentials) arrive with viewer null. Each read goes in three steps:
// the checks that need no rows of the viewer, then the viewer's deferred rows caught up (once; none when
// the request was refused, or reads no rows of theirs), then the read. GET /messages catches up while
// it reads the narrow's channels (one wait fewer; a request its narrow refuses has caught up for nothing).
import type { Handler } from '../http/handler.ts';
import { doSendMessage } from '../actions/messages.ts';
import { doDeleteMessage, doDeleteTopic } from '../actions/message-deletion.ts';
import { catchUpDeferredRows } from '../actions/deferred-rows.ts';
import { checkFetchRequest, checkTopicsRequest, fetchMessages, isPossibleMessageId, messageForViewer, topicsOfChannel } from '../queries/messages.ts';
import { readReceipts } from '../queries/read-receipts.ts';
import { doRenderMessage } from '../actions/render-message.ts';
import { checkMatchesNarrowRequest, narrowMatches } from '../queries/narrow-matches.ts';
import { doSetMessageEditTyping } from '../actions/message-typing.ts';
import { doUpdateMessage } from '../actions/message-edits.ts';
import { checkEditHistoryAvailable, messageHistory } from '../queries/message-history.ts';

export const sendMessage: Handler<'send-message'> = async ({ params, realm, user, deps, client }) => {
  const { id, automaticNewVisibilityPolicy } = await doSendMessage(deps, realm, user, {
    type: params.type === 'stream' || params.type === 'channel' ? 'stream' : 'private',
    to: params.to,
    topic: params.topic,
    content: params.content,
    queueId: params.queue_id,
    localId: params.local_id,
    readBySender: params.read_by_sender,
    client,
  });
  // Only when sending changed the sender's policy for the topic (Zulip's feature level 218).
  return automaticNewVisibilityPolicy === null ? { id } : { id, automatic_new_visibility_policy: automaticNewVisibilityPolicy as 2 | 3 };
};

export const getMessages: Handler<'get-messages'> = async ({ params, realm, viewer, deps }) => {
  const query = checkFetchRequest({
    anchor: params.anchor,
    anchorDate: params.anchor_date,
    includeAnchor: params.include_anchor,
    numBefore: params.num_before,
    numAfter: params.num_after,
    narrow: params.narrow,
    useFirstUnreadAnchor: params.use_first_unread_anchor,
    messageIds: params.message_ids,
    clientGravatar: params.client_gravatar,
    applyMarkdown: params.apply_markdown,
    allowEmptyTopicName: params.allow_empty_topic_name,
  });
  // Caught up while the narrow's channels are read (fetchMessages awaits it before reading the viewer's rows).
  const caughtUp = viewer ? catchUpDeferredRows(deps.db, realm, viewer) : Promise.resolve();
  caughtUp.catch(() => {}); // (awaited by fetchMessages, unless the request is refused before)
  return fetchMessages(deps.db, realm, viewer, query, caughtUp);
};

export const getMessage: Handler<'get-message'> = async ({ params, path, realm, viewer, deps }) => {
  if (viewer && isPossibleMessageId(path.message_id)) await catchUpDeferredRows(deps.db, realm, viewer);
  return messageForViewer(deps.db, realm, viewer, path.message_id, {
    applyMarkdown: params.apply_markdown ?? true,
    allowEmptyTopicName: params.allow_empty_topic_name ?? false,
  });
};

export const getStreamTopics: Handler<'get-stream-topics'> = async ({ params, path, realm, viewer, deps }) => {
  const query = await checkTopicsRequest(deps.db, realm, viewer, path.stream_id);
  if (query.rowsOf) await catchUpDeferredRows(deps.db, realm, query.rowsOf);
  return topicsOfChannel(deps.db, query, { allowEmptyTopicName: params.allow_empty_topic_name ?? false });
};

export const getReadReceipts: Handler<'get-read-receipts'> = async ({ path, realm, user, deps }) => {
  if (isPossibleMessageId(path.message_id)) await catchUpDeferredRows(deps.db, realm, user);
  return readReceipts(deps.db, realm, user, path.message_id);
};

export const renderMessage: Handler<'render-message'> = async ({ params, realm, user, deps }) => doRenderMessage(deps.db, realm, user, params.content);

export const checkMessagesMatchNarrow: Handler<'check-messages-match-narrow'> = async ({ params, realm, user, deps }) => {
  const terms = checkMatchesNarrowRequest(params.narrow);
  await catchUpDeferredRows(deps.db, realm, user);
  return narrowMatches(deps.db, realm, user, params.msg_ids, terms);
};

export const setTypingStatusForMessageEdit: Handler<'set-typing-status-for-message-edit'> = async ({ params, path, realm, user, deps, cachedTableWrites }) =>
  doSetMessageEditTyping(deps, realm, user, path.message_id, params.op, cachedTableWrites);

export const updateMessage: Handler<'update-message'> = async ({ params, path, realm, user, deps }) =>
  doUpdateMessage(deps, realm, user, {
    messageId: path.message_id,
    topic: params.topic,
    propagateMode: params.propagate_mode ?? 'change_one',
    notifyOldThread: params.send_notification_to_old_thread ?? false,
    notifyNewThread: params.send_notification_to_new_thread ?? true,
    content: params.content,
    prevContentSha256: params.prev_content_sha256,
    streamId: params.stream_id,
  });

export const getMessageHistory: Handler<'get-message-history'> = async ({ params, path, realm, user, deps }) => {
  checkEditHistoryAvailable(realm);
  if (isPossibleMessageId(path.message_id)) await catchUpDeferredRows(deps.db, realm, user);
  return messageHistory(deps.db, realm, user, path.message_id, { allowEmptyTopicName: params.allow_empty_topic_name ?? false });
};

export const deleteMessage: Handler<'delete-message'> = async ({ path, realm, user, deps }) => {
  await doDeleteMessage(deps, realm, user, path.message_id);
  return {};
};

export const deleteTopic: Handler<'delete-topic'> = async ({ params, path, realm, user, deps }) => doDeleteTopic(deps, realm, user, path.stream_id, params.topic_name);
