// The Express application. Request path for /api/v1:
//   resolve operation → admission → authenticate → rate limit → parse body → decode parameters (wire
//   plan) → validate (express-openapi-validator on the spec) → thin handler → JSON envelope.
// Every failure on the way becomes Zulip's error envelope in http/error-handler.ts.
import { existsSync, readFileSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { OpenApiValidatorOpts as OpenApiValidatorOptions } from 'express-openapi-validator/dist/framework/types.js';
import type { AppDeps } from './deps.ts';
import { JsonableError, ResourceNotFoundError, UnauthorizedError } from './errors.ts';
import { createHeaderAuthenticator } from './http/authenticate.ts';
import type { RequestState } from './http/context.ts';
import { decodeParams } from './http/decode-params.ts';
import { errorHandler, finalErrorHandler } from './http/error-handler.ts';
import { requestLogging } from './http/logging.ts';
import { resolveOperation } from './http/operations.ts';
import { sendError, sendSuccess } from './http/respond.ts';
import { buildValidationSpec, INTEGER_RANGE_FORMATS } from './http/validation-spec.ts';
import { runChain, validateRequest } from './http/validate.ts';
import { handlerOf } from './routes.ts';
import { rateLimit } from './http/rate-limit.ts';
import { admission } from './http/admission.ts';
import { parseMultipart } from './http/multipart.ts';
import { readPlainBody } from './http/body.ts';
import { findFirstRealm } from './data/realms.repo.ts';
import { cachesUntouched, pingDatabase } from './data/db.ts';
import { checkSpectatorAccess } from './access/users.ts';
import { accountsRouter } from './http/accounts.ts';
import { emailConfirmationRouter } from './http/email-confirmation.ts';

const API_PREFIX = '/api/v1';
/** Authentication is this pipeline's (step 3), not the validator's. */
const VALIDATE_SECURITY = false;
/** The query of a URL without one (only ever read). */
const NO_QUERY = new URLSearchParams();
/** 5 MB, as body-parser reads '5mb'. */
const URLENCODED_LIMIT_BYTES = 5 * 1024 * 1024;

export function buildApp(deps: AppDeps) {
  const app = express();
  app.disable('x-powered-by');
  // No ETag: hashing every body (a user list is megabytes) costs more than it saves; Zulip sends none.
  app.set('etag', false);
  app.set('query parser', 'simple');
  if (deps.config.trustProxy) app.set('trust proxy', deps.config.trustProxy);
  const logRequest = requestLogging(deps.logger);
  app.use(logRequest);

  const { validationSpec, rules } = buildValidationSpec(JSON.parse(readFileSync(deps.specJsonPath, 'utf8')), { responses: deps.config.validateResponses });
  const validator = OpenApiValidator.middleware({
    // The projection is built from the bundled spec at start (a JSON document, OpenAPI 3.1).
    apiSpec: validationSpec as unknown as OpenApiValidatorOptions['apiSpec'],
    validateRequests: { coerceTypes: false, allowUnknownQueryParameters: true, removeAdditional: false },
    validateResponses: deps.config.validateResponses
      ? {
          removeAdditional: false,
          onError: (error: Error, body: unknown) => {
            // Operations not served yet answer a generic 404 that their spec entry does not list.
            if ((body as { code?: string } | undefined)?.code === 'NOT_IMPLEMENTED') return;
            throw Object.assign(new Error(`response does not match the spec: ${error.message}`), { responseBody: body });
          },
        }
      : false,
    validateSecurity: VALIDATE_SECURITY,
    validateApiSpec: false,
    fileUploader: false,
    ignoreUndocumented: false,
    formats: INTEGER_RANGE_FORMATS,
  });
  // The raw bytes (inflated, size-limited by body-parser), decoded below with URLSearchParams: every
  // name is kept as sent, `__proto__` included, into an object without a prototype.
  const urlencodedBytes = express.raw({ type: () => true, limit: URLENCODED_LIMIT_BYTES, inflate: true });
  const urlencoded = (req: Request, res: Response, next: NextFunction) => {
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
    // A plain body of a declared length is read here; any other (compressed, chunked, too large)
    // goes through body-parser.
    if (readPlainBody(req, URLENCODED_LIMIT_BYTES, next, parse)) return;
    urlencodedBytes(req, res, (err?: unknown) => {
      if (err) return next(err);
      parse(req.body);
    });
  };

  // The steps run as one middleware of the API router (see runChain): one router layer, not nine.
  const steps: Array<(req: Request, res: Response, next: NextFunction) => unknown> = [];

  // 1. Which operation is this? Unknown paths and wrong methods answer JSON.
  steps.push((req: Request, res: Response, next: NextFunction) => {
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
  });

  // 2. At most so many requests at once (before their bodies are read); the rest wait in line,
  //    briefly, or get 503 with Retry-After.
  steps.push(admission({ limit: deps.config.maxConcurrentRequests, queueTimeoutMs: deps.config.queueTimeoutMs }));

  // 3. Authenticate (before the body or any parameter is looked at, as in Zulip).
  const authenticateHeader = createHeaderAuthenticator(deps);
  const authenticated = (state: RequestState, identity: { user: RequestState['user'] & object; realm: RequestState['realm'] }) => {
    state.user = identity.user;
    state.realm = identity.realm;
  };
  steps.push((req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    // Public operations (server_settings, fetch_api_key) never look at credentials: Zulip routes them
    // outside its authenticated dispatcher, and the Python client calls /server_settings from its
    // constructor, so a wrong key must not fail there.
    const identity = state.operation.auth === 'none' ? null : authenticateHeader(req);
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
  });
  const anonymous = async (state: RequestState) => {
    const realm = await deps.credentials.defaultRealm(() => findFirstRealm(deps.db));
    if (!realm) throw new JsonableError('No organization exists on this server yet');
    // Operations open to spectators: without spectator access, authentication is missing (401),
    // and that is answered before any parameter is looked at.
    if (state.operation.auth === 'optional') checkSpectatorAccess(realm);
    state.user = null;
    state.realm = realm;
  };

  // 4. Rate limit, per user or client address (counters shared through the database).
  steps.push(rateLimit(deps.rateLimiter));

  // 5. Body: urlencoded or multipart (an empty multipart body means "no parameters"); no content type → none.
  //    A urlencoded body may be compressed (gzip, deflate, br); a body that does not match its encoding
  //    is the client's error (400), as is an encoding we cannot read (415).
  steps.push((req: Request, res: Response, next: NextFunction) => {
    const type = (req.headers['content-type'] ?? '').toLowerCase();
    if (req.headers['content-length'] === '0' || !type) {
      req.body = {};
      return next();
    }
    if (type.startsWith('multipart/form-data')) {
      const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
      if (encoding !== 'identity' && encoding !== '') return next(new JsonableError('Unsupported Content-Encoding', { status: 415 }));
      return parseMultipart(req, res, next);
    }
    if (type.startsWith('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    req.body = {};
    next();
  });

  // 6. Decode Zulip's wire format into typed values, driven by the wire plan.
  steps.push((req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    const queryAt = req.originalUrl.indexOf('?');
    const query = queryAt < 0 ? NO_QUERY : new URL(req.originalUrl, 'http://parley.invalid').searchParams;
    const { params, ignored } = decodeParams(state.operation, req.body as Record<string, unknown>, query);
    state.params = params;
    state.ignored = ignored;
    // Present the decoded parameters to the validator as one form body (see http/validation-spec.ts).
    req.body = params;
    // No query parameters for the validator either. Without a query string, Express's own `req.query`
    // is already empty (and the validator makes it a plain property itself).
    if (queryAt >= 0) Object.defineProperty(req, 'query', { value: {}, writable: true, configurable: true, enumerable: true });
    req.headers['content-type'] = 'application/x-www-form-urlencoded';
    next();
  });

  // 7. Validate against the spec.
  steps.push(validateRequest(validator, { validateSecurity: VALIDATE_SECURITY }));

  // 8. Dispatch to the handler.
  steps.push(async (_req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    const handler = handlerOf(state.operation.operationId);
    if (!handler) {
      return sendError(res, new JsonableError(`Parley does not serve ${state.operation.operationId} yet`, { status: 404, code: 'NOT_IMPLEMENTED' }));
    }
    try {
      // The signal is made when a handler asks for it (most never do): aborted when the response
      // closes before it finished (the client went away), whether before or after it was asked for.
      let aborted: AbortController | undefined;
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
        client: clientName(_req.headers['user-agent']),
        detachFromAdmission: () => (res.locals['releaseAdmission'] as (() => void) | undefined)?.(),
        get user() {
          if (!state.user) throw new UnauthorizedError('Missing authorization header for basic auth');
          return state.user;
        },
      };
      const data = await handler(ctx);
      // A change is answered only once this process has heard every invalidation it caused, so the
      // caller's next request (on this process) never meets a cached identity the change outdated
      // (unless the action says its change wrote nothing such caches hold: data/db.ts CACHED_TABLES).
      if (state.operation.method !== 'get' && !cachesUntouched(data)) await deps.listener.barrier();
      sendSuccess(res, data, state.ignored, { validated: deps.config.validateResponses });
    } catch (error) {
      next(error);
    }
  });
  const api = express.Router();
  // (A request the direct dispatch below has run is not run again, should it ever come this way.)
  api.use((req: Request, res: Response, next: NextFunction) => (res.locals.parley ? next() : runChain(steps, req, res, next)));

  /**
   * The API's usual form of path (`/api/v1/<name>…`, no scheme or host) is dispatched directly, as
   * the mounted router below does it: the same `baseUrl` and `url` while the steps run, the original
   * ones restored before `done` (the request's next layer), without a second router's dispatch.
   */
  const runApi = (req: Request, res: Response, done: (error?: unknown) => void) => {
    const url = req.url;
    const baseUrl = req.baseUrl;
    req.baseUrl = baseUrl + API_PREFIX;
    req.url = url.slice(API_PREFIX.length);
    runChain(steps, req, res, (error?: unknown) => {
      req.url = url;
      req.baseUrl = baseUrl;
      done(error);
    });
  };

  // The API first: its requests pass no other route on the way. Any other form of its paths (another
  // case, an absolute URI…) goes through the mount.
  app.use(function api(req: Request, res: Response, next: NextFunction) {
    if (!isUsualApiUrl(req.url)) return next();
    runApi(req, res, next);
  });
  app.use(API_PREFIX, api);
  // For load balancers: this process answers and reaches its database.
  app.get('/health', async (_req, res, next) => {
    try {
      await pingDatabase(deps.db);
      res.json({ result: 'success', msg: '', status: 'ok' });
    } catch (error) {
      deps.logger.error({ err: error }, 'health check: database unreachable');
      next(new JsonableError('Database unreachable', { status: 503, code: 'SERVER_OVERLOADED' }));
    }
  });

  app.get('/api/openapi.yaml', (_req, res) => {
    res.type('application/yaml').sendFile(deps.specYamlPath);
  });
  app.get(['/api/docs', '/api/docs/'], (_req, res) => {
    if (!existsSync(deps.docsHtmlPath)) return sendError(res, new ResourceNotFoundError('API docs are not built; run `pnpm generate`'));
    res.type('html').sendFile(deps.docsHtmlPath);
  });
  app.use(emailConfirmationRouter(deps)); // GET/POST /accounts/confirm_new_email (PATCH /settings email changes)
  app.use(accountsRouter(deps));
  const notFound = (_req: Request, res: Response) => sendError(res, new JsonableError('Not Found', { status: 404 }));
  app.use(notFound);
  const handleError = errorHandler(rules, deps.logger);
  const handleFinalError = finalErrorHandler(deps.logger);
  app.use(handleError);
  app.use(handleFinalError);

  /** A failure, as the application's error layers take it (a layer that throws passes it on). */
  const fail = (error: unknown, req: Request, res: Response) => {
    const last = (e: unknown) => {
      try {
        handleFinalError(e, req, res, () => {});
      } catch {
        res.destroy();
      }
    };
    try {
      handleError(error, req, res, last);
    } catch (thrown) {
      last(thrown);
    }
  };

  /**
   * The HTTP server's request handler (server.ts). A request of the API's usual form is dispatched
   * without Express's router: what `app.handle` does for it (the circular references, Express's
   * request and response prototypes, `res.locals`; X-Powered-By is off), then the two application
   * layers it would pass, request logging and the API, called directly, and its failures handed to
   * the same error layers. Every other request goes through Express.
   */
  const serve = (incoming: IncomingMessage, outgoing: ServerResponse): void => {
    if (!isUsualApiUrl(incoming.url ?? '')) return void app(incoming, outgoing);
    const req = incoming as Request;
    const res = outgoing as Response;
    req.res = res;
    res.req = req;
    // (already theirs when made by this server: see serverOptions)
    if (Object.getPrototypeOf(req) !== app.request) Object.setPrototypeOf(req, app.request);
    if (Object.getPrototypeOf(res) !== app.response) Object.setPrototypeOf(res, app.response);
    if (!res.locals) res.locals = Object.create(null);
    // What the application's router sets before its first layer.
    req.baseUrl = '';
    req.originalUrl ??= req.url;
    req.params = {};
    try {
      logRequest(req, res, () =>
        runApi(req, res, (error) => {
          if (error !== undefined && error !== null) return fail(error, req, res);
          try {
            notFound(req, res); // (not expected: the steps answer every request)
          } catch (thrown) {
            fail(thrown, req, res);
          }
        }),
      );
    } catch (thrown) {
      fail(thrown, req, res); // as a layer's throw
    }
  };
  /**
   * For http.createServer: requests and responses are made with Express's prototypes (app.request,
   * app.response) from the start, the ones app.handle gives them, rather than changed on every request.
   */
  function ParleyRequest(this: IncomingMessage, socket: Socket) {
    (IncomingMessage as unknown as (this: IncomingMessage, socket: Socket) => void).call(this, socket);
  }
  ParleyRequest.prototype = app.request;
  function ParleyResponse(this: ServerResponse, req: IncomingMessage, options?: unknown) {
    (ServerResponse as unknown as (this: ServerResponse, req: IncomingMessage, options?: unknown) => void).call(this, req, options);
  }
  ParleyResponse.prototype = app.response;
  const serverOptions = {
    IncomingMessage: ParleyRequest as unknown as typeof IncomingMessage,
    ServerResponse: ParleyResponse as unknown as typeof ServerResponse,
  };
  return Object.assign(app, { serve, serverOptions });
}

/** `/api/v1/<a lowercase letter>…`: the form every operation's path takes. */
function isUsualApiUrl(url: string): boolean {
  const first = url.charCodeAt(API_PREFIX.length + 1);
  return url.startsWith(API_PREFIX) && url.charCodeAt(API_PREFIX.length) === 47 /* / */ && first >= 97 && first <= 122 /* a-z */;
}

/** Zulip's client name: the User-Agent's leading product token ("ZulipMobile/27.1 …" → "ZulipMobile"). */
export function clientName(userAgent: string | undefined): string {
  if (!userAgent || !userAgent.trim()) return 'Unspecified';
  const token = userAgent.trim().split('/')[0]!.split(' ')[0]!;
  return token.slice(0, 30) || 'Unspecified';
}
