-- How many times the account was deactivated. Password-reset links are MACs over the account's state
-- (actions/password-reset.ts); this counter is part of it, so a link issued before a deactivation no
-- longer works, even once the account is reactivated.
--
-- Counted by the database, at each change of is_active from true to false, so that every writer
-- (deactivation, the cascade to a person's bots, management commands, plain SQL) counts.
ALTER TABLE "user" ADD COLUMN "deactivation_count" INTEGER NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION parley_count_deactivation() RETURNS trigger AS $$
BEGIN
  NEW.deactivation_count := OLD.deactivation_count + 1;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER "user_count_deactivation" BEFORE UPDATE OF "is_active" ON "user"
  FOR EACH ROW WHEN (OLD.is_active AND NOT NEW.is_active) EXECUTE FUNCTION parley_count_deactivation();
