-- The push outbox (apps/server/src/push/): one row per push notification and device, written in the
-- transaction of the change that causes it and sent after commit by the `send-push` job, or only
-- recorded when no push provider is configured.
CREATE TABLE "push_outbox" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "device_id" INTEGER,
    "kind" TEXT NOT NULL,
    "token" TEXT NOT NULL,
    "app_id" TEXT,
    "event" TEXT NOT NULL,
    "message_id" INTEGER,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "apns_id" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMP(3),

    CONSTRAINT "push_outbox_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "push_outbox_user_id_id_idx" ON "push_outbox"("user_id", "id");
CREATE INDEX "push_outbox_device_id_idx" ON "push_outbox"("device_id");

-- Declared here only (the Prisma model has no relation fields): pushes go with their user and
-- organization; a removed device leaves its pushes behind with device_id NULL (pending ones are dropped).
ALTER TABLE "push_outbox" ADD CONSTRAINT "push_outbox_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "push_outbox" ADD CONSTRAINT "push_outbox_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "push_outbox" ADD CONSTRAINT "push_outbox_device_id_fkey" FOREIGN KEY ("device_id") REFERENCES "push_device"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- APNs answers about a token (Unregistered, BadDeviceToken) remove every registration of it.
CREATE INDEX "push_device_kind_token_idx" ON "push_device"("kind", "token");
