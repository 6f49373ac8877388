// Reading a third party's JSON without trusting its shape: every access names the path it took, so a
// payload that lacks a field or carries the wrong type becomes a WebhookPayloadError (a clean 400)
// naming that path, never a TypeError (a 500). Used by the Jira, Grafana, Alertmanager and Sentry
// modules; Python's truthiness (`if payload.get("x")`) is `truthy`.
import { WebhookPayloadError } from './types.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export class Wild {
  constructor(
    readonly value: unknown,
    readonly path: string,
  ) {}

  /**
   * The request body as a Wild. Zulip reads these integrations' bodies as JSON whatever their
   * Content-Type (Grafana's own tests post JSON labelled as a form), so a body the endpoint did not
   * parse as JSON is parsed here; one that is not JSON is a payload error.
   */
  static body(request: { body: unknown; rawBody: Buffer; headers: Readonly<Record<string, string | undefined>> }): Wild {
    const type = request.headers['content-type'] ?? '';
    if (/json/i.test(type) && request.body !== undefined) return new Wild(request.body, 'payload');
    const parsed = parseJson(request.rawBody);
    if (parsed === undefined) throw new WebhookPayloadError('Malformed JSON');
    return new Wild(parsed, 'payload');
  }

  /** Whether this is an object with `key`. */
  has(key: string): boolean {
    return isObject(this.value) && Object.hasOwn(this.value, key);
  }

  /** A required field: missing (or this not an object) is a payload error. */
  at(key: string): Wild {
    const path = `${this.path}["${key}"]`;
    if (!isObject(this.value)) throw new WebhookPayloadError(`${this.path} is not a dict`);
    if (!Object.hasOwn(this.value, key)) throw new WebhookPayloadError(`${path} is missing`);
    return new Wild(this.value[key], path);
  }

  /** An optional field: its value is undefined when absent (or when this is not an object). */
  get(key: string): Wild {
    const path = `${this.path}["${key}"]`;
    return new Wild(isObject(this.value) && Object.hasOwn(this.value, key) ? this.value[key] : undefined, path);
  }

  /** Follows `keys`; undefined when any step is missing or not an object (Zulip's Jira `get_in`). */
  dig(...keys: string[]): Wild {
    let value = this.value;
    let path = this.path;
    for (const key of keys) {
      path = `${path}["${key}"]`;
      if (!isObject(value) || !Object.hasOwn(value, key)) return new Wild(undefined, path);
      value = value[key];
    }
    return new Wild(value, path);
  }

  get isMissing(): boolean {
    return this.value === undefined;
  }

  get isNull(): boolean {
    return this.value === null || this.value === undefined;
  }

  /** Python's truthiness: null, false, 0, "", [] and {} are false. */
  get truthy(): boolean {
    const v = this.value;
    if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
    if (Array.isArray(v)) return v.length > 0;
    if (isObject(v)) return Object.keys(v).length > 0;
    return true;
  }

  string(): string {
    if (typeof this.value !== 'string') throw new WebhookPayloadError(`${this.path} is not a string`);
    return this.value;
  }

  /** A string, or `fallback` when the field is absent (a present non-string is still an error). */
  stringOr(fallback: string): string {
    return this.value === undefined ? fallback : this.string();
  }

  /** A string or null (absent counts as null). */
  nullableString(): string | null {
    return this.value === null || this.value === undefined ? null : this.string();
  }

  /** One of `allowed`. */
  oneOf<T extends string>(allowed: readonly T[]): T {
    const s = this.string();
    if (!(allowed as readonly string[]).includes(s)) throw new WebhookPayloadError(`Invalid ${this.path}`);
    return s as T;
  }

  number(): number {
    if (typeof this.value !== 'number') throw new WebhookPayloadError(`${this.path} is not a number`);
    return this.value;
  }

  list(): Wild[] {
    if (!Array.isArray(this.value)) throw new WebhookPayloadError(`${this.path} is not a list`);
    return this.value.map((item, i) => new Wild(item, `${this.path}[${i}]`));
  }

  /** An object's entries in their order; absent or null counts as empty. */
  entries(): Array<[string, Wild]> {
    if (this.value === null || this.value === undefined) return [];
    if (!isObject(this.value)) throw new WebhookPayloadError(`${this.path} is not a dict`);
    return Object.entries(this.value).map(([k, v]) => [k, new Wild(v, `${this.path}["${k}"]`)]);
  }

  /** The value as Python's str() prints it (numbers, booleans, None, strings). */
  pyStr(): string {
    return pythonStr(this.value as Json | undefined);
  }
}

function pythonStr(value: Json | undefined): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return pythonNumber(value);
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

/** Python's repr of a number read from JSON: integers plain, floats in their shortest form. */
function pythonNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e16) return String(n);
  const s = String(n);
  // JavaScript writes 1e+21 where Python writes 1e+21 too, but 1e-7 where Python writes 1e-07.
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Zulip's global time syntax for an ISO 8601 timestamp: `<time:2021-10-12T09:51:03+02:00>` (whole
 * seconds, the sender's offset kept, `Z` written +00:00).
 */
export function globalTime(iso: string, path = 'timestamp'): string {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2})(?::(\d{2})(?:[.,]\d+)?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/.exec(iso.trim());
  if (!m) throw new WebhookPayloadError(`${path} is not a valid date`);
  const [, date, hm, seconds = '00', zone] = m;
  let offset = '';
  if (zone === 'Z' || zone === 'z') offset = '+00:00';
  else if (zone) {
    const digits = zone.slice(1).replace(':', '');
    offset = `${zone[0]}${digits.slice(0, 2)}:${digits.slice(2, 4) || '00'}`;
  }
  return `<time:${date}T${hm}:${seconds}${offset}>`;
}
