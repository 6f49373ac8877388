-- Changes of a user's own e-mail address (PATCH /settings `email`): the request stores the new
-- address with the SHA-256 of a random key, the key is mailed to the new address, and the address
-- changes only when the link is followed. A newer request revokes the older ones (status 2).
CREATE TABLE "email_change" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "old_email" TEXT NOT NULL,
    "new_email" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "status" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "email_change_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "email_change_key_hash_key" ON "email_change"("key_hash");

CREATE INDEX "email_change_user_id_idx" ON "email_change"("user_id");

-- Not a Prisma relation (that would need fields on User): the requests go with their user.
ALTER TABLE "email_change" ADD CONSTRAINT "email_change_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
