// A real Parley server for one test file, on its own copy of the seeded template database.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, inject } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { loadConfig, type Config } from '../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../src/server.ts';
import { TEST_SECRET, type Person } from './fixtures.ts';
import { basicAuth } from './auth.ts';
import { copyTemplateDatabase } from './template-copy.ts';

export interface TestServer {
  url: string;
  running: RunningServer;
  databaseUrl: string;
  /** The id of the test organization (every test database holds one). */
  realmId: number;
  users: Record<Person, { id: number; email: string; apiKey: string }>;
  /** A generated client authenticated as one of the test people. */
  client(person: Person): ParleyClient;
  /** An unauthenticated client. */
  anonymous(): ParleyClient;
  /** Raw HTTP against /api/v1, for wire-format tests. */
  raw(path: string, init?: RequestInit & { as?: Person }): Promise<{ status: number; headers: Headers; body: any }>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Emit Prisma's query events (tests that count statements). */
  emitQueryEvents?: boolean;
  rateLimit?: { points: number; durationSeconds: number };
  heartbeatMs?: number;
  /**
   * Configuration to override (file storage, upload limits …), or a function giving it when the server
   * starts (after earlier hooks, e.g. an S3 stand-in's); storage defaults to a new temporary folder.
   */
  config?: Partial<Config> | (() => Partial<Config>);
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const template = inject('parleyTemplate');
  const database = `t_${randomBytes(6).toString('hex')}`;
  await copyTemplateDatabase(template.adminUrl, template.templateDatabase, database);
  const databaseUrl = template.adminUrl.replace(/\/postgres$/, `/${database}`);
  // Each server its own folder of uploaded files (unless the test gives storage), removed when it closes.
  const overrides = typeof options.config === 'function' ? options.config() : (options.config ?? {});
  const uploadsDir = overrides.storage ? null : mkdtempSync(path.join(os.tmpdir(), 'parley-uploads-'));
  const config = {
    ...loadConfig({}),
    secretKey: TEST_SECRET,
    dataDir: os.tmpdir(),
    publicUrl: template.realmUrl,
    validateResponses: true,
    // Unpaced: tests read answers event by event (event-pacing.test.ts paces its own servers).
    eventPacingMs: 0,
    rateLimit: options.rateLimit ?? null,
    logLevel: process.env.PARLEY_LOG_LEVEL ?? 'error',
    ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(uploadsDir ? { storage: { kind: 'local' as const, dir: uploadsDir } } : {}),
    ...overrides,
  };
  const deps = await createDeps(config, databaseUrl, { poolSize: 8, emitQueryEvents: options.emitQueryEvents ?? false });
  const running = await listen(deps, '127.0.0.1', 0);
  const realmId = (await deps.db.realm.findFirstOrThrow()).id;
  const auth = (person: Person) => basicAuth(template.users[person].email, template.users[person].apiKey);
  return {
    url: running.url,
    running,
    databaseUrl,
    realmId,
    users: template.users,
    client: (person) => createParleyClient({ site: running.url, email: template.users[person].email, apiKey: template.users[person].apiKey }),
    anonymous: () => createParleyClient({ site: running.url }),
    async raw(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.as) headers.set('Authorization', auth(init.as));
      const response = await fetch(`${running.url}/api/v1${path}`, { ...init, headers });
      const text = await response.text();
      let body: any = text;
      try {
        body = JSON.parse(text);
      } catch {}
      return { status: response.status, headers: response.headers, body };
    },
    close: async () => {
      await running.close();
      if (uploadsDir) rmSync(uploadsDir, { recursive: true, force: true });
    },
  };
}

/**
 * The test server of a file (or of a describe block, when called inside one): registers a beforeAll hook
 * that starts it and an afterAll hook that closes it, and returns a stand-in whose members are those of
 * the running server. Vitest runs beforeAll hooks in the order they are registered and afterAll hooks in
 * the reverse order, so hooks registered after this call, and the tests, find the server running.
 * Module-level code may keep the stand-in but not read it (the server starts with the first hook).
 */
export function useTestServer(options: TestServerOptions = {}): TestServer {
  let current: TestServer | undefined;
  beforeAll(async () => {
    current = await startTestServer(options);
  });
  afterAll(async () => {
    await current?.close();
    current = undefined;
  });
  const server = (): TestServer => {
    if (!current) throw new Error('the test server is not running: read it in a hook or a test registered after useTestServer()');
    return current;
  };
  return {
    get url() {
      return server().url;
    },
    get running() {
      return server().running;
    },
    get databaseUrl() {
      return server().databaseUrl;
    },
    get realmId() {
      return server().realmId;
    },
    get users() {
      return server().users;
    },
    client: (person) => server().client(person),
    anonymous: () => server().anonymous(),
    raw: (path, init) => server().raw(path, init),
    async close() {
      await current?.close();
      current = undefined;
    },
  };
}

/** Asserts a Zulip error envelope. */
export function expectJsonError(
  res: { status: number; body: any } | { response: Response; error?: any },
  status: number,
  msg: string,
  code?: string,
): void {
  const actualStatus = 'response' in res ? res.response.status : res.status;
  const body = 'response' in res ? res.error : res.body;
  const ok = actualStatus === status && body?.result === 'error' && body?.msg === msg && (code === undefined || body?.code === code);
  if (!ok) {
    throw new Error(`expected ${status} ${JSON.stringify(msg)} ${code ?? ''}, got ${actualStatus} ${JSON.stringify(body)}`);
  }
}

/**
 * A second server process on the test server's database (its own deps: Prisma client, pool, listener
 * connection, caches), as another machine would run it; started before the file's tests, stopped after.
 * Read `.running` in hooks and tests.
 */
export function useSecondProcess(env: TestServer, options: { rateLimit?: { points: number; durationSeconds: number } | null; config?: Partial<Config> } = {}): { readonly running: RunningServer } {
  let second: RunningServer | undefined;
  beforeAll(async () => {
    // The same file storage as the first process (as several machines share one bucket).
    const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: 'http://parley.test', validateResponses: true, rateLimit: options.rateLimit ?? null, logLevel: 'error', storage: env.running.deps.config.storage, maxFileUploadSizeMib: env.running.deps.config.maxFileUploadSizeMib, eventPacingMs: env.running.deps.config.eventPacingMs, ...options.config };
    second = await listen(await createDeps(config, env.databaseUrl, { poolSize: 4 }), '127.0.0.1', 0);
  });
  afterAll(async () => {
    await second?.close();
  });
  return {
    get running() {
      if (!second) throw new Error('the second process is not running: read it in a hook or a test');
      return second;
    },
  };
}
