-- The user directory (GET /users) is cached per process as well: new users, e-mail visibility
-- settings and custom profile fields and values announce themselves on `parley_invalidate` too.
CREATE OR REPLACE FUNCTION parley_announce_directory_change() RETURNS trigger AS $$
BEGIN
  IF TG_TABLE_NAME = 'user_settings' THEN
    PERFORM pg_notify('parley_invalidate', 'settings:' || COALESCE(NEW.user_id, OLD.user_id));
  ELSIF TG_TABLE_NAME = 'custom_profile_field_value' THEN
    PERFORM pg_notify('parley_invalidate', 'profile:' || COALESCE(NEW.user_id, OLD.user_id));
  ELSIF TG_TABLE_NAME = 'custom_profile_field' THEN
    PERFORM pg_notify('parley_invalidate', 'directory:' || COALESCE(NEW.realm_id, OLD.realm_id));
  ELSIF TG_TABLE_NAME = 'user' THEN
    PERFORM pg_notify('parley_invalidate', 'directory:' || NEW.realm_id);
  END IF;
  RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER "user_insert_invalidate" AFTER INSERT ON "user"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_directory_change();
CREATE TRIGGER "user_settings_invalidate" AFTER INSERT OR UPDATE OF email_address_visibility OR DELETE ON "user_settings"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_directory_change();
CREATE TRIGGER "custom_profile_field_value_invalidate" AFTER INSERT OR UPDATE OR DELETE ON "custom_profile_field_value"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_directory_change();
CREATE TRIGGER "custom_profile_field_invalidate" AFTER INSERT OR UPDATE OR DELETE ON "custom_profile_field"
  FOR EACH ROW EXECUTE FUNCTION parley_announce_directory_change();
