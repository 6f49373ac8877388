// Which action runs each kind of job (registered in every server process).
import type { AppDeps } from '../deps.ts';
import { deliverScheduledMessages } from '../actions/scheduled-messages.ts';
import { registerEmailJobs } from '../mail/jobs.ts';
import { registerPushJobs } from '../push/jobs.ts';
import { registerAttachmentJobs } from './attachments.ts';
import { registerRealmJobs } from './realm.ts';
import { registerThumbnailJobs } from './thumbnails.ts';
import { registerExportJobs } from './exports.ts';
import { registerOutgoingWebhookJobs } from './outgoing-webhooks.ts';
import type { BatchFailures } from './queue.ts';

export function registerJobHandlers(deps: AppDeps): void {
  // Scheduled messages are delivered a fetched batch at a time, in one transaction (a burst of
  // messages due in the same second goes out at the rate of the stores alone). Should the batch fail
  // for a reason other than a message that may not be sent (which is marked failed), its messages are
  // delivered one by one, so that one bad message holds back no other; those that fail are retried.
  deps.jobs.workBatch('deliver-scheduled-message', async (jobs) => {
    try {
      const outcomes = await deliverScheduledMessages(deps, jobs);
      deps.logger.debug({ jobs: jobs.length, sent: outcomes.filter((o) => o === 'sent').length, failed: outcomes.filter((o) => o === 'failed').length }, 'scheduled message delivery');
      return [];
    } catch (error) {
      deps.logger.warn({ err: error, jobs: jobs.length }, 'scheduled message delivery batch failed; delivering one by one');
      const failures: BatchFailures = [];
      for (const [index, job] of jobs.entries()) {
        try {
          const [outcome] = await deliverScheduledMessages(deps, [job]);
          deps.logger.debug({ scheduled_message_id: job.id, outcome }, 'scheduled message delivery');
        } catch (failure) {
          failures.push({ index, error: failure });
        }
      }
      return failures;
    }
  });
  registerEmailJobs(deps);
  registerPushJobs(deps);
  registerAttachmentJobs(deps);
  registerRealmJobs(deps);
  registerThumbnailJobs(deps);
  registerOutgoingWebhookJobs(deps);
  registerExportJobs(deps);
}
