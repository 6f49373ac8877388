// The primary process of `pnpm start` (node:cluster): it owns the database and the server processes,
// and serves no requests itself.
//
// Start-up: the address is checked, then PARLEY_WORKERS server processes (default: one per core) are
// forked at once and load the server while the embedded PostgreSQL starts (without DATABASE_URL; it
// keeps its data under $PARLEY_DATA_DIR/postgres and its port in $PARLEY_DATA_DIR/postgres.port) and
// the migrations run, here, once. Then every worker gets the database URL; the first one creates the
// organization of a new installation and the others listen once it exists. They share the port
// (node:cluster hands connections out in turn). A start that cannot succeed (the data directory in use,
// a port taken, a configuration error) prints why and what to do, and exits with status 1.
//
// What must happen once in the installation is already safe with many processes, here or on other
// machines: jobs (pg-boss: one claim per job, maintenance under its advisory lock, periodic jobs kept to
// one waiting), events, credentials and caches (PostgreSQL NOTIFY, every process listens), rate
// limits (in PostgreSQL), event housekeeping (idempotent deletes), migrations (advisory lock).
//
// A worker that dies after start-up is replaced: at once the first time, then with a doubling delay
// (up to 30 s) while replacements keep dying within 10 s of their start, so that a crash loop does
// not spin. Should the embedded PostgreSQL stop unexpectedly, it is started again on its port and every
// process reconnects (packages/db/src/embedded.ts restartOnExit; events/listener.ts).
//
// Stop: SIGINT (Ctrl-C), SIGTERM or SIGHUP stop every worker (each stops accepting connections and
// gives requests under way up to 10 s), then the embedded PostgreSQL, and exit with status 0. A second
// signal cuts the wait short. The end of the npx/pnpm processes that started the server counts as
// SIGTERM (see followLauncher). Should this process die without any of that (kill -9), its workers end
// with the IPC channel (node:cluster exits a worker whose channel to the primary closes), releasing the
// port, and the embedded PostgreSQL's watchdog stops the database (fast shutdown: nothing committed is
// lost). A start on the same data directory right after such a crash waits for that shutdown to finish
// (waitForOrphanedPostgres) rather than refusing the directory as in use.
import cluster, { type Worker } from 'node:cluster';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { inspectDataDirectory, openParleyDatabase, type ParleyDatabase } from '@parley/db/embedded';
import { applyMigrations } from '@parley/db/migrate';
import { loadConfig, type Config } from '../config.ts';
import { loadOrCreateSecret } from '../security/secrets.ts';
import { describeError, DRAIN_MS, explainListenError, type ToPrimary, type ToWorker } from './protocol.ts';

const say = (line: string) => console.log(`[parley] ${line}`);
/** Workers get this long beyond the drain to exit before they are killed. */
const EXIT_GRACE_MS = 5_000;
/** A worker that dies sooner than this after its start counts towards the crash-loop backoff. */
const QUICK_DEATH_MS = 10_000;
const MAX_RESTART_DELAY_MS = 30_000;
/** Database connections of all the workers' pools together, when PARLEY_DB_POOL_SIZE is not set. */
const TOTAL_POOL_CONNECTIONS = 200;

interface Slot {
  worker: Worker;
  pid: number;
  startedAt: number;
  listening: boolean;
  /**
   * Messages waiting for the worker to say hello: a message that arrives before the worker listens for
   * messages is lost.
   */
  pending: ToWorker[] | null;
  /** Why its start-up failed, as it said. */
  failure: string | null;
}

// `npx pnpm start` puts npx, pnpm and their shells between a supervisor and this process, and they do
// not pass every signal on: SIGTERM to npx alone ends the wrappers and leaves this process running,
// orphaned. So the server follows those wrappers: when one of them is gone, it stops as on SIGTERM.
// (Linux, from /proc. Started any other way, e.g. `node apps/server/scripts/start.mjs` under nohup,
// it follows nothing.)
interface ProcEntry {
  pid: number;
  ppid: number;
  comm: string;
  startTime: string;
  args: string[];
}

function readProc(pid: number): ProcEntry | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return { pid, ppid: Number(fields[1]), comm: stat.slice(stat.indexOf('(') + 1, close), startTime: fields[19] ?? '', args };
  } catch {
    return null;
  }
}

