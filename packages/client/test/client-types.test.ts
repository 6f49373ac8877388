// Runtime tests of the client's wire encoding (no server): packages/wire's encodeParams and the
// zulipForm middleware must put on the wire what the Python `zulip` client puts there — GET
// parameters in the query string, other methods as an application/x-www-form-urlencoded body,
// strings raw, everything else JSON text — plus HTTP Basic auth. A fake fetch records each Request.
// The compile-time half (wrong calls do not compile) is client.test-d.ts, checked by `tsc -p .`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeParams, findOperation, wirePlan } from '@parley/wire';
import { createClientFromZuliprc, createParleyClient, readZuliprc } from '../src/index.ts';

const SITE = 'http://parley.invalid:9991';
const EMAIL = 'hamlet@parley.test';
const KEY = 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
const BASIC = `Basic ${Buffer.from(`${EMAIL}:${KEY}`).toString('base64')}`;

interface Seen {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

/** A client whose fetch records the Request and answers with `reply`. */
function recordingClient(reply: { status?: number; body?: unknown } = {}, credentials = true) {
  const seen: Seen[] = [];
  const fakeFetch = (async (input: Request | string | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(input, init);
    seen.push({ method: request.method, url: new URL(request.url), headers: request.headers, body: await request.text() });
    return new Response(JSON.stringify(reply.body ?? { result: 'success', msg: '' }), {
      status: reply.status ?? 200,
      headers: { 'Content-Type': 'application/json' },
    });
  }) as typeof fetch;
  const client = createParleyClient({ site: `${SITE}/`, ...(credentials ? { email: EMAIL, apiKey: KEY } : {}), fetch: fakeFetch });
  return { client, seen };
}

const op = (method: string, template: string) => {
  const found = findOperation(method, template);
  if (!found) throw new Error(`no operation ${method} ${template}`);
  return found;
};

describe('encodeParams (packages/wire)', () => {
  it('finds operations by method and path template, case-insensitively', () => {
    expect(op('PATCH', '/users/{user_id}').operationId).toBe('update-user');
    expect(op('patch', '/users/{user_id}')).toBe(wirePlan['update-user']);
    expect(findOperation('PUT', '/users/{user_id}')).toBeUndefined();
  });

  it.each<[string, string, string, Record<string, unknown>, string]>([
    ['role is JSON (an integer), full_name raw', 'PATCH', '/users/{user_id}', { role: 200, full_name: 'Prince Hamlet' }, 'role=200&full_name=Prince+Hamlet'],
    ['lists are JSON text', 'POST', '/typing', { op: 'start', to: [1, 2] }, 'op=start&to=%5B1%2C2%5D'],
    ['booleans are true/false', 'GET', '/users', { client_gravatar: true, include_custom_profile_fields: false }, 'client_gravatar=true&include_custom_profile_fields=false'],
    ['strings that look like JSON stay raw', 'PATCH', '/users/{user_id}', { full_name: 'true' }, 'full_name=true'],
    ['… even a list-like string', 'PATCH', '/users/{user_id}', { full_name: '[1, 2]' }, 'full_name=%5B1%2C+2%5D'],
    ['reserved characters are percent-encoded', 'POST', '/users', { email: 'a+b@parley.test', full_name: 'A&B=C %', password: 'p' }, 'email=a%2Bb%40parley.test&full_name=A%26B%3DC+%25&password=p'],
    ['non-ASCII strings are UTF-8', 'PATCH', '/users/{user_id}', { full_name: 'Hämlet' }, 'full_name=H%C3%A4mlet'],
    ['objects inside lists are JSON', 'PATCH', '/users/{user_id}', { profile_data: [{ id: 3, value: 'x' }] }, 'profile_data=%5B%7B%22id%22%3A3%2C%22value%22%3A%22x%22%7D%5D'],
    ['a string for a JSON-declared parameter is JSON-quoted', 'PATCH', '/streams/{stream_id}', { message_retention_days: 'unlimited' }, 'message_retention_days=%22unlimited%22'],
    ['null for a JSON-declared parameter is the JSON null', 'PATCH', '/streams/{stream_id}', { folder_id: null }, 'folder_id=null'],
    ['undefined is dropped (as the Python client drops None)', 'PATCH', '/users/{user_id}', { full_name: undefined, role: 300 }, 'role=300'],
    ['unknown parameters are encoded by their value type', 'PATCH', '/users/{user_id}', { stream_id: 5, note: 'hi', flags: ['a'] }, 'stream_id=5&note=hi&flags=%5B%22a%22%5D'],
  ])('%s', (_label, method, template, values, expected) => {
    expect(encodeParams(op(method, template), values).toString()).toBe(expected);
  });

  it('with no operation known, strings stay raw and everything else is JSON', () => {
    expect(encodeParams(undefined, { a: 'x', b: 1, c: true, d: [1] }).toString()).toBe('a=x&b=1&c=true&d=%5B1%5D');
  });
});

describe('zulipForm middleware on the generated client', () => {
  it('PATCH: form-urlencoded body, role=200, Basic auth, path filled, no query', async () => {
    const { client, seen } = recordingClient();
    const { data, response } = await client.PATCH('/users/{user_id}', {
      params: { path: { user_id: 10 } },
      body: { full_name: 'Prince Hamlet', role: 200 },
    });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '' });
    expect(seen).toHaveLength(1);
    const [req] = seen;
    expect(req!.method).toBe('PATCH');
    expect(req!.url.href).toBe(`${SITE}/api/v1/users/10`);
    expect(req!.headers.get('content-type')).toBe('application/x-www-form-urlencoded');
    expect(req!.headers.get('authorization')).toBe(BASIC);
    expect(req!.body).toBe('full_name=Prince+Hamlet&role=200');
  });

