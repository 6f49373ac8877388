// Zulip's wire format, driven by the wire plan generated from the spec:
// - parameters come from the body (form-urlencoded or multipart, possibly empty) or the query string
//   on any method; the body wins when a name appears in both;
// - parameters the spec marks JSON-encoded are parsed as JSON (strictly: `True` is invalid JSON, and
//   types are checked afterwards by the validator); plain strings stay raw;
// - unknown names are dropped and remembered for `ignored_parameters_unsupported`.
import type { WireOperation } from '@parley/wire';
import { JsonableError } from '../errors.ts';

export interface DecodedParams {
  params: Record<string, unknown>;
  ignored: string[];
}

function firstValue(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

export function decodeParams(
  operation: WireOperation,
  body: Record<string, unknown> | undefined,
  query: URLSearchParams,
): DecodedParams {
  const raw = new Map<string, unknown>();
  for (const [name, value] of query) if (!raw.has(name)) raw.set(name, value);
  for (const [name, value] of Object.entries(body ?? {})) raw.set(name, firstValue(value));

  const params: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [name, value] of raw) {
    const spec = operation.params[name];
    if (!spec) {
      if (!operation.pathParams.includes(name)) ignored.push(name);
      continue;
    }
    if (typeof value !== 'string') {
      params[name] = value;
      continue;
    }
    if (!spec.json) {
      params[name] = value;
      continue;
    }
    try {
      params[name] = JSON.parse(value);
    } catch {
      throw new JsonableError(`${name} is not valid JSON`);
    }
  }
  ignored.sort();
  return { params, ignored };
}
