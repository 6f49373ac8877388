// Zulip's wire format, driven by the wire plan generated from the spec:
// - parameters come from the body (form-urlencoded or multipart, possibly empty) or the query string
//   on any method; the body wins when a name appears in both, and a repeated name takes its last value
//   (as Django's QueryDict does);
// - parameters the spec marks JSON-encoded are parsed as JSON (strictly: `True` is invalid JSON, and
//   types are checked afterwards by the validator); plain strings stay raw;
// - `subject` is Zulip's alias of `topic`; sending both is an error;
// - unknown names are dropped and remembered for `ignored_parameters_unsupported`.
import type { WireOperation } from '@parley/wire';
import { JsonableError } from '../errors.ts';

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

/** JSON.parse that keeps integral float literals distinguishable from integers. */
export function parseZulipJson(text: string): unknown {
  let marked = '';
  let changed = false;
  const floats: string[] = [];
  for (let i = 0; i < text.length; ) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      marked += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    const m = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && (c === '-' || (c >= '0' && c <= '9'))) {
      const token = m[0];
      if (/[.eE]/.test(token) && Number.isInteger(Number(token))) {
        floats.push(token);
        marked += `"\\u0000float:${floats.length - 1}"`;
        changed = true;
      } else marked += token;
      i += token.length;
      continue;
    }
    marked += c;
    i++;
  }
  if (!changed) return JSON.parse(text);
  return JSON.parse(marked, (_key, value) => {
    if (typeof value === 'string' && value.startsWith('\u0000float:')) return new FloatLiteral(floats[Number(value.slice(7))]!);
    return value;
  });
}

export function decodeParams(
  operation: WireOperation,
  body: Record<string, unknown> | undefined,
  query: URLSearchParams,
): DecodedParams {
  const raw = new Map<string, unknown>();
  for (const [name, value] of query) raw.set(name, value);
  for (const [name, value] of Object.entries(body ?? {})) raw.set(name, lastValue(value));

  for (const [canonical, alias] of Object.entries(ALIASES)) {
    if (!operation.params[canonical] || !raw.has(alias)) continue;
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
    const spec = operation.params[name];
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
    } catch {
      throw new JsonableError(`${name} is not valid JSON`);
    }
  }
  ignored.sort();
  return { params, ignored };
}
