// Upload and download throughput of a 100 MB file through Parley, against the floor of its storage
// backend, with the server's memory growth while the file passes. Not a test: it prints figures. From
// the repository root:
//
//   npx tsx bench/uploads.bench.ts
//
// Environment:
//   BENCH_MB        size of the file in MB (100)
//   BENCH_RUNS      runs of each row, the median reported (3)
//   BENCH_KEEP=1    keep the work directory (the servers' logs)
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts)
//
// Two Parley processes, each with its own embedded PostgreSQL (a fresh data directory: the
// organization and its owner made at first start), started as `pnpm start` runs it (small V8
// semi-spaces): one storing files in its data folder (the default), one in an S3-compatible server
// (s3rver, started here on loopback). The floor is the least a server could do with the same bytes,
// in a process of its own (bench/lib/uploads-floor.ts): the request body straight into a file, or into
// the bucket through the SDK's multipart upload (Parley's own S3 module), and back out again; no
// authentication, no multipart parsing, no database. Rows:
// - upload: POST /api/v1/user_uploads of the file as a multipart body, streamed from disk by a plain
//   node:http client, against a PUT of the same bytes to the floor;
// - download: GET /user_uploads/<path> read to the end, against a GET of the floor's copy.
// Each row reports MB/s (median of the runs), the ratio to its floor (goal ≥ 0.7), the growth of
// Parley's resident memory during the transfer, sampled every 100 ms (goal ≤ 30 MB), and the CPU time
// (user + system, all threads) the server process and the floor spent on the transfer: on 2 shared
// cores the CPU time is the steadier figure. Compare ratios within one run (absolute figures vary
// between runs). `pnpm start` runs Parley as a primary process and server processes (node:cluster);
// the bench asks for one (PARLEY_WORKERS=1) and measures it, the process that serves the requests.
import { chmodSync, createReadStream, createWriteStream, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort, sampleRss, startServer, type ServerProcess } from './lib/processes.ts';
import { fmt, markdownTable, median } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MB = Number(process.env.BENCH_MB ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const SIZE = MB * 1024 * 1024;
const GOAL_RATIO = 0.7;
const GOAL_RSS_MB = 30;
const BUCKET = 'parley-bench';
const SERVER_CMD = process.env.PARLEY_BENCH_SERVER_CMD || 'node --max-semi-space-size=2 --expose-gc --import tsx apps/server/src/main.ts';
const log = (line: string) => console.log(`[bench] ${line}`);

const requireFromServer = createRequire(new URL('../apps/server/package.json', import.meta.url));
type S3rverInstance = { run(): Promise<{ port: number }>; close(): Promise<void> };
const S3rver = requireFromServer('s3rver') as new (options: Record<string, unknown>) => S3rverInstance;

async function timed(run: () => Promise<void>): Promise<number> {
  // Every transfer starts with nothing left to write back: the disk's catching up with the previous
  // one's 100 MB would otherwise slow whichever comes next.
  execSync('sync');
  const start = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const mbps = (seconds: number) => MB / seconds;

interface Parley {
  server: ServerProcess;
  auth: string;
  /** The process that serves requests: the cluster's one worker, or the server itself when it has none. */
  pid: number;
}

/** The Node child processes of `pid` (a cluster's workers; not the embedded PostgreSQL's). */
function nodeChildren(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid && name === 'node') found.push(Number(entry));
    } catch {}
  }
  return found;
}

/** CPU time (user + system, every thread) of a process so far, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function startParley(label: string, dir: string, env: NodeJS.ProcessEnv): Promise<Parley> {
  const port = await freePort();
  const dataDir = path.join(dir, label);
  const server = await startServer({
    label,
    command: SERVER_CMD,
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', PARLEY_DATA_DIR: dataDir, PARLEY_RATE_LIMIT: '0', PARLEY_LOG_LEVEL: 'warn', PARLEY_WORKERS: '1', PARLEY_MAX_FILE_UPLOAD_SIZE_MIB: String(MB + 1), HOST: '127.0.0.1', PORT: String(port), ...env },
    port,
    readyPath: '/api/v1/server_settings',
    logFile: path.join(dir, `${label}.log`),
    timeoutMs: 180_000,
  });
  const zuliprc = readFileSync(path.join(dataDir, 'zuliprc'), 'utf8');
  const email = /^email=(.*)$/m.exec(zuliprc)![1]!;
  const key = /^key=(.*)$/m.exec(zuliprc)![1]!;
  const workers = nodeChildren(server.pid);
  if (workers.length > 1) throw new Error(`${label}: ${workers.length} server processes, expected one`);
  return { server, auth: `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`, pid: workers[0] ?? server.pid };
}

/** A request whose body is the file streamed from disk (between `head` and `tail`); the answer's status and body. */
function sendFile(url: string, method: string, headers: Record<string, string>, file: string, head = Buffer.alloc(0), tail = Buffer.alloc(0)): Promise<{ status: number; body: string }> {
  const length = head.length + statSync(file).size + tail.length;
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, 'Content-Length': String(length) } });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    if (head.length) req.write(head);
    const source = createReadStream(file, { highWaterMark: 1024 * 1024 });
    source.pipe(req, { end: false });
    source.on('end', () => req.end(tail));
    source.on('error', reject);
  });
}

