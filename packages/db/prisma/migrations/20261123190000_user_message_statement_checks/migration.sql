-- user_message without row-by-row foreign keys. A message to a channel of 1,000 subscribers inserts
-- 1,000 user_message rows in one statement; foreign keys check each row and key-share lock each of
-- the 1,000 users' rows (a write to every one of them). The same guarantees, set-based, once per
-- statement:
-- - every inserted row refers to an existing user and an existing message (rows are inserted in the
--   statement that stores their message; user_id and message_id are never updated);
-- - deleting users or messages deletes their rows (what ON DELETE CASCADE did).
-- Unlike a foreign key, the check takes no lock on the referenced rows: Parley never deletes a user or
-- a message while rows for it may still be inserted (users are deactivated, not deleted; rows are
-- inserted only with their new message).
ALTER TABLE "user_message" DROP CONSTRAINT "user_message_message_id_fkey";
ALTER TABLE "user_message" DROP CONSTRAINT "user_message_user_id_fkey";

CREATE FUNCTION parley_user_message_check_references() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM parley_new_rows n WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = n.message_id)) THEN
    RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "message"'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  IF EXISTS (SELECT 1 FROM parley_new_rows n WHERE NOT EXISTS (SELECT 1 FROM "user" u WHERE u.id = n.user_id)) THEN
    RAISE EXCEPTION 'insert on table "user_message" violates its reference to table "user"'
      USING ERRCODE = 'foreign_key_violation';
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER user_message_references_exist
  AFTER INSERT ON "user_message"
  REFERENCING NEW TABLE AS parley_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_user_message_check_references();

CREATE FUNCTION parley_message_delete_user_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "user_message" um USING parley_old_rows o WHERE um.message_id = o.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER message_deletes_user_messages
  AFTER DELETE ON "message"
  REFERENCING OLD TABLE AS parley_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_message_delete_user_messages();

CREATE FUNCTION parley_user_delete_user_messages() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "user_message" um USING parley_old_rows o WHERE um.user_id = o.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER user_deletes_user_messages
  AFTER DELETE ON "user"
  REFERENCING OLD TABLE AS parley_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_user_delete_user_messages();
