// Emoji reactions against message flags on the same message: POST/DELETE /messages/{id}/reactions
// (add and remove alternately) against POST /messages/flags (starred added and removed alternately),
// both per-message, per-user changes that store one event. Not a test: it prints figures. From the
// repository root:
//
//   npx tsx bench/reactions.bench.ts
//
// Environment:
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`)
//   BENCH_DURATION           seconds per measured run (5); BENCH_WARMUP per side (2)
//   BENCH_CONNECTIONS        concurrent clients of the concurrent rows (8, at most 10), each a different user
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> (see bench/messages.bench.ts)
//   BENCH_KEEP=1             keep the work directory (Parley's log)
//
// Set-up: bench/lib/messages-seed.ts (an embedded PostgreSQL, 5,001 users, a public channel of 1,000
// subscribers and one of 10, 10,000 history messages), then one message from the member to each of the
// two channels. The clients are subscribers of both (the member and the next crowd members), so they
// have user_message rows for the messages, which POST /messages/flags requires.
//
// Each row compares the two request kinds on the same message, with the same clients: a warm-up run of
// each, then three alternating runs; req/s medians. Every client alternates: reactions POST (add
// `octopus`) then DELETE (remove it) — the clients' reactions to one message are votes for the same
// emoji —, flags `op=add` then `op=remove` of `starred`. Each answered request counts. A reaction's
// event goes to everyone who can see the message (the channel's subscribers), a flag's to the user
// alone, so the 1,000-subscriber row also shows what the larger audience costs.
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, pg, type Person, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, PARLEY_SERVER_CMD, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';
import { clusterCpuMs } from './lib/cpu.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Math.min(10, Number(process.env.BENCH_CONNECTIONS ?? 8));
const RUNS = 3;
const GOAL = 0.8;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const form = (fields: Record<string, string | number>) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
const log = (line: string) => console.log(`[bench] ${line}`);

interface Answer {
  status: number;
  body: string;
}

function request(agent: http.Agent, url: string, options: { method: string; headers: Record<string, string>; body?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) };
    const req = http.request(url, { method: options.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The request a client sends as its n-th (from 0): even n adds, odd n removes. */
type Make = (person: Person, n: number) => { url: string; method: string; headers: Record<string, string>; body?: string };

interface Run {
  rps: number;
  ok: number;
  failed: number;
  firstFailure?: string;
  latencies: number[];
  serverCpuMs: number;
  pgCpuMs: number;
}

let postmaster: number | null = null;

/** `clients` clients, each looping over its own requests for `durationS` seconds; then waits for the server to be idle. */
async function closedLoop(agent: http.Agent, serverPid: number, clients: Person[], make: Make, durationS: number): Promise<Run> {
  const server0 = treeCpuMs(serverPid);
  const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  const start = performance.now();
  const deadline = start + durationS * 1000;
  await Promise.all(
    clients.map(async (person) => {
      // Each client ends on a removal, so that the next run starts from the same state.
      for (let n = 0; performance.now() < deadline || n % 2 === 1; n++) {
        const r = make(person, n);
        const t = performance.now();
        const answer = await request(agent, r.url, r);
        if (answer.status === 200) latencies.push(performance.now() - t);
        else {
          failed++;
          firstFailure ??= `${r.method} ${answer.status} ${answer.body.slice(0, 300)}`;
        }
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const ok = latencies.length;
  const serverCpuMs = (treeCpuMs(serverPid) - server0) / Math.max(1, ok);
  const pgCpuMs = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0) / Math.max(1, ok);
  await waitIdle(serverPid);
  return { rps: ok / elapsed, ok, failed, ...(firstFailure ? { firstFailure } : {}), latencies, serverCpuMs, pgCpuMs };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  // Messages in the table before Parley starts (see bench/messages.bench.ts: an empty message table
  // at ANALYZE makes foreign-key checks scan it).
  await addHistory(sql, fixture, 10_000, fixture.member.id, log);
  log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const running: ServerProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  try {
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
    const api = `${parley.url}/api/v1`;
    const member = fixture.member;

    const send = async (channelId: number) => {
      const answer = await request(agent, `${api}/messages`, {
        method: 'POST',
        headers: { authorization: basic(member), 'content-type': FORM },
        body: form({ type: 'stream', to: channelId, topic: 'reactions bench', content: 'React to this message, or star it.' }),
      });
      if (answer.status !== 200) throw new Error(`POST /messages: ${answer.status} ${answer.body}`);
      return (JSON.parse(answer.body) as { id: number }).id;
    };
    const targets = [
      { label: '10 subscribers', messageId: await send(fixture.tenChannelId) },
      { label: '1,000 subscribers', messageId: await send(fixture.crowdChannelId) },
    ];
    const reactions = (messageId: number): Make => (person, n) => ({
      url: `${api}/messages/${messageId}/reactions`,
      method: n % 2 === 0 ? 'POST' : 'DELETE',
      headers: { authorization: basic(person), 'content-type': FORM },
      body: form({ emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' }),
    });
    const flags = (messageId: number): Make => (person, n) => ({
      url: `${api}/messages/flags`,
      method: 'POST',
      headers: { authorization: basic(person), 'content-type': FORM },
      body: form({ messages: JSON.stringify([messageId]), op: n % 2 === 0 ? 'add' : 'remove', flag: 'starred' }),
    });
    // Both work before anything is measured.
    for (const make of [reactions(targets[0]!.messageId), flags(targets[0]!.messageId)]) {
      for (const n of [0, 1]) {
        const r = make(member, n);
        const answer = await request(agent, r.url, r);
        if (answer.status !== 200) throw new Error(`${r.method} ${r.url}: ${answer.status} ${answer.body}`);
      }
    }

    const rows: string[][] = [];
    const details: string[][] = [];
    const cases = [
      { target: targets[0]!, clients: fixture.crowd.slice(0, CONNECTIONS) },
      { target: targets[1]!, clients: fixture.crowd.slice(0, CONNECTIONS) },
      { target: targets[0]!, clients: fixture.crowd.slice(0, 1) },
    ];
    for (const c of cases) {
      const label = `${c.target.label}, ${c.clients.length} ${c.clients.length === 1 ? 'client' : 'concurrent clients'}`;
      const sides = [
        { name: 'reactions', make: reactions(c.target.messageId), runs: [] as Run[] },
        { name: 'flags', make: flags(c.target.messageId), runs: [] as Run[] },
      ];
      log(`${label}: warming up`);
      for (const side of sides) await closedLoop(agent, parley.pid, c.clients, side.make, WARMUP);
      for (let run = 1; run <= RUNS; run++) {
        const line: string[] = [];
        for (const side of sides) {
          const r = await closedLoop(agent, parley.pid, c.clients, side.make, DURATION);
          side.runs.push(r);
          line.push(
            `${side.name} ${fmt(r.rps)} req/s, p50 ${fmt(percentile(r.latencies, 50))} ms, CPU/request ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms` +
              (r.failed ? `, ${r.failed} FAILED (${r.firstFailure})` : ''),
          );
        }
        log(`${label}: run ${run}: ${line.join(' | ')}`);
      }
      const [react, flag] = sides as [(typeof sides)[number], (typeof sides)[number]];
      const rr = median(react.runs.map((r) => r.rps));
      const fr = median(flag.runs.map((r) => r.rps));
      const failed = [...react.runs, ...flag.runs].reduce((s, r) => s + r.failed, 0);
      rows.push([`message of a channel of ${label}, req/s`, fmt(rr), fmt(fr), `${fmt(rr / fr, 2)}×`, `≥ ${GOAL}×`, (rr / fr >= GOAL ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : '')]);
      const all = (side: (typeof sides)[number]) => side.runs.flatMap((r) => r.latencies);
      details.push([
        label,
        fmt(percentile(all(react), 50)),
        fmt(percentile(all(react), 99)),
        fmt(median(react.runs.map((r) => r.serverCpuMs))),
        fmt(median(react.runs.map((r) => r.pgCpuMs))),
        fmt(percentile(all(flag), 50)),
        fmt(percentile(all(flag), 99)),
        fmt(median(flag.runs.map((r) => r.serverCpuMs))),
        fmt(median(flag.runs.map((r) => r.pgCpuMs))),
      ]);
    }

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; ${fixture.users.toLocaleString('en')} users`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(markdownTable(['reactions (add/remove) vs POST /messages/flags (starred add/remove), same message', 'reactions', 'flags', 'ratio', 'goal', 'pass'], rows));
    console.log(
      `\nLatency (every request of the runs) and CPU time per answered request (medians of the runs; PostgreSQL = all processes of the cluster), ms:\n\n` +
        markdownTable(['case', 'reactions p50', 'p99', 'Parley CPU', 'PostgreSQL CPU', 'flags p50', 'p99', 'Parley CPU', 'PostgreSQL CPU'], details),
    );
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
