-- Event delivery (POST /register, GET /events) and messages.

-- Events: the type is a column so that a queue's event_types filter runs in SQL; message events carry
-- each recipient's flags (aligned with user_ids) instead of one payload copy per recipient, and
-- channel messages of public channels reach queues registered with all_public_streams.
ALTER TABLE "event" ADD COLUMN "type" TEXT NOT NULL DEFAULT '';
UPDATE "event" SET "type" = COALESCE("payload"->>'type', '');
ALTER TABLE "event" ADD COLUMN "flags" INTEGER[];
ALTER TABLE "event" ADD COLUMN "all_public_streams" BOOLEAN NOT NULL DEFAULT false;

-- Queues: nothing created them before this migration.
DELETE FROM "event_queue";
ALTER TABLE "event_queue" ADD COLUMN "realm_id" INTEGER NOT NULL;
ALTER TABLE "event_queue" ADD COLUMN "apply_markdown" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "event_queue" ADD COLUMN "client_gravatar" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "event_queue" ADD COLUMN "narrow" JSONB NOT NULL DEFAULT '[]';
ALTER TABLE "event_queue" ADD COLUMN "lifespan_secs" INTEGER NOT NULL DEFAULT 600;
ALTER TABLE "event_queue" ADD CONSTRAINT "event_queue_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "event_queue" ADD CONSTRAINT "event_queue_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
CREATE INDEX "event_queue_realm_id_idx" ON "event_queue"("realm_id");

-- Messages: the sending client's name, full-text search, and the indexes the narrows use.
ALTER TABLE "message" ADD COLUMN "sending_client" TEXT NOT NULL DEFAULT 'Internal';
ALTER TABLE "message" ADD COLUMN "search_tsv" TSVECTOR GENERATED ALWAYS AS (
  to_tsvector('english', "topic" || ' ' || "content")
) STORED;
CREATE INDEX "message_search_tsv_idx" ON "message" USING GIN ("search_tsv");
DROP INDEX IF EXISTS "message_channel_id_topic_idx";
CREATE INDEX "message_channel_topic_id_idx" ON "message" ("channel_id", lower("topic"), "id");
CREATE INDEX "message_channel_id_id_idx" ON "message" ("channel_id", "id");
CREATE INDEX "message_direct_user_ids_idx" ON "message" USING GIN ("direct_user_ids");
CREATE INDEX "message_realm_direct_id_idx" ON "message" ("realm_id", "direct_user_ids", "id") WHERE "channel_id" IS NULL;
CREATE INDEX "message_sender_id_id_idx" ON "message" ("sender_id", "id");

-- A user's unread messages and direct messages, without scanning everything they ever received.
CREATE INDEX "user_message_unread_idx" ON "user_message" ("user_id", "message_id") WHERE ("flags" & 1) = 0;
CREATE INDEX "user_message_private_idx" ON "user_message" ("user_id", "message_id") WHERE ("flags" & 2048) <> 0;
