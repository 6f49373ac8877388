// The Express application: the API pipeline (http/pipeline.ts, where /api/v1 requests go, whichever
// way they arrive), the health check, the API docs, the account pages, and the error layers that turn
// every failure into Zulip's envelope (http/error-handler.ts). `serve` is the HTTP server's handler:
// API requests go straight to the pipeline; every other request goes through Express.
import { existsSync, readFileSync } from 'node:fs';
import { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from './deps.ts';
import { JsonableError, ResourceNotFoundError } from './errors.ts';
import { errorHandler, finalErrorHandler } from './http/error-handler.ts';
import { requestLogging } from './http/logging.ts';
import { canonicalApiUrl, createApiPipeline } from './http/pipeline.ts';
import { sendError } from './http/respond.ts';
import { buildValidationSpec } from './http/validation-spec.ts';
import { pingDatabase } from './data/db.ts';
import { accountsRouter } from './http/accounts.ts';
import { emailConfirmationRouter } from './http/email-confirmation.ts';
import { passwordResetRouter } from './http/password-reset.ts';
import { userUploadsRouter } from './http/user-uploads.ts';
import { userAvatarsRouter } from './http/user-avatars.ts';
import { defaultImagesRouter } from './http/default-images.ts';
import { exportDownloadsRouter } from './http/export-downloads.ts';

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
  const pipeline = createApiPipeline(deps, validationSpec);

  /**
   * The one way in for API requests: the door brings the URL to its canonical form (see
   * canonicalApiUrl), then the pipeline runs; `done` is the request's next layer (not reached when
   * the pipeline answered).
   */
  const runApi = (req: Request, res: Response, canonical: string, done: (error?: unknown) => void) => {
    if (canonical !== req.url) req.url = req.originalUrl = canonical;
    pipeline.run(req, res, done);
  };
  // Requests that come through Express (app.listen, tests) reach the same door first.
  app.use(function api(req: Request, res: Response, next: NextFunction) {
    const canonical = canonicalApiUrl(req.url);
    if (canonical === null) return next();
    runApi(req, res, canonical, next);
  });
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
  app.use(passwordResetRouter(deps)); // GET/POST /accounts/password/reset/<key> (imported accounts choose a password)
  app.use(accountsRouter(deps));
  app.use(userUploadsRouter(deps)); // GET /user_uploads/… (the files themselves, outside the API)
  app.use(userAvatarsRouter(deps)); // GET /user_avatars/… (uploaded avatars, public)
  app.use(defaultImagesRouter()); // GET /static/images/… (the default organization logo, the thumbnail placeholder)
  app.use(exportDownloadsRouter(deps)); // GET /user_avatars/exports/… (finished organization exports)
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
    const canonical = canonicalApiUrl(incoming.url ?? '');
    if (canonical === null) return void app(incoming, outgoing);
    const req = incoming as Request;
    const res = outgoing as Response;
    req.res = res;
    res.req = req;
    // (already theirs when made by this server: see serverOptions)
    if (Object.getPrototypeOf(req) !== app.request) Object.setPrototypeOf(req, app.request);
    if (Object.getPrototypeOf(res) !== app.response) Object.setPrototypeOf(res, app.response);
    // GET /events' usual re-poll: the same parts without the steps (http/events-route.ts); otherwise below.
    if (pipeline.serveEvents(req, res, fail)) return;
    if (!res.locals) res.locals = Object.create(null);
    // What the application's router sets before its first layer.
    req.baseUrl = '';
    req.originalUrl ??= req.url;
    req.params = {};
    try {
      logRequest(req, res, () =>
        runApi(req, res, canonical, (error) => {
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

