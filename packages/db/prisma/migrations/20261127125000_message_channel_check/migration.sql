-- Moving a topic to another channel rewrites every message row of it (issue 22's bench: 10,000 rows).
-- Two costs of that rewrite had nothing to do with the move:
--
-- 1. The foreign key message.channel_id → channel checked each moved row on its own (one lookup and one
--    key-share lock of the same channel row per message: ~30% of the UPDATE). The same guarantee,
--    set-based, once per statement: every inserted or updated row names an existing channel (or none,
--    for direct messages); deleting a channel deletes its messages (what ON DELETE CASCADE did).
--    Unlike the foreign key, the check takes no lock on the channel row: Parley never deletes a
--    channel (it archives them); only an organization's deletion does, and that deletes its messages
--    through message.realm_id's own foreign key. Sending no longer key-share locks the channel row
--    either (concurrent senders to one channel shared that lock through a MultiXact).
-- 2. The GIN index of direct_user_ids held an entry for every channel message (an empty array), so
--    each moved row was inserted into it again. Every query that uses it also says
--    `channel_id IS NULL` (data/message-fetch.repo.ts), so it becomes partial like
--    message_realm_direct_id_idx: channel messages have no entry, and moving them costs nothing there.
ALTER TABLE "message" DROP CONSTRAINT "message_channel_id_fkey";

CREATE FUNCTION parley_message_check_channel() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  channel_ids int[];
BEGIN
  channel_ids := ARRAY(SELECT DISTINCT n.channel_id FROM parley_new_rows n WHERE n.channel_id IS NOT NULL);
  IF cardinality(channel_ids) > 0
     AND (SELECT count(*) FROM "channel" c WHERE c.id = ANY(channel_ids)) <> cardinality(channel_ids) THEN
    RAISE EXCEPTION '% on table "message" violates its reference to table "channel"', TG_OP
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

-- Transition tables rule out `UPDATE OF channel_id`: the check runs after every UPDATE of message
-- (edits and moves only; reading and flagging write user_message).
CREATE TRIGGER message_channel_exists_insert
  AFTER INSERT ON "message"
  REFERENCING NEW TABLE AS parley_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_message_check_channel();

CREATE TRIGGER message_channel_exists_update
  AFTER UPDATE ON "message"
  REFERENCING NEW TABLE AS parley_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_message_check_channel();

CREATE FUNCTION parley_channel_delete_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "message" m USING parley_old_rows o WHERE m.channel_id = o.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER channel_deletes_messages
  AFTER DELETE ON "channel"
  REFERENCING OLD TABLE AS parley_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_channel_delete_messages();

DROP INDEX "message_direct_user_ids_idx";
CREATE INDEX "message_direct_user_ids_idx" ON "message" USING GIN ("direct_user_ids") WHERE "channel_id" IS NULL;
