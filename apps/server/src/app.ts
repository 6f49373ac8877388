// The Express application. Request path for /api/v1:
//   resolve operation → parse body → authenticate → decode parameters (wire plan) → validate
//   (express-openapi-validator on the spec) → thin handler → JSON envelope.
// Every failure on the way becomes Zulip's error envelope in http/error-handler.ts.
import { existsSync, readFileSync } from 'node:fs';
import express, { type NextFunction, type Request, type Response } from 'express';
import multer from 'multer';
import * as OpenApiValidator from 'express-openapi-validator';
import type { AppDeps } from './deps.ts';
import { JsonableError, ResourceNotFoundError, UnauthorizedError } from './errors.ts';
import { authenticate, parseBasicAuth } from './http/authenticate.ts';
import type { RequestState } from './http/context.ts';
import { decodeParams } from './http/decode-params.ts';
import { errorHandler } from './http/error-handler.ts';
import { resolveOperation } from './http/operations.ts';
import { sendError, sendSuccess } from './http/respond.ts';
import { buildValidationSpec } from './http/validation-spec.ts';
import { handlers } from './routes.ts';
import { rateLimit } from './http/rate-limit.ts';
import { createRateLimiter } from './data/rate-limits.repo.ts';
import { findFirstRealm } from './data/realms.repo.ts';
import type { HandlerContext } from './http/handler.ts';

const API_PREFIX = '/api/v1';

export function buildApp(deps: AppDeps) {
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  if (deps.config.trustProxy) app.set('trust proxy', deps.config.trustProxy);

  app.get('/api/openapi.yaml', (_req, res) => {
    res.type('application/yaml').sendFile(deps.specYamlPath);
  });
  app.get(['/api/docs', '/api/docs/'], (_req, res) => {
    if (!existsSync(deps.docsHtmlPath)) return sendError(res, new ResourceNotFoundError('API docs are not built; run `pnpm generate`'));
    res.type('html').sendFile(deps.docsHtmlPath);
  });

  const { validationSpec, rules } = buildValidationSpec(JSON.parse(readFileSync(deps.specJsonPath, 'utf8')));
  const validator = OpenApiValidator.middleware({
    apiSpec: validationSpec as any,
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
    validateSecurity: false,
    validateApiSpec: false,
    fileUploader: false,
    ignoreUndocumented: false,
  });
  const multipart = multer({ limits: { fieldSize: 2 * 1024 * 1024, files: 0 } }).none();
  const urlencoded = express.urlencoded({ extended: false, limit: '5mb', parameterLimit: 10_000 });

  const api = express.Router();

  // 1. Which operation is this? Unknown paths and wrong methods answer JSON.
  api.use((req: Request, res: Response, next: NextFunction) => {
    const resolution = resolveOperation(req.method, req.path);
    if (resolution.kind === 'not-found') return sendError(res, new JsonableError('Not Found', { status: 404 }));
    if (resolution.kind === 'method-not-allowed') {
      res.setHeader('Allow', resolution.allowed.join(', '));
      return res.status(405).json({ result: 'error', msg: 'Method Not Allowed', allowed_methods: resolution.allowed });
    }
    res.locals.parley = { operation: resolution.operation, pathParams: resolution.pathParams } as Partial<RequestState>;
    next();
  });

  // 2. Body: urlencoded or multipart (an empty multipart body means "no parameters"); no content type → none.
  api.use((req: Request, res: Response, next: NextFunction) => {
    const type = req.headers['content-type'] ?? '';
    if (req.headers['content-length'] === '0' || !type) {
      req.body = {};
      return next();
    }
    if (type.startsWith('multipart/form-data')) {
      return multipart(req, res, (err?: unknown) => {
        if (err) return next(new JsonableError('Malformed multipart body'));
        next();
      });
    }
    if (type.startsWith('application/x-www-form-urlencoded')) return urlencoded(req, res, next);
    req.body = {};
    next();
  });

  // 3. Authenticate (before parameters are looked at, as in Zulip).
  api.use(async (req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    try {
      // As in Zulip's rest_dispatch, credentials that are sent are checked even on public operations
      // (a deactivated key gets 401 from /server_settings too).
      const credentials = parseBasicAuth(req);
      if (credentials) {
        const { user, realm } = await authenticate(deps.db, deps.cipher, credentials);
        state.user = user;
        state.realm = realm;
      } else if (state.operation.auth === 'required') {
        throw new UnauthorizedError('Missing authorization header for basic auth');
      } else {
        const realm = await findFirstRealm(deps.db);
        if (!realm) throw new JsonableError('No organization exists on this server yet');
        state.user = null;
        state.realm = realm;
      }
      next();
    } catch (error) {
      next(error);
    }
  });

  // 3b. Rate limit, per user or client address (counters shared through the database).
  api.use(rateLimit(deps.config.rateLimit ? createRateLimiter(deps.db, deps.config.rateLimit, 'api') : null));

  // 4. Decode Zulip's wire format into typed values, driven by the wire plan.
  api.use((req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    const query = new URL(req.originalUrl, 'http://parley.invalid').searchParams;
    const { params, ignored } = decodeParams(state.operation, req.body as Record<string, unknown>, query);
    state.params = params;
    state.ignored = ignored;
    // Present the decoded parameters to the validator as one form body (see http/validation-spec.ts).
    req.body = params;
    Object.defineProperty(req, 'query', { value: {}, writable: true, configurable: true, enumerable: true });
    req.headers['content-type'] = 'application/x-www-form-urlencoded';
    next();
  });

  // 5. Validate against the spec.
  api.use(validator);

  // 6. Dispatch to the handler.
  api.use(async (_req: Request, res: Response, next: NextFunction) => {
    const state = res.locals.parley as RequestState;
    const handler = (handlers as Record<string, ((ctx: HandlerContext<any>) => Promise<Record<string, unknown>>) | undefined>)[
      state.operation.operationId
    ];
    if (!handler) {
      return sendError(res, new JsonableError(`Parley does not serve ${state.operation.operationId} yet`, { status: 404, code: 'NOT_IMPLEMENTED' }));
    }
    try {
      const ctx = {
        params: state.params,
        path: state.pathParams,
        realm: state.realm,
        viewer: state.user,
        deps,
        get user() {
          if (!state.user) throw new UnauthorizedError('Missing authorization header for basic auth');
          return state.user;
        },
      };
      const data = await handler(ctx);
      sendSuccess(res, data, state.ignored);
    } catch (error) {
      next(error);
    }
  });

  app.use(API_PREFIX, api);
  app.use((_req: Request, res: Response) => sendError(res, new JsonableError('Not Found', { status: 404 })));
  app.use(errorHandler(rules, deps.config));
  return app;
}
