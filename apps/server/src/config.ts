// Configuration from the environment, read once at start.
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseStorageConfig } from './storage/index.ts';
import type { StorageConfig } from './storage/types.ts';
import { parseEmailGatewayConfig, type EmailGatewayConfig } from './email-gateway/config.ts';
import { parseOutgoingWebhookConfig, type OutgoingWebhookConfig } from './lib/outgoing-webhooks.ts';

export interface Config {
  host: string;
  port: number;
  /** Public URL of the server (realm_url); defaults to http://HOST:PORT. */
  publicUrl: string;
  dataDir: string;
  databaseUrl: string | undefined;
  /** The embedded PostgreSQL's port (PARLEY_PG_PORT); unset, the one chosen on the first start and kept in $PARLEY_DATA_DIR/postgres.port. */
  embeddedPostgresPort: number | undefined;
  realmName: string;
  ownerEmail: string;
  /** Hex or base64 secret; when unset one is generated into $PARLEY_DATA_DIR/secret.key. */
  secretKey: string | undefined;
  /** Validate every response against the spec (on in development and tests). */
  validateResponses: boolean;
  /** Connections of this process's database pool (PARLEY_DB_POOL_SIZE). */
  databasePoolSize: number;
  /** Server processes `pnpm start` runs (PARLEY_WORKERS); default: one per core (src/cluster/). */
  workers: number;
  /** Requests handled at once by this process; more wait in line (PARLEY_MAX_CONCURRENT_REQUESTS). */
  maxConcurrentRequests: number;
  /** POST /register requests reading their state at once in this process (PARLEY_REGISTER_CONCURRENCY; lib/lane.ts). */
  registerConcurrency: number;
  /** How long a request may wait in line before it is answered 503 (PARLEY_QUEUE_TIMEOUT_MS). */
  queueTimeoutMs: number;
  /** A parked GET /events answers a heartbeat after this long (plus up to 10 s of jitter); Zulip: 45 s. */
  heartbeatMs: number;
  /** At most one GET /events answer per queue this often: events closer together go in one answer (events/pacing.ts; 0: none). */
  eventPacingMs: number;
  /** Time budget of mark_all_as_read and friends before they answer complete: false (Zulip: about 50 s). */
  markReadBudgetMs: number;
  /** Time budget of POST /streams/{id}/delete_topic before it answers complete: false (Zulip: 50 s). */
  deleteTopicBudgetMs: number;
  /** pino level: trace, debug, info (default: one line per request), warn, error, fatal, silent. */
  logLevel: string;
  /** Express `trust proxy` (PARLEY_TRUST_PROXY), so rate limits see client addresses behind a load balancer. */
  trustProxy: string | false;
  /** Requests per window per user (or client address); null disables. PARLEY_RATE_LIMIT="200/60". */
  rateLimit: { points: number; durationSeconds: number } | null;
  /** Whether a push provider (APNs credentials) is configured: `apns` is set. */
  pushNotificationsEnabled: boolean;
  /** APNs delivery (token auth, PARLEY_APNS_*); null keeps push notifications in the push outbox. */
  apns: ApnsConfig | null;
  /**
   * Presence turned off for every organization of the server (PARLEY_PRESENCE_DISABLED): Zulip's
   * per-organization `presence_disabled`, which neither its API nor its administrators can change.
   */
  presenceDisabled: boolean;
  /** How long presence reports wait in a process before they are written together (PARLEY_PRESENCE_FLUSH_MS). */
  presenceFlushMs: number;
  /** SMTP server for outgoing e-mail (PARLEY_SMTP_URL, smtp:// or smtps://); null keeps e-mails in the outbox. */
  smtpUrl: string | null;
  /** Sender of outgoing e-mail (PARLEY_EMAIL_FROM); default `Parley <noreply@host of publicUrl>`. */
  emailFrom: string;
  /** Where uploaded files are kept (src/storage): $PARLEY_DATA_DIR/uploads, or PARLEY_S3_BUCKET. */
  storage: StorageConfig;
  /** Largest file POST /user_uploads takes, in MiB (Zulip's MAX_FILE_UPLOAD_SIZE; PARLEY_MAX_FILE_UPLOAD_SIZE_MIB). */
  maxFileUploadSizeMib: number;
  /** Characters of keys and values one bot may keep in bot storage (Zulip's USER_STATE_SIZE_LIMIT; PARLEY_BOT_STORAGE_LIMIT). */
  botStorageSizeLimit: number;
  /** The incoming e-mail gateway (src/email-gateway): its SMTP listener is off unless PARLEY_EMAIL_GATEWAY_PORT is set. */
  emailGateway: EmailGatewayConfig;
  /** Outgoing webhooks (lib/outgoing-webhooks.ts): PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE, _TIMEOUT_MS, _RETRY_DELAY_MS. */
  outgoingWebhooks: OutgoingWebhookConfig;
  /** Port of the Prometheus endpoint GET /metrics (PARLEY_METRICS_PORT; src/metrics); null (unset): no endpoint. */
  metricsPort: number | null;
  /** Address the metrics endpoint listens on (PARLEY_METRICS_HOST), 127.0.0.1 by default: off the public port. */
  metricsHost: string;
  /** When set (PARLEY_METRICS_TOKEN), scrapes must send `Authorization: Bearer <token>`. */
  metricsToken: string | null;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const host = env.HOST ?? '127.0.0.1';
  const port = Number(env.PORT ?? 9991);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}`);
  const shownHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    host,
    port,
    publicUrl: validateOrganizationUrl(env.PARLEY_URL ?? `http://${shownHost}:${port}`),
    // Relative to where the user ran the command (pnpm runs scripts inside the package and keeps the
    // original directory in INIT_CWD).
    dataDir: path.resolve(env.INIT_CWD ?? process.cwd(), env.PARLEY_DATA_DIR ?? '.parley'),
    databaseUrl: env.DATABASE_URL || undefined,
    embeddedPostgresPort: env.PARLEY_PG_PORT ? portNumber('PARLEY_PG_PORT', env.PARLEY_PG_PORT) : undefined,
    realmName: env.PARLEY_REALM_NAME ?? 'Parley',
    ownerEmail: env.PARLEY_OWNER_EMAIL ?? 'owner@parley.local',
    secretKey: env.PARLEY_SECRET_KEY || undefined,
    validateResponses: (env.PARLEY_VALIDATE_RESPONSES ?? (env.NODE_ENV === 'production' ? '0' : '1')) === '1',
    logLevel: parseLogLevel(env.PARLEY_LOG_LEVEL ?? 'info'),
    databasePoolSize: positiveInteger('PARLEY_DB_POOL_SIZE', env.PARLEY_DB_POOL_SIZE ?? '20'),
    workers: env.PARLEY_WORKERS ? positiveInteger('PARLEY_WORKERS', env.PARLEY_WORKERS) : os.availableParallelism(),
    maxConcurrentRequests: positiveInteger('PARLEY_MAX_CONCURRENT_REQUESTS', env.PARLEY_MAX_CONCURRENT_REQUESTS ?? '64'),
    registerConcurrency: positiveInteger('PARLEY_REGISTER_CONCURRENCY', env.PARLEY_REGISTER_CONCURRENCY ?? '4'),
    queueTimeoutMs: positiveInteger('PARLEY_QUEUE_TIMEOUT_MS', env.PARLEY_QUEUE_TIMEOUT_MS ?? '5000'),
    heartbeatMs: positiveInteger('PARLEY_HEARTBEAT_MS', env.PARLEY_HEARTBEAT_MS ?? '45000'),
    eventPacingMs: nonNegativeInteger('PARLEY_EVENT_PACING_MS', env.PARLEY_EVENT_PACING_MS ?? '250'),
    markReadBudgetMs: positiveInteger('PARLEY_MARK_READ_BUDGET_MS', env.PARLEY_MARK_READ_BUDGET_MS ?? '50000'),
    deleteTopicBudgetMs: positiveInteger('PARLEY_DELETE_TOPIC_BUDGET_MS', env.PARLEY_DELETE_TOPIC_BUDGET_MS ?? '50000'),
    pushNotificationsEnabled: parseApnsConfig(env) !== null,
    apns: parseApnsConfig(env),
    presenceDisabled: parseSwitch('PARLEY_PRESENCE_DISABLED', env.PARLEY_PRESENCE_DISABLED),
    presenceFlushMs: positiveInteger('PARLEY_PRESENCE_FLUSH_MS', env.PARLEY_PRESENCE_FLUSH_MS ?? '1000'),
    smtpUrl: parseSmtpUrl(env.PARLEY_SMTP_URL),
    emailFrom: parseEmailFrom(env.PARLEY_EMAIL_FROM, env.PARLEY_URL ?? `http://${shownHost}:${port}`),
    trustProxy: env.PARLEY_TRUST_PROXY || false,
    rateLimit: parseRateLimit(env.PARLEY_RATE_LIMIT ?? '200/60'),
    storage: parseStorageConfig(env, path.resolve(env.INIT_CWD ?? process.cwd(), env.PARLEY_DATA_DIR ?? '.parley')),
    maxFileUploadSizeMib: nonNegativeInteger('PARLEY_MAX_FILE_UPLOAD_SIZE_MIB', env.PARLEY_MAX_FILE_UPLOAD_SIZE_MIB ?? '100'),
    botStorageSizeLimit: nonNegativeInteger('PARLEY_BOT_STORAGE_LIMIT', env.PARLEY_BOT_STORAGE_LIMIT ?? '10000000'),
    emailGateway: parseEmailGatewayConfig(env, host, env.PARLEY_URL ?? `http://${shownHost}:${port}`),
    outgoingWebhooks: parseOutgoingWebhookConfig(env),
    metricsPort: env.PARLEY_METRICS_PORT ? metricsPortNumber(env.PARLEY_METRICS_PORT) : null,
    metricsHost: env.PARLEY_METRICS_HOST || '127.0.0.1',
    metricsToken: env.PARLEY_METRICS_TOKEN || null,
  };
}

