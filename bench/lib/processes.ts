// Child processes of the benchmarks: starting a server in its own process group, waiting until it
// answers, finding the process that actually listens (the command may be a wrapper such as a shell
// or `pnpm start`) and reading its resident set size from /proc.
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface ServerProcess {
  label: string;
  child: ChildProcess;
  /** The process holding the listening socket (for RSS), found once the server answers. */
  pid: number;
  port: number;
  url: string;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Runs `command` through the shell in `cwd`, in a process group of its own (so that stopping it stops
 * whatever it started, and nothing else), with stdout and stderr going to `logFile`. Resolves once
 * `readyPath` on `port` answers 200.
 */
export async function startServer(options: {
  label: string;
  command: string;
  cwd: string;
  env: NodeJS.ProcessEnv;
  port: number;
  readyPath: string;
  logFile: string;
  timeoutMs?: number;
}): Promise<ServerProcess> {
  const log = createWriteStream(options.logFile);
  const child = spawn(options.command, { cwd: options.cwd, env: options.env, shell: true, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  let exited = false;
  // 'close': the process exited and its output has been read (so that the log is complete).
  const exit = new Promise<void>((resolve) =>
    child.once('close', () => {
      exited = true;
      log.end(resolve);
    }),
  );
  const url = `http://127.0.0.1:${options.port}`;
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    if (exited) {
      await exit;
      throw new Error(`${options.label} exited before answering; see ${options.logFile}:\n${tail(options.logFile)}`);
    }
    if (Date.now() > deadline) {
      killGroup(child, 'SIGKILL');
      throw new Error(`${options.label} did not answer within the time limit; see ${options.logFile}:\n${tail(options.logFile)}`);
    }
    try {
      const res = await fetch(url + options.readyPath);
      await res.arrayBuffer();
      if (res.ok) break;
    } catch {}
    await sleep(100);
  }
  const pid = listenerPid(options.port, child.pid!) ?? child.pid!;
  return {
    label: options.label,
    child,
    pid,
    port: options.port,
    url,
    logFile: options.logFile,
    async stop() {
      if (exited) return;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 15_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals) {
  try {
    process.kill(-child.pid!, signal);
  } catch {}
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** `root` and its descendants (Linux /proc). */
function processTree(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name may contain spaces and parentheses: fields follow the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parentOf.set(Number(entry), Number(fields[1]));
    } catch {}
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parentOf) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** The process of `root`'s tree that holds the socket listening on `port` (null if none is found). */
export function listenerPid(port: number, root: number): number | null {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const row of text.trim().split('\n').slice(1)) {
      const cols = row.trim().split(/\s+/);
      const localPort = parseInt(cols[1]!.split(':')[1]!, 16);
      if (localPort === port && cols[3] === '0A') inodes.add(cols[9]!);
    }
  }
  for (const pid of processTree(root)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return pid;
      } catch {}
    }
  }
  return null;
}

/** Resident set size of a process in MB (VmRSS). */
export function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Samples the RSS of `pid` every `everyMs` until `stop()`; returns the samples in MB. */
export function sampleRss(pid: number, everyMs = 200): { stop(): number[] } {
  const samples: number[] = [];
  const take = () => {
    try {
      samples.push(rssMb(pid));
    } catch {}
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return samples;
    },
  };
}

/** CPU time (user + system) of a process so far, in clock ticks (/proc/<pid>/stat). */
function cpuTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/**
 * Waits until a server has finished the work a load run left behind (requests still being answered
 * when the load generator stopped): until it uses under ~10% of a CPU over 300 ms, at most `maxMs`.
 */
export async function waitIdle(pid: number, maxMs = 60_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = cpuTicks(pid);
  while (Date.now() < deadline) {
    await sleep(300);
    const now = cpuTicks(pid);
    if (now - last <= 3) return;
    last = now;
  }
}

let ticksPerSecond = 0;
/** CPU time used so far by `root` and its descendants (processes still alive), in milliseconds. */
export function treeCpuMs(root: number): number {
  if (!ticksPerSecond) ticksPerSecond = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  let ticks = 0;
  for (const pid of processTree(root)) {
    try {
      ticks += cpuTicks(pid);
    } catch {}
  }
  return (ticks * 1000) / ticksPerSecond;
}

/** The PostgreSQL postmaster serving the cluster in `dataDir` (its command line names the directory). */
export function findPostmaster(dataDir: string): number | null {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (/postgres$/.test(args[0] ?? '') && args.includes(dataDir)) return Number(entry);
    } catch {}
  }
  return null;
}

/**
 * A bench's last step: stops its embedded PostgreSQL and removes its work directory (kept with
 * BENCH_KEEP). Idle connections that the seeding's Prisma client keeps are cut when PostgreSQL stops
 * (57P01, admin shutdown): that error, and only that one, is expected from then on.
 */
export async function stopBenchDatabase(database: { stop(): Promise<void> }, dir: string): Promise<void> {
  process.on('uncaughtException', (error: Error & { code?: string }) => {
    if (error.code === '57P01') return;
    console.error(error);
    process.exit(1);
  });
  await database.stop();
  if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
}

/** How the benches start Parley: PARLEY_BENCH_SERVER_CMD, run by the shell in the repository root. */
export const PARLEY_SERVER_CMD = process.env.PARLEY_BENCH_SERVER_CMD || 'node --expose-gc --import tsx apps/server/src/main.ts';

/**
 * Starts Parley as every bench does (production mode, no rate limit, no response validation) on a free
 * port, once it answers /server_settings. With `profile`, node writes a CPU profile into BENCH_CPU_PROF
 * (Node 20 refuses --cpu-prof in NODE_OPTIONS: it goes after the command's leading `node`).
 */
export async function startBenchParley(options: {
  label: string;
  root: string;
  databaseUrl: string;
  secretKey: string;
  realmUrl: string;
  dataDir: string;
  logFile: string;
  profile: boolean;
  env?: NodeJS.ProcessEnv;
}): Promise<ServerProcess> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: options.databaseUrl,
    PARLEY_SECRET_KEY: options.secretKey,
    PARLEY_DATA_DIR: options.dataDir,
    PARLEY_URL: options.realmUrl,
    PARLEY_RATE_LIMIT: '0',
    ...options.env,
    HOST: '127.0.0.1',
    PORT: String(port),
  };
  delete env.PARLEY_VALIDATE_RESPONSES;
  const profileDir = options.profile && process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : null;
  const command = profileDir ? PARLEY_SERVER_CMD.replace(/^node\b/, `node --cpu-prof --cpu-prof-dir=${profileDir}`) : PARLEY_SERVER_CMD;
  return startServer({ label: options.label, command, cwd: options.root, env, port, readyPath: '/api/v1/server_settings', logFile: options.logFile });
}
