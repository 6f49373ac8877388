// The request path before and after: the same requests against two Parley builds, an older checkout
// (BEFORE, PARLEY_BENCH_BEFORE_DIR) and this one (AFTER), in one run, on one seeded database, one server
// under load at a time. It answers "are the request-path figures within 5% of before?" (issue 21, "the
// house": authenticated GET /users/me, POST /typing, and sending). Not a test: it prints figures. From
// the repository root:
//
//   git clone -q <this repository> /tmp/parley-before && git -C /tmp/parley-before checkout -q <commit>
//   (cd /tmp/parley-before && npx --yes pnpm@10.34.9 install --frozen-lockfile && npx --yes pnpm@10.34.9 generate)
//   PARLEY_BENCH_BEFORE_DIR=/tmp/parley-before npx tsx bench/request-path.bench.ts
//
// Environment:
//   PARLEY_BENCH_BEFORE_DIR  (required) an installed checkout of the older commit. Its database schema
//                            must be this checkout's: the bench refuses to run when the two
//                            packages/db/prisma directories differ (BENCH_ALLOW_SCHEMA_DIFF=1 runs anyway).
//   PARLEY_BENCH_SERVER_CMD  how to start Parley, for both sides (run by the shell in each checkout's
//                            root; default `node --expose-gc --import tsx apps/server/src/main.ts`). It
//                            gets DATABASE_URL, PARLEY_SECRET_KEY, PARLEY_DATA_DIR, PARLEY_URL, HOST, PORT,
//                            NODE_ENV=production (no response validation) and PARLEY_RATE_LIMIT=0. A
//                            compiled command (apps/server/scripts/start.mjs) needs a build in both.
//   BENCH_ROWS               comma-separated subset of me,typing,send (all)
//   BENCH_RUNS               measured runs per side and row (7); BENCH_DURATION seconds each (4);
//                            BENCH_WARMUP seconds of warm-up per side and row (3; the send row, at
//                            ~20-100 req/s, BENCH_SEND_WARMUP: 10). Many short runs rather than a few
//                            long ones: bursts of other work on the machine then fall on both sides alike.
//   BENCH_SEND_CONNECTIONS   connections of the send row (4)
//   BENCH_IDLE_SIDE          pause (default): the server not under load is stopped with SIGSTOP for the
//                            run and continued (SIGCONT) before its own; run: it is left running
//   BENCH_KEEP=1             keep the work directory (both servers' logs)
//
// Set-up: bench/lib/messages-seed.ts (as bench/messages.bench.ts): an embedded PostgreSQL with one
// organization of 5,001 users, a channel of 1,000 subscribers and one of 10, and 10,000 history
// messages; it is migrated and seeded by this checkout's code. Both servers start at the beginning,
// each from its own checkout with its own data directory, on the same database; they stay up for the
// whole run. Rows (autocannon in this process; every request answered 200 or counted as failed):
//
//   me      GET /api/v1/users/me as a member (Basic auth), 16 connections, req/s
//   typing  POST /api/v1/typing op=start to=[one member] (direct), 16 connections, req/s
//   send    POST /api/v1/messages to the channel of 10 subscribers (~100 characters, 5 topics in
//           turn), BENCH_SEND_CONNECTIONS connections, req/s; stored events are truncated before
//           every run (as perf.bench.ts does)
//
// For each row: a warm-up run of BEFORE then AFTER, then BENCH_RUNS pairs of runs, one of each side,
// alternating which goes first (BEFORE AFTER, AFTER BEFORE, BEFORE AFTER, ...: a machine that gets
// busier or quieter during the row, or a server still warming up, then favours neither side), each run
// followed by a wait until the server is idle again. Only the server under load runs: the other is
// paused (SIGSTOP of its process group) and continued before its own run, when it first handles what
// it heard meanwhile (the loaded one's NOTIFYs, which PostgreSQL keeps queued for its listener
// connection) until it is idle. Left running, an idle server used 1% of a core during GET /users/me and
// 7-8% during typing and sending (it hears every NOTIFY on the shared database). The table compares the
// medians: AFTER ÷ BEFORE, and "within 5%" when that ratio is ≥ 0.95. Also printed: the median of the
// pairs' ratios, every run's rate, CPU time per answered request of the loaded server and of
// PostgreSQL (steadier than rates on a busy machine), and the CPU the other server used during the
// measured runs.
//
// With BENCH_ALLOW_SCHEMA_DIFF=1, BEFORE runs on AFTER's schema (the database is migrated by this
// checkout): that works while AFTER's migrations only add (columns with defaults, tables, indexes), but
// triggers and functions they replace then apply to BEFORE as well.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, pg, type Person, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, PARLEY_SERVER_CMD, type ServerProcess, sleep, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle } from './lib/processes.ts';
import { runLoad, type LoadOptions, type LoadResult } from './lib/load.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { fmt, markdownTable, median } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const DURATION = Number(process.env.BENCH_DURATION ?? 4);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const SEND_WARMUP = Number(process.env.BENCH_SEND_WARMUP ?? 10);
const SEND_CONNECTIONS = Number(process.env.BENCH_SEND_CONNECTIONS ?? 4);
/** The server not under load is paused with SIGSTOP (default), or left running (BENCH_IDLE_SIDE=run). */
const PAUSE_IDLE = (process.env.BENCH_IDLE_SIDE ?? 'pause') !== 'run';
const ROWS = new Set((process.env.BENCH_ROWS ?? 'me,typing,send').split(',').map((s) => s.trim()));
const HISTORY_MESSAGES = 10_000;
/** AFTER ÷ BEFORE at or above this is "within 5%". */
const WITHIN = 0.95;
/** The idle server using more than this share of one core during a measured run is reported as unfair. */
const IDLE_CPU_LIMIT = 0.03;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const form = (fields: Record<string, string | number>) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
const log = (line: string) => console.log(`[bench] ${line}`);

