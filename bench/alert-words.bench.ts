// What alert words and muted users cost when sending: POST /messages to a channel of 1,000 subscribers
// with nobody's words, with 5 words for each of the 1,000 subscribers (none in the message), with 200
// of them finding one of their words in every message, and with 200 of them having muted the sender;
// and the matcher alone (lib/alert-words.ts) on a long message against many words. Not a test: it
// prints figures. From the repository root:
//
//   npx tsx bench/alert-words.bench.ts
//
// Environment: BENCH_DURATION seconds per measured run (5), BENCH_WARMUP (2), BENCH_KEEP=1 keeps the
// work directory; PARLEY_BENCH_SERVER_CMD as in bench/messages.bench.ts.
//
// Set-up: bench/lib/messages-seed.ts (5,001 users, a public channel of 1,000 subscribers) and 10,000
// stored messages; Parley as a separate Node process (NODE_ENV=production). Each configuration is made
// with SQL between runs (alert_word and muted_user rows), and the configurations take turns, three runs
// each; sends are sequential (one at a time), so the figures are the latency of one send.
//
// Goal: a message nobody's words occur in costs about what it costs with no alert words at all (the
// words are filtered in the one query sending makes for them, by a substring test, before any
// matching); matches cost the rows they write (a flagged recipient's row is written at once, as any
// recipient with a flag of their own), not a per-recipient regular expression.
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, CROWD, pg, type Person, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, PARLEY_SERVER_CMD, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';
import { AlertWordMatcher, alertWordText } from '../apps/server/src/lib/alert-words.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const RUNS = 3;
const WORDS_EACH = 5;
const MATCHING = 200;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const log = (line: string) => console.log(`[bench] ${line}`);

