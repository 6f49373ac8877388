// Sends generated requests (generator.ts) over raw HTTP, checks the invariants every response must
// satisfy, and tallies the results for the fuzz test and the large run.
//
// Invariants, on every response:
//   - never 5xx, and always an answer (no reset, no hang);
//   - Content-Type: application/json;
//   - the body parses as Zulip's envelope: `result` is "success" or "error", `msg` is a string;
//   - errors carry a string `code`;
//   - HTTP status and `result` agree (2xx ⇔ success);
//   - no stack trace or absolute path in the body;
//   - requests without valid credentials to operations that need them get 401 before any parameter
//     error (400 only for a non-Basic scheme or a malformed body; 404/405 for a mangled path);
//   - unknown parameter names are ignored (never "Argument … is unexpected") and, on success, listed in
//     `ignored_parameters_unsupported`.
// After a run: GET /api/v1/server_settings still answers, and no JSON key polluted Object.prototype.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { buildRequest, planCases, type CaseSpec, type Credential, type FuzzPools, type FuzzRequest, type Phase, type SpecModel } from './generator.ts';

export interface FuzzResponse {
  status: number;
  /** Milliseconds from sending to the end of the response. */
  ms?: number;
  contentType: string;
  text: string;
  /** Transport failure (reset, timeout) instead of a response. */
  error?: string;
}

export interface Violation {
  kind: string;
  detail: string;
}

const LEAK_PATTERNS: Array<[RegExp, string]> = [
  [/\/work\//, '/work/'],
  [/node_modules/, 'node_modules'],
  [/\n?\s{4}at /, '"    at " (stack frame)'],
  [/\bat (?:async )?\S+ \(|\(file:\/\/|file:\/\/\//, 'stack frame / file URL'],
  [/\.(?:ts|js|mjs|cjs):\d+:\d+/, 'source position'],
  [/\/(?:home|usr|tmp|var|root|opt|Users)\/\w/, 'absolute path'],
  [/[A-Z]:\\\\/, 'windows path'],
  [/(?:Prisma|PrismaClient|prisma\.|invocation:)/, 'Prisma internals'],
];

export async function send(baseUrl: string, req: FuzzRequest, agent: http.Agent, timeoutMs = 60_000): Promise<FuzzResponse> {
  const url = new URL(baseUrl);
  const headers: Record<string, string> = { ...req.headers };
  let body = req.body;
  let chunked = false;
  if (headers['X-Fuzz-Compress'] && body) {
    body = gzipSync(body);
    delete headers['X-Fuzz-Compress'];
  }
  if (headers['X-Fuzz-Chunked']) {
    chunked = true;
    delete headers['X-Fuzz-Chunked'];
    // Explicit: Node only chunks POST/PUT/PATCH/DELETE bodies by itself.
    headers['Transfer-Encoding'] = 'chunked';
  }
  if (body && !chunked) headers['Content-Length'] = String(body.length);
  const start = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: FuzzResponse) => {
      if (!settled) {
        settled = true;
        resolve({ ...r, ms: performance.now() - start });
      }
    };
    let request: http.ClientRequest;
    try {
      request = http.request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => done({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => done({ status: 0, contentType: '', text: '', error: `response error: ${e.message}` }));
      });
    } catch (e) {
      // The client library refused the request (e.g. a header it considers invalid): not the server's fault.
      return done({ status: -1, contentType: '', text: '', error: `client refused: ${(e as Error).message}` });
    }
    request.on('timeout', () => {
      request.destroy(new Error(`no response within ${timeoutMs} ms`));
    });
    request.on('error', (e) => done({ status: 0, contentType: '', text: '', error: `${(e as NodeJS.ErrnoException).code ?? ''} ${e.message}`.trim() }));
    if (body && chunked) {
      const half = Math.floor(body.length / 2);
      request.write(body.subarray(0, half));
      request.end(body.subarray(half));
    } else request.end(body);
  });
}

