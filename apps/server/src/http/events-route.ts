// GET /events' lean route. A message to a large channel answers every parked long-poll at once, and
// each client polls again at once: the re-poll is the server's most frequent request. The pipeline
// (http/pipeline.ts) serves it through the steps every operation takes; this route serves the usual
// re-poll with the same parts, called directly:
//
//   - the same URL only: GET /api/v1/events with a plain query string (queue_id, last_event_id,
//     dont_block, each at most once, no escapes, last_event_id an integer and dont_block true/false)
//     and no body (where parameters may also be);
//   - a caller the pipeline's header authenticator already knows (a header that authenticated before,
//     its user in the credential cache, every check of authenticate.ts passing: active user, active
//     organization, not an incoming webhook bot);
//   - parameters that pass the operation's own compiled validator (http/validate.ts), which also fills
//     in the spec's defaults;
//   - a free admission slot with nobody waiting in line (http/admission.ts).
//
// Anything else (another spelling of the URL, an unknown or repeated parameter, a parameter the
// validator refuses, a body, a header never seen or refused, a full admission line, HEAD) goes through the
// pipeline untouched: every check above changes nothing, so the pipeline gives its own answer, its
// error envelopes included. Once the route takes the request it does what the pipeline would, in the
// same order: request id and access log line (http/logging.ts), the admission slot (given back when
// the poll waits or the response closes), rate limiting (http/rate-limit.ts's key and headers), the
// handler's work (handlers/event-queues.ts pollEvents), the success envelope (http/respond.ts),
// responses validated outside production, metrics by operation and status, and failures to the
// application's error layers (http/error-handler.ts), as the pipeline's are.
import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type { RequestParams } from '@parley/api-types';
import { wirePlan } from '@parley/wire';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import type { RateLimiter } from '../data/rate-limits.repo.ts';
import { pollEvents } from '../handlers/event-queues.ts';
import { observeRequest } from '../metrics/metrics.ts';
import type { Admission } from './admission.ts';
import { consumeRateLimit } from './rate-limit.ts';
import type { RequestState } from './context.ts';
import { acceptableRequestId, createRequestLineWriter, type RequestLine } from './logging.ts';
import { checkResponsesWith, sendSuccess, writeJsonBody } from './respond.ts';
import type { OperationValidators, RequestValidator } from './validate.ts';
import { RawJson } from '../lib/raw-json.ts';
import type { PollConnection } from '../events/delivery.ts';

const PATH = '/api/v1/events';
const OPERATION = 'get-events';
/** A queue id needing no decoding (ours are UUIDs). */
const PLAIN_TEXT = /^[A-Za-z0-9._:-]+$/;
/** An integer as JSON writes it, within the safe range. */
const INTEGER = /^-?(?:0|[1-9][0-9]{0,14})$/;
const NO_IGNORED: string[] = [];

export interface EventsRouteParts {
  admission: Admission;
  /** The pipeline's header authenticator's `known`. */
  knownIdentity(header: string): { user: User; realm: Realm } | null;
  validator: RequestValidator;
  rateLimiter: RateLimiter | null;
}

/** Hands a failure to the application's error layers (app.ts). */
export type FailRequest = (error: unknown, req: Request, res: Response) => void;

/** The route: true when it took the request (it then answers it), false to leave it to the pipeline. */
export type EventsRoute = (req: Request, res: Response, fail: FailRequest) => boolean;

/** Requests this process's lean route took (tests, figures). */
export const eventsRouteFigures = { taken: 0 };