/** POST /api/v1/user_uploads of the file as a multipart body: the URL it answers. */
async function upload(parley: Parley, file: string): Promise<string> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const res = await sendFile(`${parley.server.url}/api/v1/user_uploads`, 'POST', { 'Content-Type': `multipart/form-data; boundary=${boundary}`, Authorization: parley.auth }, file, head, tail);
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { url: string }).url;
}

/** GET of a URL read to the end; its length. */
function downloadAll(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        let length = 0;
        res.on('data', (c: Buffer) => (length += c.length));
        res.on('end', () => (res.statusCode === 200 ? resolve(length) : reject(new Error(`download ${url}: ${res.statusCode}`))));
      })
      .on('error', reject);
  });
}

interface Row {
  name: string;
  seconds: number[];
  floorSeconds: number[];
  rssGrowthMb: number[];
  cpu: number[];
  floorCpu: number[];
}

/** One transfer through Parley while its RSS is sampled: its time and the growth over the RSS before. */
async function measured(parley: Parley, run: () => Promise<void>): Promise<{ seconds: number; growth: number; cpu: number }> {
  execSync('sync');
  const sampler = sampleRss(parley.pid, 100);
  const cpuBefore = cpuSeconds(parley.pid);
  const seconds = await timed(run);
  const cpu = cpuSeconds(parley.pid) - cpuBefore;
  const samples = sampler.stop();
  return { seconds, growth: Math.max(...samples) - samples[0]!, cpu };
}