function request(agent: http.Agent, url: string, options: { method: string; headers: Record<string, string>; body: string }): Promise<{ status: number; body: string; at: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method, headers: { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

interface Run {
  latencies: number[];
  failed: number;
  serverCpuMs: number;
  pgCpuMs: number;
}

type Config = 'no alert words' | `${number} words, none in the message` | `${number} users' word in every message` | `${number} subscribers muted the sender`;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'awbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);

  // --- the matcher alone -------------------------------------------------------------------------------
  const matcherRows: string[][] = [];
  {
    const longMessage = Array.from({ length: 1000 }, (_, i) => `word${i} (x) `).join('').slice(0, 10_000);
    for (const count of [1_000, 10_000, 50_000]) {
      const words = Array.from({ length: count }, (_, i) => ({ userId: i % 5_000, key: `word${i % 2_000}` }));
      const times: number[] = [];
      let found = 0;
      for (let i = 0; i < 7; i++) {
        const t = performance.now();
        found = new AlertWordMatcher(words).usersIn(alertWordText(longMessage)).size;
        times.push(performance.now() - t);
      }
      matcherRows.push([`${count.toLocaleString('en')} candidate words (${Math.min(count, 2_000).toLocaleString('en')} distinct), a 10,000-character message`, fmt(median(times)), String(found)]);
    }
  }

  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  const postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  await addHistory(sql, fixture, 10_000, fixture.member.id, log);
  const subscribers = fixture.crowd.filter((p) => p.id !== fixture.member.id);
  const configs: Config[] = ['no alert words', `${CROWD * WORDS_EACH} words, none in the message`, `${MATCHING} users' word in every message`, `${MATCHING} subscribers muted the sender`];

  async function setUp(config: Config): Promise<void> {
    await sql.query('DELETE FROM alert_word');
    await sql.query('DELETE FROM muted_user');
    if (config === 'no alert words') return;
    if (config.includes('muted')) {
      await sql.query(`INSERT INTO muted_user (user_id, muted_user_id, date_muted) SELECT unnest($1::int[]), $2::int, now()`, [subscribers.slice(0, MATCHING).map((p) => p.id), fixture.member.id]);
      return;
    }
    const matching = config.includes('every message');
    const users: number[] = [];
    const words: string[] = [];
    subscribers.forEach((p, i) => {
      for (let k = 0; k < WORDS_EACH; k++) {
        users.push(p.id);
        // Words that never occur, and, for the first MATCHING users, one that always does.
        words.push(matching && i < MATCHING && k === 0 ? 'brown fox' : `zq${p.id}x${k}`);
      }
    });
    await sql.query(`INSERT INTO alert_word (user_id, word, word_key) SELECT u, w, w FROM unnest($1::int[], $2::text[]) AS t(u, w)`, [users, words]);
  }

  let parley: ServerProcess | null = null;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const results = new Map<Config, Run[]>(configs.map((c) => [c, []]));
  try {
    parley = await startBenchParley({ label: 'Parley', root: ROOT, databaseUrl: fixture.databaseUrl, secretKey: fixture.secretKey, realmUrl: fixture.realmUrl, dataDir: path.join(dir, 'parley'), logFile: path.join(dir, 'parley.log'), profile: true });
    const url = `${parley.url}/api/v1/messages`;
    const headers = { authorization: basic(fixture.member), 'content-type': 'application/x-www-form-urlencoded' };
    let n = 0;
    const send = async (durationS: number): Promise<Run> => {
      const server0 = treeCpuMs(parley!.pid);
      const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
      const run: Run = { latencies: [], failed: 0, serverCpuMs: 0, pgCpuMs: 0 };
      const deadline = performance.now() + durationS * 1000;
      while (performance.now() < deadline) {
        const body = new URLSearchParams({ type: 'stream', to: String(fixture.crowdChannelId), topic: `alert bench ${n % 5}`, content: `Alert bench message ${n++}: the quick brown fox jumps over the lazy dog, twice.` }).toString();
        const start = performance.now();
        const answer = await request(agent, url, { method: 'POST', headers, body });
        if (answer.status === 200) run.latencies.push(answer.at - start);
        else run.failed++;
      }
      const ok = Math.max(1, run.latencies.length);
      run.serverCpuMs = (treeCpuMs(parley!.pid) - server0) / ok;
      run.pgCpuMs = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0) / ok;
      await waitIdle(parley!.pid);
      return run;
    };
    for (const config of configs) {
      await setUp(config);
      await send(WARMUP);
    }
    for (let run = 1; run <= RUNS; run++) {
      for (const config of configs) {
        await setUp(config);
        const r = await send(DURATION);
        results.get(config)!.push(r);
        log(`run ${run}, ${config}: ${r.latencies.length} sent, p50 ${fmt(percentile(r.latencies, 50))} ms, CPU/send ${fmt(r.serverCpuMs)} ms + PostgreSQL ${fmt(r.pgCpuMs)} ms${r.failed ? `, ${r.failed} FAILED` : ''}`);
      }
    }
  } finally {
    await parley?.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }

  const base = percentile(results.get('no alert words')!.flatMap((r) => r.latencies), 50);
  const rows = configs.map((config) => {
    const runs = results.get(config)!;
    const p50 = percentile(runs.flatMap((r) => r.latencies), 50);
    return [config, fmt(p50), fmt(percentile(runs.flatMap((r) => r.latencies), 99)), `${fmt(p50 / base, 2)}×`, fmt(median(runs.map((r) => r.serverCpuMs))), fmt(median(runs.map((r) => r.pgCpuMs)))];
  });
  console.log(`\nPOST /messages to a channel of ${CROWD.toLocaleString('en')} subscribers, sequential, ${RUNS} runs of ${DURATION} s per configuration (taking turns):\n`);
  console.log(markdownTable(['configuration', 'p50 ms', 'p99 ms', 'p50 ÷ no alert words', 'server CPU/send ms', 'PostgreSQL CPU/send ms'], rows));
  console.log(`\nThe matcher alone (trie built from the candidate words, one scan of the message), median of 7, in this process:\n`);
  console.log(markdownTable(['words', 'ms', 'users matched'], matcherRows));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
