// Messages and real-time events: typing throughput against a bare Express floor, sending latency at
// 1,000 and 10 subscribers, delivery of messages to 1,000 parked long-polls (latency and the server's
// memory), and reading a topic's newest page out of 1,000,000 stored messages. Not a test: it prints
// figures. From the repository root:
//
//   npx tsx bench/messages.bench.ts
//
// Environment:
//   PARLEY_BENCH_PARLEY_SERVER_CMD  how to start Parley (run by the shell in the repository root; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`). It gets DATABASE_URL,
//                            PARLEY_SECRET_KEY, PARLEY_DATA_DIR, PARLEY_URL, HOST, PORT,
//                            NODE_ENV=production (no response validation) and PARLEY_RATE_LIMIT=0.
//   BENCH_ROWS               comma-separated subset of typing,send,delivery,history (all)
//   BENCH_DURATION           seconds per measured run of typing and send (5); BENCH_WARMUP per side (2)
//   BENCH_DELIVERY_MESSAGES  messages of the delivery row (30, after 3 warm-up messages)
//   BENCH_HISTORY_MESSAGES   messages stored for the history row (1000000)
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> when its command starts with `node`
//                            (summarise with `npx tsx bench/lib/profile-summary.ts <dir>/*.cpuprofile`)
//   BENCH_KEEP=1             keep the work directory (Parley's log)
//
// Set-up (bench/lib/messages-seed.ts): an embedded PostgreSQL with one organization of 5,001 users,
// a public channel with 1,000 subscribers (all with API keys), one with 10, and 5 channels holding the
// history messages (written with SQL before Parley starts; 10,000 when the history row is not run).
// Parley runs as a separate Node process (NODE_ENV=production); the typing floor
// (bench/lib/messages-floor.ts) as another; autocannon and the other clients run in this process, so
// their CPU time competes with the server's on a small machine. CPU time per request is read from
// /proc for the server process and for PostgreSQL (bench/lib/cpu.ts: all processes of the cluster,
// including backends that exit during a run).
//
// Rows:
//   typing    POST /typing (op=start, to=[one user]) with 16 connections, req/s, against the floor: a
//             warm-up run of each side, then three alternating runs, medians.
//   send      POST /messages (stream, ~100 characters) to the 1,000-subscriber channel and to the
//             10-subscriber one, one request at a time: a warm-up run of each, three alternating runs,
//             percentiles over every request of the runs. Then 20 of the 1,000 subscribers each read
//             the channel twice: the first read writes their deferred rows for every message sent.
//   delivery  1,000 queues (POST /register, event_types ["message"]) of the 1,000 subscribers, each
//             with a parked GET /events re-parked with last_event_id as soon as its answer arrives;
//             then 30 messages to the channel, one at a time (each once the server is idle again):
//             time from the send request's start to each poll's answer, and the server's RSS. Node CPU
//             per woken poll (answer + re-poll): the CPU per message less the background (CPU per second
//             with the polls parked and nothing sent, times the time taken) and less the send alone
//             (10 messages before the polls park), ÷ 1,000; against the floor (bench/lib/poll-floor.ts:
//             a bare node:http server answering the same 1,000 polls with the same envelope and event,
//             and taking their next polls, while Parley is paused), goal ≤ 0.15 ms.
//   history   GET /messages, narrow channel + topic, anchor=newest, num_before=50, num_after=0, as a
//             subscriber, 200 sequential requests after 20, with 1,000,000 messages stored.
import { execSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, CROWD, pg, type Person, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, freePort, PARLEY_SERVER_CMD, rssMb, sampleRss, type ServerProcess, sleep, startBenchParley, startServer, stopBenchDatabase, treeCpuMs, waitIdle } from './lib/processes.ts';
import { runLoad, type LoadOptions, type LoadResult } from './lib/load.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';
import { clusterCpuMs } from './lib/cpu.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FLOOR_CMD = 'node --import tsx bench/lib/messages-floor.ts';
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const RUNS = 3;
const DELIVERY_MESSAGES = Number(process.env.BENCH_DELIVERY_MESSAGES ?? 30);
const DELIVERY_WARMUP = 3;
const HISTORY_MESSAGES = Number(process.env.BENCH_HISTORY_MESSAGES ?? 1_000_000);
const HISTORY_REQUESTS = 200;
const HISTORY_WARMUP = 20;
const ROWS = new Set((process.env.BENCH_ROWS ?? 'typing,send,delivery,history').split(',').map((s) => s.trim()));

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const form = (fields: Record<string, string | number>) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
const log = (line: string) => console.log(`[bench] ${line}`);

