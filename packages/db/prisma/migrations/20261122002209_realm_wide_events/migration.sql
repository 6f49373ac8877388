-- AlterTable
ALTER TABLE "event" ADD COLUMN     "realm_wide" BOOLEAN NOT NULL DEFAULT false;
