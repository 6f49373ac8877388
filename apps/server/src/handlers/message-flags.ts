// Read state and personal message flags.
import type { Handler } from '../http/handler.ts';
import { doMarkAllAsRead, doMarkStreamAsRead, doMarkTopicAsRead, doUpdateMessageFlags, doUpdateMessageFlagsForNarrow } from '../actions/message-flags.ts';

export const updateMessageFlags: Handler<'update-message-flags'> = async ({ params, realm, user, deps }) => {
  const { ignoredChannelIds } = await doUpdateMessageFlags(deps, realm, user, params.messages, params.op, params.flag);
  return { messages: params.messages, ignored_because_not_subscribed_channels: ignoredChannelIds };
};

export const updateMessageFlagsForNarrow: Handler<'update-message-flags-for-narrow'> = async ({ params, realm, user, deps }) => {
  const request = {
    anchor: String(params.anchor),
    includeAnchor: params.include_anchor ?? true,
    numBefore: params.num_before,
    numAfter: params.num_after,
    narrow: params.narrow,
  };
  const result = await doUpdateMessageFlagsForNarrow(deps, realm, user, request, params.op, params.flag);
  return {
    processed_count: result.ids.length,
    updated_count: result.updatedCount,
    first_processed_id: result.ids[0] ?? null,
    last_processed_id: result.ids.at(-1) ?? null,
    found_oldest: result.foundOldest,
    found_newest: result.foundNewest,
    ignored_because_not_subscribed_channels: result.ignoredChannelIds,
  };
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