const PACKAGE_MANAGER = /^(npm|npx|pnpm|pnpx|yarn)(\.c?js)?$|^(npm|npx)-cli\.js$/;
const isPackageManager = (p: ProcEntry) =>
  p.args.slice(0, 2).some((arg) => PACKAGE_MANAGER.test(path.basename(arg))) || /^(npm|pnpm|yarn) /.test(p.args.join(' '));
const isScriptShell = (p: ProcEntry) => ['sh', 'bash', 'dash'].includes(p.comm) && p.args[1] === '-c';

function launcherChain(): ProcEntry[] {
  const chain: ProcEntry[] = [];
  let current = readProc(process.ppid);
  while (current && current.pid > 1) {
    const parent = readProc(current.ppid);
    const wrapper = isPackageManager(current) || (isScriptShell(current) && parent !== null && isPackageManager(parent));
    if (!wrapper) break;
    chain.push(current);
    current = parent;
  }
  return chain;
}

function followLauncher(requestStop: (reason: string) => void): void {
  const chain = existsSync('/proc/self/stat') ? launcherChain() : [];
  if (chain.length === 0) return; // started otherwise (node, a service manager, nohup): nothing to follow
  const timer = setInterval(() => {
    const gone = chain.find((p) => readProc(p.pid)?.startTime !== p.startTime);
    if (!gone) return;
    clearInterval(timer);
    requestStop(`${gone.args.join(' ').slice(0, 60)} (pid ${gone.pid}), which started this server, has ended`);
  }, 1000);
  timer.unref();
}

/**
 * How long a start waits for a PostgreSQL left by a crashed Parley to be stopped by its watchdog: for the
 * shutdown to begin, then (postmaster.pid says "stopping") for it to end.
 */
const ORPHAN_START_WAIT_MS = 10_000;
const ORPHAN_STOP_WAIT_MS = 60_000;

/**
 * After kill -9 of a previous primary, its PostgreSQL is still being stopped by its watchdog for a
 * moment (a fast shutdown takes a second or so, more on a busy machine): wait for that, instead of
 * refusing the data directory as in use. A PostgreSQL that a live Parley owns is not waited for (the
 * start refuses at once, naming it); one that nobody owns and that does not begin to stop (its watchdog
 * is gone too) is left to that refusal, which says how to stop it.
 */
