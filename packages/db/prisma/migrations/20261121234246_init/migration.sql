-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "realm" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "url" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "enable_spectator_access" BOOLEAN NOT NULL DEFAULT false,
    "email_changes_disabled" BOOLEAN NOT NULL DEFAULT false,
    "name_changes_disabled" BOOLEAN NOT NULL DEFAULT false,
    "invite_required" BOOLEAN NOT NULL DEFAULT true,
    "message_retention_days" INTEGER,
    "waiting_period_threshold" INTEGER NOT NULL DEFAULT 0,
    "default_language" TEXT NOT NULL DEFAULT 'en',
    "topics_policy" TEXT NOT NULL DEFAULT 'allow_empty_topic',
    "moderation_request_channel_id" INTEGER,
    "can_add_subscribers_group_id" INTEGER,
    "can_create_groups_id" INTEGER,
    "can_create_public_channel_group_id" INTEGER,
    "can_create_private_channel_group_id" INTEGER,
    "can_create_web_public_channel_group_id" INTEGER,
    "can_invite_users_group_id" INTEGER,
    "can_manage_all_groups_id" INTEGER,
    "can_mention_many_users_group_id" INTEGER,
    "can_access_all_users_group_id" INTEGER,
    "can_set_topics_policy_group_id" INTEGER,
    "direct_message_permission_group_id" INTEGER,
    "create_multiuse_invite_group_id" INTEGER,

    CONSTRAINT "realm_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "delivery_email" TEXT NOT NULL,
    "full_name" TEXT NOT NULL,
    "role" INTEGER NOT NULL DEFAULT 400,
    "is_active" BOOLEAN NOT NULL DEFAULT true,
    "is_bot" BOOLEAN NOT NULL DEFAULT false,
    "bot_type" INTEGER,
    "bot_owner_id" INTEGER,
    "date_joined" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "timezone" TEXT NOT NULL DEFAULT '',
    "avatar_source" TEXT NOT NULL DEFAULT 'G',
    "avatar_version" INTEGER NOT NULL DEFAULT 1,
    "password_hash" TEXT,
    "can_change_user_emails" BOOLEAN NOT NULL DEFAULT false,
    "pending_email" TEXT,
    "last_login" TIMESTAMP(3),

    CONSTRAINT "user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_key" (
    "user_id" INTEGER NOT NULL,
    "lookup_hash" TEXT NOT NULL,
    "ciphertext" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_key_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "user_settings" (
    "user_id" INTEGER NOT NULL,
    "twenty_four_hour_time" BOOLEAN NOT NULL DEFAULT false,
    "web_mark_read_on_scroll_policy" INTEGER NOT NULL DEFAULT 1,
    "web_channel_default_view" INTEGER NOT NULL DEFAULT 1,
    "starred_message_counts" BOOLEAN NOT NULL DEFAULT true,
    "receives_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
    "web_suggest_update_timezone" BOOLEAN NOT NULL DEFAULT true,
    "fluid_layout_width" BOOLEAN NOT NULL DEFAULT false,
    "high_contrast_mode" BOOLEAN NOT NULL DEFAULT false,
    "web_font_size_px" INTEGER NOT NULL DEFAULT 16,
    "web_line_height_percent" INTEGER NOT NULL DEFAULT 140,
    "color_scheme" INTEGER NOT NULL DEFAULT 1,
    "enable_drafts_synchronization" BOOLEAN NOT NULL DEFAULT true,
    "translate_emoticons" BOOLEAN NOT NULL DEFAULT false,
    "display_emoji_reaction_users" BOOLEAN NOT NULL DEFAULT true,
    "default_language" TEXT NOT NULL DEFAULT 'en',
    "web_home_view" TEXT NOT NULL DEFAULT 'inbox',
    "web_escape_navigates_to_home_view" BOOLEAN NOT NULL DEFAULT true,
    "left_side_userlist" BOOLEAN NOT NULL DEFAULT false,
    "emojiset" TEXT NOT NULL DEFAULT 'google',
    "demote_inactive_streams" INTEGER NOT NULL DEFAULT 1,
    "user_list_style" INTEGER NOT NULL DEFAULT 2,
    "web_animate_image_previews" TEXT NOT NULL DEFAULT 'on_hover',
    "web_stream_unreads_count_display_policy" INTEGER NOT NULL DEFAULT 2,
    "hide_ai_features" BOOLEAN NOT NULL DEFAULT false,
    "web_left_sidebar_show_channel_folders" BOOLEAN NOT NULL DEFAULT true,
    "web_left_sidebar_unreads_count_summary" BOOLEAN NOT NULL DEFAULT true,
    "enable_stream_desktop_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_email_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_push_notifications" BOOLEAN NOT NULL DEFAULT false,
    "enable_stream_audible_notifications" BOOLEAN NOT NULL DEFAULT false,
    "notification_sound" TEXT NOT NULL DEFAULT 'zulip',
    "enable_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_sounds" BOOLEAN NOT NULL DEFAULT true,
    "email_notifications_batching_period_seconds" INTEGER NOT NULL DEFAULT 120,
    "enable_offline_email_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_offline_push_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_online_push_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_followed_topic_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_followed_topic_email_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_followed_topic_push_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_followed_topic_audible_notifications" BOOLEAN NOT NULL DEFAULT true,
    "enable_followed_topic_wildcard_mentions_notify" BOOLEAN NOT NULL DEFAULT true,
    "enable_digest_emails" BOOLEAN NOT NULL DEFAULT true,
    "enable_marketing_emails" BOOLEAN NOT NULL DEFAULT true,
    "enable_login_emails" BOOLEAN NOT NULL DEFAULT true,
    "message_content_in_email_notifications" BOOLEAN NOT NULL DEFAULT true,
    "pm_content_in_desktop_notifications" BOOLEAN NOT NULL DEFAULT true,
    "wildcard_mentions_notify" BOOLEAN NOT NULL DEFAULT true,
    "desktop_icon_count_display" INTEGER NOT NULL DEFAULT 1,
    "realm_name_in_email_notifications_policy" INTEGER NOT NULL DEFAULT 1,
    "automatically_follow_topics_policy" INTEGER NOT NULL DEFAULT 3,
    "automatically_unmute_topics_in_muted_streams_policy" INTEGER NOT NULL DEFAULT 2,
    "automatically_follow_topics_where_mentioned" BOOLEAN NOT NULL DEFAULT true,
    "resolved_topic_notice_auto_read_policy" TEXT NOT NULL DEFAULT 'except_followed',
    "presence_enabled" BOOLEAN NOT NULL DEFAULT true,
    "enter_sends" BOOLEAN NOT NULL DEFAULT false,
    "send_private_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
    "send_stream_typing_notifications" BOOLEAN NOT NULL DEFAULT true,
    "send_read_receipts" BOOLEAN NOT NULL DEFAULT true,
    "allow_private_data_export" BOOLEAN NOT NULL DEFAULT false,
    "email_address_visibility" INTEGER NOT NULL DEFAULT 1,
    "web_navigate_to_sent_message" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "user_settings_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "custom_profile_field" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "field_type" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "hint" TEXT NOT NULL DEFAULT '',
    "field_data" JSONB NOT NULL DEFAULT '{}',
    "order" INTEGER NOT NULL DEFAULT 0,
    "display_in_profile_summary" BOOLEAN NOT NULL DEFAULT false,
    "required" BOOLEAN NOT NULL DEFAULT false,
    "editable_by_user" BOOLEAN NOT NULL DEFAULT true,

    CONSTRAINT "custom_profile_field_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "custom_profile_field_value" (
    "user_id" INTEGER NOT NULL,
    "field_id" INTEGER NOT NULL,
    "value" TEXT NOT NULL,
    "rendered_value" TEXT,

    CONSTRAINT "custom_profile_field_value_pkey" PRIMARY KEY ("user_id","field_id")
);

-- CreateTable
CREATE TABLE "user_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT,
    "description" TEXT NOT NULL DEFAULT '',
    "is_system_group" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,
    "can_add_members_group_id" INTEGER,
    "can_join_group_id" INTEGER,
    "can_leave_group_id" INTEGER,
    "can_manage_group_id" INTEGER,
    "can_mention_group_id" INTEGER,
    "can_remove_members_group_id" INTEGER,

    CONSTRAINT "user_group_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_group_member" (
    "group_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,

    CONSTRAINT "user_group_member_pkey" PRIMARY KEY ("group_id","user_id")
);

-- CreateTable
CREATE TABLE "user_group_subgroup" (
    "supergroup_id" INTEGER NOT NULL,
    "subgroup_id" INTEGER NOT NULL,

    CONSTRAINT "user_group_subgroup_pkey" PRIMARY KEY ("supergroup_id","subgroup_id")
);

-- CreateTable
CREATE TABLE "channel_folder" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "order" INTEGER NOT NULL DEFAULT 0,
    "is_archived" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,

    CONSTRAINT "channel_folder_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "channel" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "rendered_description" TEXT NOT NULL DEFAULT '',
    "invite_only" BOOLEAN NOT NULL DEFAULT false,
    "is_web_public" BOOLEAN NOT NULL DEFAULT false,
    "history_public_to_subscribers" BOOLEAN NOT NULL DEFAULT true,
    "is_default" BOOLEAN NOT NULL DEFAULT false,
    "is_archived" BOOLEAN NOT NULL DEFAULT false,
    "message_retention_days" INTEGER,
    "topics_policy" TEXT NOT NULL DEFAULT 'inherit',
    "folder_id" INTEGER,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "creator_id" INTEGER,
    "can_add_subscribers_group_id" INTEGER NOT NULL,
    "can_administer_channel_group_id" INTEGER NOT NULL,
    "can_delete_any_message_group_id" INTEGER NOT NULL,
    "can_delete_own_message_group_id" INTEGER NOT NULL,
    "can_move_messages_out_of_channel_group_id" INTEGER NOT NULL,
    "can_move_messages_within_channel_group_id" INTEGER NOT NULL,
    "can_remove_subscribers_group_id" INTEGER NOT NULL,
    "can_resolve_topics_group_id" INTEGER NOT NULL,
    "can_send_message_group_id" INTEGER NOT NULL,
    "can_subscribe_group_id" INTEGER NOT NULL,

    CONSTRAINT "channel_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscription" (
    "user_id" INTEGER NOT NULL,
    "channel_id" INTEGER NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "color" TEXT NOT NULL DEFAULT '#c2c2c2',
    "is_muted" BOOLEAN NOT NULL DEFAULT false,
    "pin_to_top" BOOLEAN NOT NULL DEFAULT false,
    "desktop_notifications" BOOLEAN,
    "audible_notifications" BOOLEAN,
    "push_notifications" BOOLEAN,
    "email_notifications" BOOLEAN,
    "wildcard_mentions_notify" BOOLEAN,

    CONSTRAINT "subscription_pkey" PRIMARY KEY ("user_id","channel_id")
);

-- CreateTable
CREATE TABLE "message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "channel_id" INTEGER,
    "topic" TEXT NOT NULL DEFAULT '',
    "direct_user_ids" INTEGER[],
    "content" TEXT NOT NULL,
    "rendered_content" TEXT NOT NULL,
    "date_sent" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_edit_time" TIMESTAMP(3),

    CONSTRAINT "message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "user_message" (
    "user_id" INTEGER NOT NULL,
    "message_id" INTEGER NOT NULL,
    "flags" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "user_message_pkey" PRIMARY KEY ("user_id","message_id")
);

