-- Outgoing webhooks (Zulip's outgoing_webhooks queue): one row per message and outgoing-webhook bot it
-- triggered, written in the transaction that stores the message, with the job that posts it to the
-- bot's URL. The row is the job's idempotency key: `attempt` is the attempt the next job is for (a job
-- carrying another number is stale), and `finished_at` is set in the transaction that posts the bot's
-- reply or failure notices, so that a retried or duplicated job never posts them twice.
CREATE TABLE "outgoing_webhook_delivery" (
    "message_id" INTEGER NOT NULL,
    "bot_id" INTEGER NOT NULL,
    "trigger" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),

    CONSTRAINT "outgoing_webhook_delivery_pkey" PRIMARY KEY ("message_id","bot_id")
);

-- AddForeignKey (not in schema.prisma: Message and User have no back-relation fields for them)
ALTER TABLE "outgoing_webhook_delivery" ADD CONSTRAINT "outgoing_webhook_delivery_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "outgoing_webhook_delivery" ADD CONSTRAINT "outgoing_webhook_delivery_bot_id_fkey" FOREIGN KEY ("bot_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
