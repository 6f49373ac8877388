// The /api/v1 request pipeline. Every API request, whichever way it reaches the server, runs these
// steps in this order, each a named function below (or in its own file where it is big):
//
//   resolve       which operation of the spec (http/operations.ts); JSON 404 / 405 otherwise
//   admit         at most PARLEY_MAX_CONCURRENT_REQUESTS at once, a short line, then 503 (http/admission.ts)
//   authenticate  HTTP Basic email:api_key from the credential cache (http/authenticate.ts); public
//                 operations skip it, spectators get the organization's anonymous access
//   rateLimit     per user or client address (http/rate-limit.ts)
//   readBody      urlencoded (possibly compressed) or multipart (http/body.ts, http/multipart.ts); a file
//                 upload's body is left to its handler (http/multipart-stream.ts)
//   decode        Zulip's wire format into typed values, by the generated wire plan (http/decode-params.ts)
//   validate      against the spec's projection, by validators compiled from it (http/validate.ts,
//                 http/validation-spec.ts)
//   dispatch      the operation's thin handler (src/handlers, by src/routes.ts), then
//   respond       the success envelope (http/respond.ts)
//
// A step has Express's middleware shape (req, res, next): next() goes on, next(error) or a throw or a
// rejected promise ends at the application's error layers (http/error-handler.ts), which answer in
// Zulip's envelope. The steps run from `runPipeline` without Express's router (one function call per
// step); what a request learned on the way is `res.locals.parley` (http/context.ts RequestState).
import type { NextFunction, Request, Response } from 'express';
import express from 'express';
import type { AppDeps } from '../deps.ts';
import { JsonableError, MissingArgumentError, UnauthorizedError } from '../errors.ts';
import { CachedTableWriteRecord } from '../data/cached-tables.ts';
import { isWellFormedApiKey } from '../security/secrets.ts';
import { findFirstRealm } from '../data/realms.repo.ts';
import { checkSpectatorAccess } from '../access/users.ts';
import { handlerOf } from '../routes.ts';
import { admission } from './admission.ts';
import { authenticateApiKeyAlone, createHeaderAuthenticator } from './authenticate.ts';
import { readPlainBody } from './body.ts';
import type { RequestState } from './context.ts';
import { decodeParams } from './decode-params.ts';
import { bodyFilesOf, parseMultipart } from './multipart.ts';
import { streamMultipart, type StreamedMultipart } from './multipart-stream.ts';
import { resolveOperation } from './operations.ts';
import { rateLimit } from './rate-limit.ts';
import { sendError, sendSuccess } from './respond.ts';
import { runSteps, type Step } from './steps.ts';
import { createRequestValidator } from './validate.ts';
import type { PollConnection } from '../events/delivery.ts';
import { connectionOf, createEventsRoute, type EventsRoute } from './events-route.ts';

export const API_PREFIX = '/api/v1';


/** The query of a URL without one (only ever read). */
const NO_QUERY = new URLSearchParams();
/** 5 MB, as body-parser reads '5mb'. */
const URLENCODED_LIMIT_BYTES = 5 * 1024 * 1024;

/**
 * The pipeline of one application: `run` takes a request whose URL is in canonical form
 * (canonicalApiUrl) and calls `done` after the last step, or with the failure that ended it.
 */
export function createApiPipeline(
  deps: AppDeps,
  validationSpec: Record<string, unknown>,
): { run(req: Request, res: Response, done: (error?: unknown) => void): void; serveEvents: EventsRoute } {
  const admit = admission({ limit: deps.config.maxConcurrentRequests, queueTimeoutMs: deps.config.queueTimeoutMs });
  const authenticateHeader = createHeaderAuthenticator(deps);
  const validate = createRequestValidator(validationSpec, { validateResponses: deps.config.validateResponses });
  const steps: Step[] = [
    resolve,
    admit,
    authenticateWith(deps, authenticateHeader),
    rateLimit(deps.rateLimiter),
    readBody,
    decode,
    authenticateKeyParameterWith(deps),
    validate,
    dispatchWith(deps),
  ];
  return {
    // GET /events' usual re-poll, with the same parts (http/events-route.ts); the rest comes to `run`.
    serveEvents: createEventsRoute(deps, { admission: admit, knownIdentity: authenticateHeader.known, validator: validate, rateLimiter: deps.rateLimiter }),
    run(req, res, done) {
      // While the steps run, the request is seen relative to the API (req.path '/users/me'), as a router
      // mounted at /api/v1 would show it; its own URL is given back before `done`.
      const url = req.url;
      const baseUrl = req.baseUrl;
      req.baseUrl = baseUrl + API_PREFIX;
      req.url = url.slice(API_PREFIX.length) || '/';
      runSteps(steps, req, res, (error?: unknown) => {
        req.url = url;
        req.baseUrl = baseUrl;
        done(error);
      });
    },
  };
}