-- CreateTable
CREATE TABLE "scheduled_message" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "channel_id" INTEGER,
    "direct_user_ids" INTEGER[],
    "topic" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "rendered_content" TEXT NOT NULL,
    "scheduled_at" TIMESTAMP(3) NOT NULL,
    "read_by_sender" BOOLEAN,
    "delivered" BOOLEAN NOT NULL DEFAULT false,
    "delivered_message_id" INTEGER,
    "failed" BOOLEAN NOT NULL DEFAULT false,
    "failure_message" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scheduled_message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "draft" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "type" TEXT NOT NULL,
    "to_ids" INTEGER[],
    "topic" TEXT NOT NULL DEFAULT '',
    "content" TEXT NOT NULL,
    "last_edit_time" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "draft_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invitation" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "referred_by_id" INTEGER NOT NULL,
    "invited_as" INTEGER NOT NULL DEFAULT 400,
    "invited_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3),
    "status" INTEGER NOT NULL DEFAULT 0,
    "channel_ids" INTEGER[],
    "group_ids" INTEGER[],
    "include_realm_default_subscriptions" BOOLEAN NOT NULL DEFAULT false,
    "notify_referrer_on_join" BOOLEAN NOT NULL DEFAULT true,
    "welcome_message_custom_text" TEXT,
    "confirmation_key_hash" TEXT NOT NULL,

    CONSTRAINT "invitation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "push_device" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "token" TEXT NOT NULL,
    "app_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "push_device_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event" (
    "id" BIGSERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_ids" INTEGER[],
    "payload" JSONB NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "event_queue" (
    "id" TEXT NOT NULL,
    "user_id" INTEGER NOT NULL,
    "event_types" TEXT[],
    "all_public_streams" BOOLEAN NOT NULL DEFAULT false,
    "client_capabilities" JSONB NOT NULL DEFAULT '{}',
    "last_event_id" BIGINT NOT NULL,
    "last_accessed_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "event_queue_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_realm_id_role_idx" ON "user"("realm_id", "role");

-- CreateIndex
CREATE UNIQUE INDEX "user_realm_id_delivery_email_key" ON "user"("realm_id", "delivery_email");

-- CreateIndex
CREATE UNIQUE INDEX "api_key_lookup_hash_key" ON "api_key"("lookup_hash");

-- CreateIndex
CREATE UNIQUE INDEX "custom_profile_field_realm_id_name_key" ON "custom_profile_field"("realm_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "user_group_realm_id_name_key" ON "user_group"("realm_id", "name");

-- CreateIndex
CREATE INDEX "user_group_member_user_id_idx" ON "user_group_member"("user_id");

-- CreateIndex
CREATE INDEX "user_group_subgroup_subgroup_id_idx" ON "user_group_subgroup"("subgroup_id");

-- CreateIndex
CREATE UNIQUE INDEX "channel_folder_realm_id_name_key" ON "channel_folder"("realm_id", "name");

-- CreateIndex
CREATE INDEX "channel_realm_id_idx" ON "channel"("realm_id");

-- CreateIndex
CREATE INDEX "subscription_channel_id_active_idx" ON "subscription"("channel_id", "active");

-- CreateIndex
CREATE INDEX "message_channel_id_topic_idx" ON "message"("channel_id", "topic");

-- CreateIndex
CREATE INDEX "message_realm_id_id_idx" ON "message"("realm_id", "id");

-- CreateIndex
CREATE INDEX "user_message_message_id_idx" ON "user_message"("message_id");

-- CreateIndex
CREATE INDEX "scheduled_message_delivered_scheduled_at_idx" ON "scheduled_message"("delivered", "scheduled_at");

-- CreateIndex
CREATE INDEX "scheduled_message_sender_id_delivered_idx" ON "scheduled_message"("sender_id", "delivered");

-- CreateIndex
CREATE INDEX "draft_user_id_idx" ON "draft"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "invitation_confirmation_key_hash_key" ON "invitation"("confirmation_key_hash");

-- CreateIndex
CREATE INDEX "invitation_realm_id_email_idx" ON "invitation"("realm_id", "email");

-- CreateIndex
CREATE UNIQUE INDEX "push_device_user_id_kind_token_key" ON "push_device"("user_id", "kind", "token");

-- CreateIndex
CREATE INDEX "event_realm_id_id_idx" ON "event"("realm_id", "id");

-- CreateIndex
CREATE INDEX "event_created_at_idx" ON "event"("created_at");

-- CreateIndex
CREATE INDEX "event_queue_user_id_idx" ON "event_queue"("user_id");

-- AddForeignKey
ALTER TABLE "user" ADD CONSTRAINT "user_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user" ADD CONSTRAINT "user_bot_owner_id_fkey" FOREIGN KEY ("bot_owner_id") REFERENCES "user"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_key" ADD CONSTRAINT "api_key_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_settings" ADD CONSTRAINT "user_settings_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field" ADD CONSTRAINT "custom_profile_field_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "custom_profile_field_value" ADD CONSTRAINT "custom_profile_field_value_field_id_fkey" FOREIGN KEY ("field_id") REFERENCES "custom_profile_field"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group" ADD CONSTRAINT "user_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_member" ADD CONSTRAINT "user_group_member_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_member" ADD CONSTRAINT "user_group_member_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_subgroup" ADD CONSTRAINT "user_group_subgroup_supergroup_id_fkey" FOREIGN KEY ("supergroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_group_subgroup" ADD CONSTRAINT "user_group_subgroup_subgroup_id_fkey" FOREIGN KEY ("subgroup_id") REFERENCES "user_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel_folder" ADD CONSTRAINT "channel_folder_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "channel" ADD CONSTRAINT "channel_folder_id_fkey" FOREIGN KEY ("folder_id") REFERENCES "channel_folder"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscription" ADD CONSTRAINT "subscription_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "message" ADD CONSTRAINT "message_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "scheduled_message" ADD CONSTRAINT "scheduled_message_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "scheduled_message" ADD CONSTRAINT "scheduled_message_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "draft" ADD CONSTRAINT "draft_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation" ADD CONSTRAINT "invitation_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invitation" ADD CONSTRAINT "invitation_referred_by_id_fkey" FOREIGN KEY ("referred_by_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "push_device" ADD CONSTRAINT "push_device_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "event" ADD CONSTRAINT "event_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: constraints Prisma's schema language cannot express.
-- E-mail addresses and channel / group names are unique per organization regardless of case.
CREATE UNIQUE INDEX "user_realm_id_lower_delivery_email_key" ON "user" ("realm_id", lower("delivery_email"));
CREATE UNIQUE INDEX "channel_realm_id_lower_name_key" ON "channel" ("realm_id", lower("name"));
CREATE UNIQUE INDEX "user_group_realm_id_lower_name_key" ON "user_group" ("realm_id", lower("name")) WHERE "name" IS NOT NULL;
-- Event delivery looks events up by recipient.
CREATE INDEX "event_user_ids_idx" ON "event" USING GIN ("user_ids");
-- A group can never be its own subgroup (longer cycles are refused by the application under lock).
ALTER TABLE "user_group_subgroup" ADD CONSTRAINT "user_group_subgroup_not_self" CHECK ("supergroup_id" <> "subgroup_id");
