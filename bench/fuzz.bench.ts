// The large spec-driven fuzz run: the generator and invariants of apps/server/test/fuzz (see runner.ts
// for the invariants) with many more requests than the bounded sample in the test suite. Not a test: it
// prints totals (requests, by status, invariant violations grouped by kind with examples). Run from the
// repository root:
//
//   npx tsx bench/fuzz.bench.ts                          (50,000 cases in the main phase)
//   FUZZ_N=200000 FUZZ_SEED=42 npx tsx bench/fuzz.bench.ts
//
// Environment: FUZZ_N (main-phase cases; a concurrent case is 8 requests), FUZZ_DESTRUCTIVE_N
// (DELETE /users/me cases, default FUZZ_N/50), FUZZ_SEED (default random, printed), FUZZ_ONLY
// (comma-separated case indices), FUZZ_CONCURRENCY (cases in flight, default 6), FUZZ_SCALE (size of
// oversized inputs, default 1 = strings up to 1 MB), FUZZ_MAX_GROUPS (violation groups printed, default
// 300), FUZZ_REPORT (also write the report to this file), FUZZ_VALIDATE_RESPONSES (default 1, as in
// tests: a success response that does not match the spec becomes a 500), PARLEY_LOG_LEVEL (server log
// level, default fatal), FUZZ_STRICT=1 (exit 1 when any invariant is violated).
//
// Like group-permissions.bench.ts it starts an embedded PostgreSQL, seeds a template database with an
// organization and the test people (apps/server/test/helpers/fixtures.ts), and serves Parley over HTTP
// in this process: one server (on a copy of the template) for the main phase, another for the
// destructive phase (DELETE /users/me as fresh throwaway users, then the destructive operations aimed
// at the seeded people, last). Rate limiting is off.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { startEmbeddedPostgres } from '../packages/db/src/embedded.ts';
import { wirePlan } from '../packages/wire/src/index.ts';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps, listen } from '../apps/server/src/server.ts';
import { bootstrapIfEmpty } from '../apps/server/src/bootstrap.ts';
import { insertUser, prepareNewUser } from '../apps/server/src/actions/users.ts';
import { inTransaction } from '../apps/server/src/data/transactions.ts';
import { findFirstRealm } from '../apps/server/src/data/realms.repo.ts';
import { PEOPLE, TEST_PASSWORD, type Person } from '../apps/server/test/helpers/fixtures.ts';
import { DESTRUCTIVE_PATH_TARGETS, SELF_DESTRUCTIVE, SpecModel, type FuzzRequest, type Phase } from '../apps/server/test/fuzz/generator.ts';
import { checkAfterRun, runPhase, Tally, type FuzzResponse, type Violation } from '../apps/server/test/fuzz/runner.ts';
import { aimAtSeeded, prepareTargets } from '../apps/server/test/fuzz/targets.ts';

// pg is a dependency of the server package, not of the repository root.
interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}
const pg = createRequire(new URL('../apps/server/package.json', import.meta.url))('pg') as { Client: new (options: { connectionString: string }) => PgClient };