export function createEventsRoute(deps: AppDeps, parts: EventsRouteParts): EventsRoute {
  const route: RouteState = { deps, parts, writeLine: createRequestLineWriter(deps.logger), validated: deps.config.validateResponses };

  return function serveEvents(req, res, fail) {
    const url = req.url;
    if (req.method !== 'GET' || !url.startsWith(PATH) || url.length === PATH.length || url.charCodeAt(PATH.length) !== 63 /* ? */) return false;
    const header = req.headers.authorization;
    if (!header) return false;
    // Parameters may come in a body too, whatever the method: the pipeline reads it.
    const length = req.headers['content-length'];
    if ((length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined) return false;
    const params = plainQuery(url.slice(PATH.length + 1));
    if (params === null) return false;
    const identity = parts.knownIdentity(header);
    if (identity === null) return false;
    const validators = parts.validator.validatorsOf(OPERATION);
    if (!validators.params(params)) return false;
    if (!parts.admission.enter()) return false;

    // Taken: from here on, as the pipeline.
    eventsRouteFigures.taken++;
    void answer(new TakenPoll(route, req, res, fail, identity.user, identity.realm, params, validators));
    return true;
  };
}

/** What every request of the route shares. */
interface RouteState {
  deps: AppDeps;
  parts: EventsRouteParts;
  writeLine: (line: RequestLine) => boolean;
  validated: boolean;
}

/**
 * A request the route took: its state in one object (the connection the poll watches, the admission
 * slot it holds), so that a poll makes few closures.
 */
class TakenPoll implements PollConnection {
  readonly started = process.hrtime.bigint();
  readonly reqId: string;
  admitted = true;
  /** Gives the admission slot back (once): when the poll waits, or when the response closes. */
  readonly release = () => {
    if (!this.admitted) return;
    this.admitted = false;
    this.route.parts.admission.leave();
  };

  constructor(
    readonly route: RouteState,
    readonly req: Request,
    readonly res: Response,
    readonly fail: FailRequest,
    readonly user: User,
    readonly realm: Realm,
    readonly params: RequestParams<typeof OPERATION>,
    readonly validators: OperationValidators,
  ) {
    this.reqId = acceptableRequestId(req.headers['x-request-id']) ?? randomUUID();
    res.setHeader('X-Request-Id', this.reqId);
    res.on('close', () => this.closed()); // (a response closes once)
  }

  get gone(): boolean {
    return this.res.destroyed && !this.res.writableFinished;
  }

  onGone(listener: () => void): () => void {
    return onResponseGone(this.res, listener);
  }

  /** requestLogging's work when the response closes: the slot, the metrics, the access line. */
  closed(): void {
    this.release();
    const res = this.res;
    const finished = res.writableFinished;
    const ms = Number(process.hrtime.bigint() - this.started) / 1e6;
    observeRequest(OPERATION, finished ? res.statusCode : 499, ms / 1e3);
    this.route.writeLine({ reqId: this.reqId, method: 'GET', path: PATH, operation: OPERATION, userId: this.user.id, status: res.statusCode, ms, aborted: !finished });
  }

  /** To the application's error layers, with what they read: the request id and the request's state (as the pipeline's). */
  failed(error: unknown): void {
    const res = this.res;
    res.locals ??= Object.create(null);
    res.locals.requestId = this.reqId;
    res.locals.parley = { operation: wirePlan[OPERATION], pathParams: {}, rawPathParams: {}, realm: this.realm, user: this.user, params: this.params, ignored: NO_IGNORED } satisfies RequestState;
    this.fail(error, this.req, res);
  }
}

/** The pipeline's rate limiting, validation of the answer (outside production), the handler and the envelope. */
async function answer(poll: TakenPoll): Promise<void> {
  const { deps, parts, validated } = poll.route;
  const res = poll.res;
  try {
    // The pipeline's key for an authenticated caller (http/rate-limit.ts).
    if (parts.rateLimiter) consumeRateLimit(parts.rateLimiter, `user:${poll.user.id}`, res);
    if (poll.validators.responses !== null) {
      res.locals ??= Object.create(null);
      checkResponsesWith(res, poll.validators.responses);
    }
    const data = await pollEvents(deps, poll.user, poll.params, poll, poll.release);
    // The envelope sendSuccess writes for this answer ({result, msg, events, queue_id}), events as the texts delivery shared.
    const events: unknown = data.events;
    if (!validated && events instanceof RawJson && events.chunks.length === 1 && typeof events.chunks[0] === 'string') {
      writeJsonBody(res, `{"result":"success","msg":"","events":${events.chunks[0]},"queue_id":${JSON.stringify(data.queue_id)}}`);
    } else {
      sendSuccess(res, data as unknown as Record<string, unknown>, NO_IGNORED, { validated });
    }
  } catch (error) {
    poll.failed(error);
  }
}

/**
 * The parameters of a plain query string, typed as the pipeline's decoder types them (queue_id as
 * text, last_event_id and dont_block JSON-decoded), or null for anything else: another name, a name
 * twice, an escape (`%`, `+`), a value of another form, a `#`.
 */
function plainQuery(query: string): RequestParams<typeof OPERATION> | null {
  let queueId: string | undefined;
  let lastEventId: number | undefined;
  let dontBlock: boolean | undefined;
  let from = 0;
  while (from <= query.length) {
    let to = query.indexOf('&', from);
    if (to < 0) to = query.length;
    const eq = query.indexOf('=', from);
    if (eq < 0 || eq > to) return null;
    const name = query.slice(from, eq);
    const value = query.slice(eq + 1, to);
    if (name === 'queue_id') {
      if (queueId !== undefined || !PLAIN_TEXT.test(value)) return null;
      queueId = value;
    } else if (name === 'last_event_id') {
      if (lastEventId !== undefined || !INTEGER.test(value)) return null;
      lastEventId = Number(value);
    } else if (name === 'dont_block') {
      if (dontBlock !== undefined || (value !== 'true' && value !== 'false')) return null;
      dontBlock = value === 'true';
    } else {
      return null;
    }
    from = to + 1;
  }
  if (queueId === undefined) return null;
  const params: RequestParams<typeof OPERATION> = { queue_id: queueId };
  if (lastEventId !== undefined) params.last_event_id = lastEventId;
  if (dontBlock !== undefined) params.dont_block = dontBlock;
  return params;
}

/** The handler context's `connection`: the response's `close` event, read as the client going away when it closes unfinished. */
export function connectionOf(res: Response): PollConnection {
  return {
    get gone() {
      return res.destroyed && !res.writableFinished;
    },
    onGone: (listener) => onResponseGone(res, listener),
  };
}

/** Calls `listener` when the response closes unfinished (the client went away); the returned function stops listening. */
function onResponseGone(res: Response, listener: () => void): () => void {
  const onClose = () => {
    if (!res.writableFinished) listener();
  };
  res.once('close', onClose);
  return () => void res.removeListener('close', onClose);
}