export function checkResponse(req: FuzzRequest, res: FuzzResponse): Violation[] {
  const out: Violation[] = [];
  if (res.status === -1) return out; // never sent
  if (res.error) return [{ kind: 'no response (reset/timeout)', detail: res.error }];
  if (res.status >= 500) out.push({ kind: '5xx', detail: `status ${res.status}` });
  if (!/^application\/json\b/i.test(res.contentType)) out.push({ kind: 'content-type not application/json', detail: res.contentType || '(none)' });
  for (const [pattern, what] of LEAK_PATTERNS) {
    if (pattern.test(res.text)) {
      out.push({ kind: 'stack trace or path in body', detail: what });
      break;
    }
  }
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    out.push({ kind: 'body is not JSON', detail: res.text.slice(0, 80) });
  }
  if (body !== undefined) {
    if (!body || typeof body !== 'object' || Array.isArray(body) || (body.result !== 'success' && body.result !== 'error') || typeof body.msg !== 'string') {
      out.push({ kind: 'not a Zulip envelope', detail: res.text.slice(0, 80) });
    } else {
      const ok = res.status >= 200 && res.status < 300;
      if (ok !== (body.result === 'success')) out.push({ kind: 'status and result disagree', detail: `${res.status} with result ${body.result}` });
      if (body.result === 'error' && typeof body.code !== 'string') out.push({ kind: 'error without string code', detail: `code ${JSON.stringify(body.code)}` });
      const unknown = req.unknownNames.filter((n) => !n.endsWith('?'));
      if (body.result === 'error' && typeof body.msg === 'string') {
        // A key of the same name inside a JSON object (`Argument "x" at param["x"] is unexpected`,
        // `param["x"] is not a boolean`) is part of a value, not a parameter, and may be refused.
        const nested = (n: string) => new RegExp(`"${n.replace(/\W/g, '\\$&')}" at \\S*[[.]`).test(body.msg) || body.msg.includes(`["${n}"]`);
        const mentions = (n: string) => (body.msg.includes(`"${n}"`) || body.msg.includes(`'${n}'`)) && !nested(n);
        const named = unknown.find(mentions);
        if (named) out.push({ kind: 'unknown parameter rejected instead of ignored', detail: named });
      }
      if (body.result === 'success' && unknown.length) {
        const listed: unknown = body.ignored_parameters_unsupported;
        const missing = unknown.filter((n) => !Array.isArray(listed) || !listed.includes(n));
        if (missing.length) out.push({ kind: 'unknown parameter not in ignored_parameters_unsupported', detail: missing.join(', ') });
      }
    }
  }
  if (req.authExpect && !req.authExpect.includes(res.status)) {
    out.push({ kind: 'unauthenticated request not answered 401 first', detail: `${res.status} (expected ${req.authExpect.join('/')})` });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Tally and report

interface Example {
  id: string;
  variant: string;
  /** The request as a curl command line (rendered at once: requests may carry megabytes). */
  request: string;
  status: number;
  excerpt: string;
  detail: string;
}

interface Group {
  kind: string;
  op: string;
  method: string;
  reqKind: string;
  status: number;
  count: number;
  examples: Example[];
}

export class Tally {
  requests = 0;
  cases = 0;
  readonly byStatus = new Map<number, number>();
  readonly byKind = new Map<string, number>();
  /** Per operation: requests and total milliseconds. */
  readonly timing = new Map<string, { n: number; ms: number; max: number }>();
  readonly groups = new Map<string, Group>();
  readonly extra: string[] = [];
  violations = 0;

  add(req: FuzzRequest, res: FuzzResponse, violations: Violation[]): void {
    this.requests++;
    this.byStatus.set(res.status, (this.byStatus.get(res.status) ?? 0) + 1);
    const t = this.timing.get(req.op) ?? { n: 0, ms: 0, max: 0 };
    t.n++;
    t.ms += res.ms ?? 0;
    t.max = Math.max(t.max, res.ms ?? 0);
    this.timing.set(req.op, t);
    for (const v of violations) {
      this.violations++;
      this.byKind.set(v.kind, (this.byKind.get(v.kind) ?? 0) + 1);
      const key = `${v.kind}|${req.op}|${req.kind}|${res.status}`;
      let g = this.groups.get(key);
      if (!g) {
        g = { kind: v.kind, op: req.op, method: req.method, reqKind: req.kind, status: res.status, count: 0, examples: [] };
        this.groups.set(key, g);
      }
      g.count++;
      if (g.examples.length < 2) g.examples.push({ id: `${req.phase}#${req.index}`, variant: req.variant, request: describeRequest(req), status: res.status, excerpt: excerpt(res), detail: v.detail });
    }
  }

  /** Violations found outside individual requests (server down afterwards, prototype pollution). */
  addGlobal(kind: string, detail: string): void {
    this.violations++;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    this.extra.push(`${kind}: ${detail}`);
  }

  report(options: { seed: number; maxGroups?: number } = { seed: 0 }): string {
    const lines: string[] = [];
    lines.push(`fuzz seed ${options.seed}: ${this.cases} cases, ${this.requests} requests, ${this.violations} invariant violations`);
    lines.push(`by status: ${[...this.byStatus].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}: ${n}`).join(', ')}`);
    const slowest = [...this.timing].sort((a, b) => b[1].ms - a[1].ms).slice(0, 5);
    lines.push(`most time spent on: ${slowest.map(([op, t]) => `${op} ${(t.ms / 1000).toFixed(1)} s (${t.n} requests, max ${t.max.toFixed(0)} ms)`).join('; ')}`);
    if (this.byKind.size) {
      lines.push('violations by kind:');
      for (const [k, n] of [...this.byKind].sort((a, b) => b[1] - a[1])) lines.push(`  ${n.toString().padStart(6)}  ${k}`);
    }
    for (const e of this.extra) lines.push(`  ${e}`);
    const groups = [...this.groups.values()].sort((a, b) => a.kind.localeCompare(b.kind) || a.op.localeCompare(b.op) || a.status - b.status);
    if (groups.length) {
      lines.push(`distinct violations (invariant | operation | request kind | status), ${groups.length} groups; $PARLEY is the server's URL:`);
      let kind = '';
      for (const g of groups.slice(0, options.maxGroups ?? 400)) {
        if (g.kind !== kind) {
          kind = g.kind;
          lines.push(`\n== ${kind}`);
        }
        lines.push(`- ${g.op} (${g.method}) | ${g.reqKind} | ${g.status} | ${g.count}x`);
        for (const ex of g.examples) {
          lines.push(`    case ${ex.id} [${ex.variant}] -> ${ex.detail}`);
          lines.push(`      ${ex.request}`);
          lines.push(`      <- ${ex.status} ${ex.excerpt}`);
        }
      }
      if (groups.length > (options.maxGroups ?? 400)) lines.push(`… ${groups.length - (options.maxGroups ?? 400)} more groups`);
    }
    return lines.join('\n');
  }
}