// ---------------------------------------------------------------------------------------------------
// The two checkouts

/** `git describe`-like identification of a checkout: short commit, and whether its tree has changes. */
function describeCheckout(dir: string): string {
  try {
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return `${commit}${dirty ? ' + uncommitted changes' : ''}`;
  } catch {
    return 'not a git checkout';
  }
}

/** A digest of every file under `dir` (names and contents), to compare the two schemas. */
function treeDigest(dir: string): string {
  const hash = createHash('sha256');
  const walk = (at: string) => {
    for (const name of readdirSync(at).sort()) {
      const full = path.join(at, name);
      if (statSync(full).isDirectory()) walk(full);
      else hash.update(path.relative(dir, full)).update('\0').update(readFileSync(full)).update('\0');
    }
  };
  walk(dir);
  return hash.digest('hex');
}

// ---------------------------------------------------------------------------------------------------
// Measurements

interface Side {
  label: 'before' | 'after';
  root: string;
  server: ServerProcess;
}

interface Measured extends LoadResult {
  /** CPU time per answered request of the loaded server and of PostgreSQL (all the cluster's processes), ms. */
  serverCpuMs: number;
  pgCpuMs: number;
  /** Share of one core the other (idle) server used during the run. */
  idleCpuShare: number;
}

interface Row {
  label: string;
  before: Measured[];
  after: Measured[];
}

interface RequestKind {
  label: string;
  /** Seconds of the warm-up run of each side. */
  warmupS: number;
  options(side: Side, durationS: number): LoadOptions;
  /** Run before every run, warm-ups included. */
  reset(): Promise<void>;
}

/** The postmaster of the benchmark's cluster, for PostgreSQL's CPU time (null: not found, not reported). */
let postmaster: number | null = null;

/** Stops (SIGSTOP) or continues (SIGCONT) a server's whole process group. */
function signalGroup(side: Side, signal: 'SIGSTOP' | 'SIGCONT') {
  try {
    process.kill(-side.server.child.pid!, signal);
  } catch {}
}

/** Makes `side` the only server running (unless BENCH_IDLE_SIDE=run): continues it, pauses the other. */
async function only(side: Side, other: Side): Promise<void> {
  if (!PAUSE_IDLE) return;
  signalGroup(side, 'SIGCONT');
  signalGroup(other, 'SIGSTOP');
  // What it heard while paused (the other's NOTIFYs, queued by PostgreSQL) is handled before the load.
  await waitIdle(side.server.pid);
}

