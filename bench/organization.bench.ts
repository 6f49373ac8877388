// An organization-sized load test: simulated users behaving like Zulip's clients, ramped up in steps
// until the server no longer keeps up. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/organization.bench.ts
//
// Environment:
//   BENCH_ORG_USERS       users in the seeded organization (3000, at least BENCH_USERS_MAX)
//   BENCH_USERS_MAX       stop the ramp at this many users online (3000; 0: the probe alone)
//   BENCH_STEP            users added per step (250)
//   BENCH_STEP_SECONDS    length of a step, the new users' joining included (45)
//   BENCH_HOLD_SECONDS    once the ramp reaches BENCH_USERS_MAX without failing, hold that many users for
//                         this long and print one more row (60)
//   BENCH_WORKERS         server processes, passed to the server as PARLEY_WORKERS (1)
//   BENCH_GENERATORS      load-generator processes (2)
//   BENCH_PROBE           parked polls of the probe run before the ramp (1000; 0: no probe)
//   BENCH_PG_STATS=<n>    load pg_stat_statements and print, after each step, the n statements that took
//                         PostgreSQL the most time in it (execution and lock waits; 0, the default: off)
//   BENCH_PG_PROXY=1      connect the server to PostgreSQL through the statement-counting proxy (default:
//                         directly; the proxy, one more hop per statement in this process, tripled
//                         the API's latencies: p50 56 against 17 ms at 100 users, 2026-11-27)
//   BENCH_REACT_SECONDS   a simulated user's reaction period (900)
//   BENCH_SEED            the simulated users' choices and moments (1): the same seed, the same load (bench/lib/org-sim-worker.ts)
//   BENCH_DEBUG_DELIVERY=1  for each message not delivered to everyone, name who did not receive it
//   BENCH_KEEP_GOING=1    ramp on after a failing step (to see how the server degrades), up to BENCH_USERS_MAX
//   BENCH_CPU_PROF=<dir>  run the server with --cpu-prof into <dir> (bench/lib/profile-summary.ts)
//   BENCH_KEEP=1          keep the work directory (the server's log)
//   PARLEY_BENCH_SERVER_CMD  how to start the server (bench/lib/processes.ts)
//
// What a simulated user does (bench/lib/org-sim-worker.ts): POST /register (like the mobile app: all
// state, apply_markdown, client_gravatar, slim_presence, modern client capabilities, no subscribers
// lists), then always holds a GET /events long-poll, polling again at once with last_event_id after
// each answer; POST /users/me/presence every 60 s; GET /messages (one of its channels, anchor newest, 50
// before) every 30 s; every ~2 min a message (typing start, ~3 s, typing stop, POST /messages) to the
// everyone channel (BENCH_EVERYONE_SHARE of them, 5 %) or to one of its small channels; every ~15 min
// (BENCH_REACT_SECONDS, 900: Mattermost's load-test-ng reacts 0.13 times per post, in the channel being
// viewed) a reaction on one of the newest messages of the channel it read last; every 30 s POST
// /messages/flags (read) for what it received. Every period is jittered ±20 %, and users join at random moments within the step's first
// two thirds (at most 30 s).
//
// The generator (BENCH_GENERATORS child processes, users dealt round robin) runs at nice 10 (os.setPriority)
// so that the kernel gives the server and PostgreSQL the CPU first; its CPU time is measured from /proc
// and printed. It keeps its work small: keep-alive agents (each user's long-polls on a socket of their
// own, as Zulip's clients keep theirs, so a user's polls stay on one server worker; at most 48 sockets
// for every other request per process), bodies and headers made once per user, poll answers scanned only
// for message ids, one jittered timer per user and activity.
//
// Per step it prints: users online, requests by operation, p50/p99 by operation, p99 delivery (a
// message's send request started → the poll answer carrying it reached every recipient online then),
// messages not delivered to every recipient, CPU split (server process tree, PostgreSQL cluster,
// generator processes + this process) in % of one core, the server's RSS (all its processes) at the
// end and peak, PostgreSQL statements per API request (counted by bench/lib/pg-proxy.ts). The ramp
// stops at the first step with p99 API > 200 ms (polls excluded: they wait by design), p99 delivery > 1 s,
// or any error.
//
// The server's own view (its metrics endpoint, PARLEY_METRICS_PORT, scraped at each step's start and end
// and once a second): the API requests' latency from its request event to the end of the answer (no
// time in the kernel's queues or in the generator's event loop), in the histogram's buckets: how many
// took over 100 ms, 250 ms and 1 s, overall and by operation; the event-loop delay (each second's p99,
// their median over the step, and the maximum); the database pool (connections in use and queries
// waiting for one, mean and maximum of the per-second samples). A tail the server does not see is the
// generator's.
//
// The probe (before the ramp): BENCH_PROBE passive users register and park a poll; then 5 messages to
// the everyone channel, one at a time: statements, server and PostgreSQL CPU per message delivered to
// every parked poll (answers and re-polls included); RSS per parked poll; POST /register latency with
// no one online and with BENCH_PROBE online.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createOrganization, type OrgFixture, type SimUser } from './lib/org-sim-seed.ts';
import { statementStatsReport } from './lib/bench-pg.ts';
import type { ToWorker, WorkerReport } from './lib/org-sim-worker.ts';
import { OPERATIONS } from './lib/org-sim-worker.ts';
import { freePort, findPostmaster, PARLEY_SERVER_CMD, sleep, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { startPgProxy, type PgProxy } from './lib/pg-proxy.ts';
import { fmt, markdownTable, percentile } from './lib/stats.ts';
import { operationOver, scrapeMetrics, serverStep, type MetricsReading } from './lib/server-metrics.ts';

/** The spec's operationId of each simulated operation (the server's metrics are by operationId). */
const OPERATION_IDS: Record<string, string> = {
  register: 'register-queue',
  poll: 'get-events',
  presence: 'update-presence',
  read: 'get-messages',
  typing: 'set-typing-status',
  send: 'send-message',
  react: 'add-reaction',
  mark_read: 'update-message-flags',
};

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const USERS_MAX = Number(process.env.BENCH_USERS_MAX ?? 3000);
const ORG_USERS = Math.max(USERS_MAX, Number(process.env.BENCH_ORG_USERS ?? 3000));
const STEP = Number(process.env.BENCH_STEP ?? 250);
const STEP_SECONDS = Number(process.env.BENCH_STEP_SECONDS ?? 45);
const HOLD_SECONDS = Number(process.env.BENCH_HOLD_SECONDS ?? 60);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const GENERATORS = Math.max(1, Number(process.env.BENCH_GENERATORS ?? 2));
const PROBE = Math.min(ORG_USERS - 1, Number(process.env.BENCH_PROBE ?? 1000));
const PROBE_MESSAGES = 5;
const EVERYONE_SHARE = Number(process.env.BENCH_EVERYONE_SHARE ?? 0.05);
const USE_PROXY = process.env.BENCH_PG_PROXY === '1';
const PG_STATS = Number(process.env.BENCH_PG_STATS ?? 0);
const KEEP_GOING = process.env.BENCH_KEEP_GOING === '1';
const P99_API_MS = 200;
const P99_DELIVERY_MS = 1000;
const NICE = 10;

const log = (line: string) => console.log(`[bench] ${line}`);
const nowMs = () => performance.timeOrigin + performance.now();
const FORM = 'application/x-www-form-urlencoded';
const basic = (p: { email: string; apiKey: string }) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;

// ---------------------------------------------------------------------------------------------------
// /proc helpers (the server may be several processes: its whole tree counts)

function childrenOf(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {}
  }
  return children;
}

