// Inputs that once produced a 5xx, an HTML page or the wrong error: each is answered in Zulip's JSON
// envelope with a code, by the cause (body encodings, integer ranges, NUL characters, inherited
// property names, authentication order, Node's parser refusals, failures of the database itself).
import net from 'node:net';
import { gzipSync, deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { wirePlan } from '@parley/wire';
import { buildApp } from '../../../src/app.ts';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';

const env = useTestServer();

const form = { 'Content-Type': 'application/x-www-form-urlencoded' };

/** Every body never carries a stack trace or a file path. */
function expectCleanError(res: { status: number; headers: Headers; body: any }, status: number) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(res.body.result).toBe('error');
  expect(typeof res.body.code).toBe('string');
  expect(JSON.stringify(res.body)).not.toMatch(/\/work\/|node_modules|\s+at\s|\.ts:\d+/);
}

/** A concrete path for an operation (ids of things that exist in every test organization). */
const concretePath = (path: string) => path.replace(/\{[a-z_]+\}/g, '1');

describe('Content-Encoding', () => {
  const withBody = Object.values(wirePlan).filter((op) => op.method !== 'get');

  it.each(['gzip', 'deflate', 'br'])('%s on a body that is not compressed is a 400 on every operation that takes a body, for any caller', async (encoding) => {
    for (const op of withBody) {
      for (const as of ['hamlet', undefined] as const) {
        const res = await env.raw(concretePath(op.path), {
          method: op.method.toUpperCase(),
          body: 'name=plain',
          headers: { ...form, 'Content-Encoding': encoding },
          ...(as ? { as } : {}),
        });
        expect(res.status, `${op.operationId} ${JSON.stringify(res.body)}`).toBeLessThan(500);
        expect(res.body.result).toBe('error');
        expect(typeof res.body.code).toBe('string');
      }
    }
    const res = await env.raw('/users/me/subscriptions', { method: 'POST', body: 'subscriptions=[]', headers: { ...form, 'Content-Encoding': encoding }, as: 'hamlet' });
    expectJsonError(res, 400, 'Request body does not match its Content-Encoding', 'BAD_REQUEST');
  });

  it('a body really compressed with gzip or deflate is read', async () => {
    for (const [encoding, compress] of [['gzip', gzipSync], ['deflate', deflateSync]] as const) {
      const res = await env.raw('/users?client_gravatar=false', {
        method: 'GET',
        as: 'hamlet',
      });
      expect(res.status).toBe(200);
      const body = compress(Buffer.from(`full_name=${encoding}-name`));
      const patch = await fetch(`${env.url}/api/v1/users/${env.users.cordelia.id}`, {
        method: 'PATCH',
        body,
        headers: { ...form, 'Content-Encoding': encoding, Authorization: basicAuth(env.users.iago.email, env.users.iago.apiKey) },
      });
      expect(patch.status, await patch.clone().text()).toBe(200);
      const { data } = await env.client('hamlet').GET('/users/{user_id}', { params: { path: { user_id: env.users.cordelia.id }, query: {} } });
      expect(data?.user.full_name).toBe(`${encoding}-name`);
    }
  });

  it('an unknown encoding is 415, and so is any encoding on a multipart body', async () => {
    const unknown = await env.raw('/users/me/subscriptions', { method: 'POST', body: 'subscriptions=[]', headers: { ...form, 'Content-Encoding': 'x-made-up' }, as: 'hamlet' });
    expectCleanError(unknown, 415);
    const fd = new FormData();
    fd.append('full_name', 'x');
    const multipart = await env.raw(`/users/${env.users.cordelia.id}`, { method: 'PATCH', body: fd, headers: { 'Content-Encoding': 'gzip' }, as: 'iago' });
    expectJsonError(multipart, 415, 'Unsupported Content-Encoding', 'BAD_REQUEST');
  });

  it('a body over the size limit is 413 in the envelope', async () => {
    const res = await env.raw('/users/me/subscriptions', { method: 'POST', body: `subscriptions=${'a'.repeat(6 * 1024 * 1024)}`, headers: form, as: 'hamlet' });
    expectJsonError(res, 413, 'Request body too large', 'BAD_REQUEST');
  });
});

