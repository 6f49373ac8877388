// Reminders.
import type { Handler } from '../http/handler.ts';
import { doCreateReminder, doDeleteReminder } from '../actions/reminders.ts';
import { remindersOf } from '../queries/scheduled-messages.ts';

export const getReminders: Handler<'get-reminders'> = async ({ user, deps }) => ({
  reminders: await remindersOf(deps.db, user),
});

export const createReminder: Handler<'create-reminder'> = async ({ params, realm, user, deps }) => ({
  reminder_id: await doCreateReminder(deps, realm, user, {
    messageId: params.message_id,
    scheduledDeliveryTimestamp: params.scheduled_delivery_timestamp,
    note: params.note,
  }),
});

export const deleteReminder: Handler<'delete-reminder'> = async ({ path, realm, user, deps }) => {
  await doDeleteReminder(deps, realm, user, path.reminder_id);
  return {};
};
