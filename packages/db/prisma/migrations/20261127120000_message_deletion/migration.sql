-- Deleting messages (issue 22). Until now a message was never deleted while rows for it could still be
-- inserted (migration 20261123190000): deferred rows (migration 20261124140000) are now written by a
-- reader's catch-up while an administrator may be deleting the very message. A catch-up statement
-- whose snapshot still showed the message then inserts its rows after the deletion committed; instead
-- of failing the reader's request, the reference check drops those rows (they belong to a message
-- that existed and no longer does: its id was handed out by the message sequence). A row for an id the
-- sequence never reached is still refused. The deletion makes sure that no such row outlives it: it
-- first updates the caught-up mark of every deferred recipient not yet past the messages
-- (data/message-deletion.repo.ts fenceDeferredRecipients), which a concurrent catch-up of that user
-- either waits for (and then finds the message gone, here) or holds until it commits (and the
-- deletion then deletes the rows it wrote).
CREATE OR REPLACE FUNCTION parley_user_message_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  user_ids int[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM parley_new_rows) THEN
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM (SELECT DISTINCT n.message_id FROM parley_new_rows n) n WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = n.message_id)) THEN
    IF EXISTS (SELECT 1 FROM parley_new_rows n WHERE n.message_id > (SELECT last_value FROM message_id_seq)) THEN
      RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "message"'
        USING ERRCODE = 'foreign_key_violation';
    END IF;
    -- Rows of messages deleted meanwhile (by a transaction that committed after this statement's
    -- snapshot was taken) are dropped rather than refused.
    DELETE FROM "user_message" um USING parley_new_rows n
    WHERE um.message_id = n.message_id AND um.user_id = n.user_id
      AND NOT EXISTS (SELECT 1 FROM message m WHERE m.id = n.message_id);
  END IF;
  user_ids := ARRAY(SELECT DISTINCT n.user_id FROM parley_new_rows n ORDER BY 1);
  IF (SELECT count(*) FROM "user" u WHERE u.id = ANY(user_ids)) <> cardinality(user_ids) THEN
    RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "user"'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

-- The reminders of a deleted message are deleted with it: found by the message they are about.
CREATE INDEX "scheduled_message_reminder_target_idx" ON "scheduled_message" ("reminder_target_message_id") WHERE "reminder_target_message_id" IS NOT NULL;
