// A server process of `pnpm start`: a node:cluster worker forked by the primary (cluster/primary.ts).
// It loads the server while the primary starts PostgreSQL, then, told the database URL, connects,
// (one worker, once) creates the organization of a new installation, and listens on the shared port.
//
// Stop: the primary's `stop` or a signal of our own (a terminal's Ctrl-C reaches the whole process
// group) closes the server with its drain (requests under way get up to DRAIN_MS) and exits 0; asked
// again, open connections are closed at once. Should the primary die (kill -9), node:cluster ends
// this process as soon as the IPC channel closes.
import type { AppDeps } from '../deps.ts';
import type { RunningServer } from '../server.ts';
import { loadConfig } from '../config.ts';
import { describeError, DRAIN_MS, explainListenError, type ToPrimary, type ToWorker } from './protocol.ts';

export async function runWorker(): Promise<void> {
  let deps: AppDeps | undefined;
  let running: RunningServer | undefined;
  let stopReason: string | undefined;
  let stopped: Promise<never> | undefined;

  const send = (message: ToPrimary) => new Promise<void>((resolve) => (process.send ? process.send(message, undefined, {}, () => resolve()) : resolve()));

  function stop(status: number): Promise<never> {
    stopped ??= (async () => {
      try {
        if (running) await running.close({ drainMs: DRAIN_MS });
        else await deps?.db.$disconnect();
      } catch (error) {
        console.error(`[parley] server process ${process.pid}: closing the server failed: ${describeError(error)}`);
        status ||= 1;
      }
      process.exit(status);
    })();
    return stopped;
  }

  /** `again`: a repeated request cuts the drain short. */
  function requestStop(reason: string, again: boolean) {
    if (stopReason) {
      if (again) running?.server.closeAllConnections();
      return;
    }
    stopReason = reason;
    // Nothing taken yet, or everything: stop now. Otherwise start-up notices stopReason at its next step.
    if (running || !deps) void stop(0);
  }
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => requestStop(signal, true));

  let startMessage: (message: Extract<ToWorker, { kind: 'start' }>) => void = () => {};
  const started = new Promise<Extract<ToWorker, { kind: 'start' }>>((resolve) => (startMessage = resolve));
  let allowListen: () => void = () => {};
  const listenAllowed = new Promise<void>((resolve) => (allowListen = resolve));
  process.on('message', (message: ToWorker) => {
    if (message.kind === 'start') {
      if (message.listen) allowListen();
      startMessage(message);
    } else if (message.kind === 'listen') allowListen();
    else if (message.kind === 'stop') requestStop('stop', false);
    else if (message.kind === 'stop-now') {
      requestStop('stop', false);
      running?.server.closeAllConnections();
    }
  });
  void send({ kind: 'hello' });
  // Asked to stop before start-up is done: release what has been taken and leave.
  const checkStop = async () => {
    if (stopReason) await stop(0);
  };

  const config = loadConfig();
  try {
    const [server, bootstrap, onboarding] = await Promise.all([import('../server.ts'), import('../bootstrap.ts'), import('../actions/onboarding.ts')]);
    const start = await started;
    await checkStop();
    deps = await server.createDeps(config, start.databaseUrl);
    await checkStop();
    if (start.bootstrap) {
      const boot = await bootstrap.bootstrapIfEmpty(deps);
      // A new organization starts with the welcome bot's messages in its first channel.
      if (boot.created && boot.realmId !== undefined) await onboarding.sendWelcomeMessages(deps, boot.realmId, bootstrap.FIRST_CHANNEL_NAME);
      // The zuliprc exists before the server answers, so whoever waits for "listening" can use it at once.
      const created =
        boot.created && boot.ownerEmail && boot.apiKey
          ? { ownerEmail: boot.ownerEmail, ownerPassword: boot.ownerPassword ?? null, zuliprc: bootstrap.writeZuliprc(config.dataDir, boot.ownerEmail, boot.apiKey, config.publicUrl) }
          : null;
      await send({ kind: 'bootstrapped', created });
    }
    await listenAllowed;
    await checkStop();
    try {
      running = await server.listen(deps, config.host, config.port);
    } catch (error) {
      throw new Error(explainListenError(error, config), { cause: error });
    }
    await send({ kind: 'listening', url: running.url, emailGatewayPort: running.emailGateway?.port ?? null });
    await checkStop();
  } catch (error) {
    await send({ kind: 'failed', message: describeError(error) });
    await stop(1);
  }
}
