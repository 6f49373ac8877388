// POST /register, GET /events, DELETE /events.
import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import { inSqlTransaction } from '../data/pg-transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { createEventQueue, deleteEventQueue } from '../data/event-queues.repo.ts';
import { newestEventId } from '../data/event-queues.repo.ts';
import { JsonableError } from '../errors.ts';
import { checkCanRegisterQueue } from '../access/event-queues.ts';
import { MAX_QUEUE_LIFESPAN_SECS } from '../events/housekeeping.ts';
import { readRegisterState, type RegisterOptions } from '../queries/register-state.ts';
import { FEATURE_LEVEL, MERGE_BASE, ZULIP_VERSION } from '../version.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { SLIM_PRESENCE_QUEUE_FLAG } from '../lib/presence.ts';
import { RawJson } from '../lib/raw-json.ts';
import type { PollConnection } from '../events/delivery.ts';

/** Queues not polled for this long expire, unless the client asked for longer (Zulip's default). */
export const DEFAULT_QUEUE_LIFESPAN_SECS = 600;
/** What /register tells clients about the long-poll (they set their HTTP timeout above it). */
export const LONGPOLL_TIMEOUT_SECS = 90;

export interface RegisterRequest {
  eventTypes: string[] | null;
  fetchEventTypes: string[] | null;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  /** Presence (state and events) keyed by user ID in the modern format. */
  slimPresence: boolean;
  presenceHistoryLimitDays: number | null;
  includeSubscribers: boolean | 'partial';
  allPublicStreams: boolean;
  clientCapabilities: Record<string, boolean>;
  narrow: unknown[];
  queueLifespanSecs: number;
}

export async function doRegisterQueue(deps: AppDeps, realm: Realm, user: User, request: RegisterRequest): Promise<Record<string, unknown>> {
  checkCanRegisterQueue(user, request);
  const capabilities = request.clientCapabilities;
  const options: RegisterOptions = {
    clientGravatar: request.clientGravatar,
    includeSubscribers: request.includeSubscribers === 'partial' ? 'partial' : request.includeSubscribers ? 'true' : 'false',
    userSettingsObject: capabilities['user_settings_object'] === true,
    includeDeactivatedGroups: capabilities['include_deactivated_groups'] === true,
    emptyTopicName: capabilities['empty_topic_name'] === true,
    longpollTimeoutSeconds: LONGPOLL_TIMEOUT_SECS,
    pushNotificationsEnabled: deps.config.pushNotificationsEnabled,
    maxFileUploadSizeMib: deps.config.maxFileUploadSizeMib,
    // Zulip's fetch_initial_state_data: the capability implies the modern format of the state too.
    modernPresence: request.slimPresence || capabilities['simplified_presence_events'] === true,
    presenceHistoryLimitDays: request.presenceHistoryLimitDays,
    presenceDisabled: deps.config.presenceDisabled,
    linkifierUrlTemplate: capabilities['linkifier_url_template'] === true,
    apiKeyCipher: deps.cipher,
  };
  const lifespan = request.queueLifespanSecs <= 0 ? DEFAULT_QUEUE_LIFESPAN_SECS : Math.min(request.queueLifespanSecs, MAX_QUEUE_LIFESPAN_SECS);
  const kinds = request.fetchEventTypes ?? request.eventTypes;
  const queueId = randomUUID();
  deps.delivery.watch(realm.id);
  // One snapshot: the queue starts at the newest event the state already includes, so no event between
  // the state and the first poll is lost, and none is delivered that the state already holds. A few
  // registrations at once (deps.registrations): a burst of arrivals waits here rather than taking every
  // connection of the pool from the requests of the users already online.
  return deps.registrations.run(() =>
    inSqlTransaction(
      deps.db,
      async (tx) => {
        const lastEventId = await newestEventId(tx, realm.id);
        // The user's deferred rows up to the snapshot's newest message (unread_msgs, max_message_id).
        await catchUpDeferredRows(tx, realm, user);
        const state = await readRegisterState(tx, realm, user, kinds, options);
        await createEventQueue(tx, {
          id: queueId,
          realmId: realm.id,
          userId: user.id,
          eventTypes: request.eventTypes,
          allPublicStreams: request.allPublicStreams,
          applyMarkdown: request.applyMarkdown,
          clientGravatar: request.clientGravatar,
          narrow: request.narrow,
          // The queue keeps slim_presence beside the capabilities (its presence events: lib/presence.ts).
          clientCapabilities: { ...capabilities, [SLIM_PRESENCE_QUEUE_FLAG]: request.slimPresence },
          lifespanSecs: lifespan,
          lastEventId,
        });
        return {
          queue_id: queueId,
          last_event_id: lastEventId,
          zulip_feature_level: FEATURE_LEVEL,
          zulip_version: ZULIP_VERSION,
          zulip_merge_base: MERGE_BASE,
          ...state,
        };
      },
      { repeatableRead: true },
    ),
  );
}

export class BadEventQueueIdError extends JsonableError {
  constructor(queueId: string) {
    super(`Bad event queue ID: ${queueId}`, { code: 'BAD_EVENT_QUEUE_ID', data: { queue_id: queueId } });
  }
}

export interface PollRequest {
  queueId: string;
  lastEventId: number | undefined;
  dontBlock: boolean;
  /** The client's connection: a poll whose client went away is answered (to nobody) at once. */
  connection: PollConnection;
  /** Called once the poll is about to wait (so it stops counting as work under way). */
  onWait(): void;
}

export interface PollResult {
  /** The answer's data; its events already serialised (RawJson) when delivery had them so. */
  data: { events: Record<string, unknown>[] | RawJson; queue_id: string };
  /** How many events it carries. */
  count: number;
}

export async function doGetEvents(deps: AppDeps, user: User, request: PollRequest): Promise<PollResult> {
  // Recorded in memory and written in batches (events/queue-cache.ts): a poll writes nothing itself.
  const opened = await deps.delivery.queues.open(request.queueId, user.id, request.lastEventId ?? null);
  if (!opened) throw new BadEventQueueIdError(request.queueId);
  // The queue holds only what came after its registration and what the client has not acknowledged: a
  // last_event_id below that (-1, or an id from before the queue existed) starts at the queue's own mark
  // (the acknowledged id, never moving backwards; registration's newest id at first), as Zulip's queues do.
  const { queue, after } = opened;
  if (!request.dontBlock) request.onWait();
  const answer = await deps.delivery.poll(queue, after, { dontBlock: request.dontBlock, connection: request.connection });
  // Ended under the poll (owner deactivated, or an all_public_streams queue's owner became a guest): the
  // queue was deleted with that change.
  if (answer.ended && answer.events.length === 0) throw new BadEventQueueIdError(request.queueId);
  // The texts delivery shared between queues of the same form go out as they are (http/respond.ts).
  const events = answer.json !== undefined && answer.json.length === answer.events.length ? new RawJson(`[${answer.json.join(',')}]`) : answer.events;
  return { data: { events, queue_id: queue.id }, count: answer.events.length };
}

export async function doDeleteQueue(deps: AppDeps, user: User, queueId: string): Promise<void> {
  deps.delivery.queues.forget(queueId);
  if (!(await deleteEventQueue(deps.db, queueId, user.id))) throw new BadEventQueueIdError(queueId);
}