async function measure(side: Side, other: Side, kind: RequestKind, durationS: number): Promise<Measured> {
  await only(side, other);
  await kind.reset();
  const server0 = treeCpuMs(side.server.pid);
  const other0 = treeCpuMs(other.server.pid);
  const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
  const t0 = performance.now();
  const result = await runLoad(kind.options(side, durationS));
  const elapsedMs = performance.now() - t0;
  const serverCpuMs = (treeCpuMs(side.server.pid) - server0) / Math.max(1, result.ok);
  const pgCpuMs = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0) / Math.max(1, result.ok);
  const idleCpuShare = (treeCpuMs(other.server.pid) - other0) / elapsedMs;
  await waitIdle(side.server.pid);
  if (!PAUSE_IDLE) await waitIdle(other.server.pid);
  return { ...result, serverCpuMs, pgCpuMs, idleCpuShare };
}

const show = (r: Measured) =>
  `${fmt(r.rps)} req/s, p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms, idle side ${fmt(r.idleCpuShare * 100, 1)}% of a core` +
  (r.failed ? `, ${r.failed} FAILED (${r.firstFailure ?? 'no body captured'})` : '');

async function compare(before: Side, after: Side, kind: RequestKind): Promise<Row> {
  log(`${kind.label}: warming up (${kind.warmupS} s each)`);
  log(`${kind.label}: warm-up before: ${show(await measure(before, after, kind, kind.warmupS))}`);
  log(`${kind.label}: warm-up after:  ${show(await measure(after, before, kind, kind.warmupS))}`);
  const row: Row = { label: kind.label, before: [], after: [] };
  for (let run = 1; run <= RUNS; run++) {
    let b: Measured;
    let a: Measured;
    if (run % 2 === 1) {
      b = await measure(before, after, kind, DURATION);
      a = await measure(after, before, kind, DURATION);
    } else {
      a = await measure(after, before, kind, DURATION);
      b = await measure(before, after, kind, DURATION);
    }
    row.before.push(b);
    row.after.push(a);
    log(`${kind.label}: run ${run}: before ${show(b)}`);
    log(`${kind.label}: run ${run}: after  ${show(a)}`);
  }
  return row;
}

// ---------------------------------------------------------------------------------------------------
// HTTP from this process (the checks before the load)

