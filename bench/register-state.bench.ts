// What POST /register's initial state costs, kind by kind, in an organization of BENCH_ORG_USERS users
// (bench/lib/org-sim-seed.ts, the organization of bench/organization.bench.ts). Not a test: it prints
// figures. From the repository root:
//
//   npx tsx bench/register-state.bench.ts
//
// Environment: BENCH_ORG_USERS (2000), BENCH_REPS per kind (20), BENCH_CPU_PROF=<dir>: a CPU profile of
// the reads of every kind (this process: the server's code without HTTP) into <dir>, for
// bench/lib/profile-summary.ts.
//
// In one process, without HTTP: the state is read the way doRegisterQueue reads it (one repeatable-read
// transaction, the options of the mobile app: client_gravatar, slim presence, no subscriber lists), for
// each kind alone and then for all of them. Per kind: mean wall ms, Node CPU ms, statements sent to
// PostgreSQL (the client's query events) and the size of the kind's JSON, for a member who is online.
// Last, every kind again the way POST /register reads them since 2026-11-27: in a plain node-postgres
// transaction (data/pg-transactions.ts), which sends the same statements without Prisma's client.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { createOrganization } from './lib/org-sim-seed.ts';
import { stopBenchDatabase } from './lib/processes.ts';
import { fmt, markdownTable } from './lib/stats.ts';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps } from '../apps/server/src/server.ts';
import { inTransaction } from '../apps/server/src/data/transactions.ts';
import { inSqlTransaction } from '../apps/server/src/data/pg-transactions.ts';
import { Prisma } from '../apps/server/src/data/db.ts';
import { findFirstRealm } from '../apps/server/src/data/realms.repo.ts';
import { findUserById } from '../apps/server/src/data/users.repo.ts';
import { readRegisterState, STATE_KINDS, type RegisterOptions } from '../apps/server/src/queries/register-state.ts';

const ORG_USERS = Number(process.env.BENCH_ORG_USERS ?? 2000);
const REPS = Number(process.env.BENCH_REPS ?? 20);
const log = (line: string) => console.log(`[bench] ${line}`);

const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-register-'));
const { database, fixture } = await createOrganization(dir, ORG_USERS, log);
try {
  const config = { ...loadConfig({}), secretKey: fixture.secretKey, dataDir: dir, publicUrl: fixture.realmUrl, validateResponses: false, rateLimit: null };
  const deps = await createDeps(config, fixture.databaseUrl, { poolSize: 4, emitQueryEvents: true });
  let statements = 0;
  const slow = new Map<string, { n: number; ms: number }>();
  deps.db.$on('query' as never, ((e: { query: string; duration: number }) => {
    statements++;
    if (!process.env.BENCH_SLOW) return;
    const s = slow.get(e.query) ?? { n: 0, ms: 0 };
    s.n++;
    s.ms += Number(e.duration);
    slow.set(e.query, s);
  }) as never);
  const realm = (await findFirstRealm(deps.db))!;
  const user = (await findUserById(deps.db, realm.id, fixture.users[10]!.id))!;
  const options: RegisterOptions = {
    clientGravatar: true,
    includeSubscribers: 'false',
    userSettingsObject: true,
    includeDeactivatedGroups: true,
    emptyTopicName: true,
    longpollTimeoutSeconds: 90,
    pushNotificationsEnabled: false,
    maxFileUploadSizeMib: 25,
    modernPresence: true,
    presenceHistoryLimitDays: null,
    presenceDisabled: false,
    linkifierUrlTemplate: true,
    apiKeyCipher: deps.cipher,
  };
  // Through Prisma's transaction (every statement reported, so counted), and as POST /register reads
  // it: a plain node-postgres transaction (data/pg-transactions.ts), on a client that reports nothing.
  const plainDeps = await createDeps(config, fixture.databaseUrl, { poolSize: 4 });
  const readPrisma = (kinds: string[] | null) =>
    inTransaction(deps.db, (tx) => readRegisterState(tx, realm, user, kinds, options), { isolationLevel: Prisma.TransactionIsolationLevel.RepeatableRead });
  const readPlain = (kinds: string[] | null) =>
    inSqlTransaction(plainDeps.db, (tx) => readRegisterState(tx, realm, user, kinds, options), { repeatableRead: true });
  const measure = async (kinds: string[] | null, read = readPrisma) => {
    for (let i = 0; i < 3; i++) await read(kinds);
    const s0 = statements;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let state: Record<string, unknown> = {};
    for (let i = 0; i < REPS; i++) state = await read(kinds);
    const wall = (performance.now() - t0) / REPS;
    const cpu = process.cpuUsage(cpu0);
    return { wall, cpu: (cpu.user + cpu.system) / 1000 / REPS, statements: (statements - s0) / REPS, bytes: JSON.stringify(state).length };
  };
  const rows: string[][] = [];
  let sumWall = 0;
  for (const kind of STATE_KINDS) {
    const m = await measure([kind]);
    sumWall += m.wall;
    rows.push([kind, fmt(m.wall), fmt(m.cpu), fmt(m.statements, 1), fmt(m.bytes / 1024)]);
  }
  rows.sort((a, b) => Number(b[1]) - Number(a[1]));
  const profileDir = process.env.BENCH_CPU_PROF;
  const session = profileDir ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const all = await measure(null);
  if (session && profileDir) {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(profileDir, { recursive: true });
    writeFileSync(path.join(profileDir, `register-state.${process.pid}.cpuprofile`), JSON.stringify(profile));
    session.disconnect();
  }
  if (process.env.BENCH_SLOW) for (const [q, s] of [...slow].sort((a, b) => b[1].ms - a[1].ms).slice(0, 8)) console.log(`${fmt(s.ms / s.n)} ms x${s.n}: ${q.slice(0, 1500)}\n`);
  rows.push(['**all kinds**', fmt(all.wall), fmt(all.cpu), fmt(all.statements, 1), fmt(all.bytes / 1024)]);
  const plain = await measure(null, readPlain).finally(() => plainDeps.db.$disconnect());
  rows.push(['**all kinds, plain transaction** (as POST /register)', fmt(plain.wall), fmt(plain.cpu), '–', fmt(plain.bytes / 1024)]);
  console.log(`\n/register state of a member, ${ORG_USERS.toLocaleString('en')}-user organization (${REPS} reads each after 3 warm-ups; the transaction's BEGIN/COMMIT counted; sum of the kinds alone ${fmt(sumWall)} ms):\n`);
  console.log(markdownTable(['kind', 'wall ms', 'Node CPU ms', 'statements', 'JSON KB'], rows));
  await deps.db.$disconnect();
} finally {
  await stopBenchDatabase(database, dir);
}
