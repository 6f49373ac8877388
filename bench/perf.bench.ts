// Parley against its floors: throughput, latency and memory of the performance issue's table, each
// measured in the same run as a minimal server doing the least the request needs
// (bench/lib/floor-server.ts), and printed as a ratio with the issue's goal. Not a test: it prints
// figures. From the repository root:
//
//   npx tsx bench/perf.bench.ts
//
// Environment:
//   PARLEY_BENCH_PARLEY_SERVER_CMD  how to start Parley (run by the shell in the repository root; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`). It gets DATABASE_URL,
//                            PARLEY_SECRET_KEY, PARLEY_DATA_DIR, PARLEY_URL, HOST, PORT,
//                            NODE_ENV=production (no response validation) and PARLEY_RATE_LIMIT=0.
//   BENCH_DURATION           seconds per measured run (5); BENCH_WARMUP seconds of warm-up per side (2)
//   BENCH_IDLE               seconds of idling before the "after load" RSS (10)
//   BENCH_HAMMER             seconds of 100 connections on GET /users for the RSS under load (15)
//   BENCH_ROWS               comma-separated subset of me,users,patch,subscribe,rss,queries (all);
//                            subscribe51 is the subscribe row of the 51-user organization alone
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> when its command starts with `node`
//                            (summarise with `npx tsx bench/lib/profile-summary.ts <dir>/*.cpuprofile`)
//   BENCH_KEEP=1             keep the work directory (logs of Parley and the floors)
//   BENCH_QUERY_REQUESTS     sequential requests per row of the statement counts ("queries"; 20)
//
// Set-up (bench/lib/seed.ts): an embedded PostgreSQL with an organization of 5,001 users and one of 51,
// 400 public channels in each. Parley and the floors run as separate Node processes
// (NODE_ENV=production); autocannon runs in this process. Every comparison makes one warm-up run of
// each side, then three alternating runs (Parley, floor), each followed by a wait until the server
// has finished what the run left in flight, and compares the medians. At the end ("queries"), a second
// Parley and floor connected through a counting proxy (bench/lib/pg-proxy.ts) show how many
// PostgreSQL statements each request costs.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase, pg, ACTORS, SUBSCRIBE_CHANNELS, type Fixture, type OrgFixture, type Person, type PgPool } from './lib/seed.ts';
import { findPostmaster, freePort, PARLEY_SERVER_CMD, rssMb, sampleRss, type ServerProcess, sleep, startBenchParley, startServer, stopBenchDatabase, treeCpuMs, waitIdle } from './lib/processes.ts';
import { runLoad, type LoadOptions, type LoadResult } from './lib/load.ts';
import { startPgProxy } from './lib/pg-proxy.ts';
import { fmt, markdownTable, median } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FLOOR_CMD = 'node --import tsx bench/lib/floor-server.ts';
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const IDLE = Number(process.env.BENCH_IDLE ?? 10);
const HAMMER = Number(process.env.BENCH_HAMMER ?? 15);
const RUNS = 3;
const ROWS = new Set((process.env.BENCH_ROWS ?? 'me,users,patch,subscribe,rss,queries').split(',').map((s) => s.trim()));

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const log = (line: string) => console.log(`[bench] ${line}`);

// ---------------------------------------------------------------------------------------------------
// Servers

interface Side {
  label: 'Parley' | 'floor';
  process: ServerProcess;
  /** Base URL of everything but GET /users/me. */
  url: string;
  /** Base URL of GET /users/me (the floor's Express server; Parley's own URL). */
  meUrl: string;
}

async function startParley(dir: string, fixture: Fixture, databaseUrl: string, name: string): Promise<Side> {
  const started = performance.now();
  const server = await startBenchParley({
    label: 'Parley',
    root: ROOT,
    databaseUrl,
    secretKey: fixture.secretKey,
    realmUrl: fixture.big.url,
    dataDir: path.join(dir, name),
    logFile: path.join(dir, `${name}.log`),
    profile: name === 'parley',
  });
  log(`${name}: answered after ${Math.round(performance.now() - started)} ms (pid ${server.pid} listens on ${server.port}; log ${server.logFile})`);
  return { label: 'Parley', process: server, url: server.url, meUrl: server.url };
}

