// Which action runs each kind of job (registered in every server process).
import type { AppDeps } from '../deps.ts';
import { deliverScheduledMessage } from '../actions/scheduled-messages.ts';
import { registerEmailJobs } from '../mail/jobs.ts';
import { registerPushJobs } from '../push/jobs.ts';

export function registerJobHandlers(deps: AppDeps): void {
  deps.jobs.work('deliver-scheduled-message', async (job) => {
    const outcome = await deliverScheduledMessage(deps, job);
    deps.logger.debug({ scheduled_message_id: job.id, outcome }, 'scheduled message delivery');
  });
  registerEmailJobs(deps);
  registerPushJobs(deps);
}
