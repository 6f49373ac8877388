// Real-time events: POST /register, GET /events (long-poll), DELETE /events.
import type { RequestParams, SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { PollConnection } from '../events/delivery.ts';
import type { Handler, HandlerContext } from '../http/handler.ts';
import { doDeleteQueue, doGetEvents, doRegisterQueue } from '../actions/event-queues.ts';
import { countEventsDelivered } from '../metrics/metrics.ts';

export const registerQueue: Handler<'register-queue'> = async ({ params, realm, user, deps }) => {
  const state = await doRegisterQueue(deps, realm, user, {
    eventTypes: params.event_types ?? null,
    fetchEventTypes: params.fetch_event_types ?? null,
    applyMarkdown: params.apply_markdown ?? false,
    clientGravatar: params.client_gravatar ?? true,
    slimPresence: params.slim_presence ?? false,
    presenceHistoryLimitDays: params.presence_history_limit_days ?? null,
    includeSubscribers: params.include_subscribers ?? false,
    allPublicStreams: params.all_public_streams ?? false,
    clientCapabilities: params.client_capabilities ?? {},
    narrow: params.narrow ?? [],
    queueLifespanSecs: params.queue_lifespan_secs ?? 0,
  });
  return state as SuccessData<'register-queue'>;
};

export const getEvents: Handler<'get-events'> = ({ params, user, deps, connection, detachFromAdmission }) => pollEvents(deps, user, params, connection, detachFromAdmission);

/** GET /events for the pipeline's handler and for its lean route (http/events-route.ts). */
export async function pollEvents(deps: AppDeps, user: HandlerContext<'get-events'>['user'], params: RequestParams<'get-events'>, connection: PollConnection, onWait: () => void): Promise<SuccessData<'get-events'>> {
  const answer = await doGetEvents(deps, user, {
    queueId: params.queue_id,
    lastEventId: params.last_event_id,
    dontBlock: params.dont_block ?? false,
    connection,
    onWait,
  });
  countEventsDelivered(answer.count);
  // (events may be RawJson: text the envelope writes as it is, parsed back where responses are validated)
  return answer.data as unknown as SuccessData<'get-events'>;
}

export const deleteQueue: Handler<'delete-queue'> = async ({ params, user, deps }) => {
  await doDeleteQueue(deps, user, params.queue_id);
  return {};
};
