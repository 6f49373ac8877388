// Several server processes sharing one database behave as one server: a second app (its own Prisma
// client and connection pool, as a second process would have) on the same database sees the same
// state, the same rate-limit budget, and concurrent compare-and-swap updates across the two let
// exactly one win.
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { loadConfig } from '../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../src/server.ts';
import { TEST_SECRET } from '../helpers/fixtures.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

let env: TestServer;
let second: RunningServer;
const rateLimit = { points: 30, durationSeconds: 60 };

beforeAll(async () => {
  env = await startTestServer({ rateLimit });
  const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: 'http://parley.test', validateResponses: true, rateLimit, logLevel: 'error' };
  second = await listen(await createDeps(config, env.databaseUrl, { poolSize: 4 }), '127.0.0.1', 0);
});
afterAll(async () => {
  await second.close();
  await env.close();
});

const clientOn = (server: { url: string }, person: 'iago' | 'hamlet' | 'othello' | 'cordelia'): ParleyClient =>
  createParleyClient({ site: server.url, email: env.users[person].email, apiKey: env.users[person].apiKey });

describe('two server processes on one database', () => {
  it('see each other’s writes at once', async () => {
    const created = await clientOn(env, 'iago').POST('/user_groups/create', { body: { name: 'shared', description: 'from the first', members: [] } });
    expect(created.response.status).toBe(200);
    const groups = await clientOn(second, 'iago').GET('/user_groups');
    expect(groups.data!.user_groups.find((g) => g.id === created.data!.group_id)).toMatchObject({ name: 'shared', description: 'from the first' });
  });

  it('let exactly one of concurrent compare-and-swap updates win, across processes', async () => {
    const group = (await clientOn(env, 'iago').POST('/user_groups/create', { body: { name: 'cas-across', description: '', members: [] } })).data!.group_id;
    const current = (await clientOn(env, 'iago').GET('/user_groups')).data!.user_groups.find((g) => g.id === group)!.can_mention_group;
    const candidates = [env.users.hamlet.id, env.users.othello.id, env.users.cordelia.id, env.users.iago.id];
    const results = await Promise.all(
      candidates.map((member, i) =>
        clientOn(i % 2 === 0 ? env : second, 'iago').PATCH('/user_groups/{user_group_id}', {
          params: { path: { user_group_id: group } },
          body: { can_mention_group: { new: { direct_members: [member], direct_subgroups: [] }, old: current } },
        }),
      ),
    );
    const statuses = results.map((r) => r.response.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    for (const r of results.filter((r) => r.response.status !== 200)) {
      expect(r.error).toMatchObject({ msg: "'old' value does not match the expected value." });
    }
  });

  it('share one rate-limit budget per user', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 32; i++) statuses.push((await (i % 2 === 0 ? clientOn(env, 'othello') : clientOn(second, 'othello')).GET('/users/me')).response.status);
    expect(statuses.slice(0, 30).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(30)).toEqual([429, 429]);
  });
});
