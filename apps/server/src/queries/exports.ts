// The download of a finished export (http/export-downloads.ts): whether the path names an export of
// the organization that succeeded, was not deleted and is younger than its link's lifetime (7 days).
import type { Db } from '../data/db.ts';
import { findDownloadableExport } from '../data/exports.repo.ts';

export async function isDownloadableExport(db: Db, realmId: number, exportPath: string): Promise<boolean> {
  return (await findDownloadableExport(db, realmId, exportPath)) !== null;
}
