// validate: requests (and, in development and tests, responses) checked against the spec's projection
// (http/validation-spec.ts) by validators that Ajv compiles from it. For each operation: one for its
// parameters (the projection's form body, which holds every parameter, as decoded) and, when its path
// has any, one for its path parameters; for each operation and response status, one for the JSON body.
// The pipeline already knows the operation (http/operations.ts), so a request costs one map lookup and
// one or two compiled functions. An operation's validators are compiled on its first request, a
// response's on the first response with its status (compiling them all would lie on the path to the
// first answer: Ajv compiles each schema into JavaScript), then kept for the life of the process.
//
// The Ajv settings are the ones the Zulip messages of http/validation-errors.ts were written against
// (express-openapi-validator 5, which validated before, drove the same Ajv with them), so that the first
// failure reported is the same for every input: JSON Schema 2020-12 (OpenAPI 3.1), stop at the first
// failure, no type coercion of parameters (the decoder typed them; only path parameters, still text,
// are coerced), the spec's defaults filled into the parameters, ajv-formats' formats ("fast" mode) and
// the projection's integer ranges (INTEGER_RANGE_FORMATS).
import { Ajv2020, type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { RequestState } from './context.ts';
import { checkResponsesWith, type ResponseCheck } from './respond.ts';
import type { Step } from './steps.ts';
import { issuesOf, RequestValidationError } from './validation-errors.ts';
import { deref, INTEGER_RANGE_FORMATS } from './validation-spec.ts';

type Json = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

const AJV_OPTIONS: Options = {
  strict: false,
  strictNumbers: true,
  strictTuples: true,
  allowUnionTypes: false,
  validateSchema: false,
  validateFormats: true,
  allErrors: false,
  removeAdditional: false,
};

/** ajv-formats is CommonJS: its function is the module itself, also exported as `default`. */
const addFormats = (ajvFormats as unknown as { default: typeof ajvFormats.default }).default;

/** An Ajv for the projection: its formats, and the spec's component schemas for the `$ref`s left in it. */
function createAjv(spec: Json, options: Options): Ajv2020 {
  const ajv = new Ajv2020({ ...AJV_OPTIONS, ...options });
  addFormats(ajv, { mode: 'fast' });
  for (const [name, format] of Object.entries(INTEGER_RANGE_FORMATS)) ajv.addFormat(name, format);
  for (const [id, schema] of Object.entries<Json>(spec.components?.schemas ?? {})) ajv.addSchema(schema, `#/components/schemas/${id}`);
  return ajv;
}

/** What the projection says of one operation. */
interface OperationSpec {
  /** The form body schema: every parameter. */
  params: Json;
  /** An object schema of the path parameters, or null for a path without any. */
  pathParams: Json | null;
  responses: Json;
}

export interface OperationValidators {
  params: ValidateFunction;
  pathParams: ValidateFunction | null;
  /** null when responses are not validated. */
  responses: ResponseCheck | null;
}

function operationsOf(spec: Json): Map<string, OperationSpec> {
  const operations = new Map<string, OperationSpec>();
  for (const item of Object.values<Json>(spec.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op?.operationId) continue;
      const path = (op.parameters ?? []).map((p: Json) => deref(spec, p)).filter((p: Json) => p.in === 'path');
      const properties = Object.fromEntries(path.map((p: Json) => [p.name, p.schema ?? Object.values<Json>(p.content ?? {})[0]?.schema ?? {}]));
      const required = path.filter((p: Json) => p.required).map((p: Json) => p.name);
      operations.set(op.operationId, {
        params: deref(spec, op.requestBody)?.content?.['application/x-www-form-urlencoded']?.schema ?? {},
        pathParams: path.length ? { properties, type: 'object', ...(required.length ? { required } : {}) } : null,
        responses: op.responses ?? {},
      });
    }
  }
  return operations;
}

/** The validate step, and an operation's compiled validators (http/events-route.ts validates with the same ones). */
export type RequestValidator = Step & { validatorsOf(operationId: string): OperationValidators };

