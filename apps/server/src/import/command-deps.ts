// The dependencies of the data commands (`manage import`, `import-slack`, `export`): what they use of
// AppDeps and nothing else. server.ts's createDeps loads the whole HTTP app (routes, handlers, the
// validator, the e-mail gateway): about 120 MB of modules under tsx that an import never runs, and an
// import's memory goal (issue 27: ≤ 300 MB) is the process's. These are made the way createDeps makes
// them (same secret, same avatar salt, same storage, events stored in the transaction and announced
// through the pool), so a running server sees what a command wrote as it sees its own.
import { createPrismaClient } from '@parley/db';
import { openParleyDatabase } from '@parley/db/embedded';
import { applyMigrations } from '@parley/db/migrate';
import type { Config } from '../config.ts';
import type { AppDeps } from '../deps.ts';
import { createEventBus } from '../events/bus.ts';
import { createDatabaseListener } from '../events/listener.ts';
import { createDatabaseNotifier } from '../events/notifier.ts';
import { notifyThroughPool } from '../data/events.repo.ts';
import { createLogger } from '../http/logging.ts';
import { createJobQueue } from '../jobs/queue.ts';
import { createApiKeyCipher, loadOrCreateSecret } from '../security/secrets.ts';
import { configureAvatarSalt } from '../lib/avatar.ts';
import { createStorage } from '../storage/index.ts';

export type CommandDeps = Pick<AppDeps, 'config' | 'db' | 'cipher' | 'storage' | 'events' | 'jobs' | 'logger'>;

/** As server.ts's openDatabase (DATABASE_URL, or the embedded PostgreSQL under the data directory), without loading the server. */
export async function openCommandDatabase(config: Config): Promise<{ url: string; stop(): Promise<void> }> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => {} };
  return openParleyDatabase({ dataDir: config.dataDir, log: () => {}, ...(config.embeddedPostgresPort !== undefined ? { port: config.embeddedPostgresPort } : {}) });
}

export async function createCommandDeps(config: Config, databaseUrl: string, options: { poolSize?: number } = {}): Promise<CommandDeps> {
  await applyMigrations(databaseUrl);
  const db = createPrismaClient(databaseUrl, { max: options.poolSize ?? 2, emitQueryEvents: false });
  const logger = createLogger(config.logLevel);
  // Never started (no LISTEN connection): the notifier sends its NOTIFYs through the pool.
  const listener = createDatabaseListener(databaseUrl, logger);
  const notifier = createDatabaseNotifier(listener.rounds, (channel, payload) => notifyThroughPool(db, channel, payload));
  const secret = loadOrCreateSecret(config.secretKey, config.dataDir);
  configureAvatarSalt(secret);
  return {
    config,
    db,
    cipher: createApiKeyCipher(secret),
    storage: await createStorage(config.storage),
    events: createEventBus(db, notifier, logger),
    jobs: createJobQueue(databaseUrl, logger),
    logger,
  };
}