/**
 * The door: the canonical form (`/api/v1/<rest>[?query]`) of an API request's URL, or null when it is
 * not one. The usual form is recognised without parsing; other spellings the HTTP layer accepts (the
 * prefix in another case, an absolute URI as request target, repeated slashes in the path, which
 * Zulip's nginx merges: the Python client's `call_endpoint(url="/users/me/status")` asks for
 * `/api/v1//users/me/status`) are brought to it, so that every API request takes the one way in.
 */
export function canonicalApiUrl(url: string): string | null {
  const first = url.charCodeAt(API_PREFIX.length + 1);
  if (url.startsWith(API_PREFIX) && url.charCodeAt(API_PREFIX.length) === 47 /* / */ && first >= 97 && first <= 122 /* a-z */ && !hasRepeatedSlash(url)) return url;
  let pathAndQuery = url;
  if (!url.startsWith('/')) {
    try {
      const parsed = new URL(url);
      pathAndQuery = parsed.pathname + parsed.search;
    } catch {
      return null;
    }
  }
  const prefix = pathAndQuery.slice(0, API_PREFIX.length);
  if (prefix.toLowerCase() !== API_PREFIX) return null;
  const rest = pathAndQuery.slice(API_PREFIX.length);
  if (rest !== '' && rest[0] !== '/' && rest[0] !== '?') return null;
  const queryAt = rest.indexOf('?');
  const path = queryAt < 0 ? rest : rest.slice(0, queryAt);
  return API_PREFIX + path.replace(/\/{2,}/g, '/') + (queryAt < 0 ? '' : rest.slice(queryAt));
}

/** Whether the path of a URL (not its query) holds `//`. */
function hasRepeatedSlash(url: string): boolean {
  const at = url.indexOf('//');
  if (at < 0) return false;
  const queryAt = url.indexOf('?');
  return queryAt < 0 || at < queryAt;
}

// ---------------------------------------------------------------------------------------------
// The steps

/** resolve: which operation is this? Unknown paths and wrong methods answer JSON. */
function resolve(req: Request, res: Response, next: NextFunction): void {
  const resolution = resolveOperation(req.method, req.path);
  if (resolution.kind === 'not-found') return sendError(res, new JsonableError('Not Found', { status: 404 }));
  if (resolution.kind === 'method-not-allowed') {
    return sendError(
      res,
      new JsonableError('Method Not Allowed', { status: 405, data: { allowed_methods: resolution.allowed }, headers: { Allow: resolution.allowed.join(', ') } }),
    );
  }
  // Every field present from the start (one object shape for every request).
  res.locals.parley = {
    operation: resolution.operation,
    pathParams: resolution.pathParams,
    rawPathParams: resolution.rawPathParams,
    realm: undefined,
    user: undefined,
    params: undefined,
    ignored: undefined,
  } as unknown as Partial<RequestState>;
  next();
}

/**
 * authenticate: before the body or any parameter is looked at, as in Zulip. Public operations
 * (server_settings, fetch_api_key) never look at credentials: Zulip routes them outside its
 * authenticated dispatcher, and the Python client calls /server_settings from its constructor, so a
 * wrong key must not fail there.
 */
function authenticateWith(deps: AppDeps, authenticateHeader: ReturnType<typeof createHeaderAuthenticator>): Step {
  const authenticated = (state: RequestState, identity: { user: RequestState['user'] & object; realm: RequestState['realm'] }) => {
    state.user = identity.user;
    state.realm = identity.realm;
  };
  // Operations open to spectators: without spectator access, authentication is missing (401), and that
  // is answered before any parameter is looked at.
  const anonymous = async (state: RequestState) => {
    const realm = await deps.credentials.defaultRealm(() => findFirstRealm(deps.db));
    if (!realm) throw new JsonableError('No organization exists on this server yet');
    if (state.operation.auth === 'optional') checkSpectatorAccess(realm);
    state.user = null;
    state.realm = realm;
  };
  return function authenticate(req, res, next) {
    const state = res.locals.parley as RequestState;
    // Incoming webhooks name their caller by an `api_key` parameter when no header does: checked once
    // the body (where the key may be) is read (authenticateKeyParameter).
    if (state.operation.rawBody && !req.headers.authorization) {
      state.user = null;
      return next();
    }
    const identity = state.operation.auth === 'none' ? null : authenticateHeader(req, { incomingWebhookBots: state.operation.incomingWebhookBots === true });
    if (identity instanceof Promise) {
      return identity.then((found) => {
        authenticated(state, found);
        next();
      }, next);
    }
    if (identity) {
      authenticated(state, identity);
      return next();
    }
    if (state.operation.auth === 'required') throw new UnauthorizedError('Missing authorization header for basic auth');
    return anonymous(state).then(() => next(), next);
  };
}

