import type { Config } from './config.ts';
import type { PrismaClient } from './data/db.ts';
import type { ApiKeyCipher } from './security/secrets.ts';
import type { EventBus } from './events/bus.ts';
import type { Logger } from './http/logging.ts';

/** Everything the app needs, injected at start (no globals). */
export interface AppDeps {
  config: Config;
  db: PrismaClient;
  cipher: ApiKeyCipher;
  events: EventBus;
  logger: Logger;
  /** The bundled spec (spec/dist/openapi.json, made by `pnpm generate`); read when the HTTP app is built. */
  specJsonPath: string;
  specYamlPath: string;
  docsHtmlPath: string;
}
