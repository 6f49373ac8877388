// Processes and sockets of servers that tests start as `pnpm start` does (test/e2e): free ports,
// waiting for a condition, and who is who in /proc (Linux).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Polls `check` every 50 ms until it holds; fails with `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Children of a process (Linux /proc), with their command names. */
export function childrenOf(pid: number): Array<{ pid: number; comm: string }> {
  const out: Array<{ pid: number; comm: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (Number(stat.slice(close + 2).split(' ')[1]) === pid) out.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, close) });
    } catch {}
  }
  return out;
}

/**
 * Which of `pids` holds the server side of the TCP connection from local port `clientPort` to
 * 127.0.0.1:`serverPort` (from /proc/net/tcp and the processes' file descriptors); null: none (yet).
 */
export function connectionOwner(serverPort: number, clientPort: number, pids: number[]): number | null {
  const hexPort = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  let inode: string | undefined;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1]?.endsWith(`:${hexPort(serverPort)}`) && fields[2]?.endsWith(`:${hexPort(clientPort)}`)) inode = fields[9];
  }
  if (!inode || inode === '0') return null;
  for (const pid of pids) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return pid;
        } catch {}
      }
    } catch {}
  }
  return null;
}

export interface StartedProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Spawns a command with its output collected (stdout and stderr together). */
export function spawnCollecting(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): StartedProcess {
  let output = '';
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}
