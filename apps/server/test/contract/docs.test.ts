import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wirePlan } from '@parley/wire';
import { NOT_YET_SERVED } from '../../src/routes.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

let env: TestServer;
beforeAll(async () => {
  env = await startTestServer();
});
afterAll(() => env.close());

describe('API documentation', () => {
  it('serves the rendered docs at /api/docs', async () => {
    const res = await fetch(`${env.url}/api/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain('Parley API');
    expect(html).toContain('update-user-group');
  });

  it('serves the bundled spec at /api/openapi.yaml', async () => {
    const res = await fetch(`${env.url}/api/openapi.yaml`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^openapi: 3\.1\.0/m);
    expect(text).toContain('operationId: create-scheduled-message');
  });

  it.skipIf(NOT_YET_SERVED.length === 0)('answers an operation not served yet with a JSON 404 after authentication', async () => {
    const op = wirePlan[NOT_YET_SERVED[0]!];
    const path = op.path.replace(/\{\w+\}/g, '1');
    const anonymous = await env.raw(path, { method: op.method.toUpperCase() });
    expect(anonymous.status).toBe(401);
    const res = await env.raw(path, { method: op.method.toUpperCase(), as: 'hamlet' });
    // validation runs first, so a 400 for missing parameters is also a correct answer
    expect([400, 404]).toContain(res.status);
    expect(res.body.result).toBe('error');
    if (res.status === 404) expect(res.body.code).toBe('NOT_IMPLEMENTED');
  });
});