function nonNegativeInteger(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number (0 or more), got ${value}`);
  return n;
}

/** PARLEY_METRICS_PORT: a port number, 0 for any free one. */
function metricsPortNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`PARLEY_METRICS_PORT must be a port number, got ${value}`);
  return n;
}

function portNumber(name: string, value: string): number {
  const n = positiveInteger(name, value);
  if (n > 65535) throw new Error(`${name} must be a port number, got ${value}`);
  return n;
}

function positiveInteger(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${value}`);
  return n;
}

/** An on/off setting: 1/true/yes/on or 0/false/no/off (unset: off). */
function parseSwitch(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw new Error(`${name} must be 1 or 0, got ${value}`);
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];
function parseLogLevel(value: string): string {
  if (!LOG_LEVELS.includes(value)) throw new Error(`PARLEY_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got ${value}`);
  return value;
}

function parseRateLimit(value: string): Config['rateLimit'] {
  if (value === '0' || value === 'off') return null;
  const m = /^(\d+)\/(\d+)$/.exec(value);
  if (!m) throw new Error(`PARLEY_RATE_LIMIT must look like 200/60 (requests/seconds) or 0, got ${value}`);
  return { points: Number(m[1]), durationSeconds: Number(m[2]) };
}

/** An organization URL: absolute http(s), without a trailing slash. */
export function validateOrganizationUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`organization URL must be an absolute http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`organization URL must use http or https, got ${value}`);
  return value.replace(/\/+$/, '');
}

/** PARLEY_SMTP_URL: smtp://[user:password@]host[:port] (STARTTLS when offered) or smtps:// (implicit TLS). */
export function parseSmtpUrl(value: string | undefined): string | null {
  if (!value) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('PARLEY_SMTP_URL must be a URL like smtp://user:password@host:587 or smtps://host:465');
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) {
    throw new Error(`PARLEY_SMTP_URL must use smtp:// or smtps:// and name a host, got ${url.protocol}//${url.hostname}`);
  }
  return value;
}