/**
 * readBody: urlencoded or multipart (an empty multipart body means "no parameters"); no content type,
 * none. A urlencoded body may be compressed (gzip, deflate, br); a body that does not match its
 * encoding is the client's error (400), as is an encoding we cannot read (415).
 */
function readBody(req: Request, res: Response, next: NextFunction): void {
  // A file upload's body is left to its handler, which reads it as it arrives (http/multipart-stream.ts).
  if ((res.locals.parley as RequestState).operation.streamBody) {
    req.body = {};
    return next();
  }
  if ((res.locals.parley as RequestState).operation.rawBody) return readRawBody(req, res, next);
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (req.headers['content-length'] === '0' || !type) {
    req.body = {};
    return next();
  }
  if (type.startsWith('multipart/form-data')) {
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity' && encoding !== '') return next(new JsonableError('Unsupported Content-Encoding', { status: 415 }));
    return parseMultipart(req, res, next, { files: (res.locals.parley as RequestState).operation.filesInBody === true });
  }
  if (type.startsWith('application/x-www-form-urlencoded')) return readUrlencoded(req, res, next);
  req.body = {};
  next();
}

// The raw bytes (inflated, size-limited by body-parser), decoded with URLSearchParams: every name is
// kept as sent, `__proto__` included, into an object without a prototype.
const urlencodedBytes = express.raw({ type: () => true, limit: URLENCODED_LIMIT_BYTES, inflate: true });

function readUrlencoded(req: Request, res: Response, next: NextFunction): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8' && charset !== 'us-ascii') {
    return next(new JsonableError('Unsupported charset', { status: 415 }));
  }
  const parse = (body: unknown) => {
    const fields: Record<string, string> = Object.create(null);
    const text = Buffer.isBuffer(body) ? body.toString('utf8') : '';
    const params = new URLSearchParams(text);
    if (params.size > 10_000) return next(new JsonableError('Too many parameters', { status: 413 }));
    params.forEach((value, name) => {
      fields[name] = value; // a repeated name keeps its last value, as Django's QueryDict does
    });
    req.body = fields;
    next();
  };
  // A plain body of a declared length is read here; any other (compressed, chunked, too large) goes
  // through body-parser.
  if (readPlainBody(req, URLENCODED_LIMIT_BYTES, next, parse)) return;
  urlencodedBytes(req, res, (err?: unknown) => {
    if (err) return next(err);
    parse(req.body);
  });
}

/** 5 MB, as form bodies: the most an incoming webhook's body may hold. */
const RAW_BODY_LIMIT_BYTES = URLENCODED_LIMIT_BYTES;
const rawBytes = express.raw({ type: () => true, limit: RAW_BODY_LIMIT_BYTES, inflate: true });

/**
 * An incoming webhook's body: its bytes, whatever the type (kept in the request state for the
 * handler); a form-encoded one is also decoded into parameters (`api_key`, `stream` … may be there).
 */
function readRawBody(req: Request, res: Response, next: NextFunction): void {
  const state = res.locals.parley as RequestState;
  const done = (body: unknown) => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
    state.rawBody = bytes;
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    const fields: Record<string, string> = Object.create(null);
    if (type.startsWith('application/x-www-form-urlencoded')) {
      new URLSearchParams(bytes.toString('utf8')).forEach((value, name) => {
        fields[name] = value;
      });
    }
    req.body = fields;
    next();
  };
  if (req.headers['content-length'] === '0') return done(Buffer.alloc(0));
  if (readPlainBody(req, RAW_BODY_LIMIT_BYTES, next, done)) return;
  rawBytes(req, res, (err?: unknown) => {
    if (err) return next(err);
    done(req.body);
  });
}

/**
 * authenticate (incoming webhooks without an Authorization header): the `api_key` parameter, from the
 * query string or the body, names the caller (Zulip's webhook_view), and is checked before any other
 * parameter, as credentials always are. No key is Zulip's `Missing 'api_key' argument`.
 */
