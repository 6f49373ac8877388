-- Uploaded files (issue 24, parts 1, 2 and 5): Zulip's Attachment. The file itself lives in the
-- storage backend (apps/server/src/storage) under `files/<path_id>`; this row says who uploaded it, its
-- name, size and type, and which messages link to it (attachment_message).
CREATE TABLE "attachment" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "owner_id" INTEGER NOT NULL,
    -- `<realm id>/<2 hex>/<24 random url-safe characters>/<sanitized name>`: the URL is /user_uploads/<path_id>.
    "path_id" TEXT NOT NULL,
    -- The name as uploaded (shown to users, and in Content-Disposition).
    "file_name" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "content_type" TEXT,
    "create_time" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "attachment_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "attachment_path_id_key" ON "attachment"("path_id");
-- GET /attachments (a user's uploads).
CREATE INDEX "attachment_owner_id_idx" ON "attachment"("owner_id");
-- The organization's used space (index-only sum) and the clean-up of old unclaimed files.
CREATE INDEX "attachment_realm_id_create_time_idx" ON "attachment"("realm_id", "create_time") INCLUDE ("size");
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "attachment" ADD CONSTRAINT "attachment_owner_id_fkey" FOREIGN KEY ("owner_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Which messages link to which file (Zulip's Attachment.messages), written when a message is sent or
-- its content edited. No foreign key to message: deleting messages (in batches of thousands) must not
-- pay a cascade per message, and a link to a message that no longer exists grants nothing (every read
-- joins message); the periodic clean-up (jobs: delete-unclaimed-attachments) removes such links.
CREATE TABLE "attachment_message" (
    "attachment_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,

    CONSTRAINT "attachment_message_pkey" PRIMARY KEY ("attachment_id", "message_id")
);
CREATE INDEX "attachment_message_message_id_idx" ON "attachment_message"("message_id");
ALTER TABLE "attachment_message" ADD CONSTRAINT "attachment_message_attachment_id_fkey" FOREIGN KEY ("attachment_id") REFERENCES "attachment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Zulip's Realm.custom_upload_quota_gb: the organization's upload quota in GiB; null means none.
ALTER TABLE "realm" ADD COLUMN "custom_upload_quota_gb" INTEGER;