/** PARLEY_EMAIL_FROM: an address, optionally `Name <address>`, on one line. */
function parseEmailFrom(value: string | undefined, publicUrl: string): string {
  const from = value || `Parley <noreply@${new URL(publicUrl).hostname}>`;
  if (/[\r\n]/.test(from) || !/@/.test(from)) throw new Error(`PARLEY_EMAIL_FROM must be one address like "Parley <noreply@example.com>", got ${JSON.stringify(from)}`);
  return from;
}

/** Apple Push Notification service: a .p8 signing key (token-based authentication) and where to send. */
export interface ApnsConfig {
  keyFile: string;
  keyId: string;
  teamId: string;
  /** Default apns-topic (the app's bundle id), for tokens registered without an app id. */
  topic: string;
  /** https://api.push.apple.com, the sandbox, or a stand-in (trusted through NODE_EXTRA_CA_CERTS). */
  url: string;
  requestTimeoutMs: number;
  /** Extra trusted CA certificates (PEM) for `url`; set by tests only (use NODE_EXTRA_CA_CERTS). */
  ca?: string;
}

/** PARLEY_APNS_KEY_FILE (with _KEY_ID and _TEAM_ID) turns APNs delivery on; _TOPIC and _URL are optional. */
export function parseApnsConfig(env: NodeJS.ProcessEnv): ApnsConfig | null {
  const keyFile = env.PARLEY_APNS_KEY_FILE;
  if (!keyFile) return null;
  if (!env.PARLEY_APNS_KEY_ID || !env.PARLEY_APNS_TEAM_ID) throw new Error('PARLEY_APNS_KEY_FILE needs PARLEY_APNS_KEY_ID and PARLEY_APNS_TEAM_ID (from the Apple developer account)');
  if (!existsSync(keyFile)) throw new Error(`PARLEY_APNS_KEY_FILE: no such file ${keyFile}`);
  const url = env.PARLEY_APNS_URL || 'https://api.push.apple.com';
  if (!/^https:\/\/[^/?#]+\/?$/.test(url)) throw new Error(`PARLEY_APNS_URL must be https://host[:port], got ${url}`);
  return { keyFile, keyId: env.PARLEY_APNS_KEY_ID, teamId: env.PARLEY_APNS_TEAM_ID, topic: env.PARLEY_APNS_TOPIC || 'org.zulip.Zulip', url: url.replace(/\/$/, ''), requestTimeoutMs: 10_000 };
}
