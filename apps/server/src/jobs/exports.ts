// The `realm-export` job (Zulip's deferred_work `realm_export` event): queued in the transaction of
// POST /export/realm, makes the export (actions/exports.ts runExport). A failure is recorded on the
// export (failed_timestamp, with its `realm_export` event), never retried: a retry finding the export
// started marks it failed, as Zulip's worker does.
import type { AppDeps } from '../deps.ts';
import { runExport } from '../actions/exports.ts';

export function registerExportJobs(deps: AppDeps): void {
  deps.jobs.work('realm-export', async ({ exportId }) => {
    const outcome = await runExport(deps, exportId);
    deps.logger.debug({ job: 'realm-export', export_id: exportId, outcome }, 'realm export job');
  });
}
