import type { Config } from './config.ts';
import type { PrismaClient } from './data/db.ts';
import type { ApiKeyCipher } from './security/secrets.ts';
import type { EventBus } from './events/bus.ts';
import type { EventDelivery } from './events/delivery.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Logger } from './http/logging.ts';
import type { DatabaseListener } from './events/listener.ts';
import type { DatabaseNotifier } from './events/notifier.ts';
import type { CredentialCache } from './security/credential-cache.ts';
import type { RateLimiter } from './data/rate-limits.repo.ts';
import type { UserDirectory } from './queries/user-directory.ts';
import type { ObjectStorage } from './storage/types.ts';
import type { UploadTokenSigner } from './security/upload-tokens.ts';
import type { PresenceBuffer } from './presence/buffer.ts';
import type { Lane } from './lib/lane.ts';

/** Everything the app needs, injected at start (no globals). */
export interface AppDeps {
  config: Config;
  db: PrismaClient;
  cipher: ApiKeyCipher;
  events: EventBus;
  /** Long-poll delivery of events to this process's GET /events requests. */
  delivery: EventDelivery;
  /** POST /register's state reads, at most config.registerConcurrency at once (lib/lane.ts). */
  registrations: Lane;
  /** Background jobs (scheduled delivery), shared by every process through the database. */
  jobs: JobQueue;
  /** This process's LISTEN/NOTIFY connection (events, cache invalidation): its listening half. */
  listener: DatabaseListener;
  /** Its sending half, on the same connection: NOTIFYs and the statements of `events` (typing). */
  notifier: DatabaseNotifier;
  /** Authenticated identities cached in memory, invalidated through `listener`. */
  credentials: CredentialCache;
  /** GET /users of whole organizations, serialised once per viewer role (queries/user-directory.ts). */
  userDirectory: UserDirectory;
  /** Presence reports this process took and has not written yet (written in batches: presence/buffer.ts). */
  presence: PresenceBuffer;
  /** Per user (or client address) request budget, shared across processes; null when disabled. */
  rateLimiter: RateLimiter | null;
  logger: Logger;
  /** Where files are kept (src/storage: a local folder or an S3-compatible bucket; callers cannot tell which). */
  storage: ObjectStorage;
  /** Signs and checks the tokens of uploaded files' temporary URLs (security/upload-tokens.ts). */
  uploadTokens: UploadTokenSigner;
  /** The bundled spec (spec/dist/openapi.json, made by `pnpm generate`); read when the HTTP app is built. */
  specJsonPath: string;
  specYamlPath: string;
  docsHtmlPath: string;
}