/** The validate step of the pipeline, for the projection of the spec built at start. */
export function createRequestValidator(validationSpec: Record<string, unknown>, options: { validateResponses: boolean }): RequestValidator {
  const spec = validationSpec as Json;
  const operations = operationsOf(spec);
  // Parameters: no coercion, the spec's defaults filled in. Path parameters: text, coerced.
  const paramsAjv = createAjv(spec, { coerceTypes: false, useDefaults: true });
  let pathAjv: Ajv2020 | undefined;
  let responseAjv: Ajv2020 | undefined;
  const compiled = new Map<string, OperationValidators>();

  const compile = (operationId: string): OperationValidators => {
    const operation = operations.get(operationId);
    if (!operation) throw new Error(`operation ${operationId} is not in the spec`);
    const validators: OperationValidators = {
      params: paramsAjv.compile(operation.params),
      pathParams: operation.pathParams ? (pathAjv ??= createAjv(spec, { coerceTypes: true, useDefaults: true })).compile(operation.pathParams) : null,
      responses: options.validateResponses ? responseCheck(spec, operation.responses, () => (responseAjv ??= createAjv(spec, { coerceTypes: false, useDefaults: false }))) : null,
    };
    compiled.set(operationId, validators);
    return validators;
  };
  const validatorsOf = (operationId: string): OperationValidators => compiled.get(operationId) ?? compile(operationId);

  const validate: Step = function validate(req, res, next) {
    const state = res.locals.parley as RequestState;
    const operationId = state.operation.operationId;
    const validators = validatorsOf(operationId);
    // Path parameters first, then the parameters (the order the failures were always reported in).
    if (validators.pathParams !== null) {
      const pathParams = { ...state.rawPathParams }; // (coerced in place)
      if (!validators.pathParams(pathParams)) return next(new RequestValidationError(issuesOf(validators.pathParams.errors, '/params')));
    }
    if (!validators.params(state.params)) return next(new RequestValidationError(issuesOf(validators.params.errors, '/body')));
    if (validators.responses !== null) checkResponsesWith(res, validators.responses);
    next();
  };
  return Object.assign(validate, { validatorsOf });
}

/**
 * The check of an operation's responses: the schema of the response the spec lists for the status (or
 * for its class, `4XX`, or `default`), its JSON content. A status the spec does not list, a body where
 * the spec lists none, or a body that does not match, throws.
 */
function responseCheck(spec: Json, responses: Json, ajvOf: () => Ajv2020): ResponseCheck {
  const validators = new Map<string, ValidateFunction | null>();
  const validatorOf = (key: string): ValidateFunction | null => {
    let validator = validators.get(key);
    if (validator === undefined) {
      const response = deref(spec, responses[key]);
      const content: Json | undefined = response.content;
      const type = content ? Object.keys(content).find((t) => isJson(t) && content[t]?.schema) : undefined;
      // As the body is validated: an object whose `response` is the body (so that paths read /response/…).
      validator = type ? ajvOf().compile({ properties: { response: content![type].schema }, type: 'object', components: spec.components ?? {} }) : null;
      validators.set(key, validator);
    }
    return validator;
  };
  const listed = (key: string) => {
    if (!Object.hasOwn(responses, key)) return false;
    const content = deref(spec, responses[key])?.content;
    // A response whose content is all of other media types is not listed for JSON bodies.
    return !content || Object.keys(content).some((t) => isJson(t) && content[t]?.schema);
  };
  return (status, body) => {
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find(listed);
    if (key === undefined) throw mismatch(`no schema defined for status code '${status}' in the openapi spec`, body);
    const validator = validatorOf(key);
    if (validator === null) throw mismatch('response should NOT have a body', body);
    if (body === undefined || body === null) throw mismatch('response body required.', body);
    if (!validator({ response: body })) {
      const errors = validator.errors ?? [];
      // Ajv's errorsText (each value's path and what it fails), enum failures with their allowed values.
      const messages = issuesOf(errors, '').map((issue) => issue.message);
      throw mismatch(errors.map((e, i) => `${e.instancePath} ${messages[i]}`).join(', '), body);
    }
  };
}

function mismatch(message: string, body: unknown): Error {
  return Object.assign(new Error(`response does not match the spec: ${message}`), { responseBody: body });
}

/** `application/json`, `application/problem+json`, …: the media types of JSON bodies. */
function isJson(mediaType: string): boolean {
  return /^[^/;\s]+\/(?:[^;\s]*\+)?json\s*(?:;|$)/i.test(mediaType);
}