async function waitForOrphanedPostgres(clusterDir: string, cancelled: () => boolean): Promise<void> {
  const orphan = () => {
    const running = inspectDataDirectory(clusterDir).running;
    return running !== null && running.ownerPid === null ? running.postgresPid : null;
  };
  const stopping = () => {
    try {
      return readFileSync(path.join(clusterDir, 'postmaster.pid'), 'utf8').split('\n')[7]?.trim() === 'stopping';
    } catch {
      return false;
    }
  };
  const first = orphan();
  if (first === null) return;
  say(`the PostgreSQL (pid ${first}) of a Parley that ended without stopping it still runs on ${clusterDir}; waiting for it to stop`);
  const started = Date.now();
  while (!cancelled() && orphan() !== null && Date.now() - started < (stopping() ? ORPHAN_STOP_WAIT_MS : ORPHAN_START_WAIT_MS)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Fails early, before any database work, when the address cannot be listened on. */
async function checkAddress(config: Config): Promise<void> {
  if (config.port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (error) => reject(new Error(explainListenError(error, config), { cause: error })));
    probe.listen({ port: config.port, host: config.host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/**
 * Runs the primary. `entry`: the file the workers run (main.ts, or the built main.js), which sends
 * them to cluster/worker.ts.
 */
export async function runPrimary(entry: string, startedAt: number): Promise<void> {
  let database: ParleyDatabase | undefined;
  let metrics: { close(): Promise<void> } | undefined;
  const slots = new Map<number, Slot>();
  let stopReason: string | undefined;
  let stopped: Promise<never> | undefined;
  /** Every initial worker listens: from now on a dying worker is replaced, not a failed start. */
  let ready = false;
  let start: { databaseUrl: string } | undefined;
  let firstUp = false;
  let quickDeaths = 0;
  let allExited: (() => void) | null = null;
  let workerFailed = false;

  const tell = (slot: Slot, message: ToWorker) => {
    if (slot.pending) slot.pending.push(message);
    else if (slot.worker.isConnected()) slot.worker.send(message, undefined, () => {});
  };

  /** Ends the process after releasing whatever has been started; status 0 for a requested stop. */
  function stop(status: number): Promise<never> {
    stopped ??= (async () => {
      if (slots.size > 0) {
        const exited = new Promise<void>((resolve) => (allExited = resolve));
        for (const slot of slots.values()) tell(slot, { kind: 'stop' });
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), DRAIN_MS + EXIT_GRACE_MS)));
        if ((await Promise.race([exited, late])) === 'late') {
          for (const slot of slots.values()) {
            console.error(`[parley] server process ${slot.pid} did not stop in time; killing it`);
            slot.worker.process.kill('SIGKILL');
          }
          await exited;
          workerFailed = true;
        }
        clearTimeout(timer);
      }
      if (workerFailed) status ||= 1;
      try {
        await metrics?.close();
      } catch {}
      try {
        await database?.stop();
      } catch (error) {
        console.error(`[parley] stopping the embedded PostgreSQL failed: ${describeError(error)}`);
        status ||= 1;
      }
      process.exit(status);
    })();
    return stopped;
  }

  /** A stop asked for by a signal, or by the end of the command that started us. */
  function requestStop(reason: string) {
    if (stopReason) {
      // Asked again: do not wait for requests under way.
      say(`${reason} again: closing open connections now`);
      for (const slot of slots.values()) tell(slot, { kind: 'stop-now' });
      return;
    }
    stopReason = reason;
    if (ready) say(`${reason}: shutting down (requests under way get up to ${DRAIN_MS / 1000} s)`);
    else say(`${reason}: stopping once start-up has released what it holds`);
    void stop(0);
  }
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => requestStop(signal));
  followLauncher(requestStop);

  try {
    await boot();
  } catch (error) {
    console.error(`[parley] cannot start: ${describeError(error)}`);
    await stop(1);
  }

  async function boot() {
    const config = loadConfig();
    // Right after kill -9 of a previous primary on this data directory, its PostgreSQL (and its workers,
    // which hold the port) may still be ending.
    if (!config.databaseUrl) await waitForOrphanedPostgres(path.join(path.resolve(config.dataDir), 'postgres'), () => stopReason !== undefined);
    if (stopReason) await stop(0);
    await checkAddress(config);
    // Made here, once, before the workers read it (several creating it at once would race).
    loadOrCreateSecret(config.secretKey, config.dataDir);

    // Unless set, the pools of all workers together keep to TOTAL_POOL_CONNECTIONS (PostgreSQL's limit).
    const workerEnv: NodeJS.ProcessEnv = process.env.PARLEY_DB_POOL_SIZE
      ? {}
      : { PARLEY_DB_POOL_SIZE: String(Math.max(5, Math.min(config.databasePoolSize, Math.floor(TOTAL_POOL_CONNECTIONS / config.workers)))) };
    // The workers accept connections from the listening socket they share (the kernel hands each to
    // one that is waiting in accept, so a busy worker takes fewer), rather than node:cluster's default
    // of the primary accepting and passing them on in turn: a connection passed to a worker that has
    // just died is never answered nor closed (a client re-polling after its worker was killed would
    // hang), whereas one waiting in the shared socket's queue is accepted by a live worker.
    // NODE_CLUSTER_SCHED_POLICY=rr restores the default.
    if (!process.env.NODE_CLUSTER_SCHED_POLICY) cluster.schedulingPolicy = cluster.SCHED_NONE;
    cluster.setupPrimary({ exec: entry });

    const startMessage = (bootstrap: boolean): ToWorker => ({ kind: 'start', databaseUrl: start!.databaseUrl, bootstrap, listen: firstUp || bootstrap });

    function onMessage(slot: Slot, message: ToPrimary) {
      if (message.kind === 'hello') {
        const pending = slot.pending ?? [];
        slot.pending = null;
        for (const waiting of pending) tell(slot, waiting);
      } else if (message.kind === 'failed') slot.failure = message.message;
      else if (stopped) return;
      else if (message.kind === 'bootstrapped') {
        if (message.created) {
          const { ownerEmail, ownerPassword, zuliprc } = message.created;
          announceOwner = () => {
            say(`created organization "${config.realmName}" with owner ${ownerEmail}`);
            if (ownerPassword) say(`  password: ${ownerPassword}   (shown once; set PARLEY_OWNER_PASSWORD to choose it)`);
            say(`  zuliprc:  ${zuliprc}   e.g. zulip-send --config-file ${zuliprc} ...`);
          };
        }
      } else if (message.kind === 'listening') {
        slot.listening = true;
        if (!firstUp) {
          // The first worker is up, and the job queue's tables with it: the others start theirs now
          // (pg-boss creating its queues in several processes at once on a new database can deadlock).
          firstUp = true;
          for (const other of slots.values()) if (other !== slot) tell(other, { kind: 'listen' });
        }
        if (ready) {
          say(`server process ${slot.pid} is listening`);
          return;
        }
        if ([...slots.values()].every((s) => s.listening)) {
          ready = true;
          const count = slots.size;
          say(`listening on ${message.url} with ${count} server process${count === 1 ? '' : 'es'} (ready in ${Math.round(performance.now() - startedAt)} ms)`);
          say(`API docs: ${message.url}/api/docs   spec: ${message.url}/api/openapi.yaml`);
          if (message.emailGatewayPort !== null) say(`e-mail gateway: SMTP on ${config.emailGateway.host}:${message.emailGatewayPort} for @${config.emailGateway.domain}`);
          announceOwner();
          announceOwner = () => {};
          if (stopReason) void stop(0);
        }
      }
    }
    let announceOwner = () => {};

    function onExit(slot: Slot, code: number | null, signal: string | null) {
      slots.delete(slot.worker.id);
      const how = signal ? `was killed (${signal})` : `exited with code ${code}`;
      if (stopped) {
        if (code !== 0 && code !== null) workerFailed = true;
        if (slots.size === 0) allExited?.();
        return;
      }
      if (!ready) {
        // A worker that cannot start: the start fails (its reason, when it gave one).
        announceOwner(); // the organization exists now: its password must not be lost with this start
        console.error(`[parley] cannot start: ${slot.failure ?? `server process ${slot.pid} ${how} during start-up`}`);
        void stop(1);
        return;
      }
      quickDeaths = Date.now() - slot.startedAt < QUICK_DEATH_MS ? quickDeaths + 1 : 0;
      const delay = quickDeaths <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 500 * 2 ** (quickDeaths - 2));
      say(`server process ${slot.pid} ${how}; starting another${delay ? ` in ${delay / 1000} s (it keeps dying soon after its start)` : ''}`);
      setTimeout(() => {
        if (!stopReason) fork(false);
      }, delay);
    }

    function fork(bootstrap: boolean): Slot {
      const worker = cluster.fork(workerEnv);
      const slot: Slot = { worker, pid: worker.process.pid ?? 0, startedAt: Date.now(), listening: false, pending: [], failure: null };
      slots.set(worker.id, slot);
      worker.on('message', (message: ToPrimary) => onMessage(slot, message));
      worker.on('exit', (code, signal) => onExit(slot, code, signal));
      worker.on('error', () => {}); // a message to a worker that has just died
      if (start) tell(slot, startMessage(bootstrap));
      return slot;
    }

    // The workers load the server while PostgreSQL starts.
    say(`starting ${config.workers} server process${config.workers === 1 ? '' : 'es'} (PARLEY_WORKERS)`);
    const initial = Array.from({ length: config.workers }, () => fork(false));
    if (config.metricsPort !== null) {
      // The workers' metrics, summed (prom-client's AggregatorRegistry over the IPC channel).
      const { startMetricsServer } = await import('../metrics/server.ts');
      const served = await startMetricsServer({ port: config.metricsPort, host: config.metricsHost, token: config.metricsToken, aggregateCluster: true });
      metrics = served;
      say(`metrics: http://${config.metricsHost.includes(':') ? `[${config.metricsHost}]` : config.metricsHost}:${served.port}/metrics${config.metricsToken ? ' (bearer token: PARLEY_METRICS_TOKEN)' : ''}`);
    }
    database = config.databaseUrl
      ? { url: config.databaseUrl, stop: async () => {} }
      : await openParleyDatabase({ dataDir: config.dataDir, log: say, ...(config.embeddedPostgresPort !== undefined ? { port: config.embeddedPostgresPort } : {}) });
    if (stopReason) await stop(0);
    await applyMigrations(database.url);
    if (stopReason) await stop(0);
    start = { databaseUrl: database.url };
    initial.forEach((slot, index) => tell(slot, startMessage(index === 0)));
  }
}
