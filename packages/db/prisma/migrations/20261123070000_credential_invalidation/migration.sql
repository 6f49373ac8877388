-- Every server process caches credentials (API key → user → organization) in memory. Any change to
-- those rows, by any process, the management CLI or plain SQL, announces itself on the
-- `parley_invalidate` channel at commit, and every process drops what it cached.
CREATE OR REPLACE FUNCTION parley_announce_invalidation() RETURNS trigger AS $$
BEGIN
  IF TG_TABLE_NAME = 'realm' THEN
    PERFORM pg_notify('parley_invalidate', 'realm:' || COALESCE(NEW.id, OLD.id));
  ELSIF TG_TABLE_NAME = 'user' THEN
    PERFORM pg_notify('parley_invalidate', 'user:' || COALESCE(NEW.id, OLD.id));
  ELSIF TG_TABLE_NAME = 'api_key' THEN
    PERFORM pg_notify('parley_invalidate', 'user:' || COALESCE(NEW.user_id, OLD.user_id));
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER "realm_invalidate" AFTER UPDATE OR DELETE ON "realm"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_invalidation();
CREATE TRIGGER "user_invalidate" AFTER UPDATE OR DELETE ON "user"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_invalidation();
CREATE TRIGGER "api_key_invalidate" AFTER INSERT OR UPDATE OR DELETE ON "api_key"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_invalidation();