function excerpt(res: FuzzResponse): string {
  if (res.error) return `(${res.error})`;
  const flat = res.text.replace(/\s+/g, ' ');
  return `${res.contentType || '(no content-type)'} ${flat.length > 240 ? `${flat.slice(0, 240)}…` : flat}`;
}

const short = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…(${s.length} chars)` : s);

/** The request as a curl command line against $PARLEY (long parts cut; comments after `#`). */
export function describeRequest(req: FuzzRequest): string {
  const parts = [`curl -X ${req.method} "$PARLEY"'${short(req.path, 300)}'`];
  const notes: string[] = [];
  for (const [name, value] of Object.entries(req.headers)) {
    if (name === 'X-Fuzz-Compress') notes.push(`body sent ${value}-compressed`);
    else if (name === 'X-Fuzz-Chunked') notes.push('body sent with Transfer-Encoding: chunked');
    else if (name === 'Authorization' && req.auth.valid && req.auth.label !== 'valid:lowercase-scheme') parts.push(`-u '<${req.auth.label}>'`);
    else parts.push(`-H '${name}: ${short(value, 120)}'`);
  }
  if (!req.headers['Authorization']) notes.push(`auth: ${req.auth.label}`);
  if (req.body) parts.push(`--data-binary '${short(JSON.stringify(req.body.toString('latin1')).slice(1, -1), 300)}'`);
  if (req.repeat > 1) notes.push(`fired ${req.repeat}x concurrently`);
  return notes.length ? `${parts.join(' ')}  # ${notes.join('; ')}` : parts.join(' ');
}

