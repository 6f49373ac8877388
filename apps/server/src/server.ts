// Assembles a running Parley server: database (given or embedded), migrations, dependencies, HTTP.
// Used by main.ts and by the tests, so that tests run exactly what users run.
import type { AddressInfo } from 'node:net';
import http, { type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import { createRequire } from 'node:module';
import { createPrismaClient } from '@parley/db';
import { openParleyDatabase } from '@parley/db/embedded';
import { applyMigrations } from '@parley/db/migrate';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import type { AppDeps } from './deps.ts';
import { createEventBus } from './events/bus.ts';
import { createDatabaseListener } from './events/listener.ts';
import { createDatabaseNotifier } from './events/notifier.ts';
import { createEventDelivery, DEFAULT_DELIVERY_OPTIONS } from './events/delivery.ts';
import { startEventHousekeeping } from './events/housekeeping.ts';
import { createJobQueue } from './jobs/queue.ts';
import { registerJobHandlers } from './jobs/handlers.ts';
import { withPlainStatements } from './data/pg-transactions.ts';
import { notifyThroughPool } from './data/events.repo.ts';
import { createCredentialCache } from './security/credential-cache.ts';
import { createRateLimiter } from './data/rate-limits.repo.ts';
import { createUserDirectory } from './queries/user-directory.ts';
import { createLogger } from './http/logging.ts';
import { createApiKeyCipher, loadOrCreateSecret } from './security/secrets.ts';
import { configureAvatarSalt } from './lib/avatar.ts';
import { startIdleCollection } from './http/idle-collection.ts';
import { createStorage } from './storage/index.ts';
import { createUploadTokenSigner } from './security/upload-tokens.ts';
import { scheduleAttachmentCleanup } from './jobs/attachments.ts';
import { scheduleRealmJobs } from './jobs/realm.ts';
import { createPresenceBuffer } from './presence/buffer.ts';
import { flushPresenceReports } from './actions/presence.ts';
import { startEmailGateway, type EmailGateway } from './email-gateway/smtp.ts';
import cluster from 'node:cluster';
import { attachMetrics } from './metrics/metrics.ts';
import { createLane } from './lib/lane.ts';
import { startConfiguredMetricsServer, type MetricsServer } from './metrics/server.ts';

const require = createRequire(import.meta.url);

export function specFiles() {
  const specDir = path.dirname(require.resolve('@parley/spec/package.json'));
  return {
    json: path.join(specDir, 'dist', 'openapi.json'),
    yaml: path.join(specDir, 'dist', 'openapi.yaml'),
    docs: path.join(specDir, 'dist', 'docs.html'),
  };
}

export interface RunningServer {
  deps: AppDeps;
  server: Server;
  url: string;
  /** The e-mail gateway's SMTP listener (src/email-gateway), when PARLEY_EMAIL_GATEWAY_PORT is set. */
  emailGateway: EmailGateway | null;
  /**
   * The Prometheus endpoint (PARLEY_METRICS_PORT), when this process serves it: not in a node:cluster
   * worker, whose metrics the primary serves (metrics/server.ts).
   */
  metrics: MetricsServer | null;
  /** Stops the server: with drainMs, requests under way get that long to finish first. */
  close(options?: { drainMs?: number }): Promise<void>;
}

export async function createDeps(config: Config, databaseUrl: string, options: { poolSize?: number; emitQueryEvents?: boolean } = {}): Promise<AppDeps> {
  await applyMigrations(databaseUrl);
  const db = withPlainStatements(createPrismaClient(databaseUrl, { max: options.poolSize ?? config.databasePoolSize, emitQueryEvents: options.emitQueryEvents ?? false }));
  const files = specFiles();
  const logger = createLogger(config.logLevel);
  // Started by listen(): commands that only use the database (manage, seeding) open no extra connection.
  const listener = createDatabaseListener(databaseUrl, logger);
  const notifier = createDatabaseNotifier(listener.rounds, (channel, payload) => notifyThroughPool(db, channel, payload));
  const secret = loadOrCreateSecret(config.secretKey, config.dataDir);
  configureAvatarSalt(secret);
  const deps: AppDeps = {
    config,
    db,
    cipher: createApiKeyCipher(secret),
    uploadTokens: createUploadTokenSigner(secret),
    storage: await createStorage(config.storage),
    listener,
    notifier,
    credentials: createCredentialCache(listener),
    userDirectory: createUserDirectory(listener),
    events: createEventBus(db, notifier, logger),
    delivery: createEventDelivery(db, listener, logger, {
      ...DEFAULT_DELIVERY_OPTIONS,
      heartbeatMs: config.heartbeatMs,
      heartbeatJitterMs: Math.min(DEFAULT_DELIVERY_OPTIONS.heartbeatJitterMs, config.heartbeatMs / 4),
      pacingMs: config.eventPacingMs,
    }),
    registrations: createLane(config.registerConcurrency),
    jobs: createJobQueue(databaseUrl, logger),
    rateLimiter: config.rateLimit ? createRateLimiter(db, config.rateLimit, 'api', (error) => logger.error({ err: error }, 'rate-limit write failed')) : null,
    presence: createPresenceBuffer((realm, reports) => flushPresenceReports(deps, realm, reports), { intervalMs: config.presenceFlushMs, logger }),
    logger,
    specJsonPath: files.json,
    specYamlPath: files.yaml,
    docsHtmlPath: files.docs,
  };
  return deps;
}

/** Requests Node's HTTP parser refuses never reach Express: answer them in Zulip's envelope too. */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const [status, reason, msg] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', `Request headers too large (limit: ${http.maxHeaderSize} bytes)`]
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'Request timed out']
        : [400, 'Bad Request', 'Malformed HTTP request'];
  const body = JSON.stringify({ result: 'error', msg, code: 'BAD_REQUEST' });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export async function listen(deps: AppDeps, host: string, port: number): Promise<RunningServer> {
  const app = buildApp(deps);
  deps.listener.start();
  await deps.listener.ready();
  // As app.listen, with the application's own request handler (app.ts `serve`).
  const server = await new Promise<Server>((resolve, reject) => {
    const s = http.createServer(app.serverOptions, app.serve);
    s.once('error', reject);
    s.listen(port, host, () => {
      s.removeListener('error', reject);
      resolve(s);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.on('clientError', answerClientError);
  const housekeeping = startEventHousekeeping(deps.db, deps.logger);
  const idleCollection = startIdleCollection(server);
  registerJobHandlers(deps);
  await deps.jobs.start();
  await scheduleAttachmentCleanup(deps);
  await scheduleRealmJobs(deps);
  const emailGateway = deps.config.emailGateway.port === null ? null : await startEmailGateway(deps);
  const detachMetrics = attachMetrics(deps);
  const metrics = cluster.isWorker ? null : await startConfiguredMetricsServer(deps.config, false);
  // In-flight requests, so that close() can let them finish.
  let inFlight = 0;
  let drained: (() => void) | null = null;
  const responseClosed = () => {
    inFlight--;
    if (inFlight === 0) drained?.();
  };
  server.on('request', (_req, res: ServerResponse) => {
    inFlight++;
    res.on('close', responseClosed); // a response closes once
  });
  const address = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  return {
    deps,
    server,
    url,
    emailGateway,
    metrics,
    async close({ drainMs = 0 } = {}) {
      // Parked long-polls answer at once (a heartbeat), so that clients poll again elsewhere.
      deps.delivery.close();
      detachMetrics();
      await metrics?.close();
      housekeeping.stop();
      idleCollection.stop();
      // Stop accepting; idle keep-alive connections go at once, requests under way get up to drainMs.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0 && drainMs > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, drainMs);
          drained = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      server.closeAllConnections();
      await closed;
      await emailGateway?.close();
      // Presence reports taken and not written yet are written now.
      await deps.presence.close();
      await deps.jobs.stop();
      await deps.events.flush();
      // Acknowledgments and access times of the queues polled here, recorded in memory, are written now.
      await deps.delivery.flush();
      await deps.rateLimiter?.close();
      await deps.listener.close();
      await deps.storage.close();
      await deps.db.$disconnect();
    },
  };
}

/**
 * The database to use: DATABASE_URL when set, otherwise the embedded PostgreSQL under
 * $PARLEY_DATA_DIR/postgres on a kept port (its `parley` database created on first use; refused, with what to do,
 * when another process runs that cluster). `stop` shuts the embedded cluster down (a no-op for
 * DATABASE_URL).
 */
export async function openDatabase(config: Config, log: (line: string) => void = () => {}): Promise<{ url: string; stop(): Promise<void> }> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  return openParleyDatabase({ dataDir: config.dataDir, log, ...(config.embeddedPostgresPort !== undefined ? { port: config.embeddedPostgresPort } : {}) });
}
