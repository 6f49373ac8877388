// Latency of permission-checked user-group requests in a large organization. Not a test: it prints
// figures. Run from the repository root:
//
//   npx tsx bench/group-permissions.bench.ts            (N=300 requests per scenario)
//   BENCH_N=1000 npx tsx bench/group-permissions.bench.ts
//
// It starts an embedded PostgreSQL (as apps/server/test/helpers/global-setup.ts does), creates an
// organization with 5,000 users and 500 groups (50 chains 10 deep, the benchmark user at the bottom of
// each, so that they are in 500+ groups) plus a separate 10-deep chain that grants the permission, then
// serves Parley over HTTP in this process and times requests from the generated client, sequentially
// and 50 at a time. Response validation against the spec is off, as in production; rate limiting is
// off (it would throttle one user's hundreds of requests). `failures` counts unexpected statuses;
// BENCH_DEBUG=1 prints each of them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { startEmbeddedPostgres } from '../packages/db/src/embedded.ts';
import { createParleyClient, type ParleyClient } from '../packages/client/src/index.ts';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps, listen } from '../apps/server/src/server.ts';
import { bootstrapIfEmpty } from '../apps/server/src/bootstrap.ts';
import { insertUser, prepareNewUser } from '../apps/server/src/actions/users.ts';
import { inTransaction } from '../apps/server/src/data/transactions.ts';
import { findFirstRealm } from '../apps/server/src/data/realms.repo.ts';
import { systemGroupIds } from '../apps/server/src/data/system-groups.repo.ts';

// pg is a dependency of the server package, not of the repository root.
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}
const pg = createRequire(new URL('../apps/server/package.json', import.meta.url))('pg') as { Client: new (options: { connectionString: string }) => PgClient };

const N = Number(process.env.BENCH_N ?? 300);
const WARMUP = 30;
const CONCURRENCY = 50;
const USERS = 5000;
const GROUPS = 500;
const DEPTH = 10;

type Request = () => Promise<{ response: Response }>;

function percentile(sortedMs: number[], p: number): number {
  const index = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[index]!;
}

function summarise(label: string, samples: number[], failures: number) {
  const s = [...samples].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return {
    scenario: label,
    n: s.length,
    'p50 ms': percentile(s, 50).toFixed(2),
    'p95 ms': percentile(s, 95).toFixed(2),
    'p99 ms': percentile(s, 99).toFixed(2),
    'mean ms': mean.toFixed(2),
    'max ms': s[s.length - 1]!.toFixed(2),
    failures,
  };
}

async function timed(request: Request, expectedStatus = 200): Promise<{ ms: number; ok: boolean }> {
  const start = performance.now();
  const result = await request();
  const ms = performance.now() - start;
  const ok = result.response.status === expectedStatus;
  if (!ok && process.env.BENCH_DEBUG) {
    console.error('failure:', result.response.url, result.response.status, JSON.stringify((result as { error?: unknown }).error));
  }
  return { ms, ok };
}

async function sequential(label: string, request: Request, expectedStatus = 200) {
  for (let i = 0; i < WARMUP; i++) await request();
  const samples: number[] = [];
  let failures = 0;
  for (let i = 0; i < N; i++) {
    const { ms, ok } = await timed(request, expectedStatus);
    samples.push(ms);
    if (!ok) failures++;
  }
  return summarise(label, samples, failures);
}

