import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/test-server.ts';

const env = useTestServer();

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
});
