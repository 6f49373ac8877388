-- The bots Parley itself speaks through (Zulip's system bots, e.g. the notification bot that tells a
-- sender their scheduled message failed, or an inviter that their invitee joined). At most one of
-- each kind per organization; created when first needed.
ALTER TABLE "user" ADD COLUMN     "system_bot" TEXT;

CREATE UNIQUE INDEX "user_realm_id_system_bot_key" ON "user"("realm_id", "system_bot");