describe('integers are range-checked wherever they sit', () => {
  const TOO_BIG = ['99999999999999999999', '9223372036854775808', '9223372036854775807', '2147483648', '-2147483649'];

  it.each(TOO_BIG)('GET /users?user_ids=[%s] → 400 naming the element', async (n) => {
    expectJsonError(await env.raw(`/users?user_ids=[${n}]`, { as: 'hamlet' }), 400, 'user_ids[0] is out of range', 'BAD_REQUEST');
  });

  it.each(TOO_BIG)('unsubscribe principals, group subgroups and group-members delete with %s → 400', async (n) => {
    expectJsonError(
      await env.raw(`/users/me/subscriptions?subscriptions=${encodeURIComponent('["x"]')}&principals=[1,${n}]`, { method: 'DELETE', as: 'iago' }),
      400,
      'principals[1] is out of range',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.raw('/user_groups/create', { method: 'POST', body: new URLSearchParams({ name: `g${n}`, description: 'd', members: '[]', subgroups: `[${n}]` }).toString(), headers: form, as: 'iago' }),
      400,
      'subgroups[0] is out of range',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.raw('/user_groups/1/members', { method: 'POST', body: new URLSearchParams({ delete: `[${n}]` }).toString(), headers: form, as: 'iago' }),
      400,
      'delete[0] is out of range',
      'BAD_REQUEST',
    );
  });

  it('a scalar and an object field are checked too; path ids beyond the range name nothing', async () => {
    expectJsonError(
      await env.raw('/typing', { method: 'POST', body: 'op=start&type=stream&topic=t&stream_id=99999999999999999999', headers: form, as: 'hamlet' }),
      400,
      'stream_id is out of range',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.raw(`/users/${env.users.cordelia.id}`, {
        method: 'PATCH',
        body: new URLSearchParams({ profile_data: '[{"id": 99999999999999999999, "value": "x"}]' }).toString(),
        headers: form,
        as: 'desdemona',
      }),
      400,
      'profile_data[0]["id"] is out of range',
      'BAD_REQUEST',
    );
    const path = await env.raw('/users/99999999999999999999', { as: 'hamlet' });
    expectCleanError(path, 400);
  });
});

describe('sizes of JSON values', () => {
  it('JSON nested deeper than 32 levels is refused before it is parsed (any parameter)', async () => {
    const deep = `${'['.repeat(2_500)}${']'.repeat(2_500)}`;
    expectJsonError(await env.raw(`/users?user_ids=${deep}`, { as: 'hamlet' }), 400, 'user_ids is nested too deeply (limit: 32 levels)', 'BAD_REQUEST');
    const ok = `${'['.repeat(3)}1${']'.repeat(3)}`;
    expectJsonError(await env.raw(`/users?user_ids=${ok}`, { as: 'hamlet' }), 400, 'user_ids[0] is not an integer', 'BAD_REQUEST');
  });

  it('a list of more than 10,000 items is refused, whatever the operation', async () => {
    const ids = JSON.stringify(Array.from({ length: 40_000 }, (_, i) => i + 1));
    const res = await env.raw(`/users/me/subscriptions`, { method: 'POST', body: new URLSearchParams({ subscriptions: '[{"name":"x"}]', principals: ids }).toString(), headers: form, as: 'iago' });
    expectJsonError(res, 400, 'principals is too large', 'BAD_REQUEST');
    const members = await env.raw('/user_groups/create', { method: 'POST', body: new URLSearchParams({ name: 'big', description: '', members: ids }).toString(), headers: form, as: 'iago' });
    expectJsonError(members, 400, 'members is too large', 'BAD_REQUEST');
  });
});

describe('multipart bodies', () => {
  it('keep every name as sent: `name[]` is not `name`, and is reported as unknown', async () => {
    const fd = new FormData();
    fd.append('subscriptions[]', '[1]');
    const res = await env.raw('/users/me/subscriptions', { method: 'POST', body: fd, as: 'hamlet' });
    expectJsonError(res, 400, "Missing 'subscriptions' argument", 'REQUEST_VARIABLE_MISSING');
    const fd2 = new FormData();
    fd2.append('full_name', 'Cordelia');
    fd2.append('odd[]', '1');
    const patch = await env.raw(`/users/${env.users.cordelia.id}`, { method: 'PATCH', body: fd2, as: 'iago' });
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    expect(patch.body.ignored_parameters_unsupported).toEqual(['odd[]']);
  });

  it('a file part is refused in the envelope', async () => {
    const fd = new FormData();
    fd.append('full_name', new Blob(['x']), 'name.txt');
    expectJsonError(await env.raw(`/users/${env.users.cordelia.id}`, { method: 'PATCH', body: fd, as: 'iago' }), 400, 'File uploads are not accepted here', 'BAD_REQUEST');
  });
});