const env = process.env;
const CASES = Number(env.FUZZ_N ?? 50_000);
const DESTRUCTIVE_CASES = Number(env.FUZZ_DESTRUCTIVE_N ?? Math.max(100, Math.round(CASES / 50)));
const SEED = env.FUZZ_SEED ? Number(env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const ONLY = env.FUZZ_ONLY ? new Set(env.FUZZ_ONLY.split(',').map(Number)) : undefined;
const CONCURRENCY = Number(env.FUZZ_CONCURRENCY ?? 6);
const SCALE = Number(env.FUZZ_SCALE ?? 1);
const MAX_GROUPS = Number(env.FUZZ_MAX_GROUPS ?? 300);

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-fuzz-'));
  console.log(`fuzz seed ${SEED}; ${CASES} main-phase cases, ${DESTRUCTIVE_CASES} destructive cases; embedded PostgreSQL in ${dir} …`);
  const database = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), ephemeral: true });
  const tally = new Tally();
  const started = performance.now();
  let fuzzStarted = 0;
  try {
    const admin = new pg.Client({ connectionString: database.adminUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE fuzz_template');

    const secretKey = randomBytes(32).toString('hex');
    const config = {
      ...loadConfig({ PARLEY_LOG_LEVEL: env.PARLEY_LOG_LEVEL ?? 'fatal' }),
      secretKey,
      dataDir: dir,
      publicUrl: 'http://parley.test',
      ownerEmail: 'owner@parley.test',
      validateResponses: (env.FUZZ_VALIDATE_RESPONSES ?? '1') === '1',
      // Rate limiting would throttle a run that sends thousands of requests as one user.
      rateLimit: null,
    };

    // The template: an organization and the test people (as apps/server/test/helpers/global-setup.ts).
    const seedDeps = await createDeps(config, database.urlFor('fuzz_template'), { poolSize: 2 });
    await bootstrapIfEmpty(seedDeps, { PARLEY_OWNER_PASSWORD: TEST_PASSWORD });
    const realm = (await findFirstRealm(seedDeps.db))!;
    const people = {} as Record<Person, { id: number; email: string; apiKey: string }>;
    for (const [name, person] of Object.entries(PEOPLE) as [Person, (typeof PEOPLE)[Person]][]) {
      const prepared = await prepareNewUser({ email: person.email, fullName: person.fullName, password: TEST_PASSWORD, role: person.role });
      const created = await inTransaction(seedDeps.db, (tx) => insertUser(tx, seedDeps, realm, prepared));
      people[name] = { id: created.user.id, email: person.email, apiKey: created.apiKey };
    }
    await seedDeps.db.$disconnect();
    const roles = Object.fromEntries(Object.entries(PEOPLE).map(([name, p]) => [name, p.role]));
    const seeded = { people, roles, password: TEST_PASSWORD, owner: 'desdemona' };

    let copies = 0;
    const server = async () => {
      const name = `fuzz_${++copies}`;
      await admin.query(`CREATE DATABASE ${name} TEMPLATE fuzz_template`);
      const deps = await createDeps(config, database.urlFor(name), { poolSize: 10 });
      const running = await listen(deps, '127.0.0.1', 0);
      const targets = await prepareTargets(deps, running.url, seeded, { throwaway: 24 });
      return { running, targets, model: new SpecModel(JSON.parse(readFileSync(deps.specJsonPath, 'utf8')), wirePlan) };
    };

    let lastPrint = performance.now();
    const progress = (label: string, total: number) => {
      let done = 0;
      return (_req: FuzzRequest, _res: FuzzResponse[], _v: Violation[]) => {
        done++;
        if (performance.now() - lastPrint > 10_000 || done === total) {
          lastPrint = performance.now();
          const seconds = (performance.now() - fuzzStarted) / 1000;
          console.log(`  ${label}: ${done}/${total} cases; ${tally.requests} requests in all, ${tally.violations} violations, ${(tally.requests / seconds).toFixed(0)} req/s`);
        }
      };
    };
    const common = { seed: SEED, concurrency: CONCURRENCY, scale: SCALE, tally, ...(ONLY ? { only: ONLY } : {}) };

    {
      const { running, targets, model } = await server();
      const main: Phase = { name: 'main', ops: model.ops.map((o) => o.id).filter((id) => !SELF_DESTRUCTIVE.has(id)) };
      console.log(`main phase on ${running.url}: ${model.ops.length - SELF_DESTRUCTIVE.size} operations …`);
      fuzzStarted = performance.now();
      await runPhase({ ...common, baseUrl: running.url, model, pools: targets.pools, phase: main, total: CASES, fresh: targets.fresh, onCase: progress('main', CASES) });
      await checkAfterRun(running.url, tally);
      await running.close();
    }
    {
      const { running, targets, model } = await server();
      console.log(`destructive phase on ${running.url} …`);
      const selfDestruct: Phase = { name: 'self-destruct', ops: [...SELF_DESTRUCTIVE], freshAuth: new Set(SELF_DESTRUCTIVE) };
      await runPhase({ ...common, baseUrl: running.url, model, pools: targets.pools, phase: selfDestruct, total: DESTRUCTIVE_CASES, startIndex: 10_000_000, fresh: targets.fresh, onCase: progress('self-destruct', DESTRUCTIVE_CASES) });
      const last: Phase = { name: 'seeded-last', ops: [...Object.keys(DESTRUCTIVE_PATH_TARGETS), ...SELF_DESTRUCTIVE] };
      await runPhase({ ...common, baseUrl: running.url, model, pools: aimAtSeeded(targets.pools), phase: last, total: DESTRUCTIVE_CASES, startIndex: 20_000_000 });
      await checkAfterRun(running.url, tally);
      await running.close();
    }
    await admin.end();
  } finally {
    await database.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  const fuzzSeconds = (performance.now() - fuzzStarted) / 1000;
  const report = tally.report({ seed: SEED, maxGroups: MAX_GROUPS });
  console.log(`\nParley spec-driven fuzz — node ${process.version}, ${os.cpus().length} CPUs, ${seconds.toFixed(0)} s in all, ${(tally.requests / fuzzSeconds).toFixed(0)} requests/s while fuzzing`);
  console.log(report);
  if (env.FUZZ_REPORT) writeFileSync(env.FUZZ_REPORT, `${report}\n`);
  if (env.FUZZ_STRICT === '1' && tally.violations > 0) process.exitCode = 1;
}

main().then(
  // Exit even if a pool or listener of the stopped servers still holds a handle.
  () => process.exit(),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
