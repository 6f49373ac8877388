// Scheduled messages.
import type { Handler } from '../http/handler.ts';
import { doCreateScheduledMessage, doDeleteScheduledMessage, doUpdateScheduledMessage } from '../actions/scheduled-messages.ts';
import { scheduledMessagesOf } from '../queries/scheduled-messages.ts';

export const getScheduledMessages: Handler<'get-scheduled-messages'> = async ({ user, deps }) => ({
  scheduled_messages: await scheduledMessagesOf(deps.db, user),
});

export const createScheduledMessage: Handler<'create-scheduled-message'> = async ({ params, realm, user, deps, client }) => ({
  scheduled_message_id: await doCreateScheduledMessage(deps, realm, user, {
    type: params.type,
    to: params.to,
    content: params.content,
    topic: params.topic,
    scheduledDeliveryTimestamp: params.scheduled_delivery_timestamp,
    readBySender: params.read_by_sender,
    client,
  }),
});

export const updateScheduledMessage: Handler<'update-scheduled-message'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateScheduledMessage(deps, realm, user, path.scheduled_message_id, {
    type: params.type,
    to: params.to,
    content: params.content,
    topic: params.topic,
    scheduledDeliveryTimestamp: params.scheduled_delivery_timestamp,
  });
  return {};
};

export const deleteScheduledMessage: Handler<'delete-scheduled-message'> = async ({ path, realm, user, deps }) => {
  await doDeleteScheduledMessage(deps, realm, user, path.scheduled_message_id);
  return {};
};
