// The `send-push` job: one push of the outbox per job (actions/push.ts deliverPush), through the APNs
// connection of this process. A push to retry throws, and the job queue runs it again with backoff.
import type { AppDeps } from '../deps.ts';
import { deliverPush, PushRetryError } from '../actions/push.ts';
import { createApnsSenders } from './apns.ts';
import { countPush } from '../metrics/metrics.ts';

const senders = new WeakMap<AppDeps, ReturnType<typeof createApnsSenders>>();

export function registerPushJobs(deps: AppDeps): void {
  let apns = senders.get(deps);
  if (!apns) {
    apns = createApnsSenders();
    senders.set(deps, apns);
  }
  const current = apns;
  deps.jobs.work('send-push', async ({ pushId }) => {
    const status = await deliverPush(deps, pushId, current.forConfig(deps.config.apns)).catch((error: unknown) => {
      countPush(error instanceof PushRetryError ? 'retry' : 'error');
      throw error;
    });
    countPush(status);
    deps.logger.debug({ push_id: pushId, status }, 'push delivery');
  });
}

/** Closes this server's APNs connection (it also closes by itself after a minute without pushes). */
export async function closePushDelivery(deps: AppDeps): Promise<void> {
  await senders.get(deps)?.close();
}