describe('NUL characters', () => {
  it('in a plain string parameter: 400 naming it', async () => {
    expectJsonError(await env.raw('/get_stream_id?stream=a%00b', { as: 'hamlet' }), 400, 'stream contains a NUL character', 'BAD_REQUEST');
  });

  it('in a form body, a JSON list and a JSON object field, and in a login name', async () => {
    expectJsonError(
      await env.raw(`/users/${env.users.cordelia.id}`, { method: 'PATCH', body: 'full_name=a%00b', headers: form, as: 'iago' }),
      400,
      'full_name contains a NUL character',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.raw('/users/me/subscriptions', { method: 'POST', body: new URLSearchParams({ subscriptions: JSON.stringify([{ name: 'ok' }, { name: 'a\u0000b' }]) }).toString(), headers: form, as: 'hamlet' }),
      400,
      'subscriptions[1]["name"] contains a NUL character',
      'BAD_REQUEST',
    );
    expectJsonError(
      await env.raw('/fetch_api_key', { method: 'POST', body: 'username=a%00b@x.com&password=x', headers: form }),
      400,
      'username contains a NUL character',
      'BAD_REQUEST',
    );
  });

  it('a client string cannot pose as the decoder’s internal float marker', async () => {
    // A string starting with NUL + "float:" once had a meaning inside the decoder; now it is plain data (and refused as NUL).
    const res = await env.raw(`/users?user_ids=${encodeURIComponent('["\\u0000float:0"]')}`, { as: 'hamlet' });
    expectJsonError(res, 400, 'user_ids[0] contains a NUL character', 'BAD_REQUEST');
  });
});

describe('parameter names that are also Object.prototype properties', () => {
  const NAMES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', '__proto__', 'isPrototypeOf'];

  it('are unknown parameters, listed in ignored_parameters_unsupported (query string and form body)', async () => {
    const query = NAMES.map((n) => `${n}=1`).join('&');
    const get = await env.raw(`/users/me?${query}`, { as: 'hamlet' });
    expect(get.status, JSON.stringify(get.body)).toBe(200);
    expect(get.body.ignored_parameters_unsupported).toEqual([...NAMES].sort());
    const patch = await env.raw(`/users/${env.users.cordelia.id}`, { method: 'PATCH', body: `full_name=Cordelia&${query}`, headers: form, as: 'iago' });
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    expect(patch.body.ignored_parameters_unsupported).toEqual([...NAMES].sort());
  });
});

