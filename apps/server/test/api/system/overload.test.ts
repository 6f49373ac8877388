// Overload: hundreds of concurrent writes are served or refused fast with 503 + Retry-After in the
// envelope, never a 500, and nothing acknowledged is lost. Counts and statuses only, no wall times.
import { beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient } from '@parley/client';
import { insertUser, prepareNewUser } from '../../../src/actions/users.ts';
import { inTransaction } from '../../../src/data/transactions.ts';
import { loadConfig } from '../../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../../src/server.ts';
import { TEST_SECRET } from '../../helpers/fixtures.ts';
import { useTestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';

const env = useTestServer();
const people: Array<{ id: number; email: string; apiKey: string }> = [];
const CONCURRENT = 500;

beforeAll(async () => {
  const { deps } = env.running;
  const realm = await deps.db.realm.findFirstOrThrow();
  // Members with keys, created directly (no password: nothing to hash).
  for (let i = 0; i < CONCURRENT; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, CONCURRENT - i) }, (_, k) => prepareNewUser({ email: `load-${i + k}-${Date.now()}@parley.test`, fullName: `Load ${i + k}`, password: null, role: 400 })),
    );
    await inTransaction(deps.db, async (tx) => {
      for (const prepared of batch) {
        const { user, apiKey } = await insertUser(tx, deps, realm, prepared);
        people.push({ id: user.id, email: user.deliveryEmail, apiKey });
      }
    });
  }
  expect((await env.client('iago').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: 'crowded' }] } })).response.status).toBe(200);
}, 300_000);

type Outcome = { status: number; contentType: string; body: any };

async function subscribeAll(url: string, channel: (i: number) => string): Promise<Outcome[]> {
  return Promise.all(
    people.map(async (person, i) => {
      try {
        const res = await fetch(`${url}/api/v1/users/me/subscriptions`, {
          method: 'POST',
          body: new URLSearchParams({ subscriptions: JSON.stringify([{ name: channel(i) }]) }).toString(),
          headers: { 'Content-Type': 'application/x-www-form-urlencoded', Authorization: basicAuth(person.email, person.apiKey) },
        });
        const text = await res.text();
        return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: JSON.parse(text) };
      } catch (error) {
        return { status: 0, contentType: '', body: String(error) };
      }
    }),
  );
}

function expectServedOrRefusedCleanly(outcomes: Outcome[]) {
  const byStatus: Record<number, number> = {};
  for (const o of outcomes) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1;
  for (const o of outcomes) {
    expect([200, 503], JSON.stringify({ byStatus, example: o })).toContain(o.status);
    expect(o.contentType).toMatch(/^application\/json/);
    if (o.status === 503) {
      expect(o.body).toMatchObject({ result: 'error', code: 'SERVER_OVERLOADED' });
      expect(o.body['retry-after']).toBeGreaterThan(0);
    }
  }
  return byStatus;
}

describe(`${CONCURRENT} concurrent subscribes`, () => {
  it('to one channel: each is served or refused with 503, and every one answered 200 is subscribed', async () => {
    const outcomes = await subscribeAll(env.url, () => 'crowded');
    const byStatus = expectServedOrRefusedCleanly(outcomes);
    expect(byStatus[200] ?? 0).toBeGreaterThan(0);
    const { data } = await env.client('iago').GET('/get_stream_id', { params: { query: { stream: 'crowded' } } });
    const subscribers = new Set((await env.client('iago').GET('/streams/{stream_id}/members', { params: { path: { stream_id: data!.stream_id } } })).data!.subscribers);
    outcomes.forEach((o, i) => {
      if (o.status === 200) expect(subscribers.has(people[i]!.id)).toBe(true);
    });
  });

  it('each creating its own channel: served or refused with 503, never a 500', async () => {
    const tag = Date.now().toString(36);
    const outcomes = await subscribeAll(env.url, (i) => `own ${tag} ${i}`);
    const byStatus = expectServedOrRefusedCleanly(outcomes);
    expect(byStatus[200] ?? 0).toBeGreaterThan(0);
  });

  it('with a deliberately tiny server (pool of 2, 4 at once, a short line): the overflow is refused fast with 503', async () => {
    const config = { ...loadConfig({}), secretKey: TEST_SECRET, publicUrl: 'http://parley.test', validateResponses: true, rateLimit: null, logLevel: 'error', maxConcurrentRequests: 4, queueTimeoutMs: 50 };
    const tiny: RunningServer = await listen(await createDeps(config, env.databaseUrl, { poolSize: 2 }), '127.0.0.1', 0);
    try {
      const outcomes = await subscribeAll(tiny.url, () => 'crowded');
      const byStatus = expectServedOrRefusedCleanly(outcomes);
      expect(byStatus[503] ?? 0).toBeGreaterThan(0);
      expect(byStatus[200] ?? 0).toBeGreaterThan(0);
      // …and once the burst is over, it serves again.
      const after = createParleyClient({ site: tiny.url, email: people[0]!.email, apiKey: people[0]!.apiKey });
      expect((await after.GET('/users/me')).response.status).toBe(200);
    } finally {
      await tiny.close();
    }
  });
});