// ---------------------------------------------------------------------------------------------------
// Running a phase

export interface RunOptions {
  baseUrl: string;
  model: SpecModel;
  pools: FuzzPools;
  phase: Phase;
  seed: number;
  /** Number of cases (a concurrent case is 8 requests). */
  total: number;
  /** First case index (so that phases of one run have distinct indices). */
  startIndex?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Oversized-input scale (1 = sizes up to 1 MB strings and 6 MB bodies). */
  scale?: number;
  tally: Tally;
  /** Creates a throwaway user of the role and returns its credentials (Phase.freshAuth). */
  fresh?: (role: number) => Promise<Credential>;
  /** Only these case indices (FUZZ_ONLY). */
  only?: Set<number>;
  /** Called with each case's outcome (logging, progress). */
  onCase?: (req: FuzzRequest, responses: FuzzResponse[], violations: Violation[]) => void;
}

export async function runPhase(o: RunOptions): Promise<{ cases: CaseSpec[] }> {
  let cases = planCases(o.model, o.phase, o.seed, o.total, o.startIndex ?? 0);
  if (o.only?.size) cases = cases.filter((c) => o.only!.has(c.index));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const spec = cases[next++]!;
      const req = buildRequest(o.model, o.pools, o.phase, spec, o.seed, { scale: o.scale ?? 1 });
      if (req.auth.freshRole !== undefined) {
        if (!o.fresh) throw new Error(`phase ${o.phase.name} needs fresh users`);
        const cred = await o.fresh(req.auth.freshRole);
        req.headers['Authorization'] = `${req.auth.scheme ?? 'Basic'} ${Buffer.from(`${cred.email}:${cred.apiKey}`).toString('base64')}`;
      }
      const responses = await Promise.all(Array.from({ length: req.repeat }, () => send(o.baseUrl, req, agent)));
      const all: Violation[] = [];
      o.tally.cases++;
      let probed: FuzzResponse | undefined;
      if (req.probe && responses.some((r) => r.status === 400)) {
        probed = await send(o.baseUrl, { ...req, method: req.probe.method, path: req.probe.path, headers: {}, unknownNames: [], repeat: 1, probe: undefined } as FuzzRequest, agent);
      }
      for (const res of responses) {
        const v = checkResponse(req, res);
        if (probed?.status === 401 && res.status === 400) {
          v.push({ kind: 'unauthenticated request not answered 401 first', detail: `400 here, while ${req.probe!.method} ${req.probe!.path} without credentials answers 401` });
        }
        o.tally.add(req, res, v);
        all.push(...v);
      }
      o.onCase?.(req, responses, all);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 4 }, worker));
  agent.destroy();
  return { cases };
}

/** After a phase: the server still answers, and nothing polluted Object.prototype in this process. */
export async function checkAfterRun(baseUrl: string, tally: Tally): Promise<void> {
  const agent = new http.Agent({ keepAlive: false });
  const res = await send(baseUrl, { seed: 0, index: -1, phase: 'after', op: 'get-server-settings', kind: 'valid', variant: '', method: 'GET', path: '/api/v1/server_settings', headers: {}, repeat: 1, auth: { label: 'none', valid: false }, unknownNames: [] }, agent, 15_000);
  let ok = res.status === 200 && /^application\/json/.test(res.contentType);
  try {
    ok &&= JSON.parse(res.text).result === 'success';
  } catch {
    ok = false;
  }
  if (!ok) tally.addGlobal('server no longer answers GET /server_settings', `${res.status} ${res.error ?? res.text.slice(0, 200)}`);
  const probe = {} as Record<string, unknown>;
  if (probe['polluted'] !== undefined || Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted')) {
    tally.addGlobal('Object.prototype polluted', JSON.stringify(probe['polluted']));
  }
}
