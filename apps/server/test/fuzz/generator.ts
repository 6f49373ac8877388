// Spec-driven request generator for the fuzz test (fuzz.test.ts) and the large run (bench/fuzz.bench.ts).
//
// Every operation of the bundled spec (spec/dist/openapi.json) and the generated wire plan (which
// parameters are JSON-encoded, where they travel, how the operation authenticates) is turned into
// requests: valid ones built from the schemas and their examples, and hostile ones (missing, wrong-typed,
// oversized, huge integers, unicode and NUL bytes, malformed JSON, bad encodings, duplicated and unknown
// parameters, bad credentials, odd paths and methods, concurrent duplicates).
//
// Everything is driven by a seeded PRNG: case `i` of seed `s` is generated from mix(s, i) alone, so a
// failing case can be regenerated with FUZZ_SEED=s FUZZ_ONLY=i (see runner.ts).
import type { WireOperation } from '@parley/wire';

// ---------------------------------------------------------------------------------------------------
// PRNG (mulberry32) and per-case seeds

export class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)]!;
  }
  word(length = 6): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[this.int(alphabet.length)];
    return out;
  }
}

/** The seed of case `index` of a run seeded with `seed` (a 32-bit integer hash of both). */
export function caseSeed(seed: number, index: number): number {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

// ---------------------------------------------------------------------------------------------------
// The operations, from the spec and the wire plan

type Schema = Record<string, any>;

export interface ParamModel {
  name: string;
  /** Where the spec declares it (path parameters are filled into the URL). */
  in: 'path' | 'query' | 'body';
  /** JSON text on the wire (wire plan); plain strings travel raw. */
  json: boolean;
  required: boolean;
  schema: Schema;
}

export interface OpModel {
  id: string;
  method: string;
  /** Template relative to /api/v1. */
  path: string;
  auth: 'none' | 'optional' | 'required';
  /** The caller may be named by an `api_key` parameter instead of a header (incoming webhooks). */
  keyParameter: boolean;
  pathParams: ParamModel[];
  params: ParamModel[];
  /** Complete valid parameter sets from the spec's request-body examples. */
  examples: Record<string, unknown>[];
  mutating: boolean;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export class SpecModel {
  readonly ops: OpModel[];
  constructor(
    readonly spec: Schema,
    plan: Readonly<Record<string, WireOperation>>,
  ) {
    const ops: OpModel[] = [];
    for (const [path, item] of Object.entries(spec.paths as Record<string, Schema>)) {
      for (const method of METHODS) {
        const op = item[method] as Schema | undefined;
        if (!op?.operationId) continue;
        const wire = plan[op.operationId];
        if (!wire) throw new Error(`operation ${op.operationId} is missing from the wire plan`);
        const pathParams: ParamModel[] = [];
        const params: ParamModel[] = [];
        for (const raw of [...((item.parameters as Schema[]) ?? []), ...((op.parameters as Schema[]) ?? [])]) {
          const p = this.deref(raw);
          const schema = this.deref(p.schema ?? p.content?.['application/json']?.schema ?? {});
          const json = Object.hasOwn(wire.params, p.name) ? wire.params[p.name]!.json : p.in !== 'path' && schema.type !== 'string';
          const model: ParamModel = { name: p.name, in: p.in === 'path' ? 'path' : 'query', json, required: !!p.required, schema };
          (p.in === 'path' ? pathParams : params).push(model);
        }
        const examples: Record<string, unknown>[] = [];
        const form = op.requestBody?.content?.['application/x-www-form-urlencoded'] as Schema | undefined;
        if (form) {
          const schema = this.deref(form.schema ?? {});
          const required = new Set<string>(schema.required ?? []);
          for (const [name, propSchema] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
            const json = Object.hasOwn(wire.params, name) ? wire.params[name]!.json : form.encoding?.[name]?.contentType === 'application/json';
            params.push({ name, in: 'body', json, required: required.has(name), schema: this.deref(propSchema) });
          }
          for (const example of Object.values((form.examples ?? {}) as Record<string, Schema>)) {
            if (example.value && typeof example.value === 'object') examples.push(example.value as Record<string, unknown>);
          }
          if (form.example && typeof form.example === 'object') examples.push(form.example);
        }
        ops.push({ id: op.operationId, method: method.toUpperCase(), path: path.replace(/^\/api\/v1/, ''), auth: wire.auth, keyParameter: 'rawBody' in wire && wire.rawBody === true, pathParams, params, examples, mutating: method !== 'get' });
      }
    }
    this.ops = ops.sort((a, b) => a.id.localeCompare(b.id));
  }

  /** Follows `$ref`s (keeping sibling keys such as `description`). */
  deref(schema: Schema): Schema {
    let current = schema;
    for (let i = 0; i < 20 && current && typeof current.$ref === 'string'; i++) {
      const target = (current.$ref as string)
        .replace(/^#\//, '')
        .split('/')
        .reduce((node: any, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], this.spec);
      if (!target) throw new Error(`unresolved ${current.$ref}`);
      const { $ref: _ref, ...siblings } = current;
      current = { ...target, ...siblings };
    }
    return current;
  }

  op(id: string): OpModel {
    const op = this.ops.find((o) => o.id === id);
    if (!op) throw new Error(`no operation ${id}`);
    return op;
  }
}

// ---------------------------------------------------------------------------------------------------
// What the generator knows about the organization under test

export interface Credential {
  email: string;
  apiKey: string;
}

export interface FuzzPools {
  /** Active people that requests authenticate as: name → credentials and role. */
  people: Record<string, Credential & { id: number; role: number }>;
  userIds: number[];
  emails: string[];
  streamIds: number[];
  streamNames: string[];
  groupIds: number[];
  profileFieldIds: number[];
  /** Targets that destructive operations may use in their paths (throwaway users, channels, groups). */
  throwaway: { userIds: number[]; streamIds: number[]; groupIds: number[] };
  password: string;
}

/**
 * Operations that would make the rest of a run meaningless if aimed at the seeded people, channels or
 * groups: their path ids come from the throwaway pools. deactivate-own-user deactivates whoever sends
 * it, so it runs as fresh throwaway users (see Phase.freshAuth) in its own phase.
 */
export const DESTRUCTIVE_PATH_TARGETS: Record<string, 'users' | 'streams' | 'groups'> = {
  'deactivate-user': 'users',
  'reactivate-user': 'users',
  'update-user': 'users',
  'archive-stream': 'streams',
  'deactivate-user-group': 'groups',
};
export const SELF_DESTRUCTIVE = new Set(['deactivate-own-user']);

// ---------------------------------------------------------------------------------------------------
// JSON text with exact literals (2^63 cannot round-trip through a JS number)

/** JSON text inserted verbatim when a value is serialised. */
export class RawJson {
  constructor(readonly text: string) {}
}

export function toJsonText(value: unknown, spaced = false): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => toJsonText(v, spaced)).join(spaced ? ', ' : ',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}${spaced ? ': ' : ':'}${toJsonText(v, spaced)}`)
      .join(spaced ? ', ' : ',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

// ---------------------------------------------------------------------------------------------------
// Valid values from schemas

function hintOf(name: string, schema: Schema): string {
  return `${name} ${schema.description ?? ''}`.toLowerCase();
}

function idPool(pools: FuzzPools, hint: string): number[] | null {
  if (/profile field/.test(hint)) return pools.profileFieldIds;
  if (/group/.test(hint)) return pools.groupIds;
  if (/channel|stream/.test(hint)) return pools.streamIds;
  if (/user|member|principal|owner|recipient/.test(hint)) return pools.userIds;
  return null;
}

export class ValueGen {
  constructor(
    readonly model: SpecModel,
    readonly pools: FuzzPools,
    readonly rng: Rng,
  ) {}

  value(schemaIn: Schema, name: string, depth = 0): unknown {
    const schema = this.model.deref(schemaIn);
    const rng = this.rng;
    const hint = hintOf(name, schema);
    if ('const' in schema) return schema.const;
    if (Array.isArray(schema.enum) && schema.enum.length) return rng.pick(schema.enum);
    const branches = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
    if (branches?.length) {
      const branch = this.model.deref(rng.pick(branches));
      return this.value({ ...branch, description: branch.description ?? schema.description }, name, depth);
    }
    let type = schema.type as string | string[] | undefined;
    if (Array.isArray(type)) type = rng.chance(0.85) ? (type.find((t) => t !== 'null') ?? type[0]) : rng.pick(type);
    if (!type) type = schema.properties ? 'object' : schema.items ? 'array' : 'string';
    if ('example' in schema && rng.chance(0.25) && type !== 'array' && type !== 'object') return schema.example;
    switch (type) {
      case 'null':
        return null;
      case 'boolean':
        return rng.chance(0.5);
      case 'integer': {
        const pool = idPool(this.pools, hint);
        if (pool?.length && rng.chance(0.9)) return rng.pick(pool);
        if (typeof schema.default === 'number' && rng.chance(0.3)) return schema.default;
        if (typeof schema.example === 'number') return rng.chance(0.5) ? schema.example : rng.range(0, 100);
        return rng.range(0, 100);
      }
      case 'number':
        return rng.chance(0.5) ? rng.range(0, 1_000_000) : Math.round(rng.next() * 1e6) / 100;
      case 'array': {
        const min = schema.minItems ?? 0;
        const n = Math.max(min, rng.int(4));
        const out: unknown[] = [];
        for (let i = 0; i < n; i++) out.push(this.value(schema.items ?? {}, name, depth + 1));
        return out;
      }
      case 'object': {
        const out: Record<string, unknown> = {};
        const required = new Set<string>(schema.required ?? []);
        for (const [key, prop] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
          if (required.has(key) || (depth < 3 && rng.chance(0.4))) out[key] = this.value(prop, key, depth + 1);
        }
        return out;
      }
      default:
        return this.string(schema, name, hint);
    }
  }

  private string(schema: Schema, name: string, hint: string): string {
    const rng = this.rng;
    const pools = this.pools;
    let s: string;
    if (/email|username|principal/.test(hint) || /e-mail/.test(hint)) {
      s = rng.chance(0.6) && pools.emails.length ? rng.pick(pools.emails) : `fz-${rng.word(8)}@parley.test`;
    } else if (/password/.test(name)) s = rng.chance(0.8) ? pools.password : rng.word(12);
    else if (/color/.test(name)) s = `#${rng.int(0xffffff).toString(16).padStart(6, '0')}`;
    else if (/timezone/.test(name)) s = rng.pick(['Europe/Berlin', 'America/New_York', 'UTC', '']);
    else if (name === 'stream' || (/channel|stream/.test(hint) && /name/.test(hint))) {
      s = rng.chance(0.7) && pools.streamNames.length ? rng.pick(pools.streamNames) : `fz ${rng.word(6)}`;
    } else if (/name/.test(name)) s = `Fz ${rng.word(rng.range(3, 10))}`;
    else if (typeof schema.example === 'string' && rng.chance(0.5)) s = schema.example;
    else s = `fz ${rng.word(rng.range(1, 12))}`;
    if (typeof schema.maxLength === 'number') s = s.slice(0, schema.maxLength);
    if (typeof schema.minLength === 'number' && s.length < schema.minLength) s = s.padEnd(schema.minLength, 'x');
    return s;
  }

  /** A valid parameter set: every required parameter, some optional ones (or a spec example). */
  params(op: OpModel): Map<string, unknown> {
    const out = new Map<string, unknown>();
    if (op.examples.length && this.rng.chance(0.2)) {
      for (const [k, v] of Object.entries(this.rng.pick(op.examples))) out.set(k, v);
      return out;
    }
    for (const p of op.params) {
      if (p.required || this.rng.chance(0.35)) out.set(p.name, this.value(p.schema, p.name));
    }
    return out;
  }

  pathValue(op: OpModel, p: ParamModel, pools: FuzzPools): string {
    const target = DESTRUCTIVE_PATH_TARGETS[op.id];
    const rng = this.rng;
    if (target) {
      const pool = target === 'users' ? pools.throwaway.userIds : target === 'streams' ? pools.throwaway.streamIds : pools.throwaway.groupIds;
      return String(pool.length && rng.chance(0.9) ? rng.pick(pool) : rng.range(900_000, 999_999));
    }
    return String(this.value(p.schema, p.name));
  }
}

// ---------------------------------------------------------------------------------------------------
// Requests

/** One parameter on the wire. `rawName`/`rawValue` are already percent-encoded (invalid UTF-8 etc.). */
export interface WireEntry {
  name: string;
  value: string;
  rawName?: string;
  rawValue?: string;
  where: 'query' | 'body';
}

export interface AuthSpec {
  /** person name, `fresh:<role>`, `none`, `bad-key`, `malformed:<how>` … */
  label: string;
  /** The Authorization header, when known at generation time. */
  header?: string;
  /** Authenticate as a new throwaway user of this role (provisioned by the runner). */
  freshRole?: number;
  /** Whether the credentials identify an active user. */
  valid: boolean;
  /** Scheme word for fresh users' headers (default `Basic`). */
  scheme?: string;
}

export interface FuzzRequest {
  seed: number;
  index: number;
  phase: string;
  op: string;
  kind: Kind;
  variant: string;
  method: string;
  /** Starts with /api/v1, percent-encoded, query string included. */
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Fired this many times concurrently (8 for concurrent duplicates). */
  repeat: number;
  auth: AuthSpec;
  /** When set, the statuses an unauthenticated request may get (401 before parameter errors). */
  authExpect?: number[];
  /** Unknown top-level parameter names sent (must be ignored and reported; a `?` suffix: not checked). */
  unknownNames: string[];
  /**
   * For requests without credentials to operations open to spectators: the same operation without
   * parameters. If that answers 401 while this request got 400, a parameter error won over the 401.
   */
  probe?: { method: string; path: string };
}

export const KINDS = [
  'valid',
  'missing-required',
  'wrong-type',
  'oversized',
  'huge-int',
  'unicode',
  'nul',
  'malformed-json',
  'encoding',
  'duplicate',
  'unknown-param',
  'auth',
  'path',
  'method',
  'concurrent',
] as const;
export type Kind = (typeof KINDS)[number];

/** How many cases each kind gets per operation in the deterministic sweep. */
const SWEEP: Record<Kind, number> = {
  valid: 2,
  'missing-required': 1,
  'wrong-type': 2,
  oversized: 2,
  'huge-int': 3,
  unicode: 1,
  nul: 2,
  'malformed-json': 1,
  encoding: 2,
  duplicate: 1,
  'unknown-param': 2,
  auth: 3,
  path: 1,
  method: 1,
  concurrent: 1,
};

export const HUGE_INTS = {
  // ≥ 2^63: beyond any 64-bit integer
  beyond64: ['9223372036854775808', '99999999999999999999', '18446744073709551616', '-9223372036854775809', '123456789012345678901234567890', '1e20'],
  // the edges of 32-bit integers (PostgreSQL's integer)
  edge32: ['2147483648', '2147483647', '-2147483649', '4294967296', '-1', '0', '9223372036854775807'],
  misc: ['1e20', '-1', '1E400', '1.5', '-0', '1e-7', '2e2', '0.0', '-2147483648', '1e308'],
};

const UNKNOWN_NAMES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', '__defineGetter__', '__lookupGetter__', 'prototype', 'length', 'then', 'fz_unknown'];

const MALFORMED_JSON = [
  '[1,',
  '{',
  '[1]]',
  'True',
  'False',
  'None',
  'NaN',
  'Infinity',
  "'a'",
  '[1,,2]',
  '{"a":}',
  '"unterminated',
  '[',
  '',
  ' ',
  '[1 2]',
  '01',
  '{"direct_members":[1],}',
  '1e999999',
  '-',
  '[1] trailing',
  '\ufeff[1]',
  '{"new": }',
  '[0x10]',
  '{a:1}',
  '["\\x41"]',
  '["\\u12"]',
];

const WRONG_TYPE_JSON = ['"abc"', 'abc', '1.5', '1.0', 'true', 'null', '[]', '{}', '[[1]]', '{"a":1}', '"1"', '-0', '0', '"true"', '[null]', '[true]', '["1"]', '[1.5]', '{"new":"x"}', '{"direct_members":"x","direct_subgroups":[]}'];
const WRONG_TYPE_STRING = ['', ' ', '{"a":1}', '[1,2]', 'true', 'null', '0', '-1', '\t\n'];
const WRONG_LEAVES: unknown[] = [null, true, '1', 1.5, [], {}, -1, 'abc', [[1]]];

const UNICODE_STRINGS = ['🦄 fz', 'e\u0301', '\u202efz', 'fz\u200bz', '\ufefffz', 'ｆｕｌｌ', 'ǅ', 'İı', 'ß', 'fz\u2028z', '𝕏'.repeat(40), '\r\n', '\t', ' fz ', '١٢٣', '漢字テスト', 'ÿ', '\u0085'];
/** Percent-encoded byte strings that are not valid UTF-8 (or encode surrogates / overlong forms). */
const BAD_UTF8_RAW = ['%FF%FE', '%ED%A0%80', '%C0%AF', '%E2%82', '%F8%88%80%80%80', 'a%80b', '%ED%B0%80x'];

export interface Phase {
  name: string;
  /** Operations of the phase (ids); all when absent. */
  ops?: string[];
  /** Operations sent as a fresh throwaway user (of a random role) instead of a seeded person. */
  freshAuth?: Set<string>;
  /** Seeded people a request may authenticate as (default: all of pools.people). */
  people?: string[];
}

export interface CaseSpec {
  index: number;
  op: string;
  kind: Kind;
  /** Sweep round within the kind (selects variants deterministically), or -1 for random. */
  round: number;
}

/**
 * The cases of a phase: first a sweep (every operation × every kind, a few variants each), then random
 * cases up to `total` cases in all (the sweep is always complete).
 */
export function planCases(model: SpecModel, phase: Phase, seed: number, total: number, startIndex = 0): CaseSpec[] {
  const ops = model.ops.filter((o) => !phase.ops || phase.ops.includes(o.id));
  const out: CaseSpec[] = [];
  let index = startIndex;
  for (const kind of KINDS) {
    for (let round = 0; round < SWEEP[kind]; round++) {
      for (const op of ops) {
        if (kind === 'concurrent' && !op.mutating) continue;
        out.push({ index: index++, op: op.id, kind, round });
      }
    }
  }
  const rng = new Rng(caseSeed(seed, -1));
  while (out.length < total) {
    const op = rng.pick(ops);
    let kind = rng.pick(KINDS);
    if (kind === 'concurrent' && !op.mutating) kind = 'valid';
    out.push({ index: index++, op: op.id, kind, round: -1 });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Building one request

type Location = 'form' | 'multipart' | 'query' | 'mixed';

interface Draft {
  method: string;
  pathSegments: string[]; // percent-encoded, joined by '/'
  pathMutated: boolean;
  entries: WireEntry[];
  location: Location;
  headers: Record<string, string>;
  /** Overrides the body and its Content-Type completely. */
  rawBody?: Buffer;
  auth: AuthSpec;
  unknownNames: string[];
  variant: string[];
  /** The body/encoding itself is malformed (parameter errors may then come before auth). */
  malformedBody: boolean;
  repeat: number;
}

const enc = encodeURIComponent;

function basic(email: string, key: string): string {
  return `Basic ${Buffer.from(`${email}:${key}`, 'utf8').toString('base64')}`;
}

export function buildRequest(model: SpecModel, pools: FuzzPools, phase: Phase, spec: CaseSpec, seed: number, options: { scale?: number } = {}): FuzzRequest {
  const rng = new Rng(caseSeed(seed, spec.index));
  const op = model.op(spec.op);
  const gen = new ValueGen(model, pools, rng);
  const scale = options.scale ?? 1;
  const people = phase.people ?? Object.keys(pools.people);
  const r = spec.round;
  const choose = <T>(items: readonly T[], offset = 0): T => (r >= 0 ? items[(r + offset + model.ops.indexOf(op)) % items.length]! : rng.pick(items));

  // Who sends it.
  let auth: AuthSpec;
  if (phase.freshAuth?.has(op.id)) {
    const role = rng.pick([100, 200, 300, 400, 600]);
    auth = { label: `fresh:${role}`, freshRole: role, valid: true };
  } else {
    const who = r >= 0 ? people[(spec.index + r) % people.length]! : rng.pick(people);
    auth = { label: who, header: basic(pools.people[who]!.email, pools.people[who]!.apiKey), valid: true };
  }

  const params = gen.params(op);
  const draft: Draft = {
    method: op.method,
    pathSegments: op.path
      .split('/')
      .slice(1)
      .map((segment) => {
        const m = /^\{(\w+)\}$/.exec(segment);
        if (!m) return segment;
        const p = op.pathParams.find((x) => x.name === m[1]);
        return enc(p ? gen.pathValue(op, p, pools) : '1');
      }),
    pathMutated: false,
    entries: [],
    location: op.method === 'GET' ? 'query' : rng.chance(0.15) ? 'multipart' : rng.chance(0.15) ? 'query' : 'form',
    headers: {},
    auth,
    unknownNames: [],
    variant: [],
    malformedBody: false,
    repeat: 1,
  };
  const spaced = rng.chance(0.5);
  const toEntries = () => {
    for (const [name, value] of params) {
      const p = op.params.find((x) => x.name === name);
      const json = p ? p.json : typeof value !== 'string';
      draft.entries.push({ name, value: json || typeof value !== 'string' ? toJsonText(value, spaced) : value, where: 'body' });
    }
  };

  const applyKind = (kind: Kind) => {
    switch (kind) {
      case 'valid': {
        toEntries();
        draft.location = choose<Location>(op.method === 'GET' ? ['query', 'query', 'form'] : ['form', 'multipart', 'query', 'mixed']);
        draft.variant.push(`valid ${draft.location}${spaced ? ' spaced-json' : ''}`);
        break;
      }
      case 'missing-required': {
        const required = op.params.filter((p) => p.required);
        if (required.length && rng.chance(0.85)) {
          const victim = r >= 0 ? required[r % required.length]! : rng.pick(required);
          params.delete(victim.name);
          draft.variant.push(`without ${victim.name}`);
        } else {
          params.clear();
          draft.variant.push('no parameters at all');
        }
        toEntries();
        break;
      }
      case 'wrong-type': {
        const candidates = op.params;
        if (!candidates.length) {
          draft.variant.push('no parameters: wrong-typed unknown');
          toEntries();
          addUnknown(draft, rng, ['fz_unknown'], choose(WRONG_TYPE_JSON));
          break;
        }
        const p = r >= 0 ? candidates[(r + spec.index) % candidates.length]! : rng.pick(candidates);
        const current = params.has(p.name) ? params.get(p.name) : gen.value(p.schema, p.name);
        const leaves = collectPaths(current, (v) => v === null || typeof v !== 'object' || (Array.isArray(v) && v.length === 0));
        if (p.json && leaves.some((x) => x.length > 0) && rng.chance(0.5)) {
          const at = rng.pick(leaves.filter((x) => x.length > 0));
          const bad = rng.pick(WRONG_LEAVES);
          params.set(p.name, setAt(current, at, bad));
          draft.variant.push(`${p.name}${fmtPath(at)} = ${toJsonText(bad)}`);
          toEntries();
        } else {
          params.delete(p.name);
          toEntries();
          const bad = p.json ? choose(WRONG_TYPE_JSON, 3) : choose(WRONG_TYPE_STRING, 3);
          draft.entries.push({ name: p.name, value: bad, where: 'body' });
          draft.variant.push(`${p.name} = ${JSON.stringify(bad)}`);
        }
        break;
      }
      case 'oversized': {
        toEntries();
        // Sweep round 1: a list of 40,000 integers in an integer-list parameter, where there is one.
        const how = r === 1 ? 'long-list' : choose(['long-string', 'long-string', 'long-list', 'deep-nesting', 'many-params', 'huge-body', 'many-keys', 'long-url']);
        const strParam = op.params.filter((p) => !p.json);
        const jsonParam = op.params.filter((p) => p.json);
        if (draft.location === 'query' || draft.location === 'mixed') draft.location = 'form';
        const size = (n: number) => Math.max(1, Math.round(n * scale));
        if (how === 'long-string') {
          const n = rng.pick([size(10_000), size(100_000), size(1_000_000)]);
          const name = strParam.length ? rng.pick(strParam).name : 'fz_long';
          const s = rng.chance(0.5) ? 'x'.repeat(n) : '漢'.repeat(Math.ceil(n / 3));
          replaceEntry(draft, name, strParam.length ? s : s, 'body');
          if (!strParam.length) draft.unknownNames.push(name);
          draft.variant.push(`${name} string of ${s.length} chars`);
        } else if (how === 'long-list' && jsonParam.length) {
          const lists = jsonParam.filter((x) => isIntegerList(model, x.schema, []));
          const p = rng.pick(lists.length ? lists : jsonParam);
          // 40,000 whatever the scale: more than PostgreSQL's 32,767 bind parameters in one statement.
          const n = r >= 0 ? 40_000 : rng.pick([size(10_000), size(100_000), 40_000]);
          replaceEntry(draft, p.name, `[${Array.from({ length: n }, (_, i) => i + 1).join(',')}]`, 'body');
          draft.variant.push(`${p.name} list of ${n} integers`);
        } else if (how === 'deep-nesting' && jsonParam.length) {
          const p = rng.pick(jsonParam);
          const depth = rng.pick([size(1000), size(10_000), size(100_000)]);
          const text = rng.chance(0.5) ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
          replaceEntry(draft, p.name, text, 'body');
          draft.variant.push(`${p.name} nested ${depth} deep`);
        } else if (how === 'many-keys' && jsonParam.length) {
          const p = rng.pick(jsonParam);
          const n = size(20_000);
          replaceEntry(draft, p.name, `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`, 'body');
          draft.variant.push(`${p.name} object with ${n} keys`);
        } else if (how === 'long-url') {
          // Beyond Node's header limit: the HTTP parser refuses it before Express sees it.
          const n = rng.pick([20_000, 100_000]);
          draft.entries.push({ name: 'fz_long', value: 'u'.repeat(n), where: 'query' });
          draft.unknownNames.push('fz_long');
          draft.variant.push(`query string of ${n} chars`);
        } else if (how === 'many-params') {
          const n = rng.pick([size(2_000), size(20_000)]);
          for (let i = 0; i < n; i++) draft.entries.push({ name: `fz${i}`, value: '1', where: 'body' });
          draft.variant.push(`${n} unknown parameters`);
        } else {
          const n = 6 * 1024 * 1024; // over the 5 MB body limit whatever the scale
          const name = strParam.length ? rng.pick(strParam).name : 'fz_long';
          replaceEntry(draft, name, 'y'.repeat(n), 'body');
          draft.variant.push(`body of ${n} bytes (${name})`);
          draft.malformedBody = true;
        }
        if (draft.location === 'multipart' && rng.chance(0.5)) draft.location = 'form';
        break;
      }
      case 'huge-int': {
        const group = r >= 0 ? (['beyond64', 'edge32', 'misc'] as const)[r % 3]! : rng.pick(['beyond64', 'beyond64', 'edge32', 'misc'] as const);
        const literal = r >= 0 ? HUGE_INTS[group][(spec.index + model.ops.indexOf(op)) % HUGE_INTS[group].length]! : rng.pick(HUGE_INTS[group]);
        const jsonParams = op.params.filter((p) => p.json);
        // Integer positions in lists and objects first, then scalars, then path ids.
        const positions: Array<{ name: string; at: Path; nested: boolean; insert?: boolean }> = [];
        for (const p of jsonParams) {
          const v = params.has(p.name) ? params.get(p.name) : gen.value(p.schema, p.name);
          if (!params.has(p.name) && (typeof v === 'number' || (v && typeof v === 'object'))) params.set(p.name, v);
          for (const at of collectPaths(v, (x) => typeof x === 'number')) positions.push({ name: p.name, at, nested: at.length > 0 });
          for (const at of collectPaths(v, (x) => Array.isArray(x) && x.length === 0)) {
            if (isIntegerList(model, p.schema, at)) positions.push({ name: p.name, at, nested: true, insert: true });
          }
        }
        const nested = positions.filter((x) => x.nested);
        const usePath = op.pathParams.length > 0 && (positions.length === 0 || rng.chance(0.2));
        if (usePath) {
          const i = draft.pathSegments.findIndex((s, k) => op.path.split('/').slice(1)[k]?.startsWith('{'));
          draft.pathSegments[i] = enc(literal);
          draft.pathMutated = true;
          draft.variant.push(`path id ${literal}`);
          toEntries();
        } else if (positions.length) {
          const pos = nested.length && rng.chance(0.75) ? rng.pick(nested) : rng.pick(positions);
          const v = params.get(pos.name);
          params.set(pos.name, pos.insert ? setAt(v, pos.at, [new RawJson(literal)]) : setAt(v, pos.at, new RawJson(literal)));
          draft.variant.push(`${pos.name}${fmtPath(pos.at)}${pos.insert ? '[0]' : ''} = ${literal}`);
          toEntries();
        } else {
          toEntries();
          const target = jsonParams.length ? rng.pick(jsonParams).name : 'fz_int';
          replaceEntry(draft, target, rng.chance(0.5) ? `[${literal}]` : literal, 'body');
          if (!jsonParams.length) draft.unknownNames.push(target);
          draft.variant.push(`${target} = ${literal}`);
        }
        break;
      }
      case 'unicode':
      case 'nul': {
        const strings: Array<{ name: string; at: Path }> = [];
        for (const p of op.params) {
          const v = params.has(p.name) ? params.get(p.name) : gen.value(p.schema, p.name);
          if (!params.has(p.name) && (typeof v === 'string' || (v && typeof v === 'object'))) params.set(p.name, v);
          for (const at of collectPaths(v, (x) => typeof x === 'string')) strings.push({ name: p.name, at });
        }
        // Round 0 of the sweep always puts the bytes into a string parameter (GET /get_stream_id?stream=a%00b).
        const others = kind === 'nul' ? ['json-raw', 'name', 'path', 'auth', 'string'] : ['bad-utf8', 'path', 'name', 'string'];
        const where = r === 0 ? 'string' : choose(others);
        const s = kind === 'nul' ? rng.pick(['a\u0000b', '\u0000', 'fz\u0000', '\u0000\u0000']) : rng.pick(UNICODE_STRINGS);
        if ((where === 'string' || where === 'bad-utf8') && strings.length) {
          const pos = rng.pick(strings);
          if (where === 'bad-utf8') {
            toEntries();
            const bytes = rng.pick(BAD_UTF8_RAW);
            const p = op.params.find((x) => x.name === pos.name)!;
            const entry = draft.entries.find((e) => e.name === pos.name)!;
            entry.rawValue = p.json ? enc('["fz') + bytes + enc('"]') : `fz${bytes}`;
            draft.variant.push(`${pos.name} with bytes ${bytes}`);
          } else {
            params.set(pos.name, setAt(params.get(pos.name), pos.at, s));
            toEntries();
            draft.variant.push(`${pos.name}${fmtPath(pos.at)} = ${JSON.stringify(s)}`);
          }
        } else if (where === 'path' || where === 'auth') {
          toEntries();
          if (where === 'auth' && kind === 'nul') {
            const person = pools.people[auth.label];
            if (person) {
              draft.auth = { label: 'malformed:nul-in-credentials', header: basic(`${person.email}\u0000`, person.apiKey), valid: false };
              draft.variant.push('NUL after the e-mail address in Basic credentials');
              break;
            }
          }
          const i = rng.int(draft.pathSegments.length);
          const inject = kind === 'nul' ? '%00' : rng.pick([...BAD_UTF8_RAW, enc('🦄'), enc('١'), '%E2%80%AE']);
          draft.pathSegments[i] = rng.chance(0.5) ? draft.pathSegments[i] + inject : inject + draft.pathSegments[i];
          draft.pathMutated = true;
          draft.variant.push(`path segment ${i + 1} with ${inject}`);
        } else if (where === 'name') {
          toEntries();
          const victim = draft.entries.length ? rng.pick(draft.entries) : null;
          const base = victim?.name ?? 'fz';
          const inject = kind === 'nul' ? '%00' : rng.pick(BAD_UTF8_RAW);
          draft.entries.push({ name: base, rawName: enc(base) + inject, value: victim?.value ?? '1', where: 'body' });
          draft.unknownNames.push(`${base}?`);
          draft.variant.push(`parameter name ${base}${inject}`);
        } else {
          // NUL (or other bytes) raw inside JSON text, or in a param with no string positions.
          toEntries();
          const jsonParams = op.params.filter((p) => p.json);
          const target = jsonParams.length ? rng.pick(jsonParams).name : op.params.length ? rng.pick(op.params).name : 'fz_unknown';
          const text = rng.pick(['[1%00]', '"a%00b"', '%00', '[%00]', '{"a%00":1}', '["a%00b"]']);
          const existing = draft.entries.find((e) => e.name === target);
          if (existing) existing.rawValue = text.split('%00').map(enc).join('%00');
          else draft.entries.push({ name: target, value: '', rawValue: text.split('%00').map(enc).join('%00'), where: 'body' });
          if (!op.params.some((p) => p.name === target)) draft.unknownNames.push(target);
          draft.variant.push(`${target} = ${text} (raw)`);
        }
        break;
      }
      case 'malformed-json': {
        toEntries();
        const jsonParams = op.params.filter((p) => p.json);
        const text = choose(MALFORMED_JSON);
        if (jsonParams.length) {
          const p = r >= 0 ? jsonParams[spec.index % jsonParams.length]! : rng.pick(jsonParams);
          replaceEntry(draft, p.name, text, 'body');
          draft.variant.push(`${p.name} = ${JSON.stringify(text)}`);
        } else {
          const name = op.params.length ? rng.pick(op.params).name : 'fz_unknown';
          replaceEntry(draft, name, text, 'body');
          if (!op.params.length) draft.unknownNames.push(name);
          draft.variant.push(`${name} = ${JSON.stringify(text)} (not a JSON parameter)`);
        }
        break;
      }
      case 'encoding': {
        toEntries();
        if (!draft.entries.length) {
          // Filler so that there is a body; a body the server cannot read need not be reported as ignored.
          draft.entries.push({ name: 'fz_unknown', value: '1', where: 'body' });
          draft.unknownNames.push('fz_unknown?');
        }
        draft.location = 'form';
        // Round 0 of the sweep: a Content-Encoding on an uncompressed body; round 1: everything else.
        const contentEncodings = ENCODINGS.filter((e) => e.startsWith('content-encoding'));
        const how = r === 0 ? choose(contentEncodings) : r > 0 ? choose(ENCODINGS.filter((e) => !contentEncodings.includes(e))) : rng.pick(ENCODINGS);
        draft.variant.push(how);
        draft.malformedBody = true;
        applyEncoding(draft, how, rng);
        break;
      }
      case 'duplicate': {
        toEntries();
        const how = choose(['query+body', 'repeat-query', 'repeat-body', 'repeat-multipart', 'brackets', 'case']);
        if (!draft.entries.length) {
          draft.entries.push({ name: 'fz_unknown', value: '1', where: 'body' });
          draft.unknownNames.push('fz_unknown');
        }
        const victim = rng.pick(draft.entries);
        const p = op.params.find((x) => x.name === victim.name);
        const odd = rng.chance(0.3)
          ? rng.pick([...WRONG_TYPE_JSON, ...MALFORMED_JSON.slice(0, 5)])
          : p
            ? p.json
              ? toJsonText(gen.value(p.schema, p.name))
              : String(gen.value(p.schema, p.name))
            : '2';
        if (how === 'query+body') {
          if (draft.location === 'query') draft.location = 'form';
          victim.where = 'body';
          draft.entries.push({ name: victim.name, value: odd, where: 'query' });
        } else if (how === 'repeat-query' || how === 'repeat-body' || how === 'repeat-multipart') {
          draft.location = how === 'repeat-query' ? 'query' : how === 'repeat-body' ? 'form' : 'multipart';
          draft.entries.push({ name: victim.name, value: odd, where: 'body' });
          if (rng.chance(0.5)) draft.entries.push({ name: victim.name, value: victim.value, where: 'body' });
        } else if (how === 'brackets') {
          draft.entries.push({ name: `${victim.name}[]`, value: odd, where: 'body' });
          draft.unknownNames.push(`${victim.name}[]`);
        } else {
          const upper = victim.name.toUpperCase() === victim.name ? `${victim.name}_X` : victim.name.toUpperCase();
          draft.entries.push({ name: upper, value: odd, where: 'body' });
          draft.unknownNames.push(upper);
        }
        draft.variant.push(`${how} ${victim.name} (${JSON.stringify(odd.slice(0, 40))})`);
        break;
      }
      case 'unknown-param': {
        toEntries();
        const names = r === 0 ? ['constructor', 'toString'] : r === 1 ? ['valueOf', 'hasOwnProperty', '__proto__'] : pickSome(rng, UNKNOWN_NAMES, rng.range(1, 3));
        const value = rng.pick(['1', 'x', '{}', '[]', 'true', '{"polluted":"yes"}']);
        addUnknown(draft, rng, names, value);
        const objectParams = op.params.filter((p) => p.json && collectPaths(params.get(p.name), (v) => !!v && typeof v === 'object' && !Array.isArray(v)).length);
        if (objectParams.length && rng.chance(0.3)) {
          // A prototype key inside a JSON object: must be refused or ignored, never pollute.
          const p = rng.pick(objectParams);
          const key = rng.pick(['__proto__', 'constructor', 'toString']);
          const text = draft.entries.find((e) => e.name === p.name)!.value;
          const at = text.indexOf('{');
          replaceEntry(draft, p.name, `${text.slice(0, at + 1)}"${key}":{"polluted":"yes"}${text[at + 1] === '}' ? '' : ','}${text.slice(at + 1)}`, 'body');
          draft.variant.push(`${p.name} with JSON key ${key}`);
        }
        draft.variant.push(`unknown ${names.join(', ')} = ${value}`);
        break;
      }
      case 'auth': {
        // Sweep: round 0 sends no credentials with a wrong-typed parameter (401 must win over 400), round 1
        // bad credentials without a required parameter, round 2 a malformed header with anything.
        const bases = ['valid', 'missing-required', 'wrong-type', 'huge-int', 'unknown-param'] as const;
        const base = r === 0 ? 'wrong-type' : r === 1 ? 'missing-required' : r > 1 ? choose(bases) : rng.pick(bases);
        const badKeys = AUTH_VARIANTS.filter((v) => !v.startsWith('malformed:') && v !== 'none');
        const malformed = AUTH_VARIANTS.filter((v) => v.startsWith('malformed:'));
        const how = r === 0 ? 'none' : r === 1 ? choose(badKeys) : r > 1 ? choose(malformed) : rng.pick(AUTH_VARIANTS);
        draft.auth = authVariant(how, pools, rng, !!phase.freshAuth?.has(op.id));
        applyKind(base);
        draft.variant.unshift(`auth ${draft.auth.label} +`);
        break;
      }
      case 'path': {
        toEntries();
        if (op.pathParams.length) {
          const template = op.path.split('/').slice(1);
          const slots = template.map((s, i) => (s.startsWith('{') ? i : -1)).filter((i) => i >= 0);
          const i = rng.pick(slots);
          // `me` in DELETE /users/{user_id} would deactivate the sender.
          const value = choose(op.method === 'DELETE' ? PATH_VALUES.filter((v) => v !== 'me') : PATH_VALUES);
          draft.pathSegments[i] = value;
          draft.variant.push(`path ${template[i]} = ${value}`);
        } else {
          const suffix = choose(PATH_SUFFIXES);
          draft.pathSegments[draft.pathSegments.length - 1] += suffix;
          draft.variant.push(`path + ${JSON.stringify(suffix)}`);
        }
        draft.pathMutated = true;
        break;
      }
      case 'method': {
        toEntries();
        // Never turn a harmless request into one the phase keeps away from (GET /users/me → DELETE).
        const allowed = (m: string) => {
          const alt = model.ops.find((o) => o.path === op.path && o.method === m);
          return !alt || ((!phase.ops || phase.ops.includes(alt.id)) && (!SELF_DESTRUCTIVE.has(alt.id) || !!phase.freshAuth?.has(alt.id)));
        };
        const others = ['GET', 'POST', 'PATCH', 'DELETE', 'PUT', 'OPTIONS'].filter((m) => m !== op.method && allowed(m));
        draft.method = choose(others);
        const alt = model.ops.find((o) => o.path === op.path && o.method === draft.method);
        if (alt && DESTRUCTIVE_PATH_TARGETS[alt.id]) {
          // Same path, destructive operation: aim it at throwaway targets.
          const template = op.path.split('/').slice(1);
          template.forEach((segment, i) => {
            const m = /^\{(\w+)\}$/.exec(segment);
            const p = m && alt.pathParams.find((x) => x.name === m[1]);
            if (p) draft.pathSegments[i] = enc(gen.pathValue(alt, p, pools));
          });
        }
        if (alt && phase.freshAuth?.has(alt.id)) draft.auth = { label: 'fresh:400', freshRole: 400, valid: true };
        if (draft.method === 'GET') draft.location = 'query';
        draft.pathMutated = true;
        draft.variant.push(`${draft.method} instead of ${op.method}`);
        break;
      }
      case 'concurrent': {
        const base = rng.chance(0.75) ? 'valid' : rng.pick(['missing-required', 'wrong-type', 'duplicate', 'unknown-param'] as const);
        applyKind(base);
        draft.repeat = 8;
        draft.variant.unshift('8x concurrently:');
        break;
      }
    }
  };
  applyKind(spec.kind);

  // Unauthenticated requests to operations that need credentials: 401 before any parameter error.
  let authExpect: number[] | undefined;
  if (!draft.auth.valid && (op.auth === 'required' || (op.auth === 'optional' && draft.auth.label !== 'none'))) {
    if (draft.method === op.method || !draft.pathMutated) {
      // Incoming webhooks: without a header, the `api_key` parameter is the credential, and none at
      // all is Zulip's 400 `Missing 'api_key' argument` (still before any other parameter).
      const keyless = op.keyParameter && draft.auth.header === undefined && draft.rawBody === undefined && !draft.entries.some((e) => e.name === 'api_key');
      authExpect = [keyless ? 400 : 401];
      if (/^malformed:(bearer|digest|token)/.test(draft.auth.label)) authExpect.push(400);
      if (draft.pathMutated) authExpect.push(404, 405);
      if (draft.malformedBody) authExpect.push(400, 413, 415);
    }
  }
  if (spec.kind === 'method') authExpect = undefined;
  // Operations open to spectators: whether a request without credentials must get 401 depends on the
  // organization's settings, so a 400 is compared with the same operation called with no parameters.
  const probe =
    op.auth === 'optional' && draft.auth.label === 'none' && !draft.pathMutated
      ? { method: op.method, path: `/api/v1/${op.path.split('/').slice(1).map((s) => (s.startsWith('{') ? '1' : s)).join('/')}` }
      : undefined;

  return finish(draft, { seed, index: spec.index, phase: phase.name, op: op.id, kind: spec.kind, authExpect, probe });
}

const PATH_VALUES = ['0', '-1', '2147483648', '99999999999999999999', '9223372036854775808', '1e3', '0x10', '1.0', 'abc', '%00', '1%00', '%2F', '..', '%D9%A1', '%201', '+1', '01', 'me', '%EF%BC%91', '1%20', '%FF', '', '1;2', '1,2'];
const PATH_SUFFIXES = ['%00', '/', '//', '.json', '%2e', '/..', '/%2e%2e', '%FF', '%20', ';x=1', '/fz', '%2F'];
const AUTH_VARIANTS = [
  'none',
  'bad-key',
  'unknown-email',
  'other-users-key',
  'malformed:basic-only',
  'malformed:basic-space',
  'malformed:not-base64',
  'malformed:no-colon',
  'malformed:two-colons',
  'malformed:bearer',
  'malformed:digest',
  'malformed:short-key',
  'malformed:long-key',
  'malformed:latin1',
  'malformed:empty-credentials',
  'malformed:three-words',
  'valid:lowercase-scheme',
] as const;

function authVariant(how: (typeof AUTH_VARIANTS)[number], pools: FuzzPools, rng: Rng, fresh: boolean): AuthSpec {
  const names = Object.keys(pools.people);
  const a = pools.people[rng.pick(names)]!;
  const others = names.map((n) => pools.people[n]!).filter((p) => p.email !== a.email);
  const b = others.length ? rng.pick(others) : a;
  const label = how;
  const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
  switch (how) {
    case 'none':
      return { label, valid: false };
    case 'bad-key':
      return { label, header: basic(a.email, 'A'.repeat(32)), valid: false };
    case 'unknown-email':
      return { label, header: basic(`nobody-${rng.word(5)}@parley.test`, a.apiKey), valid: false };
    case 'other-users-key':
      return b.email === a.email ? { label: 'bad-key', header: basic(a.email, 'B'.repeat(32)), valid: false } : { label, header: basic(a.email, b.apiKey), valid: false };
    case 'malformed:basic-only':
      return { label, header: 'Basic', valid: false };
    case 'malformed:basic-space':
      return { label, header: 'Basic ', valid: false };
    case 'malformed:not-base64':
      return { label, header: 'Basic !!!not*base64', valid: false };
    case 'malformed:no-colon':
      return { label, header: `Basic ${b64(a.email)}`, valid: false };
    case 'malformed:two-colons':
      return { label, header: `Basic ${b64(`${a.email}:${a.apiKey}:x`)}`, valid: false };
    case 'malformed:bearer':
      return { label, header: `Bearer ${a.apiKey}`, valid: false };
    case 'malformed:digest':
      return { label, header: 'Digest username="x", realm="zulip"', valid: false };
    case 'malformed:short-key':
      return { label, header: basic(a.email, 'abc'), valid: false };
    case 'malformed:long-key':
      return { label, header: basic(a.email, 'k'.repeat(4000)), valid: false };
    case 'malformed:latin1':
      return { label, header: `Basic ${b64(Buffer.from([0xe9, 0x3a, 0xff, 0xfe]))}`, valid: false };
    case 'malformed:empty-credentials':
      return { label, header: `Basic ${b64(':')}`, valid: false };
    case 'malformed:three-words':
      return { label, header: `Basic ${b64(`${a.email}:${a.apiKey}`)} extra`, valid: false };
    case 'valid:lowercase-scheme':
      return fresh ? { label, freshRole: 400, scheme: 'basic', valid: true } : { label, header: basic(a.email, a.apiKey).replace('Basic', 'basic'), valid: true };
  }
}

const ENCODINGS = [
  'content-encoding: gzip',
  'content-encoding: deflate',
  'content-encoding: br',
  'content-encoding: x-gzip',
  'content-encoding: compress',
  'content-encoding: bogus',
  'content-encoding: gzip, deflate',
  'content-encoding: identity',
  'content-encoding: zstd',
  'gzip body, content-encoding: gzip',
  'charset=utf-16',
  'charset=latin1 with latin-1 bytes',
  'charset=bogus',
  'charset="utf-8"',
  'content-type: text/plain',
  'content-type: application/json with a JSON body',
  'content-type: application/xml',
  'content-type: bogus',
  'content-type: empty',
  'content-type: two types',
  'multipart: no boundary',
  'multipart: wrong boundary',
  'multipart: truncated',
  'multipart: file part',
  'multipart: part without name',
  'multipart: boundary too long',
  'multipart/mixed',
  'transfer-encoding: chunked',
];

function applyEncoding(draft: Draft, how: string, rng: Rng): void {
  const form = () => Buffer.from(formText(draft.entries.filter((e) => e.where === 'body')), 'latin1');
  const setForm = (contentType: string, body: Buffer = form()) => {
    draft.rawBody = body;
    draft.headers['Content-Type'] = contentType;
  };
  const urlencoded = 'application/x-www-form-urlencoded';
  if (how.startsWith('content-encoding: ')) {
    setForm(urlencoded);
    draft.headers['Content-Encoding'] = how.slice('content-encoding: '.length);
  } else if (how === 'gzip body, content-encoding: gzip') {
    // A correctly compressed body: accepting or refusing (415) are both fine, a 5xx is not.
    // Built lazily by the runner (zlib is async-free here but keeps this module dependency-light).
    setForm(urlencoded);
    draft.headers['Content-Encoding'] = 'gzip';
    draft.headers['X-Fuzz-Compress'] = 'gzip';
  } else if (how === 'charset=utf-16') setForm(`${urlencoded}; charset=utf-16`, Buffer.from(formText(draft.entries), 'utf16le'));
  else if (how === 'charset=latin1 with latin-1 bytes') setForm(`${urlencoded}; charset=latin1`, Buffer.concat([form(), Buffer.from('&fz_latin=caf\xe9', 'latin1')]));
  else if (how === 'charset=bogus') setForm(`${urlencoded}; charset=x-bogus-42`);
  else if (how === 'charset="utf-8"') setForm(`${urlencoded}; charset="utf-8"`);
  else if (how === 'content-type: text/plain') setForm('text/plain');
  else if (how === 'content-type: application/json with a JSON body') {
    setForm('application/json', Buffer.from(JSON.stringify(Object.fromEntries(draft.entries.map((e) => [e.name, e.value])))));
  } else if (how === 'content-type: application/xml') setForm('application/xml', Buffer.from('<a>1</a>'));
  else if (how === 'content-type: bogus') setForm('bogus');
  else if (how === 'content-type: empty') setForm('');
  else if (how === 'content-type: two types') setForm(`${urlencoded}, multipart/form-data`);
  else if (how.startsWith('multipart')) {
    const boundary = `fz${rng.word(12)}`;
    const parts = draft.entries.map((e) => ({ name: e.name, value: e.rawValue !== undefined ? decodeRaw(e.rawValue) : Buffer.from(e.value) }));
    const body = multipartBody(boundary, parts);
    if (how === 'multipart: no boundary') setForm('multipart/form-data', body);
    else if (how === 'multipart: wrong boundary') setForm(`multipart/form-data; boundary=${boundary}x`, body);
    else if (how === 'multipart: truncated') setForm(`multipart/form-data; boundary=${boundary}`, body.subarray(0, Math.max(10, body.length - 20)));
    else if (how === 'multipart: file part') {
      const file = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="fz_file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n`);
      setForm(`multipart/form-data; boundary=${boundary}`, Buffer.concat([file, body]));
    } else if (how === 'multipart: part without name') {
      const nameless = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data\r\n\r\nhello\r\n`);
      setForm(`multipart/form-data; boundary=${boundary}`, Buffer.concat([nameless, body]));
    } else if (how === 'multipart: boundary too long') {
      const long = 'b'.repeat(200);
      setForm(`multipart/form-data; boundary=${long}`, multipartBody(long, parts));
    } else setForm(`multipart/mixed; boundary=${boundary}`, body);
  } else if (how === 'transfer-encoding: chunked') {
    setForm(urlencoded);
    draft.headers['X-Fuzz-Chunked'] = '1';
    draft.malformedBody = false;
  }
}

function decodeRaw(raw: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '%' && /^[0-9a-fA-F]{2}$/.test(raw.slice(i + 1, i + 3))) {
      bytes.push(parseInt(raw.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(raw[i] === '+' ? ' ' : raw[i]!));
  }
  return Buffer.from(bytes);
}

function multipartBody(boundary: string, parts: Array<{ name: string; value: Buffer }>): Buffer {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name.replace(/"/g, '%22')}"\r\n\r\n`), part.value, Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function formText(entries: WireEntry[]): string {
  return entries.map((e) => `${e.rawName ?? enc(e.name)}=${e.rawValue ?? enc(e.value)}`).join('&');
}

function replaceEntry(draft: Draft, name: string, value: string, where: 'query' | 'body'): void {
  const existing = draft.entries.find((e) => e.name === name);
  if (existing) {
    existing.value = value;
    delete existing.rawValue;
  } else draft.entries.push({ name, value, where });
}

function addUnknown(draft: Draft, rng: Rng, names: string[], value: string): void {
  for (const name of names) {
    draft.entries.push({ name, value, where: draft.location === 'query' || rng.chance(0.3) ? 'query' : 'body' });
    draft.unknownNames.push(name);
  }
}

function pickSome<T>(rng: Rng, items: readonly T[], n: number): T[] {
  const pool = [...items];
  const out: T[] = [];
  while (out.length < n && pool.length) out.push(pool.splice(rng.int(pool.length), 1)[0]!);
  return out;
}

function finish(draft: Draft, meta: { seed: number; index: number; phase: string; op: string; kind: Kind; authExpect?: number[]; probe?: FuzzRequest['probe'] }): FuzzRequest {
  const query: WireEntry[] = [];
  const body: WireEntry[] = [];
  for (const e of draft.entries) {
    const inQuery = draft.rawBody === undefined && (draft.location === 'query' || e.where === 'query' || (draft.location === 'mixed' && query.length <= body.length));
    (inQuery ? query : body).push(e);
  }
  let path = `/api/v1/${draft.pathSegments.join('/')}`;
  if (query.length) path += `?${formText(query)}`;
  const headers: Record<string, string> = { ...draft.headers };
  let payload = draft.rawBody;
  if (payload === undefined && body.length) {
    if (draft.location === 'multipart') {
      const boundary = `fzb${meta.index}`;
      payload = multipartBody(
        boundary,
        body.map((e) => ({ name: e.rawName !== undefined ? decodeRaw(e.rawName).toString('latin1') : e.name, value: e.rawValue !== undefined ? decodeRaw(e.rawValue) : Buffer.from(e.value) })),
      );
      headers['Content-Type'] = `multipart/form-data; boundary=${boundary}`;
    } else {
      payload = Buffer.from(formText(body), 'latin1');
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
    }
  }
  if (draft.auth.header !== undefined) headers['Authorization'] = draft.auth.header;
  return {
    ...meta,
    variant: draft.variant.join(' '),
    method: draft.method,
    path,
    headers,
    ...(payload !== undefined ? { body: payload } : {}),
    repeat: draft.repeat,
    auth: draft.auth,
    unknownNames: draft.unknownNames,
  };
}

// ---------------------------------------------------------------------------------------------------
// Paths inside JSON values

type Path = Array<string | number>;

function collectPaths(value: unknown, pred: (v: unknown) => boolean, path: Path = [], out: Path[] = []): Path[] {
  if (value instanceof RawJson) return out;
  if (pred(value)) out.push(path);
  if (Array.isArray(value)) value.forEach((v, i) => collectPaths(v, pred, [...path, i], out));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) collectPaths(v, pred, [...path, k], out);
  return out;
}

function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[head as number] = setAt(copy[head as number], rest, value);
    return copy;
  }
  const copy = { ...(root as Record<string, unknown>) };
  copy[head as string] = setAt(copy[head as string], rest, value);
  return copy;
}

function fmtPath(path: Path): string {
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
}

/** Whether the schema at `at` (within a parameter's schema) is an array of integers. */
function isIntegerList(model: SpecModel, schema: Schema, at: Path): boolean {
  const candidates = (s: Schema): Schema[] => {
    const d = model.deref(s);
    const branches = (d.oneOf ?? d.anyOf) as Schema[] | undefined;
    return branches ? branches.flatMap(candidates) : [d];
  };
  let current = candidates(schema);
  for (const key of at) {
    current = current.flatMap((s) => (typeof key === 'number' ? (s.items ? candidates(s.items) : []) : s.properties?.[key] ? candidates(s.properties[key]) : []));
  }
  return current.some((s) => s.type === 'array' && s.items && candidates(s.items).some((i) => i.type === 'integer'));
}
