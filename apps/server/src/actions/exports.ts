// Organization exports (Zulip's zerver/views/realm_export.py and zerver/actions/realm_export.py):
// requesting one (checked, recorded and queued in one transaction; the job makes it after commit),
// listing and deleting them, the members' consents, and the `realm_export` / `realm_export_consent`
// events, which go to the organization's human administrators.
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import {
  ExportStatus,
  ExportType,
  countExportsSince,
  createRealmExport,
  exportConsents,
  exportedMessageCondition,
  humanAdminIds,
  listRealmExports,
  lockRealmExport,
  updateRealmExport,
  uploadSpaceUsed,
  countExportableMessages,
  type ExportTypeValue,
  type RealmExportRow,
} from '../data/exports.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { JsonableError } from '../errors.ts';
import { checkCanManageExports, isOwnerRole } from '../access/exports.ts';
import { exportRealm } from '../export/realm-export.ts';

/** Zulip's EXPORT_LIMIT: exports requested in seven days. */
export const EXPORT_LIMIT = 5;
export const EXPORT_LIMIT_DAYS = 7;
/** Zulip's MAX_MESSAGE_HISTORY and MAX_UPLOAD_QUOTA of exports through the API. */
export const MAX_MESSAGE_HISTORY = 250_000;
export const MAX_UPLOAD_QUOTA = 20n * 1024n * 1024n * 1024n;
/** Zulip's EMAIL_ADDRESS_VISIBILITY_NOBODY. */
const EMAIL_VISIBILITY_NOBODY = 4;

/** The storage key of an export's tarball from its path (`/user_avatars/exports/…`). */
export const exportStorageKey = (exportPath: string) => exportPath.replace(/^\/user_avatars\//, '');

/** Zulip's get_realm_exports_serialized. */
export function serializeExport(realm: Realm, row: RealmExportRow) {
  const succeeded = row.status === ExportStatus.SUCCEEDED && row.exportPath !== null;
  return {
    id: row.id,
    export_time: row.dateRequested.getTime() / 1000,
    acting_user_id: row.actingUserId!,
    export_url: succeeded ? `${realm.url}${row.exportPath}` : null,
    deleted_timestamp: row.dateDeleted ? row.dateDeleted.getTime() / 1000 : null,
    failed_timestamp: row.dateFailed ? row.dateFailed.getTime() / 1000 : null,
    pending: row.status === ExportStatus.REQUESTED || row.status === ExportStatus.STARTED,
    export_type: (row.type === ExportType.FULL_WITH_CONSENT ? 2 : 1) as 1 | 2,
  };
}

/** The `realm_export` event: the whole list, to the human administrators. */
async function exportsEvent(tx: Db, realm: Realm): Promise<QueuedEvent> {
  const exports = (await listRealmExports(tx, realm.id)).map((row) => serializeExport(realm, row));
  return { userIds: await humanAdminIds(tx, realm.id), payload: { type: 'realm_export', exports } };
}

/** The `realm_export_consent` event of a change of `allow_private_data_export` (actions/user-settings.ts). */
export async function exportConsentEvent(tx: Db, realmId: number, userId: number, consented: boolean): Promise<QueuedEvent> {
  return { userIds: await humanAdminIds(tx, realmId), payload: { type: 'realm_export_consent', user_id: userId, consented } };
}

/** The address of Zulip's FromAddress.SUPPORT: the server's sender address. */
const supportAddress = (deps: AppDeps) => /<([^>]+)>/.exec(deps.config.emailFrom)?.[1] ?? deps.config.emailFrom;

/** GET /export/realm. */
export async function listExports(deps: AppDeps, realm: Realm, actor: User) {
  checkCanManageExports(actor);
  return (await listRealmExports(deps.db, realm.id)).map((row) => serializeExport(realm, row));
}

/** GET /export/realm/consents. */
export async function listExportConsents(deps: AppDeps, realm: Realm, actor: User) {
  checkCanManageExports(actor);
  return (await exportConsents(deps.db, realm.id)).map(({ user_id, consented, email_address_visibility }) => ({ user_id, consented, email_address_visibility }));
}

/** POST /export/realm: records the export and queues its job; the export's ID. */
export async function doRequestExport(deps: AppDeps, realm: Realm, actor: User, exportType: number): Promise<number> {
  checkCanManageExports(actor);
  const type: ExportTypeValue = exportType === ExportType.FULL_WITH_CONSENT ? ExportType.FULL_WITH_CONSENT : ExportType.PUBLIC;
  return inTransaction(deps.db, async (tx, afterCommit) => {
    // Serialises the requests of the organization, so that the rate limit holds under races.
    await tx.$queryRaw`SELECT id FROM realm WHERE id = ${realm.id}::int FOR UPDATE`;
    const since = new Date(Date.now() - EXPORT_LIMIT_DAYS * 24 * 3600 * 1000);
    if ((await countExportsSince(tx, realm.id, since)) >= EXPORT_LIMIT) throw new JsonableError('Exceeded rate limit.');

    const consents = await exportConsents(tx, realm.id);
    const consented = consents.filter((c) => c.consented).map((c) => c.user_id);
    const messages = await countExportableMessages(tx, exportedMessageCondition(realm.id, type, consented), MAX_MESSAGE_HISTORY + 1);
    if (messages > MAX_MESSAGE_HISTORY || (await uploadSpaceUsed(tx, realm.id)) > MAX_UPLOAD_QUOTA) {
      throw new JsonableError(`The export you requested is too large for automatic processing. Please request a manual export by contacting ${supportAddress(deps)}.`);
    }
    const owners = consents.filter((c) => isOwnerRole(c.role));
    if (type === ExportType.FULL_WITH_CONSENT && !owners.some((o) => o.consented)) {
      throw new JsonableError(`Make sure at least one Organization Owner is consenting to the export or contact ${supportAddress(deps)} for help.`);
    }
    if (type === ExportType.PUBLIC && !owners.some((o) => o.email_address_visibility !== EMAIL_VISIBILITY_NOBODY)) {
      throw new JsonableError(`Make sure at least one Organization Owner allows other Administrators to see their email address or contact ${supportAddress(deps)} for help`);
    }

    const row = await createRealmExport(tx, realm.id, actor.id, type);
    await deps.jobs.send(tx, 'realm-export', { exportId: row.id });
    await deps.events.publish(tx, afterCommit, realm.id, [await exportsEvent(tx, realm)]);
    return row.id;
  });
}

/** DELETE /export/realm/{export_id}: removes the tarball; the export stays listed as deleted. */
export async function doDeleteExport(deps: AppDeps, realm: Realm, actor: User, exportId: number): Promise<void> {
  checkCanManageExports(actor);
  const exportPath = await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await lockRealmExport(tx, exportId);
    if (!row || row.realmId !== realm.id) throw new JsonableError('Invalid data export ID');
    if (row.status === ExportStatus.DELETED) throw new JsonableError('Export already deleted');
    if (row.status === ExportStatus.FAILED) throw new JsonableError('Export failed, nothing to delete');
    if (row.status === ExportStatus.REQUESTED || row.status === ExportStatus.STARTED) throw new JsonableError('Export still in progress');
    await updateRealmExport(tx, row.id, { status: ExportStatus.DELETED, dateDeleted: new Date() });
    await deps.events.publish(tx, afterCommit, realm.id, [await exportsEvent(tx, realm)]);
    return row.exportPath;
  });
  // The row says deleted from now on, so the download answers 404 whatever happens to the object.
  if (exportPath) await deps.storage.delete([exportStorageKey(exportPath)]);
}

