-- Sending a message to a channel of 1,000 subscribers writes 1,000 user_message rows, and every index
-- of the table gets 1,000 entries. An index that starts with user_id takes each entry on a different
-- leaf page (one descent of the tree per recipient); one that starts with message_id takes them all at
-- its right edge, on one or two pages. Before: three indexes of the first kind or touched per recipient
-- (the primary key (user_id, message_id), the unread index, and (message_id)). After: one.
--
-- - The primary key is (message_id, user_id): it answers "the rows of message M" (what the (message_id)
--   index did) and "the row of user U for message M".
-- - user_message_user_read_idx (user_id, flags & 1, message_id) is the only per-user index: the user's
--   unread rows are one range of it (what the partial unread index did), their read rows another, each
--   in message order. Reads over all of a user's rows walk both ranges and merge them.
-- - user_message_private_idx (direct messages only) is unchanged.
DROP INDEX "user_message_unread_idx";
DROP INDEX "user_message_message_id_idx";
ALTER TABLE "user_message" DROP CONSTRAINT "user_message_pkey";
ALTER TABLE "user_message" ADD CONSTRAINT "user_message_pkey" PRIMARY KEY ("message_id", "user_id");
CREATE INDEX "user_message_user_read_idx" ON "user_message" ("user_id", ("flags" & 1), "message_id");

-- The reference check of inserted rows (migration 20261123190000) probed the user table once per row
-- from a nested loop. The distinct users now go to one index scan as a sorted array, which PostgreSQL
-- (17 and later) walks leaf by leaf instead of descending the tree for each of them. Same errors. An
-- insert of no row (catching up deferred rows, migration 20261124140000, finds nothing due most of the
-- time) returns at once.
CREATE OR REPLACE FUNCTION parley_user_message_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  user_ids int[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM parley_new_rows) THEN
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM (SELECT DISTINCT n.message_id FROM parley_new_rows n) n WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = n.message_id)) THEN
    RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "message"'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  user_ids := ARRAY(SELECT DISTINCT n.user_id FROM parley_new_rows n ORDER BY 1);
  IF (SELECT count(*) FROM "user" u WHERE u.id = ANY(user_ids)) <> cardinality(user_ids) THEN
    RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "user"'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

-- A message event lists its recipients in user_ids; the GIN index over them took an entry per
-- recipient (1,000 for a message to 1,000 subscribers) and was never what a poll reads: a queue reads
-- its organization's events after its last one through (realm_id, id), filtering the few rows there.
DROP INDEX "event_user_ids_idx";

-- The recipients of a channel message are its active subscribers who are active users. Joining each of
-- 1,000 subscribers to the user table cost more than the rest of the read; deactivated users are few,
-- and this index lists them, so that they are taken out of the subscribers in one pass.
CREATE INDEX "user_inactive_idx" ON "user" ("id") WHERE NOT "is_active";
