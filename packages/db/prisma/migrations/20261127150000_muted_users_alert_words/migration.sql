-- Muted users (Zulip's MutedUser) and alert words (Zulip's AlertWord).
--
-- muted_user: one row per (muter, muted user). Sending reads "who muted the sender"
-- (muted_user_muted_user_id_idx); the muter's own list is the primary key's prefix.
CREATE TABLE "muted_user" (
    "user_id" INTEGER NOT NULL,
    "muted_user_id" INTEGER NOT NULL,
    "date_muted" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "muted_user_pkey" PRIMARY KEY ("user_id","muted_user_id")
);

CREATE INDEX "muted_user_muted_user_id_idx" ON "muted_user"("muted_user_id");

ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "muted_user" ADD CONSTRAINT "muted_user_muted_user_id_fkey" FOREIGN KEY ("muted_user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- alert_word: a user's alert words as they typed them (`word`) and lower-cased by the server
-- (`word_key`, computed in JavaScript so that it is the same folding as the matcher's, whatever the
-- database's locale): words compare case-insensitively, one of each per user.
CREATE TABLE "alert_word" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "word" TEXT NOT NULL,
    "word_key" TEXT NOT NULL,

    CONSTRAINT "alert_word_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "alert_word_user_id_word_key_key" ON "alert_word"("user_id", "word_key");

ALTER TABLE "alert_word" ADD CONSTRAINT "alert_word_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