function authenticateKeyParameterWith(deps: AppDeps): Step {
  return function authenticateKeyParameter(_req, res, next) {
    const state = res.locals.parley as RequestState;
    if (!state.operation.rawBody || state.user) return next();
    const raw = state.params['api_key'];
    const apiKey = typeof raw === 'string' ? raw.trim() : undefined;
    if (apiKey === undefined) throw new MissingArgumentError('api_key');
    if (!isWellFormedApiKey(apiKey)) throw new UnauthorizedError('Malformed API key');
    return authenticateApiKeyAlone(deps, apiKey, { incomingWebhookBots: state.operation.incomingWebhookBots === true }).then((identity) => {
      state.user = identity.user;
      state.realm = identity.realm;
      next();
    }, next);
  };
}

/** decode: Zulip's wire format into typed values, driven by the wire plan (body and query string merged). */
function decode(req: Request, res: Response, next: NextFunction): void {
  const state = res.locals.parley as RequestState;
  const queryAt = req.originalUrl.indexOf('?');
  // The query string alone (what a parsed URL's searchParams would read, without parsing the URL).
  const hashAt = queryAt < 0 ? -1 : req.originalUrl.indexOf('#', queryAt);
  const query = queryAt < 0 ? NO_QUERY : new URLSearchParams(req.originalUrl.slice(queryAt + 1, hashAt < 0 ? undefined : hashAt));
  const { params, ignored } = decodeParams(state.operation, req.body as Record<string, unknown>, query);
  state.params = params;
  // Incoming webhooks report no ignored parameters (Zulip's is_webhook_view): the service's fields are theirs.
  state.ignored = state.operation.rawBody ? [] : ignored;
  next();
}

/** dispatch: the operation's handler, with the request's context; then respond. */
function dispatchWith(deps: AppDeps): Step {
  return async function dispatch(req, res, next) {
    const state = res.locals.parley as RequestState;
    try {
      const handler = handlerOf(state.operation.operationId);
      // The signal is made when a handler asks for it (most never do): aborted when the response
      // closes before it finished (the client went away), whether before or after it was asked for.
      let aborted: AbortController | undefined;
      let connection: PollConnection | undefined;
      let multipart: StreamedMultipart | undefined;
      const cachedTableWrites = new CachedTableWriteRecord();
      const ctx = {
        params: state.params,
        path: state.pathParams,
        realm: state.realm,
        viewer: state.user,
        deps,
        get signal() {
          if (!aborted) {
            const controller = (aborted = new AbortController());
            if (res.destroyed && !res.writableFinished) controller.abort();
            else res.on('close', () => void (res.writableFinished || controller.abort()));
          }
          return aborted.signal;
        },
        get connection() {
          return (connection ??= connectionOf(res));
        },
        client: clientName(req.headers['user-agent']),
        detachFromAdmission: () => (res.locals['releaseAdmission'] as (() => void) | undefined)?.(),
        cachedTableWrites,
        get raw() {
          if (!state.operation.rawBody) throw new Error(`${state.operation.operationId} does not take its body raw`);
          return { body: state.rawBody ?? Buffer.alloc(0), headers: req.headers, query: new URL(req.originalUrl, 'http://parley.invalid').searchParams, path: req.originalUrl.split('?')[0]! };
        },
        files: bodyFilesOf(req),
        get multipart() {
          if (!state.operation.streamBody) throw new Error(`${state.operation.operationId} does not stream its body`);
          return (multipart ??= streamMultipart(req));
        },
        get user() {
          if (!state.user) throw new UnauthorizedError('Missing authorization header for basic auth');
          return state.user;
        },
      };
      const data = await handler(ctx);
      await respond(deps, state, res, data, cachedTableWrites);
    } catch (error) {
      next(error);
    }
  };
}

/**
 * respond: the success envelope. A change is answered only once this process has heard every cache
 * invalidation it caused, so the caller's next request (on this process) never meets a cached identity
 * the change outdated (unless the action said, through the context's cachedTableWrites, that its change
 * wrote none of data/cached-tables.ts CACHED_TABLES).
 */
async function respond(deps: AppDeps, state: RequestState, res: Response, data: Record<string, unknown>, writes: CachedTableWriteRecord): Promise<void> {
  if (state.operation.method !== 'get' && !writes.untouched) await deps.listener.barrier();
  sendSuccess(res, data, state.ignored, { validated: deps.config.validateResponses });
}

/** Zulip's client name: the User-Agent's leading product token ("ZulipMobile/27.1 …" → "ZulipMobile"). */
export function clientName(userAgent: string | undefined): string {
  if (!userAgent || !userAgent.trim()) return 'Unspecified';
  const token = userAgent.trim().split('/')[0]!.split(' ')[0]!;
  return token.slice(0, 30) || 'Unspecified';
}
