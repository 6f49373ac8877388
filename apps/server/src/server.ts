// Assembles a running Parley server: database (given or embedded), migrations, dependencies, HTTP.
// Used by main.ts and by the tests, so that tests run exactly what users run.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { createPrismaClient } from '@parley/db';
import { applyMigrations } from '@parley/db/migrate';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import type { AppDeps } from './deps.ts';
import { createEventBus } from './events/bus.ts';
import { createApiKeyCipher, loadOrCreateSecret } from './security/secrets.ts';

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
  close(): Promise<void>;
}

export async function createDeps(config: Config, databaseUrl: string, options: { poolSize?: number; emitQueryEvents?: boolean } = {}): Promise<AppDeps> {
  await applyMigrations(databaseUrl);
  const db = createPrismaClient(databaseUrl, { max: options.poolSize ?? 10, emitQueryEvents: options.emitQueryEvents ?? false });
  const files = specFiles();
  return {
    config,
    db,
    cipher: createApiKeyCipher(loadOrCreateSecret(config.secretKey, config.dataDir)),
    events: createEventBus(db),
    spec: JSON.parse(readFileSync(files.json, 'utf8')),
    specYamlPath: files.yaml,
    docsHtmlPath: files.docs,
  };
}

export async function listen(deps: AppDeps, host: string, port: number): Promise<RunningServer> {
  const app = buildApp(deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, host, (error?: Error) => (error ? reject(error) : resolve(s)));
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  return {
    deps,
    server,
    url,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await deps.db.$disconnect();
    },
  };
}
