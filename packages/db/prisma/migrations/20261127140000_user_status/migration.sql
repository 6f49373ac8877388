-- Users' statuses (Zulip's UserStatus): see model UserStatus in schema.prisma.

-- CreateTable
CREATE TABLE "user_status" (
    "user_id" INTEGER NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "status_text" TEXT NOT NULL DEFAULT '',
    "emoji_name" TEXT NOT NULL DEFAULT '',
    "emoji_code" TEXT NOT NULL DEFAULT '',
    "reaction_type" TEXT NOT NULL DEFAULT 'unicode_emoji',
    "client" TEXT NOT NULL DEFAULT '',
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "user_status_pkey" PRIMARY KEY ("user_id")
);

-- CreateIndex
CREATE INDEX "user_status_realm_id_idx" ON "user_status"("realm_id");

-- AddForeignKey (not in schema.prisma: User has no back-relation field for it)
ALTER TABLE "user_status" ADD CONSTRAINT "user_status_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
