-- The e-mail outbox (apps/server/src/mail/outbox.ts): every e-mail is stored in the transaction of the
-- change that sends it, and its 'send-email' job delivers it after commit. With no SMTP server
-- configured, the job marks it `kept` instead: it stays here, readable with `pnpm manage outbox`.
CREATE TABLE "email_outbox" (
    "id" SERIAL NOT NULL,
    "to" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "html" TEXT NOT NULL,
    "reply_to" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMP(3),
    "kept" BOOLEAN NOT NULL DEFAULT false,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "message_id" TEXT,

    CONSTRAINT "email_outbox_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "email_outbox_created_at_idx" ON "email_outbox"("created_at");
