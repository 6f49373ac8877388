-- Invitations (POST /invites, reusable links of POST /invites/multiuse, sign-up pages).

-- A reusable link has no address; a sign-up confirmation made from a reusable link points at it.
ALTER TABLE "invitation" ALTER COLUMN "email" DROP NOT NULL;
ALTER TABLE "invitation" ADD COLUMN "is_multiuse" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "invitation" ADD COLUMN "multiuse_id" INTEGER;
-- Reusable links only: the link's key encrypted with the server secret (GET /invites shows the link);
-- single-use keys are only ever stored hashed.
ALTER TABLE "invitation" ADD COLUMN "key_ciphertext" TEXT;
ALTER TABLE "invitation" ADD COLUMN "created_user_id" INTEGER;

-- Invitation e-mails sent per organization, for the daily limit.
CREATE TABLE "invitation_send_log" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "sent_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "count" INTEGER NOT NULL,

    CONSTRAINT "invitation_send_log_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "invitation_send_log_realm_id_sent_at_idx" ON "invitation_send_log"("realm_id", "sent_at");
