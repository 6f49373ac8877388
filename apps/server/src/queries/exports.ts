// The download of a finished export (http/export-downloads.ts): whether the path names an export of
// the organization that succeeded and was not deleted.
import type { Db } from '../data/db.ts';
import { findDownloadableExport } from '../data/exports.repo.ts';

export async function isDownloadableExport(db: Db, realmId: number, exportPath: string): Promise<boolean> {
  return (await findDownloadableExport(db, realmId, exportPath)) !== null;
}
