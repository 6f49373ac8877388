// Start-up as a user sees it, timed from spawning the command (in the repository root) to the first
// successful `/server_settings` response. First a cold start on a fresh data directory (initdb,
// migrations, organization) through the README's `npx pnpm@10.34.9 start`, then warm restarts on the
// same data, three through each launcher, taking turns (the median of each is the figure to compare):
//   npx    `npx --yes pnpm@10.34.9 start` (the README's command: npx finds or fetches pnpm first)
//   pnpm   `pnpm start` with an installed pnpm (PARLEY_BENCH_PNPM, else `pnpm` on the PATH; skipped
//          when there is none: e.g. `npm i -g pnpm@10.34.9 --prefix /tmp/pnpm-global` and
//          PARLEY_BENCH_PNPM=/tmp/pnpm-global/bin/pnpm)
//   node   the root package's start script run directly (what `pnpm start` runs; no wrapper)
// Each run also prints the server's own start-up (its first line of code to listening) and the resident
// memory of the server process right after it answered. Every run is stopped as a terminal's Ctrl-C
// would stop it (SIGINT to the whole process group). The build is brought up to date first, so that
// no measured start includes one (a start that rebuilt anyway, because sources changed meanwhile, says
// so). Prints figures; not a test.
//   npx tsx bench/cold-start.bench.ts
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-'));
const port = 9700 + Math.floor(Math.random() * 200);
const WARM_RUNS = 3;

interface Proc {
  pid: number;
  ppid: number;
  comm: string;
  cmdline: string;
  rssKb: number;
}

/** Every process on the machine (Linux /proc); the figures below need the start-up's process tree. */
function processes(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      const status = readFileSync(`/proc/${entry}/status`, 'utf8');
      const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      out.push({ pid: Number(entry), ppid, comm, cmdline, rssKb });
    } catch {}
  }
  return out;
}

function descendants(rootPid: number): Proc[] {
  const all = processes();
  const result: Proc[] = [];
  const queue = [rootPid];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const p of all) {
      if (p.ppid !== pid) continue;
      result.push(p);
      queue.push(p.pid);
    }
  }
  return result;
}

const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

type Launcher = 'npx' | 'pnpm' | 'node';

/** An installed pnpm binary (not npx's), or null. */
function findPnpm(): string | null {
  if (process.env.PARLEY_BENCH_PNPM) return process.env.PARLEY_BENCH_PNPM;
  try {
    return execFileSync('sh', ['-c', 'command -v pnpm'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}
const pnpmBinary = findPnpm();
const rootStartScript = (JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;

function command(launcher: Launcher): [string, string[]] {
  if (launcher === 'npx') return ['npx', ['--yes', 'pnpm@10.34.9', 'start']];
  if (launcher === 'pnpm') return [pnpmBinary!, ['start']];
  return ['sh', ['-c', rootStartScript]];
}

interface Measured {
  ms: number;
  serverMs: number;
  serverRssKb: number;
}

async function startAndMeasure(label: string, launcher: Launcher): Promise<Measured> {
  const t0 = performance.now();
  const [file, args] = command(launcher);
  const child = spawn(file, args, {
    cwd: repoRoot,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group, so that the stop below reaches all of it and nothing else
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${label}: the server exited:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`);
      if (res.ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 20));
  }
  const ms = performance.now() - t0;
  // The server may answer a moment before it prints how long its start-up took.
  for (let i = 0; i < 100 && !/ready in \d+ ms/.test(output); i++) await new Promise((r) => setTimeout(r, 20));
  // The server is the node process that holds the listening socket; the wrappers (npx, pnpm) are the
  // other node processes of the tree. PostgreSQL runs in a session of its own.
  const tree = descendants(child.pid!);
  const nodes = tree.filter((p) => p.comm === 'node' || p.comm.startsWith('npm') || p.comm.startsWith('pnpm'));
  // (A shell may exec the command itself: then the spawned process is the server.)
  const self = processes().find((p) => p.pid === child.pid);
  const server = nodes.filter((p) => /apps\/server|main\.(ts|js)/.test(p.cmdline)).at(-1) ?? nodes.at(-1) ?? self;
  const wrappers = [...(server === self ? [] : [{ pid: child.pid!, rssKb: self?.rssKb ?? 0 }]), ...nodes.filter((p) => p !== server)];
  const serverRssKb = server?.rssKb ?? 0;
  // The server's own count, from its first line of code to listening: the rest is npx, pnpm and node.
  const ready = /ready in (\d+) ms/.exec(output)?.[1];
  const rebuilt = output.includes('[parley] build:') ? ' — REBUILT during this start (sources changed meanwhile)' : '';
  console.log(
    `${label}: first response after ${Math.round(ms)} ms (server's own start-up ${ready ?? '?'} ms); server RSS ${mb(serverRssKb)}` +
      (launcher === 'node' ? '' : ` (wrappers: ${mb(wrappers.reduce((sum, p) => sum + p.rssKb, 0))} in ${wrappers.length} processes)`) +
      rebuilt,
  );
  process.kill(-child.pid!, 'SIGINT');
  await exited;
  // Stopped means PostgreSQL is gone too (it removes postmaster.pid when it has shut down).
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  for (let i = 0; i < 300 && existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 50));
  return { ms, serverMs: Number(ready ?? Number.NaN), serverRssKb };
}

try {
  // Up to date before the clock starts (as after `pnpm install`, which builds); through pnpm, whose
  // binary code generation (turbo) needs on the PATH.
  const build = spawnSync('npx', ['--yes', 'pnpm@10.34.9', 'build'], { cwd: repoRoot, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('the build failed');
  const launchers: Launcher[] = pnpmBinary ? ['npx', 'pnpm', 'node'] : ['npx', 'node'];
  console.log(`node ${process.version}, load average ${os.loadavg()[0]!.toFixed(1)}; pnpm binary: ${pnpmBinary ?? 'none (set PARLEY_BENCH_PNPM)'}`);
  await startAndMeasure('cold start, npx pnpm start (initdb + migrate + bootstrap)', 'npx');
  const warm = new Map<Launcher, Measured[]>(launchers.map((l) => [l, []]));
  for (let i = 1; i <= WARM_RUNS; i++) {
    for (const launcher of launchers) warm.get(launcher)!.push(await startAndMeasure(`warm restart ${i}/${WARM_RUNS} (${command(launcher).flat().join(' ')})`, launcher));
  }
  for (const launcher of launchers) {
    const runs = warm.get(launcher)!;
    console.log(
      `warm restart through ${launcher.padEnd(4)} median of ${WARM_RUNS}: ${Math.round(median(runs.map((w) => w.ms)))} ms ` +
        `(server's own start-up ${Math.round(median(runs.map((w) => w.serverMs).filter((v) => !Number.isNaN(v))))} ms); server RSS just started ${mb(median(runs.map((w) => w.serverRssKb)))}`,
    );
  }
  console.log(`load average at the end ${os.loadavg()[0]!.toFixed(1)}`);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