  it('GET: parameters in the query string (booleans, JSON lists), no body', async () => {
    const { client, seen } = recordingClient({ body: { result: 'success', msg: '', members: [] } });
    await client.GET('/users', { params: { query: { client_gravatar: true, user_ids: [1, 2] } } });
    const [req] = seen;
    expect(req!.method).toBe('GET');
    expect(req!.url.pathname).toBe('/api/v1/users');
    expect(req!.url.search).toBe('?client_gravatar=true&user_ids=%5B1%2C2%5D');
    expect(req!.body).toBe('');
    expect(req!.headers.get('authorization')).toBe(BASIC);
  });

  it('POST: lists as JSON text and strings raw in the form body', async () => {
    const { client, seen } = recordingClient();
    await client.POST('/typing', { body: { op: 'start', to: [9, 10] } });
    const [req] = seen;
    expect(req!.method).toBe('POST');
    expect(req!.url.href).toBe(`${SITE}/api/v1/typing`);
    expect(req!.headers.get('content-type')).toBe('application/x-www-form-urlencoded');
    expect(req!.body).toBe('op=start&to=%5B9%2C10%5D');
  });

  it('DELETE with body parameters sends them as a form body', async () => {
    const { client, seen } = recordingClient();
    await client.DELETE('/users/{user_id}', {
      params: { path: { user_id: 12 } },
      body: { deactivation_notification_comment: 'Bye now' },
    });
    const [req] = seen;
    expect(req!.method).toBe('DELETE');
    expect(req!.url.href).toBe(`${SITE}/api/v1/users/12`);
    expect(req!.body).toBe('deactivation_notification_comment=Bye+now');
  });

  it('a call without parameters sends an empty body (DELETE /users/me)', async () => {
    const { client, seen } = recordingClient();
    await client.DELETE('/users/me');
    const [req] = seen;
    expect(req!.method).toBe('DELETE');
    expect(req!.url.href).toBe(`${SITE}/api/v1/users/me`);
    expect(req!.body).toBe('');
  });

  it('an unauthenticated client sends no Authorization header', async () => {
    const { client, seen } = recordingClient({ body: { result: 'success', msg: '', zulip_version: '11.0', zulip_feature_level: 420 } }, false);
    const { data } = await client.GET('/server_settings');
    expect(data?.zulip_feature_level).toBe(420);
    expect(seen[0]!.headers.get('authorization')).toBeNull();
    expect(seen[0]!.url.href).toBe(`${SITE}/api/v1/server_settings`);
  });

  it('an error envelope comes back as `error`', async () => {
    const { client } = recordingClient({ status: 400, body: { result: 'error', msg: 'role is not an integer', code: 'BAD_REQUEST' } });
    const { data, error, response } = await client.PATCH('/users/{user_id}', { params: { path: { user_id: 10 } }, body: { role: 200 } });
    expect(data).toBeUndefined();
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ result: 'error', msg: 'role is not an integer', code: 'BAD_REQUEST' });
  });
});

describe('zuliprc', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-client-rc-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads email, key and site from the [api] section only', () => {
    const file = path.join(dir, 'zuliprc');
    writeFileSync(file, `# comment\n[other]\nemail=wrong@x.y\n\n[api]\n email = ${EMAIL} \nkey=${KEY}\r\nsite=${SITE}\n; trailing comment\n`);
    expect(readZuliprc(file)).toEqual({ email: EMAIL, key: KEY, site: SITE });
  });

  it('refuses a file without a key', () => {
    const file = path.join(dir, 'zuliprc-nokey');
    writeFileSync(file, `[api]\nemail=${EMAIL}\nsite=${SITE}\n`);
    expect(() => readZuliprc(file)).toThrow(/needs email, key and site/);
  });

  it('createClientFromZuliprc authenticates with the file’s credentials', async () => {
    const file = path.join(dir, 'zuliprc-client');
    writeFileSync(file, `[api]\nemail=${EMAIL}\nkey=${KEY}\nsite=${SITE}\n`);
    const seen: Request[] = [];
    const client = createClientFromZuliprc(file, {
      fetch: (async (input: Request | string | URL) => {
        seen.push(input as Request);
        return new Response('{"result":"success","msg":""}', { headers: { 'Content-Type': 'application/json' } });
      }) as typeof fetch,
    });
    await client.GET('/users/me');
    expect(seen[0]!.url).toBe(`${SITE}/api/v1/users/me`);
    expect(seen[0]!.headers.get('authorization')).toBe(BASIC);
  });
});
