-- Bot accounts (Zulip's bot fields of UserProfile, and its Service, BotConfigData and BotStorageData
-- models). A bot is a row of "user" with is_bot, bot_type and bot_owner_id (already there); what only
-- bots have lives in the tables below. See the models BotProfile, BotService, BotConfigData and
-- BotStorageData in schema.prisma.

-- bot_profile: a bot's default channels (Zulip's default_sending_stream, default_events_register_stream,
-- default_all_public_streams). A bot without a row has none of them (system bots).
CREATE TABLE "bot_profile" (
    "user_id" INTEGER NOT NULL,
    "default_sending_stream_id" INTEGER,
    "default_events_register_stream_id" INTEGER,
    "default_all_public_streams" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "bot_profile_pkey" PRIMARY KEY ("user_id")
);

-- bot_service: the service of an outgoing webhook bot (or an embedded bot): its name, the URL Parley
-- posts to, the token it sends along, and the interface (1 generic, 2 Slack-compatible).
CREATE TABLE "bot_service" (
    "id" SERIAL NOT NULL,
    "bot_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "base_url" TEXT NOT NULL,
    "token" TEXT NOT NULL,
    "interface" SMALLINT NOT NULL DEFAULT 1,

    CONSTRAINT "bot_service_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "bot_service_bot_id_idx" ON "bot_service"("bot_id");

-- bot_config_data: key/value configuration of a bot (incoming webhook bots' integration_id and
-- integration options, embedded bots' configuration).
CREATE TABLE "bot_config_data" (
    "bot_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "bot_config_data_pkey" PRIMARY KEY ("bot_id","key")
);

-- bot_storage_data: a bot's own key/value storage (GET/PUT/DELETE /bot_storage).
CREATE TABLE "bot_storage_data" (
    "bot_id" INTEGER NOT NULL,
    "key" TEXT NOT NULL,
    "value" TEXT NOT NULL,

    CONSTRAINT "bot_storage_data_pkey" PRIMARY KEY ("bot_id","key")
);

-- AddForeignKey (not in schema.prisma: User and Channel have no back-relation fields for them)
ALTER TABLE "bot_profile" ADD CONSTRAINT "bot_profile_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "bot_profile" ADD CONSTRAINT "bot_profile_default_sending_stream_id_fkey" FOREIGN KEY ("default_sending_stream_id") REFERENCES "channel"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "bot_profile" ADD CONSTRAINT "bot_profile_default_events_register_stream_id_fkey" FOREIGN KEY ("default_events_register_stream_id") REFERENCES "channel"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "bot_service" ADD CONSTRAINT "bot_service_bot_id_fkey" FOREIGN KEY ("bot_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "bot_config_data" ADD CONSTRAINT "bot_config_data_bot_id_fkey" FOREIGN KEY ("bot_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "bot_storage_data" ADD CONSTRAINT "bot_storage_data_bot_id_fkey" FOREIGN KEY ("bot_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
