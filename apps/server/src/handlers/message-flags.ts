// Read state and personal message flags.
import type { Handler } from '../http/handler.ts';
import { doMarkAllAsRead, doMarkStreamAsRead, doMarkTopicAsRead, doUpdateMessageFlags } from '../actions/message-flags.ts';

export const updateMessageFlags: Handler<'update-message-flags'> = async ({ params, realm, user, deps }) => {
  await doUpdateMessageFlags(deps, realm, user, params.messages, params.op, params.flag);
  return { messages: params.messages };
};

export const markAllAsRead: Handler<'mark-all-as-read'> = async ({ realm, user, deps }) => doMarkAllAsRead(deps, realm, user);

export const markStreamAsRead: Handler<'mark-stream-as-read'> = async ({ params, realm, user, deps }) => {
  await doMarkStreamAsRead(deps, realm, user, params.stream_id);
  return {};
};

export const markTopicAsRead: Handler<'mark-topic-as-read'> = async ({ params, realm, user, deps }) => {
  await doMarkTopicAsRead(deps, realm, user, params.stream_id, params.topic_name);
  return {};
};
