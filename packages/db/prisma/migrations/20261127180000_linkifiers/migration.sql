-- Linkifiers and code playgrounds (Zulip's RealmFilter and RealmPlayground).
--
-- realm_linkifier: an organization's linkifiers, applied in `order` (then id) when messages and topics
-- are rendered; one per pattern and organization. Every change to them, whoever makes it, gives
-- realm.linkifiers_version a new random value in the same transaction (the trigger below): processes
-- keep the compiled linkifiers of an organization per version, and the realm row (whose changes every
-- process hears of through the `realm_invalidate` trigger) tells them which version is current. The
-- value is random rather than counted so that two databases (copies of one template) never give one
-- version to different linkifiers.
CREATE TABLE "realm_linkifier" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "pattern" TEXT NOT NULL,
    "url_template" TEXT NOT NULL,
    "order" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "realm_linkifier_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "realm_linkifier_realm_id_pattern_key" ON "realm_linkifier"("realm_id", "pattern");

ALTER TABLE "realm_linkifier" ADD CONSTRAINT "realm_linkifier_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "realm" ADD COLUMN "linkifiers_version" INTEGER NOT NULL DEFAULT 0;

-- realm_playground: an organization's code playgrounds; one per (language, name) and organization.
CREATE TABLE "realm_playground" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "pygments_language" VARCHAR(40) NOT NULL,
    "url_template" TEXT NOT NULL,

    CONSTRAINT "realm_playground_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "realm_playground_realm_id_pygments_language_name_key" ON "realm_playground"("realm_id", "pygments_language", "name");

ALTER TABLE "realm_playground" ADD CONSTRAINT "realm_playground_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;

CREATE FUNCTION parley_bump_linkifiers_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "realm" SET "linkifiers_version" = floor(random() * 2147483647)::int
  WHERE "id" = COALESCE(NEW.realm_id, OLD.realm_id);
  RETURN NULL;
END
$$;

CREATE TRIGGER "realm_linkifier_bump_version" AFTER INSERT OR UPDATE OR DELETE ON "realm_linkifier"
  FOR EACH ROW EXECUTE FUNCTION parley_bump_linkifiers_version();
