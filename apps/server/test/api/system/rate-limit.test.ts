import { describe, expect, it } from 'vitest';
import { useTestServer, type TestServer } from '../../helpers/test-server.ts';

const env = useTestServer({ rateLimit: { points: 3, durationSeconds: 60 } });

describe('rate limiting', () => {
  it('answers 429 RATE_LIMIT_HIT with retry-after once a user exceeds the limit, per user', async () => {
    const statuses: number[] = [];
    let last: Awaited<ReturnType<TestServer['raw']>> | undefined;
    for (let i = 0; i < 4; i++) {
      last = await env.raw('/users/me', { as: 'cordelia' });
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.body).toMatchObject({ result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
    expect(last!.body['retry-after']).toBeGreaterThan(0);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    // another user has a budget of their own
    expect((await env.raw('/users/me', { as: 'othello' })).status).toBe(200);
  });

  it('counts requests decided while earlier ones are still being written (concurrent burst)', async () => {
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => env.raw('/users/me', { as: 'hamlet' })))).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(3);
  });

  it('counts in the database, so every process sharing it sees the same budget', async () => {
    await env.running.deps.rateLimiter!.flush(); // written behind the requests
    const rows = await env.running.deps.db.rateLimiterFlexible.findMany({ where: { key: { startsWith: 'api:user:' } } });
    expect(rows.length).toBeGreaterThanOrEqual(2);
  });
});
