// The daily clean-up of uploaded files (actions/attachments.ts doDeleteOldUnclaimedAttachments) as a
// job of the PostgreSQL job queue: at most one waits and one runs, whatever the number of processes
// (a `singleWaiting` kind); each run enqueues the next, a day later, and every process enqueues one
// when it starts (kept only if none is waiting), so the chain survives any process's death. A run that
// fails is retried by the queue.
import type { AppDeps } from '../deps.ts';
import { doDeleteOldUnclaimedAttachments } from '../actions/attachments.ts';

export const ATTACHMENT_CLEANUP_EVERY_MS = 24 * 3600 * 1000;
/** The first run after a start waits a little, off the start-up's path. */
const FIRST_RUN_DELAY_MS = 60_000;

export function registerAttachmentJobs(deps: AppDeps): void {
  deps.jobs.work('delete-unclaimed-attachments', async () => {
    const result = await doDeleteOldUnclaimedAttachments(deps);
    deps.logger.info({ job: 'delete-unclaimed-attachments', ...result }, 'uploaded files cleaned up');
    await scheduleAttachmentCleanup(deps, new Date(Date.now() + ATTACHMENT_CLEANUP_EVERY_MS));
  });
}

/** Enqueues the clean-up (by `startAfter`) unless one is already waiting. */
export async function scheduleAttachmentCleanup(deps: Pick<AppDeps, 'jobs'>, startAfter = new Date(Date.now() + FIRST_RUN_DELAY_MS)): Promise<boolean> {
  return deps.jobs.sendIfNoneWaiting('delete-unclaimed-attachments', {}, { startAfter });
}