/** A transfer through the floor: its time and the floor process's CPU time. */
async function floorMeasured(floor: ServerProcess, run: () => Promise<void>): Promise<{ seconds: number; cpu: number }> {
  const cpuBefore = cpuSeconds(floor.pid);
  const seconds = await timed(run);
  return { seconds, cpu: cpuSeconds(floor.pid) - cpuBefore };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-uploads-'));
  chmodSync(dir, 0o755); // the embedded PostgreSQL runs as its own user
  log(`work directory ${dir}; a ${MB} MB file, ${RUNS} runs per row`);
  const file = path.join(dir, 'big.bin');
  // Random bytes (no compression anywhere helps), written once.
  await pipeline(
    Readable.from(
      (function* () {
        for (let left = SIZE; left > 0; left -= 1024 * 1024) yield randomBytes(Math.min(left, 1024 * 1024));
      })(),
    ),
    createWriteStream(file),
  );

  const s3dir = path.join(dir, 's3rver');
  const s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3dir, configureBuckets: [{ name: BUCKET, configs: [] }] });
  const { port: s3port } = await s3.run();
  const endpoint = `http://127.0.0.1:${s3port}`;

  log('starting the floor, and Parley on local storage and on S3 (s3rver), each with its embedded PostgreSQL');
  const floorDir = path.join(dir, 'floor');
  mkdirSync(floorDir);
  const floorPort = await freePort();
  const floor = await startServer({
    label: 'floor',
    command: `node --max-semi-space-size=2 --import tsx bench/lib/uploads-floor.ts '${JSON.stringify({ port: floorPort, dir: floorDir, s3: { endpoint, bucket: BUCKET } })}'`,
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    port: floorPort,
    readyPath: '/ready',
    logFile: path.join(dir, 'floor.log'),
  });
  const local = await startParley('parley-local', dir, {});
  const onS3 = await startParley('parley-s3', dir, {
    PARLEY_S3_BUCKET: BUCKET,
    PARLEY_S3_ENDPOINT: endpoint,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
  const rows: Row[] = [];
  try {
    // Warm-up: a small file each way through each.
    const small = path.join(dir, 'small.bin');
    writeFileSync(small, randomBytes(256 * 1024));
    for (const parley of [local, onS3]) await downloadAll(parley.server.url + (await upload(parley, small)), { Authorization: parley.auth });
    for (const kind of ['disk', 's3']) {
      await sendFile(`${floor.url}/${kind}/small.bin`, 'PUT', {}, small);
      await downloadAll(`${floor.url}/${kind}/small.bin`);
    }

    const cases = [
      { name: 'local disk', parley: local, floorKind: 'disk' },
      { name: 'S3 (s3rver)', parley: onS3, floorKind: 's3' },
    ];
    const uploads = cases.map((c): Row => ({ name: `upload, ${c.name}`, seconds: [], floorSeconds: [], rssGrowthMb: [], cpu: [], floorCpu: [] }));
    const downloads = cases.map((c): Row => ({ name: `download, ${c.name}`, seconds: [], floorSeconds: [], rssGrowthMb: [], cpu: [], floorCpu: [] }));
    rows.push(uploads[0]!, downloads[0]!, uploads[1]!, downloads[1]!);

    for (let run = 1; run <= RUNS; run++) {
      log(`run ${run}/${RUNS}`);
      for (const [i, c] of cases.entries()) {
        const floorUrl = `${floor.url}/${c.floorKind}/big-${run}.bin`;
        const floorUpload = async () => {
          const { seconds, cpu } = await floorMeasured(floor, async () => {
            const res = await sendFile(floorUrl, 'PUT', {}, file);
            if (res.status !== 200) throw new Error(`floor upload: ${res.status} ${res.body}`);
          });
          uploads[i]!.floorSeconds.push(seconds);
          uploads[i]!.floorCpu.push(cpu);
          log(`  upload, ${c.name}: floor ${fmt(mbps(seconds), 0)} MB/s (CPU ${fmt(cpu, 2)} s)`);
        };
        let url = '';
        const parleyUpload = async () => {
          const up = await measured(c.parley, async () => {
            url = await upload(c.parley, file);
          });
          uploads[i]!.seconds.push(up.seconds);
          uploads[i]!.rssGrowthMb.push(up.growth);
          uploads[i]!.cpu.push(up.cpu);
          log(`  upload, ${c.name}: Parley ${fmt(mbps(up.seconds), 0)} MB/s (RSS +${fmt(up.growth, 1)} MB, CPU ${fmt(up.cpu, 2)} s)`);
        };
        // Turns: the floor first in odd runs, Parley first in even ones.
        if (run % 2 === 1) {
          await floorUpload();
          await parleyUpload();
        } else {
          await parleyUpload();
          await floorUpload();
        }
        const floorDown = await floorMeasured(floor, async () => {
          if ((await downloadAll(floorUrl)) !== SIZE) throw new Error('short floor download');
        });
        downloads[i]!.floorSeconds.push(floorDown.seconds);
        downloads[i]!.floorCpu.push(floorDown.cpu);
        const down = await measured(c.parley, async () => {
          if ((await downloadAll(c.parley.server.url + url, { Authorization: c.parley.auth })) !== SIZE) throw new Error('short download');
        });
        downloads[i]!.seconds.push(down.seconds);
        downloads[i]!.rssGrowthMb.push(down.growth);
        downloads[i]!.cpu.push(down.cpu);
        log(`  download, ${c.name}: Parley ${fmt(mbps(down.seconds), 0)} MB/s (RSS +${fmt(down.growth, 1)} MB, CPU ${fmt(down.cpu, 2)} s), floor ${fmt(mbps(floorDown.seconds), 0)} MB/s (CPU ${fmt(floorDown.cpu, 2)} s)`);
      }
    }
  } finally {
    await local.server.stop();
    await onS3.server.stop();
    await floor.stop();
    await s3.close();
    if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
  }

  const table = rows.map((r) => {
    const parley = mbps(median(r.seconds));
    const floor = mbps(median(r.floorSeconds));
    const ratio = parley / floor;
    const growth = Math.max(...r.rssGrowthMb);
    return [
      r.name,
      `${fmt(parley, 0)} MB/s`,
      `${fmt(floor, 0)} MB/s`,
      `${fmt(ratio, 2)}× ${ratio >= GOAL_RATIO ? '(goal ≥ 0.7 met)' : '(goal ≥ 0.7 NOT met)'}`,
      `${fmt(growth, 1)} MB ${growth <= GOAL_RSS_MB ? '(≤ 30 met)' : '(≤ 30 NOT met)'}`,
      `${fmt(median(r.cpu), 2)} s / ${fmt(median(r.floorCpu), 2)} s`,
    ];
  });
  console.log();
  console.log(`${MB} MB file, median of ${RUNS} runs (RSS growth: the largest of the runs; CPU: medians)`);
  console.log(markdownTable(['transfer', 'through Parley', 'floor', 'ratio', 'server RSS growth', 'CPU, Parley / floor'], table));
}

await main();
