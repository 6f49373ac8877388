// Messages: POST /messages (sending); reading is in handlers/message-reads.ts.
import type { Handler } from '../http/handler.ts';
import { doSendMessage } from '../actions/messages.ts';

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