describe('authentication comes before parameters', () => {
  it('no credentials and a malformed parameter: 401, not "not valid JSON"', async () => {
    const res = await env.raw('/users?user_ids=[1,');
    expectJsonError(res, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });

  it('no credentials and a malformed body (bad encoding, broken multipart): 401, before the body is read', async () => {
    const gz = await env.raw('/users/me/subscriptions', { method: 'POST', body: 'subscriptions=[]', headers: { ...form, 'Content-Encoding': 'gzip' } });
    expectJsonError(gz, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
    const mp = await env.raw('/users/me/subscriptions', { method: 'POST', body: '--x\r\nbroken', headers: { 'Content-Type': 'multipart/form-data; boundary=x' } });
    expectJsonError(mp, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
  });

  it('bad credentials and a malformed parameter: 401 too', async () => {
    const res = await env.raw('/users?user_ids=[1,', { headers: { Authorization: basicAuth(env.users.hamlet.email, 'x'.repeat(32)) } });
    expectJsonError(res, 401, 'Invalid API key', 'UNAUTHORIZED');
  });
});

describe('public operations ignore credentials', () => {
  it('GET /server_settings with a wrong key, a malformed header or a deactivated key answers 200', async () => {
    for (const authorization of [basicAuth(env.users.hamlet.email, 'y'.repeat(32)), 'Basic !!!', 'Bearer abc', basicAuth('nobody@x.com', 'short')]) {
      const res = await env.raw('/server_settings', { headers: { Authorization: authorization } });
      expect(res.status, authorization).toBe(200);
      expect(res.body.result).toBe('success');
    }
  });

  it('the same wrong key then gets a clean 401 on its first authenticated call', async () => {
    const res = await env.raw('/users/me', { headers: { Authorization: basicAuth(env.users.hamlet.email, 'y'.repeat(32)) } });
    expectJsonError(res, 401, 'Invalid API key', 'UNAUTHORIZED');
  });
});

describe("requests Node's HTTP parser refuses", () => {
  async function rawHttp(request: string | Buffer): Promise<{ status: number; headers: string; body: any }> {
    const { hostname, port } = new URL(env.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => socket.write(request));
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString('latin1')));
      socket.on('error', reject);
      socket.on('close', () => {
        const [head = '', body = ''] = data.split('\r\n\r\n');
        resolve({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]), headers: head, body: body ? JSON.parse(body) : null });
      });
    });
  }

  it('a request head over 16 KB: 431 in the envelope', async () => {
    const res = await rawHttp(`GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers).toMatch(/content-type: application\/json/i);
    expect(res.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    expect(res.body.msg).toMatch(/Request headers too large/);
  });

  it('a control character in a header and a malformed method: 400 in the envelope', async () => {
    for (const request of [
      'GET /api/v1/server_settings HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n',
      'G@T /api/v1/server_settings HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /api/v1/server_settings HTTP/9.9x\r\n\r\n',
    ]) {
      const res = await rawHttp(request);
      expect(res.status, JSON.stringify(request)).toBe(400);
      expect(res.headers).toMatch(/content-type: application\/json/i);
      expect(res.body).toEqual({ result: 'error', msg: 'Malformed HTTP request', code: 'BAD_REQUEST' });
    }
  });
});

describe('failures of the server itself', () => {
  /** The same app on a database whose every call fails as a driver would (with a stack and a path). */
  async function brokenServer(error: () => Error) {
    const failing = new Proxy(env.running.deps.db, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof prop === 'string' && (prop.startsWith('$') || typeof value === 'object')) {
          return new Proxy(typeof value === 'function' ? value.bind(target) : value, {
            apply: () => Promise.reject(error()),
            get: () => () => Promise.reject(error()),
          });
        }
        return value;
      },
    });
    const app = buildApp({ ...env.running.deps, db: failing });
    const server = await new Promise<import('node:http').Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    const port = (server.address() as import('node:net').AddressInfo).port;
    return {
      get: (path: string, headers: Record<string, string> = {}) =>
        fetch(`http://127.0.0.1:${port}${path}`, { headers }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() })),
      close: () => new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    };
  }

  it('an unexpected error is a 500 in the envelope with a code, and no trace or path', async () => {
    const broken = await brokenServer(() => new Error('boom in /work/main/apps/server/src/data/users.repo.ts:16:11'));
    try {
      // A list of ids is always read from the database (the caller's credentials may come from memory).
      const res = await broken.get(`/api/v1/users?user_ids=[${env.users.cordelia.id}]`, { Authorization: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey) });
      expectCleanError(res, 500);
      expect(res.body).toEqual({ result: 'error', msg: 'Internal server error', code: 'INTERNAL_SERVER_ERROR' });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      await broken.close();
    }
  });

  it.each([
    ['Prisma (P2028)', () => Object.assign(new Error('Transaction API error: Unable to start a transaction in the given time.'), { code: 'P2028' })],
    // The pg-pool transactions of data/db.ts (connectWithin): seen as a 500 under load before.
    ['node-postgres', () => new Error('Timed out after 10000 ms waiting for a database connection')],
  ])('a database that cannot give a connection in time (%s) is a 503 with Retry-After in the envelope', async (_driver, error) => {
    const broken = await brokenServer(error);
    try {
      const res = await broken.get(`/api/v1/users?user_ids=[${env.users.cordelia.id}]`, { Authorization: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey) });
      expectCleanError(res, 503);
      expect(res.body).toMatchObject({ code: 'SERVER_OVERLOADED', 'retry-after': 1 });
      expect(res.headers.get('retry-after')).toBe('1');
      const health = await broken.get('/health');
      expectCleanError(health, 503);
    } finally {
      await broken.close();
    }
  });
});

describe('operations', () => {
  it('GET /health answers while the database does', async () => {
    const res = await fetch(`${env.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'success', msg: '', status: 'ok' });
  });

  it('every response carries a request id; a sane incoming one is echoed, anything else replaced', async () => {
    const own = await env.raw('/server_settings', { headers: { 'X-Request-Id': 'lb-1234.abc' } });
    expect(own.headers.get('x-request-id')).toBe('lb-1234.abc');
    const odd = await env.raw('/server_settings', { headers: { 'X-Request-Id': 'a b<script>' } });
    expect(odd.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const error = await env.raw('/nowhere');
    expectCleanError(error, 404);
    expect(error.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