async function concurrent(label: string, makeRequest: (i: number) => Request) {
  const samples: number[] = [];
  let failures = 0;
  const rounds = Math.max(1, Math.round(N / CONCURRENCY));
  for (let r = 0; r < rounds; r++) {
    const results = await Promise.all(Array.from({ length: CONCURRENCY }, (_, i) => timed(makeRequest(r * CONCURRENCY + i))));
    for (const { ms, ok } of results) {
      samples.push(ms);
      if (!ok) failures++;
    }
  }
  return summarise(label, samples, failures);
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-'));
  console.log(`Starting embedded PostgreSQL in ${dir} …`);
  const database = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), ephemeral: true });
  try {
    const admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE parley_bench');
    await admin.end();

    const realmUrl = 'http://parley.bench';
    const config = {
      ...loadConfig({}),
      secretKey: randomBytes(32).toString('hex'),
      dataDir: dir,
      publicUrl: realmUrl,
      ownerEmail: 'owner@parley.bench',
      validateResponses: false,
      // Rate limiting would throttle a benchmark that sends hundreds of requests as one user.
      rateLimit: null,
    };
    const deps = await createDeps(config, database.urlFor('parley_bench'), { poolSize: 10 });
    await bootstrapIfEmpty(deps, { PARLEY_OWNER_PASSWORD: 'bench password' });
    const realm = (await findFirstRealm(deps.db))!;
    const people: Record<'admin' | 'member' | 'other', { id: number; email: string; apiKey: string }> = {} as never;
    for (const [key, role] of [['admin', 200], ['member', 400], ['other', 400]] as const) {
      const email = `${key}@parley.bench`;
      const prepared = await prepareNewUser({ email, fullName: `Bench ${key}`, password: null, role });
      const { user, apiKey } = await inTransaction(deps.db, (tx) => insertUser(tx, deps, realm, prepared));
      people[key] = { id: user.id, email, apiKey };
    }

    console.log(`Building ${USERS} users, ${GROUPS} groups (${GROUPS / DEPTH} chains ${DEPTH} deep) and a ${DEPTH}-deep permission chain …`);
    const buildStart = performance.now();
    const db = deps.db;
    const sys = await systemGroupIds(db, realm.id);
    await db.user.createMany({
      data: Array.from({ length: USERS }, (_, i) => {
        const email = `bulk-${i}@parley.bench`;
        return { realmId: realm.id, email, deliveryEmail: email, fullName: `Bulk ${i}`, role: 400 };
      }),
    });
    const users = (await db.user.findMany({ where: { deliveryEmail: { startsWith: 'bulk-' } }, select: { id: true }, orderBy: { id: 'asc' } })).map((u) => u.id);
    await db.userGroupMember.createMany({ data: users.map((userId) => ({ groupId: sys['role:fullmembers'], userId })) });
    const groupSettings = {
      canAddMembersGroupId: sys['role:administrators'],
      canJoinGroupId: sys['role:nobody'],
      canLeaveGroupId: sys['role:everyone'],
      canManageGroupId: sys['role:administrators'],
      canMentionGroupId: sys['role:everyone'],
      canRemoveMembersGroupId: sys['role:nobody'],
    };
    await db.userGroup.createMany({
      data: Array.from({ length: GROUPS + DEPTH }, (_, i) => ({
        realmId: realm.id,
        name: i < GROUPS ? `bulk ${i}` : `chain ${i - GROUPS}`,
        description: '',
        creatorId: people.admin.id,
        ...groupSettings,
      })),
    });
    const bulk = (await db.userGroup.findMany({ where: { name: { startsWith: 'bulk ' } }, select: { id: true }, orderBy: { id: 'asc' } })).map((g) => g.id);
    const chain = (await db.userGroup.findMany({ where: { name: { startsWith: 'chain ' } }, select: { id: true }, orderBy: { id: 'asc' } })).map((g) => g.id);
    await db.userGroupMember.createMany({ data: bulk.flatMap((groupId, g) => Array.from({ length: 10 }, (_, k) => ({ groupId, userId: users[(g * 10 + k) % USERS]! }))) });
    const links: Array<{ supergroupId: number; subgroupId: number }> = [];
    for (let c = 0; c < GROUPS / DEPTH; c++) for (let d = 0; d < DEPTH - 1; d++) links.push({ supergroupId: bulk[c * DEPTH + d]!, subgroupId: bulk[c * DEPTH + d + 1]! });
    for (let d = 0; d < DEPTH - 1; d++) links.push({ supergroupId: chain[d]!, subgroupId: chain[d + 1]! });
    await db.userGroupSubgroup.createMany({ data: links });
    await db.userGroupMember.createMany({
      data: [
        ...Array.from({ length: GROUPS / DEPTH }, (_, c) => ({ groupId: bulk[c * DEPTH + DEPTH - 1]!, userId: people.member.id })),
        { groupId: chain[DEPTH - 1]!, userId: people.member.id },
      ],
    });
    // The target groups: one managed through the 10-deep chain, one managed directly by the member.
    await db.userGroup.createMany({
      data: [
        { realmId: realm.id, name: 'target deep', creatorId: people.admin.id, ...groupSettings, canManageGroupId: chain[0]!, canAddMembersGroupId: chain[0]! },
        { realmId: realm.id, name: 'target direct', creatorId: people.admin.id, ...groupSettings },
      ],
    });
    const deep = (await db.userGroup.findFirstOrThrow({ where: { name: 'target deep' } })).id;
    const direct = (await db.userGroup.findFirstOrThrow({ where: { name: 'target direct' } })).id;
    const directManagers = await db.userGroup.create({ data: { realmId: realm.id, name: null } });
    await db.userGroupMember.create({ data: { groupId: directManagers.id, userId: people.member.id } });
    await db.userGroup.update({ where: { id: direct }, data: { canManageGroupId: directManagers.id, canAddMembersGroupId: directManagers.id } });
    await db.$executeRawUnsafe('ANALYZE');
    console.log(`Built in ${((performance.now() - buildStart) / 1000).toFixed(1)} s.`);

    const running = await listen(deps, '127.0.0.1', 0);
    const client = (who: keyof typeof people): ParleyClient => createParleyClient({ site: running.url, email: people[who].email, apiKey: people[who].apiKey });
    const member = client('member');
    const bystanders = users.slice(0, CONCURRENCY * 2);

    let edit = 0;
    const results = [];
    console.log(`Timing ${N} requests per scenario (after ${WARMUP} warm-up requests) …`);
    results.push(
      await sequential('PATCH group, permission via 10-deep chain', () =>
        member.PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deep } }, body: { description: `d${++edit}` } }),
      ),
    );
    results.push(
      await sequential('PATCH group, permission held directly', () =>
        member.PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: direct } }, body: { description: `d${++edit}` } }),
      ),
    );
    results.push(
      await sequential(
        'PATCH group, refused (400 expected)',
        () => client('other').PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deep } }, body: { description: 'no' } }),
        400,
      ),
    );
    let flip = 0;
    results.push(
      await sequential('POST members add/remove, via 10-deep chain', () => {
        const add = ++flip % 2 === 1;
        return member.POST('/user_groups/{user_group_id}/members', {
          params: { path: { user_group_id: deep } },
          body: add ? { add: [people.other.id] } : { delete: [people.other.id] },
        });
      }),
    );
    results.push(
      await sequential('GET is-member, recursive through 10 levels', () =>
        member.GET('/user_groups/{user_group_id}/members/{user_id}', { params: { path: { user_group_id: chain[0]!, user_id: people.member.id }, query: {} } }),
      ),
    );
    results.push(
      await concurrent(`POST members on one group, ${CONCURRENCY} concurrent`, (i) => {
        const userId = bystanders[i % bystanders.length]!;
        // Alternate rounds add and then remove the same users, so that every request succeeds.
        const add = Math.floor(i / bystanders.length) % 2 === 0;
        return () => member.POST('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: deep } }, body: add ? { add: [userId] } : { delete: [userId] } });
      }),
    );
    results.push(
      await concurrent(`PATCH group, ${CONCURRENCY} concurrent`, () => () =>
        member.PATCH('/user_groups/{user_group_id}', { params: { path: { user_group_id: deep } }, body: { description: `c${++edit}` } }),
      ),
    );

    console.log(`\nParley user-group permission latency — ${USERS} users, ${GROUPS} groups, permission through a ${DEPTH}-deep chain; node ${process.version}, ${os.cpus().length} CPUs`);
    console.table(results);
    await running.close();
  } finally {
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