/** Marks the export failed (with its event). */
async function markFailed(deps: AppDeps, realm: Realm, exportId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await updateRealmExport(tx, exportId, { status: ExportStatus.FAILED, dateFailed: new Date() });
    await deps.events.publish(tx, afterCommit, realm.id, [await exportsEvent(tx, realm)]);
  });
}

/**
 * The `realm-export` job: makes the export, streaming it into storage under an unguessable path.
 * As Zulip's deferred_work worker, an export found already started (a retry: the process making it
 * died) is marked failed rather than made again, and a failure is recorded, not retried.
 */
export async function runExport(deps: AppDeps, exportId: number): Promise<'succeeded' | 'failed' | 'skipped'> {
  const claimed = await inTransaction(deps.db, async (tx) => {
    const row = await lockRealmExport(tx, exportId);
    if (!row) return null;
    if (row.status === ExportStatus.REQUESTED) await updateRealmExport(tx, row.id, { status: ExportStatus.STARTED, dateStarted: new Date() });
    return row;
  });
  if (!claimed) return 'skipped';
  const realm = await findRealmById(deps.db, claimed.realmId);
  if (!realm) return 'skipped';
  if (claimed.status !== ExportStatus.REQUESTED) {
    if (claimed.status === ExportStatus.STARTED) {
      deps.logger.error({ export_id: exportId }, 'marking export as failed due to retry (the process making it died?)');
      await markFailed(deps, realm, exportId);
      return 'failed';
    }
    return 'skipped';
  }

  const token = randomBytes(18).toString('base64url');
  const started = Date.now();
  try {
    const body = new PassThrough();
    const directory = `zulip-export-${randomBytes(6).toString('hex').slice(0, 8)}`;
    const exportPath = `/user_avatars/exports/${realm.id}/${token}/${directory}.tar.gz`;
    const key = exportStorageKey(exportPath);
    const upload = deps.storage.put(key, body, { contentType: 'application/gzip', contentDisposition: `attachment; filename="${directory}.tar.gz"` });
    let result: Awaited<ReturnType<typeof exportRealm>>;
    try {
      result = await exportRealm(deps, realm.id, claimed.type === ExportType.FULL_WITH_CONSENT ? ExportType.FULL_WITH_CONSENT : ExportType.PUBLIC, body, { directory });
    } catch (error) {
      await upload.catch(() => undefined);
      throw error;
    }
    await upload;
    await inTransaction(deps.db, async (tx, afterCommit) => {
      await updateRealmExport(tx, exportId, {
        status: ExportStatus.SUCCEEDED, dateSucceeded: new Date(), exportPath, tarballSizeBytes: BigInt(result.size), sha256sumHex: result.sha256,
        stats: JSON.parse(JSON.stringify(result.stats)) as object,
      });
      await deps.events.publish(tx, afterCommit, realm.id, [await exportsEvent(tx, realm)]);
    });
    deps.logger.info({ export_id: exportId, realm_id: realm.id, messages: result.messages, bytes: result.size, ms: Date.now() - started }, 'completed data export');
    return 'succeeded';
  } catch (error) {
    deps.logger.error({ err: error, export_id: exportId, realm_id: realm.id, ms: Date.now() - started }, 'data export failed');
    await markFailed(deps, realm, exportId);
    return 'failed';
  }
}
