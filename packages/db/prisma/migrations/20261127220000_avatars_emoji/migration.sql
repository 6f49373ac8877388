-- Custom emoji (issue 24, part 4): Zulip's RealmEmoji. A row is created before its image is stored
-- (the file name derives from its id) and gets `file_name` once the image is; rows without one are
-- uploads in progress and are never listed. Removing an emoji deactivates it (its reactions keep
-- pointing at it); one active emoji per name. Avatars (part 3) need no new column: users already
-- have avatar_source and avatar_version.
CREATE TABLE "realm_emoji" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "author_id" INTEGER,
    "name" TEXT NOT NULL,
    "file_name" TEXT,
    "is_animated" BOOLEAN NOT NULL DEFAULT false,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,
    "date_created" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "realm_emoji_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "realm_emoji_realm_id_idx" ON "realm_emoji"("realm_id");
CREATE UNIQUE INDEX "realm_emoji_active_name_key" ON "realm_emoji"("realm_id", "name") WHERE NOT "deactivated";
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "realm_emoji" ADD CONSTRAINT "realm_emoji_author_id_fkey" FOREIGN KEY ("author_id") REFERENCES "user"("id") ON DELETE SET NULL ON UPDATE CASCADE;
