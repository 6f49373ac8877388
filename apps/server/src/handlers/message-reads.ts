// Reading messages: GET /messages, GET /messages/{message_id}, GET /users/me/{stream_id}/topics (read
// models in queries/messages.ts, which check what the caller may read). Spectators (no credentials)
// arrive with viewer null.
import type { Handler } from '../http/handler.ts';
import { fetchMessages, messageForViewer, topicsOfChannel } from '../queries/messages.ts';

export const getMessages: Handler<'get-messages'> = async ({ params, realm, viewer, deps }) =>
  fetchMessages(deps.db, realm, viewer, {
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

export const getMessage: Handler<'get-message'> = async ({ params, path, realm, viewer, deps }) =>
  messageForViewer(deps.db, realm, viewer, path.message_id, {
    applyMarkdown: params.apply_markdown ?? true,
    allowEmptyTopicName: params.allow_empty_topic_name ?? false,
  });

export const getStreamTopics: Handler<'get-stream-topics'> = async ({ params, path, realm, viewer, deps }) =>
  topicsOfChannel(deps.db, realm, viewer, path.stream_id, { allowEmptyTopicName: params.allow_empty_topic_name ?? false });
