-- Messages that change (issue 22): edit history and move time on messages, emoji reactions, and the
-- organization settings that govern editing, moving, deleting and read receipts (Zulip's defaults).

-- Edits and moves, newest first, in Zulip's stored shape ({user_id, timestamp, prev_content,
-- prev_rendered_content, prev_topic, topic, prev_stream, stream}); null when never edited or moved.
ALTER TABLE "message" ADD COLUMN "edit_history" JSONB;
-- When the message last changed topic (other than resolving) or channel; last_edit_time stays the
-- last content edit.
ALTER TABLE "message" ADD COLUMN "last_moved_time" TIMESTAMP(3);

CREATE TABLE "reaction" (
    "id" SERIAL NOT NULL,
    "message_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "emoji_name" TEXT NOT NULL,
    "emoji_code" TEXT NOT NULL,
    "reaction_type" TEXT NOT NULL,
    CONSTRAINT "reaction_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "reaction_message_id_user_id_emoji_code_reaction_type_key" ON "reaction"("message_id", "user_id", "emoji_code", "reaction_type");
CREATE INDEX "reaction_user_id_idx" ON "reaction"("user_id");
ALTER TABLE "reaction" ADD CONSTRAINT "reaction_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "reaction" ADD CONSTRAINT "reaction_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "realm" ADD COLUMN "allow_message_editing" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "message_content_edit_limit_seconds" INTEGER DEFAULT 600;
ALTER TABLE "realm" ADD COLUMN "move_messages_within_stream_limit_seconds" INTEGER DEFAULT 604800;
ALTER TABLE "realm" ADD COLUMN "move_messages_between_streams_limit_seconds" INTEGER DEFAULT 604800;
ALTER TABLE "realm" ADD COLUMN "message_content_delete_limit_seconds" INTEGER DEFAULT 600;
ALTER TABLE "realm" ADD COLUMN "message_edit_history_visibility_policy" TEXT NOT NULL DEFAULT 'all';
ALTER TABLE "realm" ADD COLUMN "enable_read_receipts" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "can_move_messages_between_topics_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_move_messages_between_channels_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_resolve_topics_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_delete_any_message_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_delete_own_message_group_id" INTEGER;

-- Existing organizations get Zulip's defaults, pointing at their own system groups.
UPDATE "realm" r SET
  "can_move_messages_between_topics_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.name = 'role:everyone'),
  "can_move_messages_between_channels_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.name = 'role:members'),
  "can_resolve_topics_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.name = 'role:everyone'),
  "can_delete_any_message_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.name = 'role:administrators'),
  "can_delete_own_message_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.name = 'role:everyone');
