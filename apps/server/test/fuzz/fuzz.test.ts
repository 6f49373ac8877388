// Spec-driven fuzz test (bounded sample for CI; the large run is bench/fuzz.bench.ts). Every operation
// of the spec gets valid and hostile requests from every seeded role and without/with bad credentials;
// every response must satisfy the invariants listed in runner.ts. See generator.ts for the inputs.
//
// Reproduce: the seed is printed with the report (fixed by default, so CI is deterministic);
// FUZZ_SEED=<seed> runs another seed (FUZZ_SEED=random: a new one each run), FUZZ_ONLY=<index,index…>
// only those cases, FUZZ_N=<cases> changes the size of the main phase (default 1,800 cases, about
// 2,300 requests: every operation × every kind of input, then random cases).
//
// Two servers (each on its own copy of the seeded database): the main phase never deactivates or
// demotes the seeded people (destructive operations aim at throwaway targets); the second server runs
// DELETE /users/me as fresh throwaway users, then, last, the destructive operations aimed at the
// seeded people themselves.
import { afterAll, describe, expect, it } from 'vitest';
import { wirePlan } from '@parley/wire';
import { readFileSync } from 'node:fs';
import { PEOPLE, TEST_PASSWORD, type Person } from '../helpers/fixtures.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { DESTRUCTIVE_PATH_TARGETS, SELF_DESTRUCTIVE, SpecModel, type Phase } from './generator.ts';
import { checkAfterRun, runPhase, Tally } from './runner.ts';
import { aimAtSeeded, prepareTargets, type Targets } from './targets.ts';

const SEED = process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED ?? 20261123);
const MAIN_CASES = Number(process.env.FUZZ_N ?? 1800);
const ONLY = process.env.FUZZ_ONLY ? new Set(process.env.FUZZ_ONLY.split(',').map(Number)) : undefined;
// Oversized inputs at a quarter of the large run's sizes (strings up to 250 kB, bodies over 5 MB stay).
const SCALE = 0.25;

const servers: TestServer[] = [];

async function serverWithTargets(): Promise<{ env: TestServer; targets: Targets; model: SpecModel }> {
  const env = await startTestServer();
  servers.push(env);
  const model = new SpecModel(JSON.parse(readFileSync(env.running.deps.specJsonPath, 'utf8')), wirePlan);
  const roles = Object.fromEntries(Object.entries(PEOPLE).map(([name, p]) => [name, p.role]));
  const targets = await prepareTargets(env.running.deps, env.url, { people: env.users, roles, password: TEST_PASSWORD, owner: 'desdemona' satisfies Person });
  return { env, targets, model };
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

describe(`spec-driven fuzz (seed ${SEED})`, () => {
  it('main phase: every operation, every kind of hostile input, every role', async () => {
    const { env, targets, model } = await serverWithTargets();
    expect(model.ops.map((o) => o.id).sort()).toEqual(Object.keys(wirePlan).sort());
    const tally = new Tally();
    const phase: Phase = { name: 'main', ops: model.ops.map((o) => o.id).filter((id) => !SELF_DESTRUCTIVE.has(id)) };
    const started = Date.now();
    await runPhase({ baseUrl: env.url, model, pools: targets.pools, phase, seed: SEED, total: MAIN_CASES, concurrency: 4, scale: SCALE, tally, fresh: targets.fresh, ...(ONLY ? { only: ONLY } : {}) });
    await checkAfterRun(env.url, tally);
    const report = tally.report({ seed: SEED, maxGroups: 150 });
    console.log(`${report.split('\n').slice(0, 3).join('\n')}\n(main phase: ${((Date.now() - started) / 1000).toFixed(1)} s)`);
    expect(tally.violations, report).toBe(0);
  }, 180_000);

  it('destructive phase: DELETE /users/me as throwaway users of every role, then aimed at the seeded people last', async () => {
    const { env, targets, model } = await serverWithTargets();
    const tally = new Tally();
    const selfDestruct: Phase = { name: 'self-destruct', ops: [...SELF_DESTRUCTIVE], freshAuth: new Set(SELF_DESTRUCTIVE) };
    const { cases } = await runPhase({ baseUrl: env.url, model, pools: targets.pools, phase: selfDestruct, seed: SEED, total: 60, startIndex: 100_000, concurrency: 4, scale: SCALE, tally, fresh: targets.fresh, ...(ONLY ? { only: ONLY } : {}) });
    expect(cases.length > 0 || !!ONLY).toBe(true);
    const last: Phase = { name: 'seeded-last', ops: [...Object.keys(DESTRUCTIVE_PATH_TARGETS), ...SELF_DESTRUCTIVE] };
    await runPhase({ baseUrl: env.url, model, pools: aimAtSeeded(targets.pools), phase: last, seed: SEED, total: 0, startIndex: 200_000, concurrency: 4, scale: SCALE, tally, ...(ONLY ? { only: ONLY } : {}) });
    await checkAfterRun(env.url, tally);
    const report = tally.report({ seed: SEED, maxGroups: 80 });
    console.log(report.split('\n').slice(0, 3).join('\n'));
    expect(tally.violations, report).toBe(0);
  }, 180_000);
});
