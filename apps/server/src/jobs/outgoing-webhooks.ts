// The `outgoing-webhook` job (Zulip's outgoing_webhooks queue worker): enqueued in the transaction of a
// message that triggers an outgoing-webhook bot (actions/outgoing-webhooks.ts queueOutgoingWebhooks),
// one per bot, message and attempt. Retries of a failed request are new jobs the action enqueues after
// its delay; a throw here (a database failure) makes the queue retry the same attempt, which the
// delivery row keeps from posting anything twice.
import type { AppDeps } from '../deps.ts';
import { doDeliverOutgoingWebhook } from '../actions/outgoing-webhooks.ts';

export function registerOutgoingWebhookJobs(deps: AppDeps): void {
  deps.jobs.work('outgoing-webhook', (job) => doDeliverOutgoingWebhook(deps, job));
}
