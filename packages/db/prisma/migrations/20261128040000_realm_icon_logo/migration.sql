-- The organization's icon and logos (issue 24, item 4): Zulip's Realm icon_source/icon_version,
-- logo_source/logo_version and night_logo_source/night_logo_version. Sources: icon `G` (gravatar) or
-- `U` (uploaded); logos `D` (default) or `U`. Each change moves its version on by one; the images live
-- in storage under `avatars/<realm id>/realm/{icon,logo,night_logo}.png` (apps/server/src/lib/realm-images.ts).
ALTER TABLE "realm" ADD COLUMN "icon_source" TEXT NOT NULL DEFAULT 'G';
ALTER TABLE "realm" ADD COLUMN "icon_version" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "realm" ADD COLUMN "logo_source" TEXT NOT NULL DEFAULT 'D';
ALTER TABLE "realm" ADD COLUMN "logo_version" INTEGER NOT NULL DEFAULT 1;
ALTER TABLE "realm" ADD COLUMN "night_logo_source" TEXT NOT NULL DEFAULT 'D';
ALTER TABLE "realm" ADD COLUMN "night_logo_version" INTEGER NOT NULL DEFAULT 1;
