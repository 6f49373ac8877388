// The realm area's periodic work as jobs of the PostgreSQL job queue, hourly: the retention policy
// (actions/message-retention.ts) and the promotion of members whose waiting period ended
// (actions/realm.ts doPromoteFullMembers). As the attachment clean-up (jobs/attachments.ts): at most
// one job of each kind waits and one runs, whatever the number of processes (`singleWaiting` kinds);
// each run enqueues the next an hour later, and every process enqueues one when it starts (kept only
// if none is waiting), so the chain survives any process's death. A failed run is retried by the queue.
import type { AppDeps } from '../deps.ts';
import { runMessageRetention } from '../actions/message-retention.ts';
import { doPromoteFullMembers } from '../actions/realm.ts';

export const REALM_JOBS_EVERY_MS = 3600 * 1000;
/** The first runs after a start wait a little, off the start-up's path. */
const FIRST_RUN_DELAY_MS = 60_000;

export function registerRealmJobs(deps: AppDeps): void {
  deps.jobs.work('message-retention', async () => {
    const deleted = await runMessageRetention(deps);
    deps.logger.debug({ job: 'message-retention', deleted }, 'message retention pass');
    await deps.jobs.sendIfNoneWaiting('message-retention', {}, { startAfter: new Date(Date.now() + REALM_JOBS_EVERY_MS) });
  });
  deps.jobs.work('promote-full-members', async () => {
    const promoted = await doPromoteFullMembers(deps);
    deps.logger.debug({ job: 'promote-full-members', promoted }, 'full member promotion pass');
    await deps.jobs.sendIfNoneWaiting('promote-full-members', {}, { startAfter: new Date(Date.now() + REALM_JOBS_EVERY_MS) });
  });
}

/** Enqueues each periodic job (by `startAfter`) unless one is already waiting. */
export async function scheduleRealmJobs(deps: Pick<AppDeps, 'jobs'>, startAfter = new Date(Date.now() + FIRST_RUN_DELAY_MS)): Promise<void> {
  await deps.jobs.sendIfNoneWaiting('message-retention', {}, { startAfter });
  await deps.jobs.sendIfNoneWaiting('promote-full-members', {}, { startAfter });
}
