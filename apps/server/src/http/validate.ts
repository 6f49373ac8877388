// Request validation by express-openapi-validator, without its route search on every request. The
// validator finds a request's route by trying the spec's path patterns one after another (about a tenth
// of the CPU of a small request); the pipeline already knows the operation (http/operations.ts). So the
// validator's own middlewares run in full for an operation's first request, and what its route search
// found there (route and operation schema: the same for every request of the operation) is kept; later
// requests of the operation get that with their own path parameters, and only the middlewares that
// validate run.
import type { NextFunction, Request, Response } from 'express';
import type { RequestState } from './context.ts';

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

/** What the validator's route search puts on `req.openapi`, apart from the path parameters. */
interface RouteMetadata {
  expressRoute: string;
  openApiRoute: string;
  schema: unknown;
  serial: number;
  _responseSchema?: unknown;
}

/** express-openapi-validator 5's middlewares, by function name; `metadataMiddleware` is the route search. */
const SEARCH = 'metadataMiddleware';
const VALIDATING = ['securityMiddleware', 'requestMiddleware', 'responseMiddleware'];
const KNOWN = ['pathParamsMiddleware', SEARCH, ...VALIDATING];

/** Runs middlewares in turn as Express would (a thrown error or rejected promise goes to `done`). */
export function runChain(chain: Middleware[], req: Request, res: Response, done: (error?: unknown) => void): void {
  let i = 0;
  const step = (error?: unknown) => {
    if (error !== undefined && error !== null) return done(error);
    const middleware = chain[i++];
    if (!middleware) return done();
    try {
      const result = middleware(req, res, step) as { then?: unknown } | undefined;
      if (result && typeof result.then === 'function') (result as Promise<unknown>).then(undefined, (e: unknown) => done(e ?? new Error('Rejected promise')));
    } catch (e) {
      done(e);
    }
  };
  step();
}

export function validateRequest(validator: unknown, options: { validateSecurity: boolean }): Middleware {
  const chain = (Array.isArray(validator) ? validator : [validator]) as Middleware[];
  // Only for the middlewares we know; anything else (another version) runs in full every time.
  const understood = chain.some((m) => m.name === SEARCH) && chain.every((m) => KNOWN.includes(m.name));
  // Without security validation, the validator's security middleware only passes the request on (a
  // promise later): its first run, in the full chain, is enough.
  const validating = chain.filter((m) => VALIDATING.includes(m.name) && (options.validateSecurity || m.name !== 'securityMiddleware'));
  const routes = new Map<string, RouteMetadata>();
  return (req, res, next) => {
    const state = res.locals.parley as RequestState;
    const operationId = state.operation.operationId;
    const route = understood ? routes.get(operationId) : undefined;
    if (!route) {
      return runChain(chain, req, res, (error) => {
        const found = (req as Request & { openapi?: RouteMetadata }).openapi;
        if (understood && found && !routes.has(operationId)) {
          const { expressRoute, openApiRoute, schema, serial, _responseSchema } = found;
          routes.set(operationId, { expressRoute, openApiRoute, schema, serial, ...(_responseSchema !== undefined ? { _responseSchema } : {}) });
        }
        next(error as Error | undefined);
      });
    }
    const pathParams = { ...state.rawPathParams };
    (req as Request & { openapi?: unknown }).openapi = { ...route, pathParams };
    req.params = pathParams;
    runChain(validating, req, res, next);
  };
}
