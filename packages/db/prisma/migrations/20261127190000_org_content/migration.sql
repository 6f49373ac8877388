-- Organization content: default channel groups (Zulip's DefaultStreamGroup) and saved snippets
-- (Zulip's SavedSnippet). Default channels themselves are channel.is_default. See the models
-- DefaultChannelGroup, DefaultChannelGroupChannel and SavedSnippet in schema.prisma.

-- default_channel_group: named sets of channels offered at sign-up; names are unique per
-- organization (case-sensitive, as Zulip's unique_together).
CREATE TABLE "default_channel_group" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',

    CONSTRAINT "default_channel_group_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "default_channel_group_realm_id_name_key" ON "default_channel_group"("realm_id", "name");

-- default_channel_group_channel: the channels of a group; archiving or deleting a channel takes it
-- out of every group (the action does it for archiving, the cascade for deletion).
CREATE TABLE "default_channel_group_channel" (
    "group_id" INTEGER NOT NULL,
    "channel_id" INTEGER NOT NULL,

    CONSTRAINT "default_channel_group_channel_pkey" PRIMARY KEY ("group_id","channel_id")
);

CREATE INDEX "default_channel_group_channel_channel_id_idx" ON "default_channel_group_channel"("channel_id");

ALTER TABLE "default_channel_group_channel" ADD CONSTRAINT "default_channel_group_channel_group_id_fkey" FOREIGN KEY ("group_id") REFERENCES "default_channel_group"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey (not in schema.prisma: Realm and Channel have no back-relation fields for them)
ALTER TABLE "default_channel_group" ADD CONSTRAINT "default_channel_group_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "default_channel_group_channel" ADD CONSTRAINT "default_channel_group_channel_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- saved_snippet: a user's saved snippets (title and Markdown content), listed by id.
CREATE TABLE "saved_snippet" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "title" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "date_created" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "saved_snippet_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "saved_snippet_user_id_idx" ON "saved_snippet"("user_id");

-- AddForeignKey (not in schema.prisma: Realm and User have no back-relation fields for them)
ALTER TABLE "saved_snippet" ADD CONSTRAINT "saved_snippet_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "saved_snippet" ADD CONSTRAINT "saved_snippet_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
