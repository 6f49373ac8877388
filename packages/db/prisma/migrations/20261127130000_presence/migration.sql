-- Presence (issue 23): one row per user who ever reported presence (Zulip's UserPresence), written in
-- batches by every server process (apps/server/src/presence/buffer.ts): a process coalesces the pings
-- it receives and writes them every flush interval with one multi-row upsert.
--
-- `last_update_id` orders the changes of an organization, for clients that ask only for what changed
-- (`last_update_id` of POST /users/me/presence). Its values come from one sequence; every writer of an
-- organization's rows first takes that organization's presence lock (pg_advisory_xact_lock(7265023,
-- realm_id), data/presence.repo.ts), draws its ids under it and commits before the next writer may
-- draw, so ids become visible in increasing order: a reader who saw id n has seen every id below it.
-- The foreign key to "user" is declared here only, so that User needs no back-relation field; realm_id
-- is the user's organization, copied for the organization-wide reads.
CREATE SEQUENCE "user_presence_update_id_seq";

CREATE TABLE "user_presence" (
    "user_id" INTEGER NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "last_connected_time" TIMESTAMP(3) NOT NULL,
    "last_active_time" TIMESTAMP(3),
    "last_update_id" BIGINT NOT NULL,

    CONSTRAINT "user_presence_pkey" PRIMARY KEY ("user_id")
);

-- The organization's rows in the order of their changes (deltas: last_update_id > n).
CREATE INDEX "user_presence_realm_id_last_update_id_idx" ON "user_presence"("realm_id", "last_update_id");

ALTER TABLE "user_presence" ADD CONSTRAINT "user_presence_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "user"("id") ON DELETE CASCADE ON UPDATE CASCADE;
