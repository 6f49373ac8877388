-- Organization exports (issue 27, part 1): Zulip's RealmExport. One row per requested export, with
-- Zulip's status values (1 requested, 2 started, 3 succeeded, 4 failed, 5 deleted) and type values
-- (1 public, 2 full with members' consent). A finished export's tarball lives in storage under
-- `export_path` (without its leading `/user_avatars/`), whose random segment is what makes its
-- download URL unguessable.
CREATE TABLE "realm_export" (
    "id" SERIAL NOT NULL,
    "realm_id" INTEGER NOT NULL,
    "acting_user_id" INTEGER,
    "type" INTEGER NOT NULL,
    "status" INTEGER NOT NULL DEFAULT 1,
    "date_requested" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "date_started" TIMESTAMP(3),
    "date_succeeded" TIMESTAMP(3),
    "date_failed" TIMESTAMP(3),
    "date_deleted" TIMESTAMP(3),
    "export_path" TEXT,
    "tarball_size_bytes" BIGINT,
    "sha256sum_hex" TEXT,
    "stats" JSONB,

    CONSTRAINT "realm_export_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "realm_export_realm_id_date_requested_idx" ON "realm_export"("realm_id", "date_requested");
CREATE UNIQUE INDEX "realm_export_export_path_key" ON "realm_export"("export_path");
ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_realm_id_fkey" FOREIGN KEY ("realm_id") REFERENCES "realm"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "realm_export" ADD CONSTRAINT "realm_export_acting_user_id_fkey" FOREIGN KEY ("acting_user_id") REFERENCES "user"("id") ON DELETE SET NULL ON UPDATE CASCADE;