function request(agent: http.Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

// ---------------------------------------------------------------------------------------------------

async function main() {
  const beforeDir = process.env.PARLEY_BENCH_BEFORE_DIR ? path.resolve(process.env.PARLEY_BENCH_BEFORE_DIR) : '';
  if (!beforeDir) throw new Error('PARLEY_BENCH_BEFORE_DIR is not set: give it an installed checkout of the older commit (see the header of bench/request-path.bench.ts)');
  if (!existsSync(path.join(beforeDir, 'node_modules'))) throw new Error(`${beforeDir} has no node_modules: run \`npx --yes pnpm@10.34.9 install --frozen-lockfile && npx --yes pnpm@10.34.9 generate\` there`);
  if (path.resolve(beforeDir) === path.resolve(ROOT)) log('warning: PARLEY_BENCH_BEFORE_DIR is this checkout: both sides run the same code');
  const beforeSchema = treeDigest(path.join(beforeDir, 'packages/db/prisma'));
  const afterSchema = treeDigest(path.join(ROOT, 'packages/db/prisma'));
  if (beforeSchema !== afterSchema) {
    const message = `packages/db/prisma differs between ${beforeDir} and ${ROOT}: the two builds may not share one database`;
    if (!process.env.BENCH_ALLOW_SCHEMA_DIFF) throw new Error(`${message} (BENCH_ALLOW_SCHEMA_DIFF=1 to run anyway)`);
    log(`warning: ${message}`);
  }
  const beforeId = describeCheckout(beforeDir);
  const afterId = describeCheckout(ROOT);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'rpbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  log(`before: ${beforeDir} (${beforeId}); after: ${ROOT} (${afterId}); schemas ${beforeSchema === afterSchema ? 'identical' : 'DIFFERENT'}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 2 });
  // Some history, so that the planner has statistics for the message table (see messages.bench.ts).
  await addHistory(sql, fixture, HISTORY_MESSAGES, fixture.member.id);
  log(`seeded ${fixture.users.toLocaleString('en')} users, ${HISTORY_MESSAGES.toLocaleString('en')} messages in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const sides: Side[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  try {
    const start = async (label: Side['label'], root: string): Promise<Side> => {
      const started = performance.now();
      const server = await startBenchParley({
        label: `Parley (${label})`,
        root,
        databaseUrl: fixture.databaseUrl,
        secretKey: fixture.secretKey,
        realmUrl: fixture.realmUrl,
        dataDir: path.join(dir, label),
        logFile: path.join(dir, `${label}.log`),
        profile: false,
      });
      log(`${label}: answered after ${Math.round(performance.now() - started)} ms (pid ${server.pid} listens on ${server.port}; log ${server.logFile})`);
      const side = { label, root, server };
      sides.push(side);
      return side;
    };
    // One at a time, so that neither start-up competes with the other.
    const before = await start('before', beforeDir);
    const after = await start('after', ROOT);
    await sleep(2000);
    await waitIdle(before.server.pid);
    await waitIdle(after.server.pid);

    const member = { authorization: basic(fixture.member) };
    const typingBody = form({ op: 'start', to: JSON.stringify([fixture.crowd[1]!.id]) });
    const sendBody = (n: number) =>
      form({
        type: 'stream',
        to: fixture.tenChannelId,
        topic: `send bench ${n % 5}`,
        content: `Send benchmark message ${n}: the quick brown fox jumps over the lazy dog, twice, and the bench times it.`,
      });
    const none = async () => {};
    const kinds: Record<string, RequestKind> = {
      me: {
        label: 'GET /users/me, 16 connections, req/s',
        warmupS: WARMUP,
        options: (side, durationS) => ({ url: `${side.server.url}/api/v1/users/me`, method: 'GET', headers: member, connections: 16, durationS }),
        reset: none,
      },
      typing: {
        label: 'POST /typing (direct, 1 recipient), 16 connections, req/s',
        warmupS: WARMUP,
        options: (side, durationS) => ({ url: `${side.server.url}/api/v1/typing`, method: 'POST', headers: { ...member, 'content-type': FORM }, body: typingBody, connections: 16, durationS, captureFailures: true }),
        reset: none,
      },
      send: {
        label: `POST /messages (channel of 10 subscribers), ${SEND_CONNECTIONS} connections, req/s`,
        warmupS: SEND_WARMUP,
        options: (side, durationS) => ({
          url: `${side.server.url}/api/v1/messages`,
          method: 'POST',
          headers: { ...member, 'content-type': FORM },
          connections: SEND_CONNECTIONS,
          durationS,
          captureFailures: true,
          setup: (n) => ({ body: sendBody(n) }),
        }),
        reset: async () => {
          await sql.query('TRUNCATE event');
        },
      },
    };

    // Both sides answer every request of the bench, and alike.
    const answers: Record<string, string[]> = { me: [], typing: [], send: [] };
    for (const side of [before, after]) {
      const api = `${side.server.url}/api/v1`;
      const checks = [
        ['me', request(agent, `${api}/users/me`, { headers: member })],
        ['typing', request(agent, `${api}/typing`, { method: 'POST', headers: { ...member, 'content-type': FORM }, body: typingBody })],
        ['send', request(agent, `${api}/messages`, { method: 'POST', headers: { ...member, 'content-type': FORM }, body: sendBody(0) })],
      ] as const;
      for (const [name, pending] of checks) {
        const answer = await pending;
        if (answer.status !== 200) throw new Error(`${side.label}: ${name}: ${answer.status} ${answer.body.slice(0, 300)}`);
        answers[name]!.push(answer.body);
      }
    }
    log(`GET /users/me: ${answers.me![0]!.length} bytes before, ${answers.me![1]!.length} after, identical: ${answers.me![0] === answers.me![1] ? 'yes' : 'NO'}`);
    log(`POST /typing: before ${answers.typing![0]} | after ${answers.typing![1]}`);
    log(`POST /messages: before ${answers.send![0]} | after ${answers.send![1]}`);

    const rows: Row[] = [];
    for (const name of ['me', 'typing', 'send']) if (ROWS.has(name)) rows.push(await compare(before, after, kinds[name]!));

    const m = (runs: Measured[], k: 'rps' | 'serverCpuMs' | 'pgCpuMs') => median(runs.map((r) => r[k]));
    const table = rows.map((row) => {
      const b = m(row.before, 'rps');
      const a = m(row.after, 'rps');
      const ratio = a / b;
      // Each AFTER run against the BEFORE run just before it: what the machine did meanwhile weighs on both.
      const paired = row.after.map((r, i) => r.rps / row.before[i]!.rps);
      const cpu = (runs: Measured[]) => m(runs, 'serverCpuMs') + m(runs, 'pgCpuMs');
      const failed = [...row.before, ...row.after].reduce((sum, r) => sum + r.failed, 0);
      return [
        row.label,
        fmt(b),
        fmt(a),
        `${fmt(ratio, 3)}×`,
        (ratio >= WITHIN ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : ''),
        `${fmt(median(paired), 3)}× (${fmt(Math.min(...paired), 2)}–${fmt(Math.max(...paired), 2)})`,
        `${fmt(cpu(row.after) / cpu(row.before), 3)}×`,
      ];
    });
    const runsTable = rows.map((row) => [row.label.replace(/, [^,]*$/, ''), row.before.map((r) => fmt(r.rps)).join(', '), row.after.map((r) => fmt(r.rps)).join(', ')]);
    const cpuTable = rows.map((row) => {
      const total = (runs: Measured[]) => m(runs, 'serverCpuMs') + m(runs, 'pgCpuMs');
      return [row.label.replace(/, [^,]*$/, ''), fmt(m(row.before, 'serverCpuMs')), fmt(m(row.before, 'pgCpuMs')), fmt(m(row.after, 'serverCpuMs')), fmt(m(row.after, 'pgCpuMs')), `${fmt(total(row.after) / total(row.before), 2)}×`];
    });
    const idle = rows.flatMap((row) => [...row.before, ...row.after].map((r) => r.idleCpuShare));
    const idleMax = Math.max(0, ...idle);

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\``);
    console.log(`before: ${beforeDir} (${beforeId}); after: ${ROOT} (${afterId})`);
    console.log(`${RUNS} pairs of ${DURATION} s runs per row (before first in odd pairs, after first in even ones) after a warm-up of ${WARMUP} s (send: ${SEND_WARMUP} s) per side; medians; ratio = after ÷ before; within 5% = ratio ≥ ${WITHIN}`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows both sides)\n`);
    console.log(markdownTable(['request', 'before', 'after', 'ratio', 'within 5%', 'paired ratios, median (range)', 'CPU per request, after ÷ before'], table));
    console.log('\nratio: of the medians; paired ratios: AFTER run i ÷ BEFORE run i; CPU per request: the server\'s + PostgreSQL\'s, medians (lower is better)');
    console.log('\nEvery run, req/s, pair by pair:\n');
    console.log(markdownTable(['request', 'before', 'after'], runsTable));
    console.log('\nCPU time per answered request, ms (medians; PostgreSQL = all processes of the cluster):\n');
    console.log(markdownTable(['request', 'before', 'its PostgreSQL', 'after', 'its PostgreSQL', 'total ratio'], cpuTable));
    console.log(
      `\nThe other server (${PAUSE_IDLE ? 'paused with SIGSTOP' : 'left running, idle'}) used at most ${fmt(idleMax * 100, 1)}% of a core during a measured run (median ${fmt(median(idle) * 100, 1)}%)` +
        (idleMax > IDLE_CPU_LIMIT ? ` — over ${IDLE_CPU_LIMIT * 100}%: it competed with the measured one` : ''),
    );
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    agent.destroy();
    for (const side of sides) signalGroup(side, 'SIGCONT');
    for (const side of sides.reverse()) await side.server.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
