-- The incoming e-mail gateway (Zulip's ChannelEmailAddress). See the models ChannelEmailAddress and
-- EmailGatewayDelivery in schema.prisma; the foreign keys are declared here only, so that Realm,
-- Channel, User and Message need no back-relation fields.

-- channel_email_address: one address token per channel, creator (the user who asked for the address)
-- and sender (who the messages appear from: the organization's Email Gateway bot, the creator, or a
-- bot of theirs). The token is 32 hex characters (128 random bits) and names the row on its own.
CREATE TABLE "channel_email_address" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "channel_id" INTEGER NOT NULL,
    "creator_id" INTEGER NOT NULL,
    "sender_id" INTEGER NOT NULL,
    "email_token" VARCHAR(32) NOT NULL,
    "date_created" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deactivated" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "channel_email_address_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "channel_email_address_email_token_key" ON "channel_email_address"("email_token");
CREATE UNIQUE INDEX "channel_email_address_channel_id_creator_id_sender_id_key" ON "channel_email_address"("channel_id", "creator_id", "sender_id");
CREATE INDEX "channel_email_address_realm_id_channel_id_idx" ON "channel_email_address"("realm_id", "channel_id");
CREATE INDEX "channel_email_address_creator_id_idx" ON "channel_email_address"("creator_id");
CREATE INDEX "channel_email_address_sender_id_idx" ON "channel_email_address"("sender_id");

ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_channel_id_fkey" FOREIGN KEY ("channel_id") REFERENCES "channel"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_creator_id_fkey" FOREIGN KEY ("creator_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "channel_email_address" ADD CONSTRAINT "channel_email_address_sender_id_fkey" FOREIGN KEY ("sender_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- email_gateway_delivery: which message a delivered mail became, per address, keyed by the mail's
-- Message-ID (or a digest of the mail when it has none), written in the transaction of the message:
-- a mail delivered again (a mail server retrying after a lost answer) is not posted twice.
CREATE TABLE "email_gateway_delivery" (
    "address_id" INTEGER NOT NULL,
    "mail_key" TEXT NOT NULL,
    "message_id" INTEGER NOT NULL,
    "date_delivered" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "email_gateway_delivery_pkey" PRIMARY KEY ("address_id", "mail_key")
);

CREATE INDEX "email_gateway_delivery_message_id_idx" ON "email_gateway_delivery"("message_id");

ALTER TABLE "email_gateway_delivery" ADD CONSTRAINT "email_gateway_delivery_address_id_fkey" FOREIGN KEY ("address_id") REFERENCES "channel_email_address"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "email_gateway_delivery" ADD CONSTRAINT "email_gateway_delivery_message_id_fkey" FOREIGN KEY ("message_id") REFERENCES "message"("id") ON DELETE CASCADE ON UPDATE CASCADE;
