// The one way in: every spelling of an API URL the HTTP layer accepts (the usual one, the prefix in
// another case, an absolute URI as request target) reaches the same pipeline (http/pipeline.ts) and
// gets the same answer, through the server's own handler and through Express alike.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { basicAuth } from '../helpers/auth.ts';
import { canonicalApiUrl } from '../../src/http/pipeline.ts';

let env: TestServer;
beforeAll(async () => {
  env = await startTestServer();
});
afterAll(() => env.close());

/** A GET with the request target exactly as given (fetch would normalise it). */
function getRaw(target: string): Promise<{ status: number; body: any }> {
  const { port } = new URL(env.url);
  const auth = basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'GET', path: target, headers: { Authorization: auth } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the door', () => {
  it('brings odd spellings to the canonical form, and leaves other paths alone', () => {
    expect(canonicalApiUrl('/api/v1/users/me')).toBe('/api/v1/users/me');
    expect(canonicalApiUrl('/API/V1/users/me?x=1')).toBe('/api/v1/users/me?x=1');
    expect(canonicalApiUrl('http://parley.test/api/v1/users/me')).toBe('/api/v1/users/me');
    expect(canonicalApiUrl('/api/v1')).toBe('/api/v1');
    expect(canonicalApiUrl('/api/v10/users')).toBeNull();
    expect(canonicalApiUrl('/api/docs')).toBeNull();
    expect(canonicalApiUrl('/health')).toBeNull();
  });

  it.each(['/api/v1/users/me', '/API/V1/users/me', '/Api/v1/users/me'])('%s answers as the usual form does', async (target) => {
    const res = await getRaw(target);
    expect(res.status).toBe(200);
    expect(res.body.user_id).toBe(env.users.hamlet.id);
  });

  it('an absolute URI as request target answers as the usual form does', async () => {
    const res = await getRaw(`${env.url}/api/v1/users/me`);
    expect(res.status).toBe(200);
    expect(res.body.user_id).toBe(env.users.hamlet.id);
  });

  it('unknown API paths and the bare prefix answer JSON 404 in the envelope', async () => {
    for (const target of ['/api/v1', '/api/v1/', '/API/V1/no_such_thing']) {
      const res = await getRaw(target);
      expect(res.status, target).toBe(404);
      expect(res.body).toMatchObject({ result: 'error', msg: 'Not Found' });
    }
  });
});
