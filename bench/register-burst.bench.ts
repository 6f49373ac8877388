// POST /register over HTTP in the 2,000-user organization of organization.bench.ts: BENCH_N members
// register one after another, then BENCH_N others all at once, against a server started from
// BENCH_ROOT (default: this repository), so that two trees can be compared by running this once for
// each in turns. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/register-burst.bench.ts
//   BENCH_ROOT=/tmp/old-tree npx tsx bench/register-burst.bench.ts   # a tree of an earlier commit (its node_modules linked)
//
// Environment: BENCH_N (40), BENCH_WORKERS (PARLEY_WORKERS of the server, 1), BENCH_ORG_USERS (2000),
// BENCH_CPU_PROF=<dir> (the server's CPU profiles, for bench/lib/profile-summary.ts), BENCH_PASSIVE=1 (no state).
//
// Each member registers as the load test's users do (bench/lib/mobile-register.ts: as Zulip's mobile
// app). Two registrations warm the server first (the first formats every user object, V8 compiles the
// paths). Printed: median, p90 and max latency of each phase, the burst's
// total time, and the server's CPU per registration (its process tree, from /proc).
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mobileRegisterBody } from './lib/mobile-register.ts';
import { createOrganization } from './lib/org-sim-seed.ts';
import { startBenchParley, stopBenchDatabase, treeCpuMs } from './lib/processes.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';

const N = Number(process.env.BENCH_N ?? 40);
const ORG_USERS = Number(process.env.BENCH_ORG_USERS ?? 2000);
const ROOT = process.env.BENCH_ROOT ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (line: string) => console.log(`[bench] ${line}`);

// BENCH_PASSIVE=1: registrations without state (fetch_event_types=[]), what a registration costs besides its state.
const BODY = mobileRegisterBody({ passive: process.env.BENCH_PASSIVE === '1' });

const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-register-burst-'));
const { database, fixture } = await createOrganization(dir, ORG_USERS, log);
if (fixture.users.length < 2 * N + 2) throw new Error(`BENCH_N=${N} needs ${2 * N + 2} members`);
const parley = await startBenchParley({
  label: 'parley',
  root: ROOT,
  databaseUrl: fixture.databaseUrl,
  secretKey: fixture.secretKey,
  realmUrl: fixture.realmUrl,
  dataDir: path.join(dir, 'data'),
  logFile: path.join(dir, 'parley.log'),
  profile: true,
  env: { PARLEY_WORKERS: process.env.BENCH_WORKERS ?? '1' },
});
try {
  log(`server from ${ROOT}, log ${parley.logFile}; load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const register = async (u: (typeof fixture.users)[number]): Promise<number> => {
    const started = performance.now();
    const res = await fetch(`${parley.url}/api/v1/register`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${u.email}:${u.apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: BODY,
    });
    await res.text();
    if (res.status !== 200) throw new Error(`register of ${u.email}: ${res.status}`);
    return performance.now() - started;
  };
  const [warm1, warm2] = fixture.users.slice(2 * N, 2 * N + 2);
  await register(warm1!);
  await register(warm2!);
  const rows: string[][] = [];
  const phase = async (name: string, run: () => Promise<number[]>) => {
    const cpu0 = treeCpuMs(parley.child.pid!);
    const started = performance.now();
    const times = await run();
    const total = performance.now() - started;
    const cpu = (treeCpuMs(parley.child.pid!) - cpu0) / times.length;
    rows.push([name, String(times.length), fmt(median(times)), fmt(percentile(times, 90)), fmt(Math.max(...times)), fmt(total), fmt(cpu)]);
  };
  await phase('one after another', async () => {
    const times: number[] = [];
    for (const u of fixture.users.slice(0, N)) times.push(await register(u));
    return times;
  });
  await phase('all at once', () => Promise.all(fixture.users.slice(N, 2 * N).map(register)));
  console.log(`\nPOST /register of members, ${ORG_USERS.toLocaleString('en')}-user organization, PARLEY_WORKERS=${process.env.BENCH_WORKERS ?? '1'}:\n`);
  console.log(markdownTable(['phase', 'registrations', 'median ms', 'p90 ms', 'max ms', 'total ms', 'server CPU ms per registration'], rows));
} finally {
  await parley.stop();
  await stopBenchDatabase(database, dir);
}
