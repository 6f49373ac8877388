-- Reminders (POST /reminders) are scheduled messages of a second kind, as in Zulip: delivery_type 2,
-- sent to their owner by the notification bot, about the message reminder_target_message_id.
ALTER TABLE "scheduled_message" ADD COLUMN     "delivery_type" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "reminder_target_message_id" INTEGER;
