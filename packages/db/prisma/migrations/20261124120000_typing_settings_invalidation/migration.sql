-- Every server process keeps, for POST /typing, the people it has sent typing notifications to and
-- from (address, active, the typing-notification settings), so that a typing request needs no query.
-- Changes to users already announce themselves on `parley_invalidate` (user:<id>); changes to the
-- three typing settings (and a settings row appearing or going, which changes the defaults read) announce
-- themselves here, whoever wrote them, at commit.
CREATE FUNCTION parley_announce_typing_settings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('parley_typing_settings', (COALESCE(NEW.user_id, OLD.user_id))::text);
  RETURN NULL;
END
$$;

CREATE TRIGGER "user_settings_typing_invalidate"
  AFTER INSERT OR UPDATE OF receives_typing_notifications, send_private_typing_notifications, send_stream_typing_notifications OR DELETE ON "user_settings"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_typing_settings();