function treeRssMb(root: number): number {
  const children = childrenOf();
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  let kb = 0;
  for (const pid of tree) {
    try {
      const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      // Only Node processes count (the shell wrapper of the command holds little; PostgreSQL is not in this tree).
      if (m) kb += Number(m[1]);
    } catch {}
  }
  return kb / 1024;
}

/**
 * The server's heap after a full collection, MB, when it runs bench/lib/org-sim-server.ts (which
 * answers SIGUSR2 with it on its log); null otherwise.
 */
async function heapAfterGcMb(server: ServerProcess): Promise<number | null> {
  // SIGUSR2's default action ends a process: only org-sim-server.ts listens for it.
  if (!PARLEY_SERVER_CMD.includes('org-sim-server')) return null;
  const before = readFileSync(server.logFile, 'utf8').length;
  try {
    process.kill(server.pid, 'SIGUSR2');
  } catch {
    return null;
  }
  for (let i = 0; i < 40; i++) {
    await sleep(100);
    const m = /\[org-sim-server\] memory (\{.*\})/.exec(readFileSync(server.logFile, 'utf8').slice(before));
    if (m) {
      const figures = JSON.parse(m[1]!) as { heapUsed: number; external: number; collected: boolean };
      return figures.collected ? (figures.heapUsed + figures.external) / 1024 / 1024 : null;
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Generator processes

interface Generator {
  child: ChildProcess;
  send(message: ToWorker): void;
  report(): Promise<WorkerReport>;
  receipts(messageId: number): Promise<{ count: number; parked: number }>;
  stop(): Promise<void>;
}

function startGenerator(): Generator {
  const child = fork(path.join(ROOT, 'bench/lib/org-sim-worker.ts'), [], { execArgv: ['--import', 'tsx'], cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    os.setPriority(child.pid!, NICE);
  } catch {}
  const waiting = new Map<string, ((m: Record<string, unknown>) => void)[]>();
  child.on('message', (m: Record<string, unknown>) => {
    const list = waiting.get(String(m['type']));
    list?.shift()?.(m);
  });
  const ask = <T>(message: ToWorker, answer: string) =>
    new Promise<T>((resolve) => {
      const list = waiting.get(answer) ?? [];
      list.push((m) => resolve(m as T));
      waiting.set(answer, list);
      child.send(message);
    });
  return {
    child,
    send: (message) => child.send(message),
    report: () => ask<WorkerReport>({ type: 'report' }, 'report'),
    receipts: (messageId) => ask<{ count: number; parked: number }>({ type: 'receipts', messageId }, 'receipts'),
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

const generatorCpuMs = (gens: Generator[]) => gens.reduce((s, g) => s + (g.child.pid ? treeCpuMs(g.child.pid) : 0), 0);
/** This process: the statement-counting proxy, IPC and the bookkeeping (not niced: the proxy is on the server's path to PostgreSQL). */
const benchCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

function merge(reports: WorkerReport[]): WorkerReport {
  const out: WorkerReport = { type: 'report', latencies: {}, counts: {}, errors: {}, sends: [], receipts: [], online: [], parked: 0, events: {} };
  for (const r of reports) {
    for (const op of OPERATIONS) {
      if (r.latencies[op]) (out.latencies[op] ??= []).push(...r.latencies[op]!);
      if (r.counts[op]) out.counts[op] = (out.counts[op] ?? 0) + r.counts[op]!;
      if (r.errors[op]) out.errors[op] = (out.errors[op] ?? 0) + r.errors[op]!;
    }
    out.firstError ??= r.firstError;
    out.sends.push(...r.sends);
    out.receipts.push(...r.receipts);
    out.online.push(...r.online);
    out.parked += r.parked;
    if (r.receivedBy) (out.receivedBy ??= []).push(...r.receivedBy);
    for (const [type, n] of Object.entries(r.events)) out.events[type] = (out.events[type] ?? 0) + n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

function simpleRequest(url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: body !== undefined ? { ...headers, 'content-type': FORM, 'content-length': String(Buffer.byteLength(body)) } : headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - t0 }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * p50 and p99 of `n` sequential POST /register (each queue deleted again) by `user`, and the CPU of the
 * server (its process tree) and of PostgreSQL per registration (its DELETE included), after WARM_UP
 * registrations (not counted: the first ones make what later ones reuse).
 */
async function registerLatency(api: string, user: SimUser, n: number, serverPid: number, postmaster: number | null): Promise<{ p50: number; p99: number; serverCpuMs: number; pgCpuMs: number }> {
  const WARM_UP = 5;
  const ms: number[] = [];
  const auth = { authorization: basic(user) };
  let server0 = Number.NaN;
  let pg0 = Number.NaN;
  for (let i = -WARM_UP; i < n; i++) {
    if (i === 0) {
      ms.length = 0;
      server0 = treeCpuMs(serverPid);
      pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
    }
    const a = await simpleRequest(`${api}/register`, 'POST', auth, 'apply_markdown=true&client_gravatar=true&slim_presence=true');
    if (a.status !== 200) throw new Error(`register: ${a.status} ${a.body.slice(0, 200)}`);
    ms.push(a.ms);
    const queueId = /"queue_id":"([^"]+)"/.exec(a.body)![1]!;
    await simpleRequest(`${api}/events?queue_id=${queueId}`, 'DELETE', auth);
  }
  const pgMs = (postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0;
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), serverCpuMs: (treeCpuMs(serverPid) - server0) / n, pgCpuMs: pgMs / n };
}

async function probe(parley: ServerProcess, fixture: OrgFixture, proxy: PgProxy | null, postmaster: number | null): Promise<string[]> {
  const api = `${parley.url}/api/v1`;
  const out: string[] = [];
  const sender = fixture.users[fixture.users.length - 1]!;
  const probeUsers = fixture.users.slice(0, PROBE);
  const registerIdle = await registerLatency(api, sender, 20, parley.pid, postmaster);
  await waitIdle(parley.pid);
  const rss0 = treeRssMb(parley.child.pid!);
  const heap0 = await heapAfterGcMb(parley);
  const gens = Array.from({ length: GENERATORS }, startGenerator);
  try {
    const joinSeconds = Math.max(5, PROBE / 50);
    log(`probe: ${PROBE} users register and park a poll over ${joinSeconds} s …`);
    gens.forEach((g, i) =>
      g.send({ type: 'start', api, users: probeUsers.filter((_, k) => k % gens.length === i), joinSeconds, everyoneChannelId: fixture.everyoneChannelId, passive: true, everyoneShare: 0 }),
    );
    const parkedNow = async () => (await Promise.all(gens.map((g) => g.receipts(0)))).reduce((s, r) => s + r.parked, 0);
    const deadline = Date.now() + joinSeconds * 1000 + 120_000;
    while ((await parkedNow()) < PROBE && Date.now() < deadline) await sleep(250);
    const joined = merge(await Promise.all(gens.map((g) => g.report())));
    if ((await parkedNow()) < PROBE) throw new Error(`probe: only ${await parkedNow()} of ${PROBE} polls parked (${joined.firstError ?? 'no error'})`);
    await waitIdle(parley.pid);
    await sleep(2000);
    const rssParked = treeRssMb(parley.child.pid!);
    const heapParked = await heapAfterGcMb(parley);
    const registerBusy = await registerLatency(api, sender, 20, parley.pid, postmaster);
    out.push(
      `POST /register (sequential, 20 each after 5 not counted, all state, ${ORG_USERS.toLocaleString('en')}-user organization): p50 ${fmt(registerIdle.p50)} ms / p99 ${fmt(registerIdle.p99)} ms with nobody online ` +
        `(CPU per registration, its DELETE included: server ${fmt(registerIdle.serverCpuMs)} ms, PostgreSQL ${fmt(registerIdle.pgCpuMs)} ms); ` +
        `p50 ${fmt(registerBusy.p50)} ms / p99 ${fmt(registerBusy.p99)} ms with ${PROBE} online (their ${PROBE} registrations: p50 ${fmt(percentile(joined.latencies.register ?? [], 50))} ms, p99 ${fmt(percentile(joined.latencies.register ?? [], 99))} ms).`,
    );
    out.push(
      `Server RSS ${fmt(rss0)} MB before the probe users registered, ${fmt(rssParked)} MB with ${PROBE} queues and parked polls` +
        (heap0 !== null && heapParked !== null
          ? `; heap + external after a full collection ${fmt(heap0)} → ${fmt(heapParked)} MB: ${fmt(((heapParked - heap0) * 1024 * 1024) / PROBE / 1024)} KB per parked poll (its queue, request and socket included).`
          : ` (${fmt(((rssParked - rss0) * 1024 * 1024) / PROBE / 1024)} KB per parked poll by RSS; run the server with bench/lib/org-sim-server.ts for the heap after a full collection).`),
    );
    // Idle: what parked polls cost with nothing happening.
    proxy?.reset();
    await sleep(5000);
    const idleStatements = proxy ? proxy.counts.statements : Number.NaN;
    const rows: string[][] = [];
    const auth = { authorization: basic(sender) };
    for (let m = 0; m < PROBE_MESSAGES; m++) {
      await waitIdle(parley.pid);
      proxy?.reset();
      const server0 = treeCpuMs(parley.child.pid!);
      const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
      const t0 = performance.now();
      const body = `type=stream&to=${fixture.everyoneChannelId}&topic=probe&content=${encodeURIComponent(`Probe message ${m}: the quick brown fox jumps over the lazy dog.`)}`;
      const sent = await simpleRequest(`${api}/messages`, 'POST', auth, body);
      if (sent.status !== 200) throw new Error(`probe send: ${sent.status} ${sent.body.slice(0, 200)}`);
      const id = Number(/"id":(\d+)/.exec(sent.body)![1]);
      let received = 0;
      let parkedAgain = 0;
      let lastReceipt = Number.NaN;
      for (const until = Date.now() + 60_000; Date.now() < until; ) {
        const r = await Promise.all(gens.map((g) => g.receipts(id)));
        received = r.reduce((s, x) => s + x.count, 0);
        parkedAgain = r.reduce((s, x) => s + x.parked, 0);
        if (received >= PROBE && Number.isNaN(lastReceipt)) lastReceipt = performance.now() - t0;
        if (received >= PROBE && parkedAgain >= PROBE) break;
        await sleep(20);
      }
      // The generators count a poll as soon as it is sent: give the re-polls time to reach the server.
      await sleep(2000);
      await waitIdle(parley.pid);
      const serverMs = treeCpuMs(parley.child.pid!) - server0;
      const pgMs = (postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0;
      const c = proxy?.counts;
      rows.push([String(m + 1), `${received}/${PROBE}`, fmt(lastReceipt), fmt(serverMs), fmt(pgMs), c ? String(c.statements) : '—', c ? fmt(c.statements / PROBE, 3) : '—', c ? String(c.transactions) : '—']);
    }
    out.push(
      `One message to the everyone channel with ${PROBE} polls parked (each answered, then polling again with last_event_id), one message at a time; ` +
        `${idleStatements} statements in 5 s with the polls parked and nothing happening:\n\n` +
        markdownTable(['message', 'received', 'last poll answered, ms', 'server CPU ms', 'PostgreSQL CPU ms', 'statements', 'statements per parked poll', 'transactions'], rows),
    );
  } finally {
    await Promise.all(gens.map((g) => g.stop()));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

interface Send {
  t0: number;
  channelId: number;
  last: number;
  count: number;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'orgbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; server: ${PARLEY_SERVER_CMD}, PARLEY_WORKERS=${WORKERS}; work directory ${dir}`);
  log(`ramp: ${STEP} users per ${STEP_SECONDS} s step up to ${USERS_MAX} of ${ORG_USERS}, hold ${HOLD_SECONDS} s; ${GENERATORS} generator processes at nice ${NICE}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createOrganization(dir, ORG_USERS, log, { statementStats: PG_STATS > 0 });
  const postmaster = findPostmaster(pgDataDir);
  log(`seeded ${fixture.users.length.toLocaleString('en')} users and ${Object.keys(fixture.channelSizes).length} channels in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const url = new URL(fixture.databaseUrl);
  const proxy = USE_PROXY ? await startPgProxy(Number(url.port)) : null;
  if (proxy) url.port = String(proxy.port);
  const metricsPort = await freePort();
  const parley = await startBenchParley({
    label: 'Parley',
    root: ROOT,
    databaseUrl: url.toString(),
    secretKey: fixture.secretKey,
    realmUrl: fixture.realmUrl,
    dataDir: path.join(dir, 'parley'),
    logFile: path.join(dir, 'parley.log'),
    profile: true,
    env: { PARLEY_WORKERS: String(WORKERS), PARLEY_METRICS_PORT: String(metricsPort) },
  });
  const serverRoot = parley.child.pid!;
  log(`Parley answers on ${parley.port} (log ${parley.logFile}); RSS ${fmt(treeRssMb(serverRoot))} MB`);
  const api = `${parley.url}/api/v1`;
  const details: string[] = [];
  let gens: Generator[] = [];
  try {
    if (PROBE > 0) {
      for (const line of await probe(parley, fixture, proxy, postmaster)) {
        console.log(`\n${line}`);
        details.push(line);
      }
      await sleep(1000);
    }

    gens = Array.from({ length: GENERATORS }, startGenerator);
    const channelsOf = new Map(fixture.users.map((u) => [u.id, u.channelIds]));
    /** Epoch ms at which each online user's queue was registered. */
    const registeredAt = new Map<number, number>();
    const everyoneOnline: number[] = []; // registration times, ascending by arrival
    const sends = new Map<number, Send>();
    const receipts = new Map<number, { last: number; count: number }>();
    /** BENCH_DEBUG_DELIVERY=1: who received each message. */
    const receivedBy = new Map<number, Set<number>>();
    const summary: string[][] = [];
    const opRows: string[][] = [];
    const serverRows: string[][] = [];
    let online = 0;
    let failed = false;
    let next = 0;
    const levels: number[] = [];
    for (let level = STEP; level <= USERS_MAX; level += STEP) levels.push(level);
    if (USERS_MAX > 0 && levels.at(-1) !== USERS_MAX) levels.push(USERS_MAX);
    const phases: { users: number; seconds: number; label: string }[] = levels.map((users) => ({ users, seconds: STEP_SECONDS, label: String(users) }));
    if (HOLD_SECONDS > 0 && USERS_MAX > 0) phases.push({ users: USERS_MAX, seconds: HOLD_SECONDS, label: `${USERS_MAX} (hold)` });

    for (const phase of phases) {
      const adding = fixture.users.slice(next, phase.users);
      next = phase.users;
      // Start the phase's figures afresh: what the generators reported since the previous phase's report
      // (while it was being evaluated) counts for no phase's latencies and rates, but its sends, poll
      // receipts, users coming online and errors are kept (dropping them made messages sent around a
      // phase's end look undelivered to some or all of their recipients).
      const between = merge(await Promise.all(gens.map((g) => g.report())));
      const stepStart = nowMs();
      const cpu0 = { server: treeCpuMs(serverRoot), pg: postmaster ? clusterCpuMs(postmaster) : Number.NaN, gen: generatorCpuMs(gens), bench: benchCpuMs() };
      proxy?.reset();
      if (PG_STATS > 0) await statementStatsReport(fixture.databaseUrl, 0); // from the phase's start
      const metrics0: MetricsReading | null = await scrapeMetrics(metricsPort).catch(() => null); // also resets the loop-lag gauges
      const joinSeconds = Math.min(30, (phase.seconds * 2) / 3);
      gens.forEach((g, i) =>
        g.send({ type: 'start', api, users: adding.filter((_, k) => k % gens.length === i), joinSeconds, everyoneChannelId: fixture.everyoneChannelId, passive: false, everyoneShare: EVERYONE_SHARE }),
      );
      let peakRss = 0;
      // The database pool and the event-loop delay, once a second from the metrics endpoint (the pool's
      // gauges are the moment's figures; the delay's cover the second since the previous scrape).
      const samples: MetricsReading[] = [];
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, treeRssMb(serverRoot));
        if (metrics0) void scrapeMetrics(metricsPort).then((m) => samples.push(m), () => undefined);
      }, 1000);
      await sleep(phase.seconds * 1000);
      clearInterval(sampler);
      const r = merge(await Promise.all(gens.map((g) => g.report())));
      const seconds = (nowMs() - stepStart) / 1000;
      r.sends.unshift(...between.sends);
      r.receipts.unshift(...between.receipts);
      r.online.unshift(...between.online);
      if (between.receivedBy) (r.receivedBy ??= []).unshift(...between.receivedBy);
      // (and its errors: any error fails the phase)
      for (const op of OPERATIONS) if (between.errors[op]) r.errors[op] = (r.errors[op] ?? 0) + between.errors[op]!;
      r.firstError = between.firstError ?? r.firstError;
      const cpu = { server: treeCpuMs(serverRoot) - cpu0.server, pg: (postmaster ? clusterCpuMs(postmaster) : Number.NaN) - cpu0.pg, gen: generatorCpuMs(gens) - cpu0.gen, bench: benchCpuMs() - cpu0.bench };
      const statements = proxy?.counts.statements ?? Number.NaN;
      const metrics1 = metrics0 ? await scrapeMetrics(metricsPort).catch(() => null) : null;
      const own = metrics0 && metrics1 ? serverStep(metrics0, metrics1, ['get-events']) : null;
      const rss = treeRssMb(serverRoot);
      peakRss = Math.max(peakRss, rss);

      for (const [userId, at] of r.online) {
        if (!registeredAt.has(userId)) online++;
        registeredAt.set(userId, at);
        everyoneOnline.push(at);
      }
      everyoneOnline.sort((a, b) => a - b);
      for (const [id, at, channelId] of r.sends) sends.set(id, { t0: at, channelId, last: Number.NaN, count: 0 });
      for (const [id, last, count] of r.receipts) {
        const x = receipts.get(id) ?? { last: 0, count: 0 };
        x.last = Math.max(x.last, last);
        x.count += count;
        receipts.set(id, x);
      }
      // Deliveries of the messages sent up to 2 s before the end of the phase (later ones count next phase).
      const horizon = nowMs() - 2000;
      const deliveries: number[] = [];
      let undelivered = 0;
      const shortOnes: string[] = [];
      for (const [id, userId] of r.receivedBy ?? []) {
        let users = receivedBy.get(id);
        if (!users) receivedBy.set(id, (users = new Set()));
        users.add(userId);
      }
      for (const [id, s] of sends) {
        if (s.t0 > horizon) continue;
        sends.delete(id);
        const got = receipts.get(id);
        receipts.delete(id);
        let expected = 0;
        if (s.channelId === fixture.everyoneChannelId) {
          // Users whose queue existed when the send began.
          let lo = 0;
          let hi = everyoneOnline.length;
          while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (everyoneOnline[mid]! < s.t0) lo = mid + 1;
            else hi = mid;
          }
          expected = lo;
        } else {
          for (const [userId, at] of registeredAt) if (at < s.t0 && channelsOf.get(userId)!.includes(s.channelId)) expected++;
        }
        if (!got || got.count < expected) {
          undelivered++;
          // With BENCH_DEBUG_DELIVERY=1: who did not receive it, and when they had come online (ms before the send began).
          const missing = receivedBy.size
            ? [...registeredAt]
                .filter(([userId, at]) => at < s.t0 && channelsOf.get(userId)!.includes(s.channelId) && !receivedBy.get(id)?.has(userId))
                .map(([userId, at]) => `user ${userId} online ${fmt(s.t0 - at)} ms before`)
            : [];
          shortOnes.push(
            `message ${id} (${s.channelId === fixture.everyoneChannelId ? 'everyone' : `channel ${s.channelId}`}, sent ${fmt((horizon + 2000 - s.t0) / 1000)} s before the phase ended): ${got?.count ?? 0} of ${expected} recipients` +
              (missing.length ? `; not received by ${missing.slice(0, 5).join(', ')}` : ''),
          );
        }
        deliveries.push(got ? got.last - s.t0 : Number.POSITIVE_INFINITY);
      }

      const apiLatencies = OPERATIONS.filter((op) => op !== 'poll').flatMap((op) => r.latencies[op] ?? []);
      const apiRequests = OPERATIONS.filter((op) => op !== 'poll').reduce((s, op) => s + (r.counts[op] ?? 0), 0);
      const allRequests = apiRequests + (r.counts.poll ?? 0);
      const errors = OPERATIONS.reduce((s, op) => s + (r.errors[op] ?? 0), 0);
      const p99Api = percentile(apiLatencies, 99);
      const p99Delivery = percentile(deliveries, 99);
      const pass = p99Api <= P99_API_MS && !(p99Delivery > P99_DELIVERY_MS) && errors === 0 && undelivered === 0;
      const pct = (ms: number) => fmt((ms / (seconds * 1000)) * 100, 0);
      summary.push([
        phase.label,
        String(online),
        fmt(allRequests / seconds),
        `${fmt((r.counts.poll ?? 0) / seconds)}`,
        `${fmt(percentile(apiLatencies, 50))} / ${fmt(p99Api)}`,
        `${fmt(p99Delivery)} (${deliveries.length}${undelivered ? `, ${undelivered} short` : ''})`,
        `${pct(cpu.server)} / ${pct(cpu.pg)} / ${pct(cpu.gen)} + ${pct(cpu.bench)}`,
        `${fmt(rss, 0)} / ${fmt(peakRss, 0)}`,
        proxy ? fmt(statements / Math.max(1, allRequests), 2) : '—',
        String(errors),
        pass ? '✓' : '✗',
      ]);
      for (const op of OPERATIONS) {
        const l = r.latencies[op] ?? [];
        const seen = metrics0 && metrics1 && op !== 'poll' ? operationOver(metrics0, metrics1, OPERATION_IDS[op]!, 100) : null;
        opRows.push([
          phase.label,
          op,
          String(r.counts[op] ?? 0),
          op === 'poll' ? '—' : fmt(percentile(l, 50)),
          op === 'poll' ? '—' : fmt(percentile(l, 99)),
          seen ? `${seen.over} of ${seen.requests}` : '—',
          String(r.errors[op] ?? 0),
        ]);
      }
      log(
        `${phase.label} users: ${online} online, ${fmt(allRequests / seconds)} req/s (polls ${fmt((r.counts.poll ?? 0) / seconds)}/s), API p50/p99 ${fmt(percentile(apiLatencies, 50))}/${fmt(p99Api)} ms, ` +
          `delivery p99 ${fmt(p99Delivery)} ms over ${deliveries.length} messages${undelivered ? ` (${undelivered} not delivered to everyone)` : ''}, CPU % server/PostgreSQL/generator+bench ${pct(cpu.server)}/${pct(cpu.pg)}/${pct(cpu.gen)}+${pct(cpu.bench)}, ` +
          `RSS ${fmt(rss, 0)} MB (peak ${fmt(peakRss, 0)}), ${errors} errors${r.firstError ? ` (first: ${r.firstError})` : ''}`,
      );
      for (const line of shortOnes.slice(0, 5)) log(`${phase.label} not delivered to everyone: ${line}`);
      log(
        `${phase.label} events received by type (per second): ` +
          Object.entries(r.events)
            .sort((a, b) => b[1] - a[1])
            .map(([type, n]) => `${type} ${fmt(n / seconds)}`)
            .join(', '),
      );
      if (own) {
        const share = (n: number) => `${n} (${fmt((n / Math.max(1, own.requests)) * 100, 2)} %)`;
        const waiting = samples.map((m) => m.pool.waiting);
        const inUse = samples.map((m) => m.pool.inUse);
        const lagP99 = percentile(samples.map((m) => m.lag.p99 * 1000), 50);
        const lagMax = Math.max(own.lag.max, ...samples.map((m) => m.lag.max)) * 1000;
        const poolText = samples.length ? `${fmt(inUse.reduce((a, b) => a + b, 0) / inUse.length)} / ${fmt(Math.max(...inUse))}; ${fmt(waiting.reduce((a, b) => a + b, 0) / waiting.length)} / ${fmt(Math.max(...waiting))}` : '—';
        log(
          `${phase.label} as the server saw it: ${own.requests} API requests, p99 ≤ ${fmt(own.p99BoundMs)} ms (bucket bound), over 100 ms ${share(own.over100)}, ` +
            `over 250 ms ${share(own.over250)}, over 1 s ${share(own.over1000)}; event-loop delay: p99 of a second (median over the step's seconds) ${fmt(lagP99)} ms, max ${fmt(lagMax)} ms`,
        );
        log(`${phase.label} database pool, sampled every second: connections in use mean/max, queries waiting for one mean/max: ${poolText}`);
        serverRows.push([phase.label, String(own.requests), fmt(own.p99BoundMs), share(own.over100), share(own.over250), `${fmt(lagP99)} / ${fmt(lagMax)}`, poolText]);
      }
      if (PG_STATS > 0) {
        const stats = await statementStatsReport(fixture.databaseUrl, PG_STATS);
        const line =
          `${phase.label}: PostgreSQL ran ${stats.calls.toLocaleString('en')} statements for ${fmt(stats.ms / 1000)} s (lock waits included) in ${fmt(seconds)} s; the ${PG_STATS} that took longest:\n\n` +
          markdownTable(['calls', 'total ms', 'mean ms', 'rows', 'statement'], stats.rows);
        console.log(`\n${line}\n`);
        details.push(line);
      }
      if (!pass) {
        failed = true;
        if (!KEEP_GOING) break;
      }
    }
    const table = markdownTable(
      ['users', 'online', 'req/s', 'polls/s', 'API p50 / p99 ms', 'p99 delivery ms (messages)', 'CPU % server / PostgreSQL / generator + bench process', 'server RSS MB end / peak', 'SQL statements per request', 'errors', 'pass'],
      summary,
    );
    console.log(`\nOrganization of ${ORG_USERS.toLocaleString('en')} users, ${WORKERS} server process(es), goal p99 API ≤ ${P99_API_MS} ms, p99 delivery ≤ ${P99_DELIVERY_MS} ms, no errors:\n\n${table}`);
    console.log(`\nBy operation (p50 / p99 ms as the generator measured them; polls wait by design; over 100 ms as the server measured them):\n\n${markdownTable(['users', 'operation', 'requests', 'p50', 'p99', 'server: over 100 ms', 'errors'], opRows)}`);
    if (serverRows.length) {
      console.log(
        `\nAs the server saw it (its metrics endpoint: API requests from its request event to the end of the answer, polls excluded; event-loop delay per worker):\n\n` +
          markdownTable(['users', 'API requests', 'p99 ≤ ms (bucket bound)', '> 100 ms', '> 250 ms', "event-loop delay: a second's p99 (median) / max ms", 'pool in use mean / max; waiting mean / max'], serverRows),
      );
    }
    const held = summary.filter((s) => s[10] === '✓').at(-1)?.[1];
    const ending = failed ? (KEEP_GOING ? 'The ramp went on past failing steps (BENCH_KEEP_GOING)' : 'The ramp stopped at the first failing step') : 'The ramp reached BENCH_USERS_MAX';
    console.log(`\n${ending}; most users online at a passing step: ${held ?? 'none'} (goal ≥ 2,000).`);
  } finally {
    await Promise.all(gens.map((g) => g.stop()));
    await parley.stop();
    await proxy?.close();
    await stopBenchDatabase(database, dir);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