/** A process and its descendants (pgrep -P), to pause a server and its workers. */
function processTree(root: number): number[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) {
    try {
      out.push(...execSync(`pgrep -P ${out[i]}`).toString().split(/\s+/).filter(Boolean).map(Number));
    } catch {} // (none)
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// HTTP from this process (sequential latency, registrations, long-polls)

interface Answer {
  status: number;
  body: string;
  /** performance.now() when the last byte of the answer arrived. */
  at: number;
}

/** One request on `agent`; resolves when the whole answer has arrived. */
function request(agent: http.Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

async function json(agent: http.Agent, url: string, options: Parameters<typeof request>[2]): Promise<Record<string, unknown>> {
  const answer = await request(agent, url, options);
  if (answer.status !== 200) throw new Error(`${options.method ?? 'GET'} ${url}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return JSON.parse(answer.body) as Record<string, unknown>;
}

// ---------------------------------------------------------------------------------------------------
// Measurements

/** The CPU time the server process and PostgreSQL (all its processes) spent per answered request. */
interface Cpu {
  serverCpuMs: number;
  pgCpuMs: number;
}

/** The postmaster of the benchmark's cluster, for PostgreSQL's CPU time (null: not found, not reported). */
let postmaster: number | null = null;

async function withCpu<T extends { ok: number }>(pid: number, work: () => Promise<T>): Promise<T & Cpu> {
  const server0 = treeCpuMs(pid);
  const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
  const result = await work();
  const serverCpuMs = (treeCpuMs(pid) - server0) / Math.max(1, result.ok);
  const pgCpuMs = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0) / Math.max(1, result.ok);
  await waitIdle(pid);
  return { ...result, serverCpuMs, pgCpuMs };
}

type Measured = LoadResult & Cpu;

/** Sequential requests for `durationS` seconds, or `count` of them: every latency (ms). */
interface Sequence {
  latencies: number[];
  ok: number;
  failed: number;
  firstFailure?: string;
}

async function sequential(agent: http.Agent, make: (n: number) => { url: string; method: string; headers: Record<string, string>; body?: string }, limit: { durationS?: number; count?: number }): Promise<Sequence> {
  const out: Sequence = { latencies: [], ok: 0, failed: 0 };
  const deadline = performance.now() + (limit.durationS ?? Infinity) * 1000;
  for (let n = 0; n < (limit.count ?? Infinity) && performance.now() < deadline; n++) {
    const r = make(n);
    const start = performance.now();
    const answer = await request(agent, r.url, r);
    if (answer.status === 200) {
      out.ok++;
      out.latencies.push(answer.at - start);
    } else {
      out.failed++;
      out.firstFailure ??= `${answer.status} ${answer.body.slice(0, 300)}`;
    }
  }
  return out;
}

const cpuCells = (runs: Cpu[]) => [fmt(median(runs.map((r) => r.serverCpuMs))), fmt(median(runs.map((r) => r.pgCpuMs)))];

// ---------------------------------------------------------------------------------------------------

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  postmaster = findPostmaster(pgDataDir);
  log(`seeded ${fixture.users.toLocaleString('en')} users, channels of ${CROWD} and 10 subscribers in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  // Without the history row, 10,000 messages all the same: with an empty message table at ANALYZE,
  // PostgreSQL checks user_message's foreign key to message with a sequential scan, and sending gets
  // slower with every message sent (until autovacuum analyzes the table).
  const historyMessages = ROWS.has('history') ? HISTORY_MESSAGES : 10_000;
  {
    const t = performance.now();
    await addHistory(sql, fixture, historyMessages, fixture.member.id, log);
    log(`stored ${historyMessages.toLocaleString('en')} history messages in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  const running: ServerProcess[] = [];
  const rows: string[][] = [];
  const details: string[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  try {
    // --- Parley ---------------------------------------------------------------------------------------
    const started = performance.now();
    const parley = await startBenchParley({
      label: 'Parley',
      root: ROOT,
      databaseUrl: fixture.databaseUrl,
      secretKey: fixture.secretKey,
      realmUrl: fixture.realmUrl,
      dataDir: path.join(dir, 'parley'),
      logFile: path.join(dir, 'parley.log'),
      profile: true,
    });
    running.push(parley);
    log(`Parley answered after ${Math.round(performance.now() - started)} ms (pid ${parley.pid} listens on ${parley.port}; log ${parley.logFile})`);
    const api = `${parley.url}/api/v1`;
    const member = { authorization: basic(fixture.member) };
    await sleep(2000);
    const rssStarted = rssMb(parley.pid);
    log(`Parley RSS just started: ${fmt(rssStarted)} MB`);

    // --- typing ---------------------------------------------------------------------------------------
    if (ROWS.has('typing')) {
      const floorPort = await freePort();
      const floor = await startServer({
        label: 'floor',
        command: FLOOR_CMD,
        cwd: ROOT,
        env: { ...process.env, NODE_ENV: 'production', BENCH_FLOOR_PORT: String(floorPort) },
        port: floorPort,
        readyPath: '/ready',
        logFile: path.join(dir, 'floor.log'),
      });
      running.push(floor);
      const body = form({ op: 'start', to: JSON.stringify([fixture.crowd[1]!.id]) });
      const options = (base: string, durationS: number): LoadOptions => ({
        url: `${base}/api/v1/typing`,
        method: 'POST',
        headers: { ...member, 'content-type': FORM },
        body,
        connections: 16,
        durationS,
        captureFailures: true,
      });
      const parleyAnswer = await request(agent, `${api}/typing`, { method: 'POST', headers: { ...member, 'content-type': FORM }, body });
      const floorAnswer = await request(agent, `${floor.url}/api/v1/typing`, { method: 'POST', headers: { ...member, 'content-type': FORM }, body });
      log(`POST /typing: Parley ${parleyAnswer.status} ${parleyAnswer.body} | floor ${floorAnswer.status} ${floorAnswer.body}`);
      const measure = (side: ServerProcess, durationS: number) => withCpu(side.pid, () => runLoad(options(side.url, durationS)));
      log('typing: warming up');
      await measure(parley, WARMUP);
      await measure(floor, WARMUP);
      const p: Measured[] = [];
      const f: Measured[] = [];
      const show = (r: Measured) =>
        `${fmt(r.rps)} req/s, p50 ${fmt(r.p50)} ms, p99 ${fmt(r.p99)} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms` +
        (r.failed ? `, ${r.failed} FAILED (${r.firstFailure ?? 'no body captured'})` : '');
      for (let run = 1; run <= RUNS; run++) {
        p.push(await measure(parley, DURATION));
        f.push(await measure(floor, DURATION));
        log(`typing: run ${run}: Parley ${show(p.at(-1)!)} | floor ${show(f.at(-1)!)}`);
      }
      const pr = median(p.map((r) => r.rps));
      const fr = median(f.map((r) => r.rps));
      const failed = [...p, ...f].reduce((s, r) => s + r.failed, 0);
      rows.push(['POST /typing (direct, 1 recipient), 16 connections, req/s', fmt(pr), fmt(fr), `${fmt(pr / fr, 2)}×`, '≥ 0.5×', (pr / fr >= 0.5 ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : '')]);
      details.push(
        `POST /typing, CPU time per answered request, ms (medians; PostgreSQL = all processes of the cluster):\n\n` +
          markdownTable(['request', 'Parley', 'its PostgreSQL', 'floor', 'its PostgreSQL'], [['POST /typing', ...cpuCells(p), ...cpuCells(f)]]),
      );
      await floor.stop();
      running.splice(running.indexOf(floor), 1);
    }

    // --- send -----------------------------------------------------------------------------------------
    if (ROWS.has('send')) {
      const make = (channelId: number) => (n: number) => ({
        url: `${api}/messages`,
        method: 'POST',
        headers: { ...member, 'content-type': FORM },
        body: form({
          type: 'stream',
          to: channelId,
          topic: `send bench ${n % 5}`,
          content: `Send benchmark message ${n}: the quick brown fox jumps over the lazy dog, twice, and the bench times it.`,
        }),
      });
      const sides = [
        { label: `${CROWD.toLocaleString('en')} subscribers`, make: make(fixture.crowdChannelId), runs: [] as (Sequence & Cpu)[] },
        { label: '10 subscribers', make: make(fixture.tenChannelId), runs: [] as (Sequence & Cpu)[] },
      ];
      log('send: warming up');
      for (const side of sides) await withCpu(parley.pid, () => sequential(agent, side.make, { durationS: WARMUP }));
      for (let run = 1; run <= RUNS; run++) {
        const line: string[] = [];
        for (const side of sides) {
          const r = await withCpu(parley.pid, () => sequential(agent, side.make, { durationS: DURATION }));
          side.runs.push(r);
          line.push(
            `${side.label}: ${r.ok} sent, p50 ${fmt(percentile(r.latencies, 50))} ms, p99 ${fmt(percentile(r.latencies, 99))} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms` +
              (r.failed ? `, ${r.failed} FAILED (${r.firstFailure})` : ''),
          );
        }
        log(`send: run ${run}: ${line.join(' | ')}`);
      }
      const all = (side: (typeof sides)[number]) => side.runs.flatMap((r) => r.latencies);
      const [crowd, ten] = sides as [(typeof sides)[number], (typeof sides)[number]];
      const p50 = percentile(all(crowd), 50);
      const p50ten = percentile(all(ten), 50);
      const failed = [...crowd.runs, ...ten.runs].reduce((s, r) => s + r.failed, 0);
      const note = failed ? ` (${failed} failed requests)` : '';
      rows.push([`POST /messages to a channel of ${CROWD.toLocaleString('en')} subscribers, sequential, p50 ms`, fmt(p50), '', '', '≤ 40 ms', (p50 <= 40 ? '✓' : '✗') + note]);
      rows.push([`POST /messages p50, ${CROWD.toLocaleString('en')} ÷ 10 subscribers`, fmt(p50), fmt(p50ten), `${fmt(p50 / p50ten, 2)}×`, '≤ 2×', (p50 / p50ten <= 2 ? '✓' : '✗') + note]);
      // Where the recipients' rows went: each writes its own when it next reads (deferred rows).
      const sentToCrowd = all(crowd).length + 1;
      const readers = fixture.crowd.slice(1, 21);
      const firstReads: number[] = [];
      const secondReads: number[] = [];
      const page = `${api}/messages?${form({ anchor: 'newest', num_before: 50, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: fixture.crowdChannelId }]) })}`;
      for (const reader of readers) {
        for (const into of [firstReads, secondReads]) {
          const start = performance.now();
          const answer = await request(agent, page, { headers: { authorization: basic(reader) } });
          if (answer.status !== 200) throw new Error(`GET /messages as a subscriber: ${answer.status} ${answer.body.slice(0, 300)}`);
          into.push(answer.at - start);
        }
      }
      rows.push([`GET /messages (newest 50 of the channel) by a subscriber, first read after ~${sentToCrowd.toLocaleString('en')} sends (writes their rows), p50 ms`, fmt(percentile(firstReads, 50)), fmt(percentile(secondReads, 50)), `${fmt(percentile(firstReads, 50) / percentile(secondReads, 50), 2)}×`, '', 'info']);
      details.push(
        `Deferred rows: ${readers.length} subscribers of the 1,000-subscriber channel, one after the other, each read the channel's newest 50 messages twice after the send runs. The first read writes the subscriber's rows for every message sent to the channel during the runs (about ${sentToCrowd.toLocaleString('en')}); the second finds them written. p50 ${fmt(percentile(firstReads, 50))} ms / ${fmt(percentile(secondReads, 50))} ms, max ${fmt(Math.max(...firstReads))} ms / ${fmt(Math.max(...secondReads))} ms.`,
      );
      details.push(
        `POST /messages (stream, ~100 characters, no mentions), sequential, ${RUNS} alternating runs of ${DURATION} s per channel; percentiles over every request of the runs, CPU medians of the runs, ms:\n\n` +
          markdownTable(
            ['channel', 'requests', 'p50', 'p95', 'p99', 'Parley CPU/request', 'PostgreSQL CPU/request'],
            sides.map((s) => [s.label, String(all(s).length), fmt(percentile(all(s), 50)), fmt(percentile(all(s), 95)), fmt(percentile(all(s), 99)), ...cpuCells(s.runs)]),
          ),
      );
    }

    // --- delivery -------------------------------------------------------------------------------------
    if (ROWS.has('delivery')) {
      await sql.query('TRUNCATE event');
      const pollAgentOptions = { keepAlive: true, maxSockets: CROWD + 100, maxFreeSockets: CROWD + 100, timeout: 0 };
      let pollAgent = new http.Agent(pollAgentOptions);
      // Register one queue per crowd member, 8 at a time.
      log(`delivery: registering ${CROWD} queues …`);
      const queues: { person: Person; queueId: string; lastEventId: number }[] = [];
      const registerLatencies: number[] = [];
      let next = 0;
      const tr = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = next++; i < fixture.crowd.length; i = next++) {
            const person = fixture.crowd[i]!;
            const start = performance.now();
            const body = await json(agent, `${api}/register`, { method: 'POST', headers: { authorization: basic(person), 'content-type': FORM }, body: form({ event_types: JSON.stringify(['message']) }) });
            registerLatencies.push(performance.now() - start);
            queues.push({ person, queueId: body['queue_id'] as string, lastEventId: body['last_event_id'] as number });
          }
        }),
      );
      log(`delivery: ${queues.length} queues registered in ${((performance.now() - tr) / 1000).toFixed(1)} s (POST /register p50 ${fmt(percentile(registerLatencies, 50))} ms, 8 at a time)`);
      await waitIdle(parley.pid);
      // The send alone (every queue registered, no poll parked): what a message costs before any poll
      // is woken, to be taken from the CPU per message below.
      const SEND_ALONE = 10;
      let cpuSend0 = 0;
      let sendT0 = 0;
      for (let k = -3; k < SEND_ALONE; k++) {
        if (k === 0) {
          await waitIdle(parley.pid);
          cpuSend0 = treeCpuMs(parley.pid);
          sendT0 = performance.now();
        }
        const answer = await request(agent, `${api}/messages`, { method: 'POST', headers: { ...member, 'content-type': FORM }, body: form({ type: 'stream', to: fixture.crowdChannelId, topic: 'delivery', content: `Sent before the polls park (${k}): the quick brown fox jumps over the lazy dog while nobody waits.` }) });
        if (answer.status !== 200) throw new Error(`POST /messages: ${answer.status} ${answer.body.slice(0, 300)}`);
      }
      await waitIdle(parley.pid);
      const sendAloneCpu = (treeCpuMs(parley.pid) - cpuSend0) / SEND_ALONE;
      const sendAloneMs = (performance.now() - sendT0) / SEND_ALONE;
      log(`delivery: a message to the channel with no poll parked costs ${fmt(sendAloneCpu)} ms of Parley CPU`);
      await sleep(2000);
      const rssBefore = rssMb(parley.pid);

      // The long-polls: each re-parks as soon as its answer has arrived.
      const sentAt = new Map<number, number>(); // message number → when its send started
      const arrivals = new Map<number, number[]>(); // message number → latency per recipient
      let stopping = false;
      let heartbeats = 0;
      let retries = 0;
      let firstPollFailure: string | undefined;
      const MARK = /^Delivery benchmark message #(\d+):/;
      let sampleEvent: string | undefined; // one message event as Parley answered it (for the floor)
      const poll = (q: (typeof queues)[number], base = api) => {
        if (stopping) return;
        request(pollAgent, `${base}/events?${form({ queue_id: q.queueId, last_event_id: q.lastEventId })}`, { headers: { authorization: basic(q.person) } }).then(
          (answer) => {
            if (answer.status !== 200) {
              retries++;
              firstPollFailure ??= `${answer.status} ${answer.body.slice(0, 300)}`;
              setTimeout(() => poll(q, base), 1000);
              return;
            }
            const events = (JSON.parse(answer.body) as { events: { id: number; type: string; message?: { content: string } }[] }).events;
            for (const e of events) {
              q.lastEventId = Math.max(q.lastEventId, e.id);
              if (e.type === 'heartbeat') heartbeats++;
              const m = e.type === 'message' ? MARK.exec(e.message?.content ?? '') : null;
              if (m && sampleEvent === undefined && q.person.id !== fixture.member.id) sampleEvent = JSON.stringify(e);
              if (m) {
                const k = Number(m[1]);
                const list = arrivals.get(k) ?? [];
                list.push(answer.at - sentAt.get(k)!);
                arrivals.set(k, list);
              }
            }
            poll(q, base);
          },
          (error: Error) => {
            if (stopping) return;
            retries++;
            firstPollFailure ??= error.message;
            setTimeout(() => poll(q, base), 1000);
          },
        );
      };
      log(`delivery: parking ${queues.length} long-polls (RSS ${fmt(rssBefore)} MB before)`);
      for (const q of queues) poll(q);
      await sleep(1000);
      await waitIdle(parley.pid);
      await sleep(2000);
      const rssParked = rssMb(parley.pid);
      log(`delivery: RSS with ${queues.length} polls parked ${fmt(rssParked)} MB (+${fmt(rssParked - rssBefore)} MB)`);

      let loopT0 = 0;

      const sampler = sampleRss(parley.pid);
      const sendLatencies: number[] = [];
      const lastArrival: number[] = [];
      let missing = 0;
      const cpu0 = { server: 0, pg: Number.NaN };
      for (let k = 1 - DELIVERY_WARMUP; k <= DELIVERY_MESSAGES; k++) {
        if (k === 1) {
          // CPU is counted from the first measured message.
          cpu0.server = treeCpuMs(parley.pid);
          cpu0.pg = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
          loopT0 = performance.now();
        }
        // The previous message's re-polls are parked again (the server is idle).
        await waitIdle(parley.pid);
        await sleep(200);
        const start = performance.now();
        sentAt.set(k, start);
        const answer = await request(agent, `${api}/messages`, {
          method: 'POST',
          headers: { ...member, 'content-type': FORM },
          body: form({ type: 'stream', to: fixture.crowdChannelId, topic: 'delivery', content: `Delivery benchmark message #${k}: the quick brown fox jumps over the lazy dog while 1,000 polls wait.` }),
        });
        if (answer.status !== 200) throw new Error(`POST /messages: ${answer.status} ${answer.body.slice(0, 300)}`);
        if (k >= 1) sendLatencies.push(answer.at - start);
        const deadline = performance.now() + 30_000;
        while ((arrivals.get(k)?.length ?? 0) < queues.length && performance.now() < deadline) await sleep(5);
        const got = arrivals.get(k) ?? [];
        if (k >= 1) {
          missing += queues.length - got.length;
          lastArrival.push(Math.max(...got));
          log(`delivery: message ${k}: sent in ${fmt(answer.at - start)} ms; ${got.length} answers, p50 ${fmt(percentile(got, 50))} ms, last ${fmt(Math.max(...got))} ms`);
        }
      }
      await waitIdle(parley.pid);
      const serverCpuPerMessage = (treeCpuMs(parley.pid) - cpu0.server) / DELIVERY_MESSAGES;
      const loopMs = performance.now() - loopT0;
      // The background (jobs, housekeeping, the queues' marks): Parley's CPU per second with the polls
      // parked and nothing sent (10 s, once the last message's re-polls are parked), taken from the
      // figures per message and per send.
      await sleep(1000);
      const idleCpu0 = treeCpuMs(parley.pid);
      const idleT0 = performance.now();
      await sleep(10_000);
      const backgroundPerMs = (treeCpuMs(parley.pid) - idleCpu0) / (performance.now() - idleT0);
      log(`delivery: background with the polls parked, nothing sent: ${fmt(backgroundPerMs * 1000)} ms of CPU per second`);
      const backgroundPerMessage = (backgroundPerMs * loopMs) / DELIVERY_MESSAGES;
      const pgCpuPerMessage = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - cpu0.pg) / DELIVERY_MESSAGES;
      const samples = sampler.stop();
      const rssAfter = rssMb(parley.pid);
      stopping = true;
      pollAgent.destroy();

      // The floor (bench/lib/poll-floor.ts): a bare node:http server answering the same 1,000 polls with
      // the same envelope around the same event, and taking their next polls; Parley is paused meanwhile.
      let floorCpuPerWake = Number.NaN;
      if (sampleEvent !== undefined) {
        process.kill(parley.pid, 'SIGSTOP');
        for (const pid of processTree(parley.pid)) if (pid !== parley.pid) process.kill(pid, 'SIGSTOP');
        const floorPort = await freePort();
        const floor = await startServer({ label: 'poll floor', command: process.env.BENCH_CPU_PROF ? `node --cpu-prof --cpu-prof-dir=${path.resolve(process.env.BENCH_CPU_PROF)} --import tsx bench/lib/poll-floor.ts` : 'node --import tsx bench/lib/poll-floor.ts', cwd: ROOT, env: { ...process.env, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(floorPort) }, port: floorPort, readyPath: '/ready', logFile: path.join(dir, 'poll-floor.log') });
        const floorApi = `${floor.url}/api/v1`;
        const floorAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });
        try {
          stopping = false;
          pollAgent = new http.Agent(pollAgentOptions);
          const floorArrivals = arrivals;
          floorArrivals.clear();
          for (const q of queues) poll(q, floorApi);
          await sleep(1000);
          await waitIdle(floor.pid);
          let floorCpu0 = 0;
          for (let k = 1 - DELIVERY_WARMUP; k <= DELIVERY_MESSAGES; k++) {
            if (k === 1) floorCpu0 = treeCpuMs(floor.pid);
            await waitIdle(floor.pid);
            await sleep(200);
            sentAt.set(k, performance.now());
            const event = sampleEvent.replace(/Delivery benchmark message #\d+:/, `Delivery benchmark message #${k}:`);
            const answer = await request(floorAgent, `${floor.url}/wake`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: event });
            if (answer.status !== 200) throw new Error(`floor /wake: ${answer.status} ${answer.body.slice(0, 300)}`);
            const deadline = performance.now() + 30_000;
            while ((floorArrivals.get(k)?.length ?? 0) < queues.length && performance.now() < deadline) await sleep(5);
          }
          await waitIdle(floor.pid);
          floorCpuPerWake = (treeCpuMs(floor.pid) - floorCpu0) / DELIVERY_MESSAGES;
          const floorPairs = [...floorArrivals.entries()].filter(([k]) => k >= 1).flatMap(([, l]) => l);
          log(`delivery floor: ${floorPairs.length} answers, CPU per wake-up of ${queues.length} polls ${fmt(floorCpuPerWake)} ms, latency p50 ${fmt(percentile(floorPairs, 50))} ms`);
        } finally {
          stopping = true;
          pollAgent.destroy();
          floorAgent.destroy();
          await floor.stop();
          for (const pid of processTree(parley.pid)) process.kill(pid, 'SIGCONT');
        }
      }
      // The send alone, without its share of the background (it ran for sendAloneMs per send).
      const sendOwn = sendAloneCpu - backgroundPerMs * sendAloneMs;
      const perPoll = (serverCpuPerMessage - backgroundPerMessage - sendOwn) / queues.length;
      const floorPerPoll = floorCpuPerWake / queues.length;
      log(
        `delivery: per message ${fmt(serverCpuPerMessage)} ms = background ${fmt(backgroundPerMessage)} + send ${fmt(sendOwn)} + ${queues.length} woken polls; ` +
          `Node CPU per woken poll (answer + re-poll) ${fmt(perPoll * 1000)} µs; floor ${fmt(floorPerPoll * 1000)} µs (${fmt(perPoll / floorPerPoll)}×)`,
      );
      rows.push([`Node CPU per woken poll (answer + re-poll), ms: (CPU per message − background − the send) ÷ ${CROWD.toLocaleString('en')}; floor: bare node:http`, fmt(perPoll), fmt(floorPerPoll), fmt(perPoll / floorPerPoll), '≤ 0.15 ms', perPoll <= 0.15 ? '✓' : '✗']);

      const pairs = [...arrivals.entries()].filter(([k]) => k >= 1).flatMap(([, l]) => l);
      const extra = rssParked - rssBefore;
      rows.push([`delivery to ${CROWD.toLocaleString('en')} parked polls, send start → answer, p50 ms`, fmt(percentile(pairs, 50)), '', '', '', 'info' + (missing ? ` (${missing} not delivered)` : '')]);
      rows.push([`delivery to ${CROWD.toLocaleString('en')} parked polls, send start → answer, p99 ms`, fmt(percentile(pairs, 99)), '', '', '', 'info']);
      rows.push([`RSS MB, extra while ${CROWD.toLocaleString('en')} polls are parked (over ${fmt(rssBefore)} MB with the queues registered)`, fmt(extra), '', '', '≤ 100 MB', extra <= 100 ? '✓' : '✗']);
      rows.push([`RSS MB, extra at the peak while delivering to the ${CROWD.toLocaleString('en')} polls`, fmt(Math.max(...samples) - rssBefore), '', '', '', 'info']);
      details.push(
        `Delivery: ${queues.length} queues (event_types ["message"], one per subscriber, the sender's included), each with a parked GET /events re-parked with last_event_id as soon as its answer arrived; ${DELIVERY_MESSAGES} messages after ${DELIVERY_WARMUP} warm-up messages, one at a time, each once the server was idle again:\n\n` +
          markdownTable(
            ['figure', 'value'],
            [
              ['(message, recipient) pairs delivered', `${pairs.length} of ${DELIVERY_MESSAGES * queues.length}`],
              ['delivery latency p50 / p90 / p99 / max, ms', [50, 90, 99, 100].map((q) => fmt(percentile(pairs, q))).join(' / ')],
              ['time to the last recipient per message, median / max, ms', `${fmt(median(lastArrival))} / ${fmt(Math.max(...lastArrival))}`],
              ['POST /messages latency while polls are parked, p50 / max, ms', `${fmt(percentile(sendLatencies, 50))} / ${fmt(Math.max(...sendLatencies))}`],
              ['CPU per message (send + 1,000 answers + 1,000 re-polls), Parley / PostgreSQL, ms', `${fmt(serverCpuPerMessage)} / ${fmt(pgCpuPerMessage)}`],
              ['Parley CPU of the send alone (no poll parked; background included / not), ms; background per message, ms; floor CPU per wake-up of the same polls (bare node:http), ms', `${fmt(sendAloneCpu)} / ${fmt(sendOwn)}; ${fmt(backgroundPerMessage)}; ${fmt(floorCpuPerWake)}`],
              ['RSS MB: just started / queues registered, no poll / 1,000 parked / peak while delivering / after (still parked)', `${fmt(rssStarted)} / ${fmt(rssBefore)} / ${fmt(rssParked)} / ${fmt(Math.max(...samples))} / ${fmt(rssAfter)}`],
              ['heartbeats, polls retried (errors)', `${heartbeats}, ${retries}${firstPollFailure ? ` (first: ${firstPollFailure})` : ''}`],
            ],
          ),
      );
      await waitIdle(parley.pid);
    }

    // --- history --------------------------------------------------------------------------------------
    if (ROWS.has('history')) {
      const url = (channelId: number, topic: string) =>
        `${api}/messages?${form({
          anchor: 'newest',
          num_before: 50,
          num_after: 0,
          narrow: JSON.stringify([
            { operator: 'channel', operand: channelId },
            { operator: 'topic', operand: topic },
          ]),
        })}`;
      const probe = await request(agent, url(fixture.historyChannelIds[0]!, fixture.historyTopics[6]!), { headers: member });
      if (probe.status !== 200) {
        log(`history: GET /messages answered ${probe.status}: ${probe.body.slice(0, 200)}`);
        rows.push([`GET /messages channel + topic narrow, newest 50 of ${HISTORY_MESSAGES.toLocaleString('en')}, p50 ms`, `error ${probe.status}`, '', '', '≤ 20 ms', '—']);
      } else {
        const cases = [
          { label: 'with the reader\'s user_message rows', channelId: fixture.historyChannelIds[0]!, topic: fixture.historyTopics[6]! },
          { label: 'channel history, no rows of the reader', channelId: fixture.historyChannelIds[1]!, topic: fixture.historyTopics[13]! },
        ];
        const table: string[][] = [];
        for (const c of cases) {
          const first = JSON.parse((await request(agent, url(c.channelId, c.topic), { headers: member })).body) as { messages?: { id: number; flags: string[] }[]; found_newest?: boolean };
          log(`history (${c.label}): ${first.messages?.length ?? 0} messages, found_newest ${first.found_newest}, flags of the newest ${JSON.stringify(first.messages?.at(-1)?.flags)}`);
          const make = () => ({ url: url(c.channelId, c.topic), method: 'GET', headers: member });
          await sequential(agent, make, { count: HISTORY_WARMUP });
          const r = await withCpu(parley.pid, () => sequential(agent, make, { count: HISTORY_REQUESTS }));
          log(`history (${c.label}): p50 ${fmt(percentile(r.latencies, 50))} ms, p95 ${fmt(percentile(r.latencies, 95))} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms${r.failed ? `, ${r.failed} FAILED (${r.firstFailure})` : ''}`);
          const p50 = percentile(r.latencies, 50);
          rows.push([`GET /messages channel + topic narrow, newest 50 of ${HISTORY_MESSAGES.toLocaleString('en')}, ${c.label}, p50 ms`, fmt(p50), '', '', '≤ 20 ms', (p50 <= 20 ? '✓' : '✗') + (r.failed ? ` (${r.failed} failed requests)` : '')]);
          table.push([c.label, String(r.ok), fmt(p50), fmt(percentile(r.latencies, 95)), fmt(percentile(r.latencies, 99)), fmt(r.serverCpuMs), fmt(r.pgCpuMs)]);
        }
        details.push(
          `GET /messages, narrow channel + topic, anchor=newest, num_before=50, num_after=0, as a subscriber; ${HISTORY_REQUESTS} sequential requests after ${HISTORY_WARMUP}; ${HISTORY_MESSAGES.toLocaleString('en')} messages in 5 channels × 20 topics (10,000 per topic), ms:\n\n` +
            markdownTable(['case', 'requests', 'p50', 'p95', 'p99', 'Parley CPU/request', 'PostgreSQL CPU/request'], table),
        );
      }
    }

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; ${fixture.users.toLocaleString('en')} users`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(markdownTable(['measurement', 'Parley', 'floor / reference', 'ratio', 'goal', 'pass'], rows));
    for (const d of details) console.log(`\n${d}`);
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    agent.destroy();
    for (const server of running.reverse()) await server.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
