-- A channel message's recipients with no flag of their own (not the sender, not mentioned, no push)
-- get their user_message row when they next read, not when the message is sent: the message lists them
-- in deferred_recipient_ids, and user_message_caught_up says up to which message a user's deferred rows
-- are written. Sending to 1,000 subscribers then writes a handful of rows, not 1,000 rows and their
-- per-user index entries (Zulip defers rows the same way for its long-idle users).
ALTER TABLE "message" ADD COLUMN "deferred_recipient_ids" INTEGER[] NOT NULL DEFAULT '{}';

CREATE TABLE "user_message_caught_up" (
    "user_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    CONSTRAINT "user_message_caught_up_pkey" PRIMARY KEY ("user_id")
);
ALTER TABLE "user_message_caught_up" ADD CONSTRAINT "user_message_caught_up_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Every existing row is written already: users are caught up with their organization's newest message.
INSERT INTO "user_message_caught_up" ("user_id", "message_id")
SELECT u.id, COALESCE((SELECT max(m.id) FROM "message" m WHERE m.realm_id = u.realm_id), 0) FROM "user" u;

