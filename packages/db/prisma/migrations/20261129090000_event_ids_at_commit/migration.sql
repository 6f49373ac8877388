-- Event ids follow commit order within an organization (a long-poll that has seen event n has seen every
-- event of the organization up to n). Until now the statement storing events took the organization's
-- event-order lock (pg_advisory_xact_lock(7265003, realm id)) and held it to commit, across every round
-- trip to the server process that came after it: under load, writers queued behind a lock whose holder
-- was waiting for its own process to send COMMIT.
--
-- Now an event row is stored with a provisional id and gets its final one when its transaction commits:
-- this deferred trigger takes the same lock during COMMIT and draws the final id from the same sequence.
-- The lock is released only once the commit is visible, so ids are still handed out in commit order,
-- and held for the commit alone. Rows keep the order in which they were inserted (deferred triggers
-- fire in that order). Messages still take the lock when they are stored (their ids follow commit order
-- too: apps/server/src/data/messages.repo.ts storeMessage); this trigger then finds it held already.
CREATE OR REPLACE FUNCTION parley_event_id_at_commit() RETURNS trigger AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7265003, NEW.realm_id);
  UPDATE event SET id = nextval('event_id_seq') WHERE id = NEW.id;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE CONSTRAINT TRIGGER "event_id_at_commit" AFTER INSERT ON "event"
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION parley_event_id_at_commit();
