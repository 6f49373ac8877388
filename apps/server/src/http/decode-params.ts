// Zulip's wire format, driven by the wire plan generated from the spec:
// - parameters come from the body (form-urlencoded or multipart, possibly empty) or the query string
//   on any method; the body wins when a name appears in both, and a repeated name takes its last value
//   (as Django's QueryDict does);
// - parameters the spec marks JSON-encoded are parsed as JSON (strictly: `True` is invalid JSON, and
//   types are checked afterwards by the validator); plain strings stay raw;
// - `subject` is Zulip's alias of `topic`; sending both is an error;
// - unknown names are dropped and remembered for `ignored_parameters_unsupported`.
import { randomUUID } from 'node:crypto';
import type { WireOperation } from '@parley/wire';
import { JsonableError } from '../errors.ts';
import { formatParamPath } from './validation-errors.ts';

export interface DecodedParams {
  params: Record<string, unknown>;
  ignored: string[];
}

/** Zulip-wide parameter aliases: canonical name → alias. */
const ALIASES: Record<string, string> = { topic: 'subject' };

/**
 * An integral number written as a float (`200.0`, `2e2`). JSON.parse would turn it into an integer,
 * but Zulip rejects it where an integer is expected; the validator rejects this wrapper instead.
 */
export class FloatLiteral {
  constructor(readonly text: string) {}
  toJSON() {
    return Number(this.text);
  }
}

const lastValue = (value: unknown) => (Array.isArray(value) ? value[value.length - 1] : value);

/** Marks float literals while parsing; random per process, so no client string can imitate it. */
const FLOAT_MARK = `\u0000float:${randomUUID()}:`;
const NUMBER_TOKEN = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** No parameter of the API nests this deep; deeper JSON is refused before it is parsed or walked. */
export const MAX_JSON_DEPTH = 32;

export class JsonTooDeepError extends Error {}

/** JSON.parse that keeps integral float literals distinguishable from integers. */
export function parseZulipJson(text: string): unknown {
  let marked = '';
  let depth = 0;
  let changed = false;
  let copiedUpTo = 0;
  const floats: string[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 34) j += text.charCodeAt(j) === 92 /* \ */ ? 2 : 1;
      i = j + 1;
      continue;
    }
    if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++depth > MAX_JSON_DEPTH) throw new JsonTooDeepError();
    } else if (c === 93 /* ] */ || c === 125 /* } */) {
      depth--;
    }
    if (c === 45 /* - */ || (c >= 48 && c <= 57)) {
      NUMBER_TOKEN.lastIndex = i;
      const token = NUMBER_TOKEN.exec(text)?.[0];
      if (!token) {
        i++;
        continue;
      }
      if (/[.eE]/.test(token) && Number.isInteger(Number(token))) {
        floats.push(token);
        marked += text.slice(copiedUpTo, i) + JSON.stringify(`${FLOAT_MARK}${floats.length - 1}`);
        copiedUpTo = i + token.length;
        changed = true;
      }
      i += token.length;
      continue;
    }
    i++;
  }
  if (!changed) return JSON.parse(text);
  marked += text.slice(copiedUpTo);
  return JSON.parse(marked, (_key, value) => {
    if (typeof value === 'string' && value.startsWith(FLOAT_MARK)) return new FloatLiteral(floats[Number(value.slice(FLOAT_MARK.length))]!);
    return value;
  });
}

export function decodeParams(
  operation: WireOperation,
  body: Record<string, unknown> | undefined,
  query: URLSearchParams,
): DecodedParams {
  const raw = new Map<string, unknown>();
  if (query.size > 0) for (const [name, value] of query) raw.set(name, value);
  if (body) for (const name of Object.keys(body)) raw.set(name, lastValue(body[name]));

  for (const [canonical, alias] of Object.entries(ALIASES)) {
    if (!Object.hasOwn(operation.params, canonical) || !raw.has(alias)) continue;
    if (raw.has(canonical)) {
      throw new JsonableError(`Can't decide between '${canonical}' and '${alias}' arguments`, {
        code: 'REQUEST_CONFUSING_VAR',
        data: { var_name1: canonical, var_name2: alias },
      });
    }
    raw.set(canonical, raw.get(alias));
    raw.delete(alias);
  }

  const params: Record<string, unknown> = {};
  const ignored: string[] = [];
  for (const [name, value] of raw) {
    // Own properties only: a parameter named `constructor` or `__proto__` is unknown, not inherited.
    const spec = Object.hasOwn(operation.params, name) ? operation.params[name] : undefined;
    if (!spec) {
      ignored.push(name);
      continue;
    }
    if (typeof value !== 'string' || !spec.json) {
      params[name] = value;
      continue;
    }
    try {
      params[name] = parseZulipJson(value);
    } catch (error) {
      if (error instanceof JsonTooDeepError) throw new JsonableError(`${name} is nested too deeply (limit: ${MAX_JSON_DEPTH} levels)`);
      throw new JsonableError(`${name} is not valid JSON`);
    }
  }
  for (const [name, value] of Object.entries(params)) rejectNulCharacters(value, [name]);
  ignored.sort();
  return { params, ignored };
}

/**
 * PostgreSQL text cannot hold U+0000, so a NUL anywhere in a value (a plain string, a list element, an
 * object's key or field) is refused here, naming the parameter, before anything reaches the database.
 * Iterative: a value's depth is bounded by parseZulipJson, but nothing here relies on the stack.
 */
function rejectNulCharacters(value: unknown, path: string[]): void {
  const stack: Array<[unknown, string[]]> = [[value, path]];
  while (stack.length > 0) {
    const [current, at] = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) throw new JsonableError(`${formatParamPath(at)} contains a NUL character`);
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        const item: unknown = current[i];
        // Numbers, booleans and null hold no NUL: nothing to visit (lists of ids are the common case).
        if (item !== null && (typeof item === 'string' || typeof item === 'object')) stack.push([item, [...at, String(i)]]);
      }
    } else if (current !== null && typeof current === 'object' && !(current instanceof FloatLiteral)) {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, item] = entries[i]!;
        if (key.includes('\u0000')) throw new JsonableError(`${formatParamPath(at)} contains a NUL character`);
        stack.push([item, [...at, key]]);
      }
    }
  }
}
