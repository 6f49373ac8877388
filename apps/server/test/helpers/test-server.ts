// A real Parley server for one test file, on its own copy of the seeded template database.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { inject } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { loadConfig } from '../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../src/server.ts';
import { TEST_SECRET, type Person } from './fixtures.ts';
import { basicAuth } from './auth.ts';
import { copyTemplateDatabase } from './template-copy.ts';

export interface TestServer {
  url: string;
  running: RunningServer;
  databaseUrl: string;
  users: Record<Person, { id: number; email: string; apiKey: string }>;
  /** A generated client authenticated as one of the test people. */
  client(person: Person): ParleyClient;
  /** An unauthenticated client. */
  anonymous(): ParleyClient;
  /** Raw HTTP against /api/v1, for wire-format tests. */
  raw(path: string, init?: RequestInit & { as?: Person }): Promise<{ status: number; headers: Headers; body: any }>;
  close(): Promise<void>;
}

export async function startTestServer(
  options: { emitQueryEvents?: boolean; rateLimit?: { points: number; durationSeconds: number }; heartbeatMs?: number } = {},
): Promise<TestServer> {
  const template = inject('parleyTemplate');
  const database = `t_${randomBytes(6).toString('hex')}`;
  await copyTemplateDatabase(template.adminUrl, template.templateDatabase, database);
  const databaseUrl = template.adminUrl.replace(/\/postgres$/, `/${database}`);
  const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: template.realmUrl, validateResponses: true, rateLimit: options.rateLimit ?? null, logLevel: process.env.PARLEY_LOG_LEVEL ?? 'error', ...(options.heartbeatMs ? { heartbeatMs: options.heartbeatMs } : {}) };
  const deps = await createDeps(config, databaseUrl, { poolSize: 8, emitQueryEvents: options.emitQueryEvents ?? false });
  const running = await listen(deps, '127.0.0.1', 0);
  const auth = (person: Person) => basicAuth(template.users[person].email, template.users[person].apiKey);
  return {
    url: running.url,
    running,
    databaseUrl,
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
    close: () => running.close(),
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
