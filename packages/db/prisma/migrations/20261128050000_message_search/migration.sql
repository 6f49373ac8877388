-- Full-text search of messages moves out of the message row into a table of its own. Moving a topic
-- to another channel rewrites each of its message rows (channel_id is indexed, so no update is HOT),
-- and every index of message takes a new entry per row: the GIN index of search_tsv about fifteen
-- (one per lexeme), plus the growth of its pending list that later statements pay to merge. The
-- search vector depends only on topic and content, so it lives in message_search, keyed by message
-- id, and only a change of topic or content rewrites it: a move to another channel leaves it alone.
--
-- Kept by triggers, so that every way of writing messages (sending, imports, COPY) keeps it:
-- inserted messages get their row once per statement, a row whose topic or content changes is
-- rewritten, deleted messages lose theirs once per statement (also when an organization's deletion
-- cascades to its messages).
DROP INDEX "message_search_tsv_idx";

CREATE TABLE "message_search" (
  "message_id" INTEGER NOT NULL,
  "tsv" TSVECTOR NOT NULL,
  CONSTRAINT "message_search_pkey" PRIMARY KEY ("message_id")
);

INSERT INTO "message_search" ("message_id", "tsv") SELECT "id", "search_tsv" FROM "message" WHERE "search_tsv" IS NOT NULL;
ALTER TABLE "message" DROP COLUMN "search_tsv";
CREATE INDEX "message_search_tsv_idx" ON "message_search" USING GIN ("tsv");

CREATE FUNCTION parley_message_search_vector(topic text, content text) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT to_tsvector('english'::regconfig, topic || ' ' || content) $$;

CREATE FUNCTION parley_message_search_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "message_search" ("message_id", "tsv")
  SELECT n.id, parley_message_search_vector(n.topic, n.content) FROM parley_new_rows n;
  RETURN NULL;
END
$$;

CREATE TRIGGER message_search_insert
  AFTER INSERT ON "message"
  REFERENCING NEW TABLE AS parley_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_message_search_insert();

CREATE FUNCTION parley_message_search_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "message_search" SET "tsv" = parley_message_search_vector(NEW.topic, NEW.content) WHERE "message_id" = NEW.id;
  RETURN NULL;
END
$$;

-- Per row, as a column list rules out transition tables: it fires only for statements that set topic
-- or content, and only for rows where either really changed.
CREATE TRIGGER message_search_update
  AFTER UPDATE OF "topic", "content" ON "message"
  FOR EACH ROW
  WHEN (OLD.topic IS DISTINCT FROM NEW.topic OR OLD.content IS DISTINCT FROM NEW.content)
  EXECUTE FUNCTION parley_message_search_update();

CREATE FUNCTION parley_message_search_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "message_search" s USING parley_old_rows o WHERE s.message_id = o.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER message_search_delete
  AFTER DELETE ON "message"
  REFERENCING OLD TABLE AS parley_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION parley_message_search_delete();
