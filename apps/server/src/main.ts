// `pnpm start`: runs Parley. Without DATABASE_URL an embedded PostgreSQL keeps its data under
// $PARLEY_DATA_DIR/postgres (default ./.parley).
//
// Start-up: the embedded PostgreSQL is launched first and starts (in its own processes) while the rest
// of the server loads; a start that cannot succeed (the data directory already in use, a port taken,
// a configuration error) prints why and what to do, and exits with status 1.
//
// Stop: SIGINT (Ctrl-C), SIGTERM or SIGHUP stop accepting connections, give requests under way up to
// 10 s, close the database pool, stop the embedded PostgreSQL and exit with status 0. A second signal
// cuts the wait short. The end of the npx/pnpm processes that started the server counts as SIGTERM
// (see followLauncher). Should this process die without any of that (kill -9), the embedded
// PostgreSQL's watchdog stops the database (see packages/db/src/embedded.ts).
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { inspect } from 'node:util';
import { openParleyDatabase, type ParleyDatabase } from '@parley/db/embedded';
import { loadConfig, type Config } from './config.ts';
import type { AppDeps } from './deps.ts';
import type { RunningServer } from './server.ts';

const DRAIN_MS = 10_000;
const startedAt = performance.now();
const say = (line: string) => console.log(`[parley] ${line}`);

let database: ParleyDatabase | undefined;
let deps: AppDeps | undefined;
let running: RunningServer | undefined;
let stopReason: string | undefined;
let stopped: Promise<never> | undefined;

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (error === undefined) return 'unknown error (undefined was thrown)';
  return typeof error === 'string' ? error : inspect(error);
}

/** Ends the process after releasing whatever has been started; status 0 for a requested stop. */
function stop(status: number): Promise<never> {
  stopped ??= (async () => {
    try {
      if (running) await running.close({ drainMs: DRAIN_MS });
      else await deps?.db.$disconnect();
    } catch (error) {
      console.error(`[parley] closing the server failed: ${describe(error)}`);
      status ||= 1;
    }
    try {
      await database?.stop();
    } catch (error) {
      console.error(`[parley] stopping the embedded PostgreSQL failed: ${describe(error)}`);
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
    running?.server.closeAllConnections();
    return;
  }
  stopReason = reason;
  if (running) {
    say(`${reason}: shutting down (requests under way get up to ${DRAIN_MS / 1000} s)`);
    void stop(0);
  } else {
    say(`${reason}: stopping once start-up has released what it holds`);
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => requestStop(signal));

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

function followLauncher(): void {
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
followLauncher();

function explainListenError(error: unknown, config: Config): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return `port ${config.port} on ${config.host} is already in use; stop what uses it or set PORT to another port`;
  if (code === 'EACCES') return `not allowed to listen on ${config.host}:${config.port}; choose a PORT above 1023 or another HOST`;
  if (code === 'EADDRNOTAVAIL') return `${config.host} is not an address of this machine; set HOST to one that is (e.g. 127.0.0.1)`;
  return describe(error);
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

async function main(): Promise<void> {
  const config = loadConfig();
  await checkAddress(config);
  // PostgreSQL starts in its own processes while the server's modules load.
  const opening: Promise<ParleyDatabase> = config.databaseUrl
    ? Promise.resolve({ url: config.databaseUrl, stop: async () => {} })
    : openParleyDatabase({ dataDir: config.dataDir, log: say });
  opening.catch(() => {}); // awaited below; until then a failure must not count as unhandled
  let modules: [typeof import('./server.ts'), typeof import('./bootstrap.ts'), typeof import('./actions/onboarding.ts')] | undefined;
  let loadError: unknown;
  try {
    modules = await Promise.all([import('./server.ts'), import('./bootstrap.ts'), import('./actions/onboarding.ts')]);
  } catch (error) {
    loadError = error;
  }
  database = await opening;
  if (!modules) throw loadError;
  const [{ createDeps, listen }, { bootstrapIfEmpty, writeZuliprc, FIRST_CHANNEL_NAME }, { sendWelcomeMessages }] = modules;
  if (stopReason) await stop(0);

  deps = await createDeps(config, database.url);
  const boot = await bootstrapIfEmpty(deps);
  // A new organization starts with the welcome bot's messages in its first channel.
  if (boot.created && boot.realmId !== undefined) await sendWelcomeMessages(deps, boot.realmId, FIRST_CHANNEL_NAME);
  // The zuliprc exists before the server answers, so whoever waits for "listening" can use it at once.
  const zuliprc = boot.created && boot.ownerEmail && boot.apiKey ? writeZuliprc(config.dataDir, boot.ownerEmail, boot.apiKey, config.publicUrl) : null;
  if (stopReason) await stop(0);
  const announceOwner = () => {
    if (!zuliprc) return;
    say(`created organization "${config.realmName}" with owner ${boot.ownerEmail}`);
    say(`  password: ${boot.ownerPassword}   (shown once; set PARLEY_OWNER_PASSWORD to choose it)`);
    say(`  zuliprc:  ${zuliprc}   e.g. zulip-send --config-file ${zuliprc} ...`);
  };
  try {
    running = await listen(deps, config.host, config.port);
  } catch (error) {
    announceOwner(); // the organization exists now: its password must not be lost with this start
    throw new Error(explainListenError(error, config), { cause: error });
  }
  say(`listening on ${running.url} (ready in ${Math.round(performance.now() - startedAt)} ms)`);
  say(`API docs: ${running.url}/api/docs   spec: ${running.url}/api/openapi.yaml`);
  if (running.emailGateway) say(`e-mail gateway: SMTP on ${config.emailGateway.host}:${running.emailGateway.port} for @${config.emailGateway.domain}`);
  announceOwner();
  if (stopReason) {
    say(`${stopReason}: shutting down`);
    await stop(0);
  }
}

try {
  await main();
} catch (error) {
  console.error(`[parley] cannot start: ${describe(error)}`);
  await stop(1);
}
