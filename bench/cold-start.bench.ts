// Start-up as a user sees it: the README's `npx pnpm@10.34.9 start` from the repository root, timed
// from spawning npx to the first successful `/server_settings` response. First a cold start on a fresh
// data directory (initdb, migrations, organization), then three warm restarts on the same data (their
// median is the figure to compare), each with the resident memory of the server process right after
// it answered. Every run is stopped as a terminal's Ctrl-C would stop it (SIGINT to the whole process
// group). Prints figures; not a test.
//   npx tsx bench/cold-start.bench.ts
import { spawn } from 'node:child_process';
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

async function startAndMeasure(label: string): Promise<{ ms: number; serverRssKb: number }> {
  const t0 = performance.now();
  const child = spawn('npx', ['--yes', 'pnpm@10.34.9', 'start'], {
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
  // The server is the node process that holds the listening socket; the wrappers (npx, pnpm) are the
  // other node processes of the tree. PostgreSQL runs in a session of its own.
  const tree = descendants(child.pid!);
  const nodes = tree.filter((p) => p.comm === 'node' || p.comm.startsWith('npm') || p.comm.startsWith('pnpm'));
  const server = nodes.filter((p) => /apps\/server|main\.(ts|js)/.test(p.cmdline)).at(-1) ?? nodes.at(-1);
  const wrappers = [{ pid: child.pid!, rssKb: processes().find((p) => p.pid === child.pid)?.rssKb ?? 0 }, ...nodes.filter((p) => p !== server)];
  const serverRssKb = server?.rssKb ?? 0;
  // The server's own count, from its first line of code to listening: the rest is npx, pnpm and node.
  const ready = /ready in (\d+) ms/.exec(output)?.[1];
  console.log(
    `${label}: first response after ${Math.round(ms)} ms (server's own start-up ${ready ?? '?'} ms); server RSS ${mb(serverRssKb)}` +
      ` (npx/pnpm wrappers: ${mb(wrappers.reduce((sum, p) => sum + p.rssKb, 0))} in ${wrappers.length} processes)`,
  );
  process.kill(-child.pid!, 'SIGINT');
  await exited;
  // Stopped means PostgreSQL is gone too (it removes postmaster.pid when it has shut down).
  const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
  for (let i = 0; i < 300 && existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 50));
  return { ms, serverRssKb };
}

try {
  await startAndMeasure('cold start (initdb + migrate + bootstrap)');
  const warm: { ms: number; serverRssKb: number }[] = [];
  for (let i = 1; i <= WARM_RUNS; i++) warm.push(await startAndMeasure(`warm restart ${i}/${WARM_RUNS}`));
  console.log(
    `warm restart, median of ${WARM_RUNS}: ${Math.round(median(warm.map((w) => w.ms)))} ms; ` +
      `server RSS just started, median: ${mb(median(warm.map((w) => w.serverRssKb)))}`,
  );
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
