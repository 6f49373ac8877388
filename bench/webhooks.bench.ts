// Incoming-webhook throughput: a GitHub push (Zulip's push__force_1_commit fixture, as GitHub posts
// it: JSON body, X-GitHub-Event header, the bot's key in the query string) to
// /api/v1/external/github, against POST /messages of the same content to the same channel and topic
// by the same incoming-webhook bot (HTTP Basic, form-encoded). Not a test: it prints figures. From the
// repository root:
//
//   npx tsx bench/webhooks.bench.ts
//
// Environment:
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts)
//   BENCH_DURATION           seconds per measured run (5); BENCH_WARMUP per side (2)
//   BENCH_CONNECTIONS        concurrent clients (8)
//   BENCH_KEEP=1             keep the work directory (Parley's log)
//
// Set-up: bench/lib/messages-seed.ts (an embedded PostgreSQL, 5,001 users, a channel of 10 subscribers,
// 10,000 history messages); the member creates an incoming-webhook bot (POST /bots). Each row: a
// warm-up of each side, then three alternating runs; req/s medians; the goal is webhook ≥ 0.8× messages.
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, pg, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, PARLEY_SERVER_CMD, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';
import { clusterCpuMs } from './lib/cpu.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const RUNS = 3;
const GOAL = 0.8;
const PUSH = readFileSync(path.join(ROOT, 'apps/server/test/api/integrations/fixtures/github/push__force_1_commit.json'), 'utf8');
/** What the GitHub integration makes of PUSH (checked before measuring). */
const TOPIC = 'zulip / temp';
const FORM = 'application/x-www-form-urlencoded';
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

type Req = { url: string; method: string; headers: Record<string, string>; body?: string };

interface Run {
  rps: number;
  failed: number;
  firstFailure?: string;
  latencies: number[];
  serverCpuMs: number;
  pgCpuMs: number;
}

let postmaster: number | null = null;

async function closedLoop(agent: http.Agent, serverPid: number, clients: number, make: () => Req, durationS: number): Promise<Run> {
  const server0 = treeCpuMs(serverPid);
  const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  const start = performance.now();
  const deadline = start + durationS * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < deadline) {
        const r = make();
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
  return { rps: ok / elapsed, failed, ...(firstFailure ? { firstFailure } : {}), latencies, serverCpuMs, pgCpuMs };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
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
    const memberAuth = `Basic ${Buffer.from(`${member.email}:${member.apiKey}`).toString('base64')}`;

    // The member's incoming-webhook bot.
    const created = await request(agent, `${api}/bots`, {
      method: 'POST',
      headers: { authorization: memberAuth, 'content-type': FORM },
      body: new URLSearchParams({ full_name: 'GitHub', short_name: 'github', bot_type: '2' }).toString(),
    });
    if (created.status !== 200) throw new Error(`POST /bots: ${created.status} ${created.body}`);
    const bot = JSON.parse(created.body) as { user_id: number; api_key: string };
    const botEmail = ((await sql.query('SELECT delivery_email FROM "user" WHERE id = $1', [bot.user_id])).rows[0] as { delivery_email: string }).delivery_email;
    const webhookUrl = `${api}/external/github?${new URLSearchParams({ api_key: bot.api_key, stream: String(fixture.tenChannelId) })}`;
    const webhook = (): Req => ({ url: webhookUrl, method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push' }, body: PUSH });

    // What the webhook posts, read back: POST /messages sends exactly that.
    const first = await request(agent, webhookUrl, webhook());
    if (first.status !== 200) throw new Error(`webhook: ${first.status} ${first.body}`);
    const newest = await request(agent, `${api}/messages?${new URLSearchParams({ anchor: 'newest', num_before: '1', num_after: '0', apply_markdown: 'false', narrow: JSON.stringify([{ operator: 'channel', operand: fixture.tenChannelId }]) })}`, {
      method: 'GET',
      headers: { authorization: memberAuth },
    });
    const message = (JSON.parse(newest.body) as { messages: Array<{ subject: string; content: string; sender_id: number }> }).messages[0]!;
    if (message.subject !== TOPIC || message.sender_id !== bot.user_id) throw new Error(`unexpected webhook message: ${JSON.stringify(message)}`);
    const botAuth = `Basic ${Buffer.from(`${botEmail}:${bot.api_key}`).toString('base64')}`;
    const body = new URLSearchParams({ type: 'stream', to: String(fixture.tenChannelId), topic: TOPIC, content: message.content }).toString();
    const messages = (): Req => ({ url: `${api}/messages`, method: 'POST', headers: { authorization: botAuth, 'content-type': FORM }, body });
    const check = await request(agent, `${api}/messages`, messages());
    if (check.status !== 200) throw new Error(`POST /messages: ${check.status} ${check.body}`);

    const rows: string[][] = [];
    const details: string[][] = [];
    for (const clients of [CONNECTIONS, 1]) {
      const label = `${clients} ${clients === 1 ? 'client' : 'concurrent clients'}`;
      const sides = [
        { name: 'webhook', make: webhook, runs: [] as Run[] },
        { name: 'messages', make: messages, runs: [] as Run[] },
      ];
      log(`${label}: warming up`);
      for (const side of sides) await closedLoop(agent, parley.pid, clients, side.make, WARMUP);
      for (let run = 1; run <= RUNS; run++) {
        const line: string[] = [];
        for (const side of sides) {
          const r = await closedLoop(agent, parley.pid, clients, side.make, DURATION);
          side.runs.push(r);
          line.push(`${side.name} ${fmt(r.rps)} req/s, p50 ${fmt(percentile(r.latencies, 50))} ms, CPU/request ${fmt(r.serverCpuMs)} ms` + (r.failed ? `, ${r.failed} FAILED (${r.firstFailure})` : ''));
        }
        log(`${label}: run ${run}: ${line.join(' | ')}`);
      }
      const [hook, send] = sides as [(typeof sides)[number], (typeof sides)[number]];
      const hr = median(hook.runs.map((r) => r.rps));
      const sr = median(send.runs.map((r) => r.rps));
      const failed = [...hook.runs, ...send.runs].reduce((s, r) => s + r.failed, 0);
      rows.push([`${label}, req/s`, fmt(hr), fmt(sr), `${fmt(hr / sr, 2)}×`, `≥ ${GOAL}×`, (hr / sr >= GOAL ? '✓' : '✗') + (failed ? ` (${failed} failed requests)` : '')]);
      const all = (side: (typeof sides)[number]) => side.runs.flatMap((r) => r.latencies);
      details.push([
        label,
        fmt(percentile(all(hook), 50)),
        fmt(percentile(all(hook), 99)),
        fmt(median(hook.runs.map((r) => r.serverCpuMs))),
        fmt(percentile(all(send), 50)),
        fmt(percentile(all(send), 99)),
        fmt(median(send.runs.map((r) => r.serverCpuMs))),
      ]);
    }

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; channel of 10 subscribers`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(markdownTable(['GitHub push webhook vs POST /messages of the same content', 'webhook', 'messages', 'ratio', 'goal', 'pass'], rows));
    console.log(`\nLatency and Parley CPU per answered request (medians of the runs), ms:\n\n` + markdownTable(['case', 'webhook p50', 'p99', 'CPU', 'messages p50', 'p99', 'CPU'], details));
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
