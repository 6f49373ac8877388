-- Every organization setting of PATCH /realm (issue 25, part 1; apps/server/src/lib/realm-settings.ts
-- declares them), the defaults of new users' settings (part 2), and an index for the retention job.
-- Columns take Zulip's defaults for a new organization (zerver/models/realms.py).

ALTER TABLE "realm" ADD COLUMN "avatar_changes_disabled" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "default_code_block_language" TEXT NOT NULL DEFAULT '';
ALTER TABLE "realm" ADD COLUMN "digest_emails_enabled" BOOLEAN NOT NULL DEFAULT false;
-- 0 Monday … 6 Sunday.
ALTER TABLE "realm" ADD COLUMN "digest_weekday" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "realm" ADD COLUMN "disallow_disposable_email_addresses" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "emails_restricted_to_domains" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "enable_guest_user_dm_warning" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "enable_guest_user_indicator" BOOLEAN NOT NULL DEFAULT true;
-- 0 disabled, 1 Y, 2 G, 3 PG, 4 PG-13, 5 R.
ALTER TABLE "realm" ADD COLUMN "giphy_rating" INTEGER NOT NULL DEFAULT 2;
ALTER TABLE "realm" ADD COLUMN "inline_image_preview" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "inline_url_embed_preview" BOOLEAN NOT NULL DEFAULT false;
-- Null: the server's (none in Parley).
ALTER TABLE "realm" ADD COLUMN "jitsi_server_url" TEXT;
ALTER TABLE "realm" ADD COLUMN "message_content_allowed_in_email_notifications" BOOLEAN NOT NULL DEFAULT true;
ALTER TABLE "realm" ADD COLUMN "org_type" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "realm" ADD COLUMN "require_e2ee_push_notifications" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "require_unique_names" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "send_channel_events_messages" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "send_welcome_emails" BOOLEAN NOT NULL DEFAULT true;
-- 0 none, 1 Jitsi Meet (Zulip's other providers need server configuration Parley does not have).
ALTER TABLE "realm" ADD COLUMN "video_chat_provider" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "realm" ADD COLUMN "want_advertise_in_communities_directory" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "realm" ADD COLUMN "welcome_message_custom_text" TEXT NOT NULL DEFAULT '';
ALTER TABLE "realm" ADD COLUMN "new_stream_announcements_stream_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "signup_announcements_stream_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "zulip_update_announcements_stream_id" INTEGER;
ALTER TABLE "realm" ADD CONSTRAINT "realm_new_stream_announcements_stream_id_fkey" FOREIGN KEY ("new_stream_announcements_stream_id") REFERENCES "channel"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_signup_announcements_stream_id_fkey" FOREIGN KEY ("signup_announcements_stream_id") REFERENCES "channel"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_zulip_update_announcements_stream_id_fkey" FOREIGN KEY ("zulip_update_announcements_stream_id") REFERENCES "channel"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- The organization-level group settings Parley did not store yet.
ALTER TABLE "realm" ADD COLUMN "can_add_custom_emoji_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_create_bots_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_create_write_only_bots_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_manage_billing_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_set_delete_message_policy_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "can_summarize_topics_group_id" INTEGER;
ALTER TABLE "realm" ADD COLUMN "direct_message_initiator_group_id" INTEGER;

-- Existing organizations get Zulip's defaults, pointing at their own system groups.
UPDATE "realm" r SET
  "can_add_custom_emoji_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:members'),
  "can_create_bots_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:members'),
  "can_create_write_only_bots_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:members'),
  "can_manage_billing_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:administrators'),
  "can_set_delete_message_policy_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:moderators'),
  "can_summarize_topics_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:everyone'),
  "direct_message_initiator_group_id" = (SELECT g.id FROM "user_group" g WHERE g.realm_id = r.id AND g.is_system_group AND g.name = 'role:everyone');

-- Zulip's RealmUserDefault: what a new user's settings start as. Only the settings an administrator
-- changed are stored (JSON object keyed by the setting's API name); every other setting is at the
-- default of apps/server/src/lib/user-settings.ts.
CREATE TABLE "realm_user_default" (
    "realm_id" INTEGER NOT NULL,
    "settings" JSONB NOT NULL DEFAULT '{}',
    CONSTRAINT "realm_user_default_pkey" PRIMARY KEY ("realm_id")
);
ALTER TABLE "realm_user_default" ADD CONSTRAINT "realm_user_default_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- The retention job finds an organization's expired direct messages by date; channel messages it walks
-- through the (channel_id, id) index. Partial: channel messages (the bulk of sends) pay nothing.
CREATE INDEX "message_direct_realm_id_date_sent_idx" ON "message" ("realm_id", "date_sent") WHERE "channel_id" IS NULL;