async function startFloor(dir: string, fixture: Fixture, databaseUrl: string, meBody: unknown, name: string): Promise<Side> {
  const config = path.join(dir, `${name}.json`);
  const expressPort = await freePort();
  const httpPort = await freePort();
  const people: Record<string, { id: number; realmId: number; role: number }> = {};
  for (const p of [fixture.member, fixture.big.owner, fixture.small.owner, ...fixture.big.actors, ...fixture.small.actors]) people[p.email.toLowerCase()] = { id: p.id, realmId: p.realmId, role: p.role };
  const realmUrls = { [fixture.big.id]: fixture.big.url, [fixture.small.id]: fixture.small.url };
  writeFileSync(config, JSON.stringify({ databaseUrl, expressPort, httpPort, people, realmUrls, meBody }));
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'production', BENCH_FLOOR_CONFIG: config };
  const server = await startServer({ label: 'floor', command: FLOOR_CMD, cwd: ROOT, env, port: httpPort, readyPath: '/ready', logFile: path.join(dir, `${name}.log`) });
  const meUrl = `http://127.0.0.1:${expressPort}`;
  for (let i = 0; i < 100; i++) {
    try {
      await (await fetch(`${meUrl}/api/v1/users/me`)).arrayBuffer();
      break;
    } catch {
      await sleep(100);
    }
  }
  return { label: 'floor', process: server, url: server.url, meUrl };
}

// ---------------------------------------------------------------------------------------------------
// The requests of each measurement

interface RequestKind {
  path: string;
  method: 'GET' | 'POST' | 'PATCH';
  /** Headers and body of request number n of a run. */
  make(n: number): { headers: Record<string, string>; body?: string };
  /** Base URL on a side. */
  base(side: Side): string;
}

function requestKinds(fixture: Fixture) {
  const member = { authorization: basic(fixture.member) };
  let edit = 0;
  const subscribe = (org: OrgFixture): RequestKind => {
    // Request n: actor ⌊n / channels⌋ subscribes to channel n mod channels, so that concurrent requests
    // are by one user to different channels (no lock waits) and no pair repeats within a run.
    const auths = org.actors.map(basic);
    const bodies = org.channelNames.map((name) => `subscriptions=${encodeURIComponent(JSON.stringify([{ name }]))}`);
    return {
      path: '/api/v1/users/me/subscriptions',
      method: 'POST',
      make: (n) => ({ headers: { authorization: auths[Math.floor(n / bodies.length) % ACTORS]!, 'content-type': FORM }, body: bodies[n % bodies.length]! }),
      base: (side) => side.url,
    };
  };
  return {
    me: { path: '/api/v1/users/me', method: 'GET', make: () => ({ headers: member }), base: (side) => side.meUrl } satisfies RequestKind,
    users: { path: '/api/v1/users', method: 'GET', make: () => ({ headers: member }), base: (side) => side.url } satisfies RequestKind,
    // Every request changes the description (an unchanged one writes nothing).
    patch: {
      path: `/api/v1/streams/${fixture.patchChannelId}`,
      method: 'PATCH',
      make: () => ({ headers: { authorization: basic(fixture.big.owner), 'content-type': FORM }, body: `description=${encodeURIComponent(`Benchmark description, edit ${++edit}`)}` }),
      base: (side) => side.url,
    } satisfies RequestKind,
    subscribeBig: subscribe(fixture.big),
    subscribeSmall: subscribe(fixture.small),
  };
}

