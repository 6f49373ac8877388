-- CreateTable
CREATE TABLE "user_topic" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "channel_id" INTEGER NOT NULL,
    "topic_name" TEXT NOT NULL,
    "topic_key" TEXT NOT NULL,
    "visibility_policy" INTEGER NOT NULL,
    "last_updated" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "user_topic_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_topic_channel_id_topic_key_idx" ON "user_topic"("channel_id", "topic_key");

-- CreateIndex
CREATE UNIQUE INDEX "user_topic_user_id_channel_id_topic_key_key" ON "user_topic"("user_id", "channel_id", "topic_key");

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_topic" ADD CONSTRAINT "user_topic_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;
