// Presence at 10,000 users: reports (POST /users/me/presence with last_update_id) against a bare Express
// floor, the database work each report costs, GET /realm/presence against its data floor, and the
// server's memory with 10,000 users present. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/presence.bench.ts
//
// Environment:
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`)
//   BENCH_USERS              members of the organization, each of whom reports (10000)
//   BENCH_CONNECTIONS        concurrent clients (16)
//   BENCH_READS              GET /realm/presence requests per side for the latency (60)
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir>
//   BENCH_KEEP=1             keep the work directory (logs)
//
// Set-up: an embedded PostgreSQL (ephemeral, fsync off); the organization made by the server's own
// first start, then BENCH_USERS members with API keys written with SQL as insertUser writes them
// (user, user_settings, role:fullmembers membership, api_key encrypted with the server's cipher).
// Parley runs as a separate process (NODE_ENV=production) connected to PostgreSQL through a counting
// proxy (bench/lib/pg-proxy.ts), so that every statement it sends is counted; the floors
// (bench/lib/presence-floor.ts) run as another Node process.
//
// Reports. A pass is every user reporting once (`status=active&new_user_input=true&last_update_id=n`),
// BENCH_CONNECTIONS at a time in a closed loop, users in turn. Before each pass of Parley every stored
// presence is moved two minutes back (one SQL statement, announced as a write is), so that each report
// is a real write, as at Zulip's 60-second cadence. `n` is the newest `presence_last_update_id` any
// answer gave so far: the delta of a client that keeps up, so that answers carry what changed since
// (the rows of the latest write) and not everything. (A client whose last report was a minute ago gets
// every user who reported in that minute: that answer's size is the protocol's, and the same on any
// server.) The floor answers each report as nothing-changed. One warm-up pass each (Parley's first
// creates the rows), then three pairs in alternating order; req/s medians. During each Parley pass the
// proxy counts Parley's statements and explicit transactions (BEGIN), and PostgreSQL's own statistics
// the rows written to user_presence.
//
// Reading: GET /realm/presence as 10,000 users are present (the legacy format, ~2 MB), sequential
// requests alternating between sides in chunks of 10, p50; the answers' presences are compared.
//
// Memory: Parley's RSS once started and idle (no presence stored), and at the end, with 10,000 users
// present and read, once idle again (the server collects garbage when idle: --expose-gc).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps } from '../apps/server/src/server.ts';
import { bootstrapIfEmpty } from '../apps/server/src/bootstrap.ts';
import { findFirstRealm } from '../apps/server/src/data/realms.repo.ts';
import { systemGroupIds } from '../apps/server/src/data/system-groups.repo.ts';
import { createApiKeyCipher, generateApiKey } from '../apps/server/src/security/secrets.ts';
import { pg, startBenchPostgres, type PgPool } from './lib/bench-pg.ts';
import { findPostmaster, freePort, PARLEY_SERVER_CMD, rssMb, sleep, startBenchParley, startServer, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { startPgProxy } from './lib/pg-proxy.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FLOOR_CMD = 'node --import tsx bench/lib/presence-floor.ts';
const USERS = Number(process.env.BENCH_USERS ?? 10_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const READS = Number(process.env.BENCH_READS ?? 60);
const RUNS = 3;
const FORM = 'application/x-www-form-urlencoded';
const log = (line: string) => console.log(`[bench] ${line}`);

interface Member {
  id: number;
  email: string;
  auth: string;
}

/** BENCH_USERS members of the organization with API keys, as insertUser writes them. */
async function seedMembers(sql: PgPool, secretKey: string, realmId: number, fullMembersGroupId: number): Promise<Member[]> {
  const emails = Array.from({ length: USERS }, (_, i) => `member${i}@presence.bench`);
  const { rows } = await sql.query<{ id: number; email: string }>(
    `INSERT INTO "user" (realm_id, email, delivery_email, full_name, role, date_joined)
     SELECT $1, e, e, 'Member ' || o, 400, now() - interval '30 days' FROM unnest($2::text[]) WITH ORDINALITY AS t(e, o) ORDER BY o
     RETURNING id, email`,
    [realmId, emails],
  );
  const ids = rows.map((r) => r.id);
  await sql.query('INSERT INTO user_settings (user_id) SELECT unnest($1::int[])', [ids]);
  await sql.query('INSERT INTO user_group_member (group_id, user_id) SELECT $1, unnest($2::int[])', [fullMembersGroupId, ids]);
  const cipher = createApiKeyCipher(Buffer.from(secretKey, 'hex'));
  const keys = rows.map(() => generateApiKey());
  await sql.query('INSERT INTO api_key (user_id, lookup_hash, ciphertext) SELECT * FROM unnest($1::int[], $2::text[], $3::text[])', [
    ids,
    keys.map((k) => cipher.lookupHash(k)),
    keys.map((k) => cipher.encrypt(k)),
  ]);
  return rows.map((r, i) => ({ id: r.id, email: r.email, auth: `Basic ${Buffer.from(`${r.email}:${keys[i]}`).toString('base64')}` }));
}

interface Answer {
  status: number;
  body: Buffer;
}

function request(agent: http.Agent, url: string, options: { method: string; headers: Record<string, string>; body?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) };
    const req = http.request(url, { method: options.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

interface Pass {
  rps: number;
  failed: number;
  firstFailure?: string;
  p50: number;
  bytesPerAnswer: number;
  serverCpuMs: number;
  pgCpuMs: number;
}

let postmaster: number | null = null;
/** The newest presence_last_update_id an answer gave (the clients' shared delta). */
let newestId = -1;
const ID_AT_END = /"presence_last_update_id":(-?\d+)/;

/** Every member reports once, CONNECTIONS at a time. */
async function reportPass(agent: http.Agent, base: string, pid: number, members: Member[]): Promise<Pass> {
  const server0 = treeCpuMs(pid);
  const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure: string | undefined;
  let bytes = 0;
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      for (let i = next++; i < members.length; i = next++) {
        const t = performance.now();
        const answer = await request(agent, `${base}/api/v1/users/me/presence`, {
          method: 'POST',
          headers: { authorization: members[i]!.auth, 'content-type': FORM },
          body: `status=active&new_user_input=true&last_update_id=${newestId}`,
        });
        if (answer.status !== 200) {
          failed++;
          firstFailure ??= `${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`;
          continue;
        }
        latencies.push(performance.now() - t);
        bytes += answer.body.length;
        const m = ID_AT_END.exec(answer.body.toString('latin1', Math.max(0, answer.body.length - 80)));
        if (m && Number(m[1]) > newestId) newestId = Number(m[1]);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  const ok = latencies.length;
  const serverCpuMs = (treeCpuMs(pid) - server0) / Math.max(1, ok);
  const pgCpuMs = ((postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0) / Math.max(1, ok);
  await waitIdle(pid);
  return { rps: ok / elapsed, failed, ...(firstFailure ? { firstFailure } : {}), p50: percentile(latencies, 50), bytesPerAnswer: bytes / Math.max(1, ok), serverCpuMs, pgCpuMs };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'presence-bench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, databaseUrl, pgDataDir } = await startBenchPostgres(dir);
  postmaster = findPostmaster(pgDataDir);
  const secretKey = randomBytes(32).toString('hex');
  const realmUrl = 'http://presence.bench';
  const config = { ...loadConfig({}), secretKey, dataDir: dir, publicUrl: realmUrl, ownerEmail: 'owner@presence.bench', validateResponses: false, rateLimit: null };
  const seedDeps = await createDeps(config, databaseUrl, { poolSize: 4 });
  await bootstrapIfEmpty(seedDeps, { PARLEY_OWNER_PASSWORD: 'bench owner password' });
  const realm = (await findFirstRealm(seedDeps.db))!;
  const sql: PgPool = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  log(`inserting ${USERS.toLocaleString('en')} members …`);
  const members = await seedMembers(sql, secretKey, realm.id, (await systemGroupIds(seedDeps.db, realm.id))['role:fullmembers']);
  await seedDeps.db.$disconnect();
  await sql.query('TRUNCATE event');
  await sql.query('VACUUM ANALYZE');
  log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const proxy = await startPgProxy(Number(new URL(databaseUrl).port));
  const proxiedUrl = databaseUrl.replace(/:(\d+)\//, `:${proxy.port}/`);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS + 4 });
  const running: ServerProcess[] = [];
  try {
    const parley = await startBenchParley({
      label: 'Parley',
      root: ROOT,
      databaseUrl: proxiedUrl,
      secretKey,
      realmUrl,
      dataDir: path.join(dir, 'parley'),
      logFile: path.join(dir, 'parley.log'),
      profile: true,
      env: { PARLEY_LOG_LEVEL: 'warn' },
    });
    running.push(parley);
    const floorConfig = path.join(dir, 'floor.json');
    const floorPort = await freePort();
    writeFileSync(floorConfig, JSON.stringify({ databaseUrl, port: floorPort, realmId: realm.id, host: new URL(realmUrl).hostname }));
    const floor = await startServer({
      label: 'floor',
      command: FLOOR_CMD,
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'production', BENCH_FLOOR_CONFIG: floorConfig },
      port: floorPort,
      readyPath: '/ready',
      logFile: path.join(dir, 'floor.log'),
    });
    running.push(floor);

    // Idle: started, a few requests of the kinds measured (code loaded), no presence stored.
    for (let i = 0; i < 5; i++) {
      await request(agent, `${parley.url}/api/v1/users/me`, { method: 'GET', headers: { authorization: members[i]!.auth } });
      await request(agent, `${parley.url}/api/v1/realm/presence`, { method: 'GET', headers: { authorization: members[i]!.auth } });
    }
    await sleep(4_000);
    const idleRss = rssMb(parley.pid);
    log(`Parley idle: RSS ${fmt(idleRss)} MB`);

    const age = async () => {
      // Everyone's presence two minutes older (a new update id each, announced as writes are).
      await sql.query(
        `WITH bumped AS (
           UPDATE user_presence SET last_connected_time = last_connected_time - interval '2 minutes',
             last_active_time = last_active_time - interval '2 minutes', last_update_id = nextval('user_presence_update_id_seq')
           WHERE realm_id = $1 RETURNING last_update_id)
         SELECT pg_notify('parley_presence', $1 || ':' || max(last_update_id)) FROM bumped`,
        [realm.id],
      );
      // A client keeping up has heard of that (its next delta starts after it).
      newestId = Number((await sql.query<{ m: string }>('SELECT max(last_update_id) AS m FROM user_presence WHERE realm_id = $1', [realm.id])).rows[0]!.m ?? -1);
    };
    // Rows written since the mark (each user's row at most once a pass: Zulip's 55-second rule).
    const newestStored = async () => Number((await sql.query<{ m: string | null }>('SELECT max(last_update_id) AS m FROM user_presence')).rows[0]!.m ?? 0);
    const rowsWrittenAfter = async (mark: number) => Number((await sql.query<{ n: string }>('SELECT count(*) AS n FROM user_presence WHERE last_update_id > $1', [mark])).rows[0]!.n);

    const sides = [
      { name: 'Parley', base: parley.url, pid: parley.pid, passes: [] as Pass[], counts: [] as Array<{ statements: number; transactions: number; rows: number }> },
      { name: 'floor', base: floor.url, pid: floor.pid, passes: [] as Pass[], counts: [] },
    ];
    const runPass = async (side: (typeof sides)[number], measured: boolean) => {
      if (side.name === 'Parley') {
        await age();
        await sleep(1_500); // the announcement heard; nothing of the previous pass left to write
        proxy.reset();
      }
      const mark = await newestStored();
      const pass = await reportPass(agent, side.base, side.pid, members);
      if (side.name === 'Parley') await sleep(2_500); // the last reports written (one flush interval), PostgreSQL's statistics sent
      const line = `${side.name}: ${fmt(pass.rps)} reports/s, p50 ${fmt(pass.p50)} ms, ${fmt(pass.bytesPerAnswer)} B/answer, CPU/report ${fmt(pass.serverCpuMs)} ms + PostgreSQL ${fmt(pass.pgCpuMs)} ms`;
      if (side.name === 'Parley') {
        const counts = { statements: proxy.counts.statements / USERS, transactions: proxy.counts.transactions / USERS, rows: (await rowsWrittenAfter(mark)) / USERS };
        log(`${measured ? '' : 'warm-up '}${line}; per report ${fmt(counts.statements, 3)} statements, ${fmt(counts.transactions, 4)} transactions, ${fmt(counts.rows, 2)} rows written${pass.failed ? `, ${pass.failed} FAILED (${pass.firstFailure})` : ''}`);
        if (measured) side.counts.push(counts);
      } else log(`${measured ? '' : 'warm-up '}${line}${pass.failed ? `, ${pass.failed} FAILED (${pass.firstFailure})` : ''}`);
      if (measured) side.passes.push(pass);
    };
    log(`reports: warm-up (Parley's first pass stores ${USERS.toLocaleString('en')} presences)`);
    for (const side of sides) await runPass(side, false);
    for (let run = 0; run < RUNS; run++) for (const side of run % 2 === 0 ? sides : [...sides].reverse()) await runPass(side, true);

    // GET /realm/presence with every member present.
    const read = async (base: string) => {
      const t = performance.now();
      const answer = await request(agent, `${base}/api/v1/realm/presence`, { method: 'GET', headers: { authorization: members[0]!.auth } });
      if (answer.status !== 200) throw new Error(`GET /realm/presence: ${answer.status} ${answer.body.toString('utf8').slice(0, 300)}`);
      return { ms: performance.now() - t, body: answer.body };
    };
    const [mine, theirs] = [await read(parley.url), await read(floor.url)];
    const presencesOf = (b: Buffer) => (JSON.parse(b.toString('utf8')) as { presences: Record<string, unknown> }).presences;
    const same = JSON.stringify(Object.entries(presencesOf(mine.body)).sort()) === JSON.stringify(Object.entries(presencesOf(theirs.body)).sort());
    log(`GET /realm/presence: ${Object.keys(presencesOf(mine.body)).length} users, ${fmt(mine.body.length / 1e6)} MB; the same presences as the floor's: ${same ? 'yes' : 'NO'}`);
    const readTimes = { Parley: [] as number[], floor: [] as number[] };
    for (let i = 0; i < READS; i += 10) {
      for (const [name, base] of [['Parley', parley.url], ['floor', floor.url]] as const) {
        for (let j = 0; j < 10; j++) readTimes[name].push((await read(base)).ms);
      }
    }

    await waitIdle(parley.pid);
    await sleep(4_000);
    const presentRss = rssMb(parley.pid);

    const [p, f] = sides;
    const ratio = median(p!.passes.map((x) => x.rps)) / median(f!.passes.map((x) => x.rps));
    const readRatio = percentile(readTimes.Parley, 50) / percentile(readTimes.floor, 50);
    const counts = (k: 'statements' | 'transactions' | 'rows') => median(p!.counts.map((c) => c[k]));
    const table = markdownTable(
      ['measurement', 'Parley', 'floor', 'ratio', 'goal', 'pass'],
      [
        [`reports from ${USERS.toLocaleString('en')} users with last_update_id, ${CONNECTIONS} connections, req/s`, fmt(median(p!.passes.map((x) => x.rps))), fmt(median(f!.passes.map((x) => x.rps))), `${fmt(ratio)}×`, '≥ 0.5×', ratio >= 0.5 ? '✓' : '✗'],
        [
          'database work per report: statements / transactions / rows written',
          `${fmt(counts('statements'), 3)} / ${fmt(counts('transactions'), 4)} / ${fmt(counts('rows'), 2)}`,
          '',
          '',
          'batched (≪ 1 transaction per report)',
          counts('transactions') < 0.1 ? '✓' : '✗',
        ],
        [`GET /realm/presence, ${USERS.toLocaleString('en')} users present, p50 ms`, fmt(percentile(readTimes.Parley, 50)), fmt(percentile(readTimes.floor, 50)), `${fmt(readRatio)}×`, '≤ 1.5×', readRatio <= 1.5 ? '✓' : '✗'],
        [`RSS MB, idle / ${USERS.toLocaleString('en')} users present (after the load, idle)`, `${fmt(idleRss)} / ${fmt(presentRss)}`, '', `+${fmt(presentRss - idleRss)} MB`, '+≤ 50 MB', presentRss - idleRss <= 50 ? '✓' : '✗'],
      ],
    );
    console.log(`\n${table}\n`);
    console.log(
      `CPU per report, ms (server + PostgreSQL): Parley ${fmt(median(p!.passes.map((x) => x.serverCpuMs)))} + ${fmt(median(p!.passes.map((x) => x.pgCpuMs)))}, floor ${fmt(median(f!.passes.map((x) => x.serverCpuMs)))} + ${fmt(median(f!.passes.map((x) => x.pgCpuMs)))}; ` +
        `answer size Parley ${fmt(median(p!.passes.map((x) => x.bytesPerAnswer)))} B, floor ${fmt(median(f!.passes.map((x) => x.bytesPerAnswer)))} B; load average ${os.loadavg()[0]!.toFixed(1)}`,
    );
  } finally {
    for (const server of running.reverse()) await server.stop();
    agent.destroy();
    await proxy.close();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