function loadOptions(kind: RequestKind, side: Side, connections: number, durationS: number): LoadOptions {
  const first = kind.make(0);
  return {
    url: kind.base(side) + kind.path,
    method: kind.method,
    headers: first.headers,
    connections,
    durationS,
    captureFailures: kind.method !== 'GET',
    ...(kind.method !== 'GET' || first.body !== undefined ? { setup: (n: number) => kind.make(n) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Comparisons

/** A load run with the CPU time the server process and PostgreSQL (all its processes) spent per answered request. */
interface Measured extends LoadResult {
  serverCpuMs: number;
  pgCpuMs: number;
}

interface Comparison {
  label: string;
  metric: 'rps' | 'p50';
  goal: { op: '>=' | '<='; ratio: number };
  parley: Measured[];
  floor: Measured[];
}

const value = (r: LoadResult, metric: Comparison['metric']) => (metric === 'rps' ? r.rps : r.p50);

/** The postmaster of the benchmark's cluster, for PostgreSQL's CPU time (null: not found, not reported). */
let postmaster: number | null = null;

/**
 * One run: reset, load, then wait until the server has finished what the load left in flight. CPU
 * time is read when the load stops: per answered request it is machine-load-independent, unlike
 * throughput (a request in flight at the end is partly counted; a small bias for long runs).
 */
async function measure(side: Side, options: LoadOptions, reset: () => Promise<void>): Promise<Measured> {
  await reset();
  const server0 = treeCpuMs(side.process.pid);
  const pg0 = postmaster ? treeCpuMs(postmaster) : Number.NaN;
  const result = await runLoad(options);
  const serverCpuMs = (treeCpuMs(side.process.pid) - server0) / Math.max(1, result.ok);
  const pgCpuMs = ((postmaster ? treeCpuMs(postmaster) : Number.NaN) - pg0) / Math.max(1, result.ok);
  await waitIdle(side.process.pid);
  return { ...result, serverCpuMs, pgCpuMs };
}

async function compare(
  sides: { parley: Side; floor: Side },
  label: string,
  metric: Comparison['metric'],
  goal: Comparison['goal'],
  kind: RequestKind,
  connections: number,
  reset: () => Promise<void> = async () => {},
): Promise<Comparison> {
  log(`${label}: warming up`);
  await measure(sides.parley, loadOptions(kind, sides.parley, connections, WARMUP), reset);
  await measure(sides.floor, loadOptions(kind, sides.floor, connections, WARMUP), reset);
  const out: Comparison = { label, metric, goal, parley: [], floor: [] };
  const show = (r: Measured) =>
    `${fmt(r.rps)} req/s, p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms` +
    (r.failed ? `, ${r.failed} FAILED (${r.firstFailure ?? 'no body captured'})` : '');
  for (let run = 1; run <= RUNS; run++) {
    const p = await measure(sides.parley, loadOptions(kind, sides.parley, connections, DURATION), reset);
    const f = await measure(sides.floor, loadOptions(kind, sides.floor, connections, DURATION), reset);
    out.parley.push(p);
    out.floor.push(f);
    log(`${label}: run ${run}: Parley ${show(p)} | floor ${show(f)}`);
  }
  return out;
}

function comparisonRow(c: Comparison): string[] {
  const p = median(c.parley.map((r) => value(r, c.metric)));
  const f = median(c.floor.map((r) => value(r, c.metric)));
  const ratio = p / f;
  const failed = [...c.parley, ...c.floor].reduce((sum, r) => sum + r.failed, 0);
  const pass = c.goal.op === '>=' ? ratio >= c.goal.ratio : ratio <= c.goal.ratio;
  return [c.label, fmt(p), fmt(f), `${fmt(ratio, 2)}×`, `${c.goal.op === '>=' ? '≥' : '≤'} ${c.goal.ratio}×`, (pass ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : '')];
}

/** Median CPU time per request of each side, server process and PostgreSQL. */
function cpuRow(c: Comparison): string[] {
  const m = (runs: Measured[], k: 'serverCpuMs' | 'pgCpuMs') => median(runs.map((r) => r[k]));
  const total = (runs: Measured[]) => m(runs, 'serverCpuMs') + m(runs, 'pgCpuMs');
  return [c.label.replace(/, [^,]*$/, ''), fmt(m(c.parley, 'serverCpuMs')), fmt(m(c.parley, 'pgCpuMs')), fmt(m(c.floor, 'serverCpuMs')), fmt(m(c.floor, 'pgCpuMs')), `${fmt(total(c.parley) / total(c.floor), 1)}×`];
}

// ---------------------------------------------------------------------------------------------------

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createBenchDatabase(dir, log);
  postmaster = findPostmaster(pgDataDir);
  log(`seeded ${fixture.big.users} + ${fixture.small.users} users, ${SUBSCRIBE_CHANNELS} channels per organization in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 2 });
  const running: Side[] = [];
  const rows: string[][] = [];
  const comparisons: Comparison[] = [];
  let queriesTable = '';
  try {
    const parley = await startParley(dir, fixture, fixture.databaseUrl, 'parley');
    running.push(parley);
    await sleep(2000);
    const rssStarted = rssMb(parley.process.pid);

    const get = async (url: string) => {
      const res = await fetch(url, { headers: { authorization: basic(fixture.member) } });
      const text = await res.text();
      if (!res.ok) throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`);
      return text;
    };
    const meBody = JSON.parse(await get(`${parley.url}/api/v1/users/me`)) as unknown;
    const floor = await startFloor(dir, fixture, fixture.databaseUrl, meBody, 'floor');
    running.push(floor);
    await sleep(1000);
    const floorRssStarted = rssMb(floor.process.pid);
    const sides = { parley, floor };

    // The /users floor must produce the very body Parley does.
    const parleyUsers = await get(`${parley.url}/api/v1/users`);
    const floorUsers = await get(`${floor.url}/api/v1/users`);
    const usersMb = Buffer.byteLength(parleyUsers) / 1e6;
    log(`GET /users body: Parley ${Buffer.byteLength(parleyUsers)} bytes, floor ${Buffer.byteLength(floorUsers)} bytes, identical: ${parleyUsers === floorUsers ? 'yes' : 'NO'}`);

    const kinds = requestKinds(fixture);
    const resetEvents = async () => {
      await sql.query('TRUNCATE event');
    };
    const resetSubscriptions = (org: OrgFixture) => async () => {
      await sql.query('DELETE FROM subscription WHERE user_id = ANY($1::int[]) AND channel_id = ANY($2::int[])', [org.actors.map((a) => a.id), org.channelIds]);
      await sql.query('TRUNCATE event');
      await sql.query('VACUUM subscription');
    };

    const row = (c: Comparison) => {
      comparisons.push(c);
      rows.push(comparisonRow(c));
    };
    if (ROWS.has('me')) row(await compare(sides, 'GET /users/me, 16 connections, req/s', 'rps', { op: '>=', ratio: 0.5 }, kinds.me, 16));
    if (ROWS.has('users')) row(await compare(sides, `GET /users (${fmt(usersMb, 2)} MB), 4 connections, p50 ms`, 'p50', { op: '<=', ratio: 1.5 }, kinds.users, 4));
    if (ROWS.has('patch')) row(await compare(sides, 'PATCH /streams/{id} description, 8 connections, req/s', 'rps', { op: '>=', ratio: 0.6 }, kinds.patch, 8, resetEvents));
    if (ROWS.has('subscribe') || ROWS.has('subscribe51')) {
      const results: Comparison[] = [];
      const orgs = [[fixture.big, kinds.subscribeBig], [fixture.small, kinds.subscribeSmall]] as const;
      for (const [org, kind] of ROWS.has('subscribe') ? orgs : orgs.slice(1)) {
        const label = `subscribe 1 user to 1 channel, ${org.users.toLocaleString('en')}-user org, 8 connections, req/s`;
        results.push(await compare(sides, label, 'rps', { op: '>=', ratio: 0.5 }, kind, 8, resetSubscriptions(org)));
        await resetSubscriptions(org)();
      }
      results.forEach(row);
      if (results.length === 2) {
        const [big, small] = results as [Comparison, Comparison];
        const p = median(big.parley.map((r) => r.rps)) / median(small.parley.map((r) => r.rps));
        const f = median(big.floor.map((r) => r.rps)) / median(small.floor.map((r) => r.rps));
        rows.push([`subscribe throughput, ${fixture.big.users.toLocaleString('en')} users ÷ ${fixture.small.users} users`, `${fmt(p, 2)}×`, `${fmt(f, 2)}×`, '', '≈ 1× (size-independent)', 'info']);
      }
    }

    // --- memory ------------------------------------------------------------------------------------------
    // Failed requests (e.g. 503 from admission control) are shown: a server that refuses work saves memory.
    const rssRow = (label: string, p: number, f: number, goal: number, failed = 0) => [label, fmt(p), fmt(f), '', `≤ ${goal} MB`, (p <= goal ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : '')];
    rows.push(rssRow('RSS MB, just started', rssStarted, floorRssStarted, 150));
    if (ROWS.has('rss')) {
      log(`idling ${IDLE} s before the after-load RSS`);
      await sleep(IDLE * 1000);
      rows.push(rssRow(`RSS MB, after the load above, then ${IDLE} s idle`, rssMb(parley.process.pid), rssMb(floor.process.pid), 200));
      const hammer = async (side: Side) => {
        const sampler = sampleRss(side.process.pid);
        const r = await runLoad({ ...loadOptions(kinds.users, side, 100, HAMMER), captureFailures: false });
        const samples = sampler.stop();
        await waitIdle(side.process.pid);
        log(`${side.label}: 100 connections GET /users for ${HAMMER} s: ${r.ok} answered, p50 ${fmt(r.p50)} ms, RSS median ${fmt(median(samples))} MB, peak ${fmt(Math.max(...samples))} MB${r.failed ? `, ${r.failed} FAILED` : ''}`);
        return { peak: Math.max(...samples), failed: r.failed };
      };
      const p = await hammer(parley);
      const f = await hammer(floor);
      rows.push(rssRow(`RSS MB, peak while 100 connections GET /users (${HAMMER} s)`, p.peak, f.peak, 300, p.failed));
    }

    // --- PostgreSQL statements per request ------------------------------------------------------------
    if (ROWS.has('queries')) {
      const proxy = await startPgProxy(Number(new URL(fixture.databaseUrl).port));
      const proxied = new URL(fixture.databaseUrl);
      proxied.port = String(proxy.port);
      const counted = { parley: await startParley(dir, fixture, proxied.toString(), 'parley-counted'), floor: await startFloor(dir, fixture, proxied.toString(), meBody, 'floor-counted') };
      running.push(counted.parley, counted.floor);
      const N = Number(process.env.BENCH_QUERY_REQUESTS ?? 20);
      const countRows: string[][] = [];
      // Both servers' background statements (job-queue polling, the listener) pass the proxy too: they
      // are counted over an idle window as long as the requests took, and taken off.
      const count = async (side: Side, kind: RequestKind, reset: () => Promise<void>) => {
        await reset();
        await sleep(300);
        proxy.reset();
        const started = performance.now();
        for (let i = 0; i < N; i++) {
          const req = kind.make(i);
          const res = await fetch(kind.base(side) + kind.path, { method: kind.method, headers: req.headers, ...(req.body !== undefined ? { body: req.body } : {}) });
          await res.arrayBuffer();
          if (!res.ok) log(`${side.label} ${kind.method} ${kind.path}: ${res.status}`);
        }
        await sleep(300);
        const busy = { ...proxy.counts };
        const window = performance.now() - started;
        proxy.reset();
        await sleep(window);
        const idle = { ...proxy.counts };
        return { statements: Math.max(0, busy.statements - idle.statements) / N, roundTrips: Math.max(0, busy.roundTrips - idle.roundTrips) / N };
      };
      const none = async () => {};
      for (const [label, kind, reset] of [
        ['GET /users/me', kinds.me, none],
        ['GET /users', kinds.users, none],
        ['PATCH /streams/{id}', kinds.patch, resetEvents],
        [`subscribe, ${fixture.big.users.toLocaleString('en')}-user org`, kinds.subscribeBig, resetSubscriptions(fixture.big)],
        [`subscribe, ${fixture.small.users}-user org`, kinds.subscribeSmall, resetSubscriptions(fixture.small)],
      ] as const) {
        const p = await count(counted.parley, kind, reset);
        const f = await count(counted.floor, kind, reset);
        countRows.push([label, fmt(p.statements, 1), fmt(p.roundTrips, 1), fmt(f.statements, 1), fmt(f.roundTrips, 1)]);
      }
      await resetSubscriptions(fixture.big)();
      await resetSubscriptions(fixture.small)();
      queriesTable = markdownTable(['request', 'Parley statements', 'Parley round trips', 'floor statements', 'floor round trips'], countRows);
      await proxy.close();
    }

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\``);
    console.log(`${RUNS} runs of ${DURATION} s per side after ${WARMUP} s warm-up; figures are medians; ratio = Parley ÷ floor`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows both sides)\n`);
    console.log(markdownTable(['measurement', 'Parley', 'floor', 'ratio', 'goal', 'pass'], rows));
    if (comparisons.length) {
      console.log('\nCPU time per answered request, ms (medians; PostgreSQL = all processes of the cluster; independent of machine load, unlike the rates):\n');
      console.log(markdownTable(['request', 'Parley', 'its PostgreSQL', 'floor', 'its PostgreSQL', 'total ratio'], comparisons.map(cpuRow)));
    }
    if (queriesTable) console.log(`\nPostgreSQL statements per request (mean of BENCH_QUERY_REQUESTS (20) sequential requests, less the background of an idle window as long; a round trip is a Query or a Sync):\n\n${queriesTable}`);
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    for (const side of running.reverse()) await side.process.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
