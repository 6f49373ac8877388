// The server's log lines hold no secrets (issue 20, defect 5): the keys of sign-up and confirmation links
// (`/accounts/do_confirm/<key>`, `/accounts/join/<key>`, `/accounts/confirm_new_email/<key>`), query
// parameters such as `api_key=`, credentials from headers (Authorization, Cookie), passwords from
// bodies, and the same in error messages and stacks. The application's logger writes to memory here.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../../src/server.ts';
import { createLogger } from '../../../src/http/logging.ts';
import { TEST_SECRET } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { copyTemplateDatabase } from '../../helpers/template-copy.ts';
import { waitFor } from '../../helpers/wait.ts';

let running: RunningServer;
let template: ReturnType<typeof inject<'parleyTemplate'>>;
const lines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    done();
  },
});

beforeAll(async () => {
  template = inject('parleyTemplate');
  const database = `t_${randomBytes(6).toString('hex')}`;
  await copyTemplateDatabase(template.adminUrl, template.templateDatabase, database);
  const databaseUrl = template.adminUrl.replace(/\/postgres$/, `/${database}`);
  const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: template.realmUrl, validateResponses: true, rateLimit: null, logLevel: 'error' };
  const deps = await createDeps(config, databaseUrl, { poolSize: 4 });
  // The HTTP application's logger (request lines, request failures) writes into `lines`.
  deps.logger = createLogger('info', sink);
  running = await listen(deps, '127.0.0.1', 0);
});
afterAll(() => running.close());

const secret = (label: string) => `${label}${randomBytes(12).toString('hex')}`;
const output = () => lines.join('\n');

/** The request line of the request with this id, once it is written (after the response closed). */
async function requestLine(requestId: string): Promise<Record<string, unknown>> {
  return waitFor(async () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'request' && l.req_id === requestId), {
    what: `the request line of ${requestId}`,
  });
}

async function send(path: string, init: RequestInit = {}): Promise<{ status: number; requestId: string }> {
  const requestId = `test-${randomBytes(6).toString('hex')}`;
  const headers = new Headers(init.headers);
  headers.set('X-Request-Id', requestId);
  const response = await fetch(`${running.url}${path}`, { ...init, headers, redirect: 'manual' });
  await response.arrayBuffer();
  expect(response.headers.get('x-request-id')).toBe(requestId);
  return { status: response.status, requestId };
}

const form = (fields: Record<string, string>): RequestInit => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

describe('request log lines', () => {
  it('redact the key of sign-up and confirmation links, whatever the method or the case of the path', async () => {
    const cases: Array<[string, RequestInit, string]> = [];
    for (const [prefix, init] of [
      ['/accounts/do_confirm/', {}],
      ['/accounts/do_confirm/', form({ full_name: 'New Person', password: secret('pw') })],
      ['/accounts/join/', {}],
      ['/accounts/join/', form({ email: 'someone@example.com' })],
      ['/accounts/confirm_new_email/', {}],
      ['/ACCOUNTS/Do_Confirm/', {}],
    ] as const) {
      const key = secret('key');
      cases.push([`${prefix}${key}`, init, key]);
    }
    for (const [path, init, key] of cases) {
      const { requestId } = await send(path, init);
      const line = await requestLine(requestId);
      expect(line.path).toBe(path.replace(key, '<redacted>'));
      expect(output()).not.toContain(key);
      const password = new URLSearchParams(String(init.body ?? '')).get('password');
      if (password) expect(output()).not.toContain(password);
    }
  });

  it('keep query strings, credentials and cookies out', async () => {
    const queryKey = secret('q');
    const cookie = secret('c');
    const { status, requestId } = await send(`/api/v1/users/me?api_key=${queryKey}&stream=general`, {
      headers: { Authorization: basicAuth(template.users.hamlet.email, template.users.hamlet.apiKey), Cookie: `sessionid=${cookie}` },
    });
    expect(status).toBe(200);
    const line = await requestLine(requestId);
    expect(line.path).toBe('/api/v1/users/me');
    expect(line.operation).toBe('get-own-user');
    for (const value of [queryKey, cookie, template.users.hamlet.apiKey]) expect(output()).not.toContain(value);
  });

  it('echo and log only a plain X-Request-Id', async () => {
    const key = secret('key');
    const response = await fetch(`${running.url}/api/v1/server_settings`, { headers: { 'X-Request-Id': `/accounts/join/${key}?api_key=${key}` } });
    await response.arrayBuffer();
    const echoed = response.headers.get('x-request-id')!;
    expect(echoed).toMatch(/^[0-9a-f-]{36}$/);
    await requestLine(echoed);
    expect(output()).not.toContain(key);
  });
});

describe('every logged field', () => {
  it('is redacted the same way: messages, paths, URLs, headers, bodies and errors', async () => {
    const keys = Array.from({ length: 8 }, () => secret('k'));
    const failure = new Error(`GET /accounts/join/${keys[0]}?api_key=${keys[1]} failed`);
    running.deps.logger.error(
      {
        err: failure,
        path: `/accounts/do_confirm/${keys[2]}`,
        url: `https://chat.example.com/accounts/confirm_new_email/${keys[3]}?x=1`,
        headers: { authorization: `Basic ${keys[4]}`, cookie: `csrftoken=${keys[5]}` },
        body: `username=someone&password=${keys[6]}`,
        password: keys[7],
      },
      `request failed at /accounts/do_confirm/${keys[2]}`,
    );
    const line = await waitFor(async () => lines.map((l) => JSON.parse(l) as Record<string, any>).find((l) => l.level === 50 && String(l.msg).startsWith('request failed at')));
    for (const key of keys) expect(output()).not.toContain(key);
    expect(line.msg).toBe('request failed at /accounts/do_confirm/<redacted>');
    expect(line.path).toBe('/accounts/do_confirm/<redacted>');
    expect(line.url).toBe('https://chat.example.com/accounts/confirm_new_email/<redacted>?x=1');
    expect(line.err.message).toBe('GET /accounts/join/<redacted>?api_key=<redacted> failed');
    expect(line.err.stack).toContain('/accounts/join/<redacted>?api_key=<redacted>');
    expect(line.headers).toEqual({ authorization: '<redacted>', cookie: '<redacted>' });
    expect(line.body).toBe('username=someone&password=<redacted>');
    expect(line.password).toBe('<redacted>');
  });
});
