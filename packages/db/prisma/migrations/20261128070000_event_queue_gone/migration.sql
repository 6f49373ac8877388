-- Every server process keeps the event queues it serves polls for in memory (apps/server/src/events/
-- queue-cache.ts). A deleted queue (DELETE /events, a deactivation, expiry, a cascade), by any process
-- or plain SQL, announces itself on `parley_queue_gone` at commit, its ids separated by commas (at
-- most 150 ids, ~5.5 kB, per notification), and every process forgets it.
CREATE OR REPLACE FUNCTION parley_announce_event_queue_gone() RETURNS trigger AS $$
DECLARE
  chunk text;
BEGIN
  FOR chunk IN
    SELECT string_agg(id, ',') FROM (SELECT id, (row_number() OVER ()) / 150 AS n FROM gone) g GROUP BY n
  LOOP
    PERFORM pg_notify('parley_queue_gone', chunk);
  END LOOP;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER "event_queue_gone" AFTER DELETE ON "event_queue"
  REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION parley_announce_event_queue_gone();
