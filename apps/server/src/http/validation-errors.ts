// Maps request validation failures (http/validate.ts: Ajv's errors against the spec's projection) to
// Zulip's validation messages (typed_endpoint wording). One table keyed by the kind of failure (Ajv's
// keyword); only the first failure is reported, as Zulip does.
import type { ErrorObject } from 'ajv/dist/2020.js';
import { JsonableError, MissingArgumentError } from '../errors.ts';
import { isIntegerRangeFormat, type ParamRules } from './validation-spec.ts';

/**
 * One failure: `path` names the value (`/body/<parameter>/…` for a parameter, `/params/<name>` for a
 * path parameter), `message` is Ajv's, `errorCode` is `<keyword>.openapi.validation`.
 */
export interface ValidatorIssue {
  path: string;
  message: string;
  errorCode?: string;
}

/** A request its operation's schema refuses: the failures in the order Ajv reported them (the first is answered). */
export class RequestValidationError extends Error {
  readonly status = 400;
  constructor(readonly errors: ValidatorIssue[]) {
    super(`request does not match the spec: ${errors.map((e) => `${e.path} ${e.message}`).join(', ')}`);
  }
}

/**
 * Ajv's errors as issues, `prefix` naming where the value sits (`/body`, `/params`, `/response`): the
 * value's path (for a missing or unexpected property, the property's own path), Ajv's message (an enum
 * failure lists the allowed values), the keyword that failed. As express-openapi-validator 5 wrote
 * them, which these messages were first written against (an unexpected property named "" has the
 * path "").
 */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined, prefix: string): ValidatorIssue[] {
  return (errors ?? []).map((e) => {
    const params = e.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string; allowedValues?: unknown[] };
    const at = (property: string | undefined) => (property === undefined ? undefined : property && `${prefix}${e.instancePath}/${property}`);
    const path = at(params.missingProperty) ?? at(params.additionalProperty) ?? at(params.unevaluatedProperty) ?? prefix + e.instancePath;
    const message = e.keyword === 'enum' && params.allowedValues ? `${e.message}: ${params.allowedValues.join(', ')}` : e.message!;
    return { path, message, errorCode: `${e.keyword}.openapi.validation` };
  });
}

const TYPE_NAMES: Record<string, string> = {
  integer: 'an integer',
  number: 'a float',
  boolean: 'a boolean',
  array: 'a list',
  object: 'a dict',
  string: 'a string',
  null: 'null',
};

/** `/body/drafts/0/content` → `drafts[0]["content"]`. */
export function formatParamPath(segments: string[]): string {
  const [head, ...rest] = segments;
  return (head ?? '') + rest.map((s) => (/^\d+$/.test(s) ? `[${s}]` : `["${s}"]`)).join('');
}

export class UnmappedValidationError extends Error {}

export function toZulipError(issue: ValidatorIssue, rules: ParamRules | undefined): JsonableError {
  const segments = issue.path.split('/').filter(Boolean).slice(1);
  const name = formatParamPath(segments);
  const kind = (issue.errorCode ?? '').split('.')[0] || kindFromMessage(issue.message);
  const limit = /(\d+)/.exec(issue.message)?.[1];
  switch (kind) {
    case 'required':
      return segments.length === 1 ? new MissingArgumentError(segments[0]!) : new JsonableError(`${name} field is missing`);
    case 'type': {
      const expected = /must be ([a-z]+)/.exec(issue.message)?.[1] ?? '';
      return new JsonableError(`${name} is not ${TYPE_NAMES[expected] ?? `a ${expected}`}`);
    }
    case 'oneOf':
    case 'anyOf':
      return new JsonableError(`Invalid ${name}`);
    case 'enum':
    case 'const':
      return segments.length === 1 && rules?.listCheck.has(segments[0]!)
        ? new JsonableError(`Invalid ${name}: Value error, Not in the list of possible values`)
        : new JsonableError(`Invalid ${name}`);
    case 'maxLength':
      return new JsonableError(`${name} is too long (limit: ${limit} characters)`);
    case 'minLength':
      return new JsonableError(`${name} cannot be blank`);
    case 'minimum':
    case 'exclusiveMinimum':
    case 'minItems':
      return new JsonableError(`${name} is too small`);
    case 'maximum':
    case 'exclusiveMaximum':
    case 'maxItems':
      return new JsonableError(`${name} is too large`);
    case 'format': {
      const format = /format "([^"]+)"/.exec(issue.message)?.[1] ?? '';
      if (isIntegerRangeFormat(format)) return new JsonableError(`${name} is out of range`);
      return new JsonableError(`${name} has invalid format`);
    }
    case 'pattern':
      return new JsonableError(`${name} has invalid format`);
    case 'additionalProperties': {
      const key = segments.at(-1) ?? '';
      return new JsonableError(`Argument "${key}" at ${name} is unexpected`);
    }
    case 'uniqueItems':
      return new JsonableError(`${name} has duplicate items`);
    default:
      throw new UnmappedValidationError(`unmapped validation failure ${issue.errorCode}: ${issue.path} ${issue.message}`);
  }
}

function kindFromMessage(message: string): string {
  if (message.startsWith('must have required property')) return 'required';
  if (message.startsWith('must be equal to one of the allowed values')) return 'enum';
  if (message.startsWith('must NOT have additional properties')) return 'additionalProperties';
  if (/^must be (integer|number|boolean|array|object|string|null)/.test(message)) return 'type';
  return 'unknown';
}
