// validate: requests (and, in development and tests, responses) checked by express-openapi-validator
// against the spec's projection (http/validation-spec.ts), without its route search on every request.
// The validator finds a request's route by trying the spec's path patterns one after another (about a
// tenth of the CPU of a small request); the pipeline already knows the operation (http/operations.ts).
// So the validator's own middlewares run in full for an operation's first request, and what its route
// search found there (route and operation schema: the same for every request of the operation) is kept;
// later requests of the operation get that with their own path parameters, and only the middlewares
// that validate run. The middlewares are told apart by their function names in the validator's
// version 5 (checked at start: any other arrangement runs the validator in full on every request).
import type { Request } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import type { OpenApiValidatorOpts as OpenApiValidatorOptions } from 'express-openapi-validator/dist/framework/types.js';
import type { RequestState } from './context.ts';
import { runSteps, type Step } from './steps.ts';
import { INTEGER_RANGE_FORMATS } from './validation-spec.ts';

type Middleware = Step;

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

/** Authentication is the pipeline's (its authenticate step), not the validator's. */
const VALIDATE_SECURITY = false;

/** The validate step of the pipeline, for the projection of the spec built at start. */
export function createRequestValidator(validationSpec: Record<string, unknown>, options: { validateResponses: boolean }): Middleware {
  const validator = OpenApiValidator.middleware({
    // The projection is built from the bundled spec at start (a JSON document, OpenAPI 3.1).
    apiSpec: validationSpec as unknown as OpenApiValidatorOptions['apiSpec'],
    validateRequests: { coerceTypes: false, allowUnknownQueryParameters: true, removeAdditional: false },
    validateResponses: options.validateResponses
      ? {
          removeAdditional: false,
          onError: (error: Error, body: unknown) => {
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
  return validateRequest(validator, { validateSecurity: VALIDATE_SECURITY });
}

function validateRequest(validator: unknown, options: { validateSecurity: boolean }): Middleware {
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
      return runSteps(chain, req, res, (error) => {
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
    runSteps(validating, req, res, next);
  };
}
