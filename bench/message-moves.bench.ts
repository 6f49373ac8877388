// Moving a 10,000-message topic to another channel through the API, at two numbers of subscribers
// (issue 22: p50 ≤ 1 s, no transaction over 2 s, flat in the number of subscribers). Not a test: it
// prints figures. From the repository root:
//
//   npx tsx bench/message-moves.bench.ts
//
// Environment:
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`)
//   BENCH_MESSAGES           messages of the topic (10000)
//   BENCH_SUBSCRIBERS        comma-separated numbers of subscribers of both channels (10,1000; at most 4,999)
//   BENCH_MOVES              measured moves per size (5), after one warm-up move each
//   BENCH_HISTORY_MESSAGES   other messages stored first, in other channels (100000)
//   BENCH_PG_LOG_MS=<ms>     PostgreSQL logs every statement of Parley's sessions that takes at least <ms>
//                            (log_min_duration_statement); the bench prints the slowest statements of
//                            the measured moves, summed per statement
//   BENCH_EXPLAIN_MS=<ms>    auto_explain (ANALYZE, BUFFERS, triggers, nested statements) for Parley's statements of
//                            at least <ms>, into PostgreSQL's log, copied to postgres.log in the work
//                            directory at the end (use with BENCH_KEEP=1)
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> (summarise with
//                            `npx tsx bench/lib/profile-summary.ts <dir>/*.cpuprofile`)
//   BENCH_KEEP=1             keep the work directory (Parley's and PostgreSQL's logs)
//
// Set-up: bench/lib/messages-seed.ts's database (an embedded PostgreSQL, 5,001 users), BENCH_HISTORY_MESSAGES
// messages in its history channels (bench/lib/messages-seed.ts addHistory), then, with the server's own
// actions, an organization administrator (`admin@parley.bench`, insertUser, role 200) and, per size S,
// two public channels with shared history (doSubscribe, by the administrator), `move S a` and
// `move S b`, both with the same S subscribers: the administrator and the first S − 1 members. Then
// with SQL, per size, one topic (`moving topic`) of BENCH_MESSAGES messages in `move S a`, as sending
// would have left them (bench/lib/messages-seed.ts writes messages the same way):
//   - senders: the first 10 subscribers in turn (the same people at every size), dates 4 minutes apart
//     ending now, ~100 characters of content rendered as one paragraph;
//   - user_message rows for the sender (read) and for one subscriber with a device (unread): recipients
//     with a flag of their own; every other subscriber is listed in message.deferred_recipient_ids;
//   - the administrator, listed there too, has read the whole topic: a row (read) for every message and
//     a caught-up mark past the newest message (so that the move's own catch-up has nothing to write);
//   - the topic is followed (user_topic) by its first 5 senders, so visibility policies move with it.
// VACUUM ANALYZE afterwards.
//
// Parley runs as a separate process with NODE_ENV=production (bench/lib/processes.ts startBenchParley).
// Each move is `PATCH /api/v1/messages/{id}` as the administrator, with form fields stream_id (the other
// channel), topic (the same name), propagate_mode=change_all, send_notification_to_old_thread=false,
// send_notification_to_new_thread=true: the topic goes back and forth between the two channels (the
// notification bot's notice joins it each time, so the n-th move carries BENCH_MESSAGES + n − 1
// messages). One warm-up move per size, then BENCH_MOVES rounds, each one move per size (the sizes'
// order alternating), each once Parley is idle. Per move:
//   - latency: from the request's start to the whole answer, in this process;
//   - the server's own time: the `ms` of the request's log line (from the request's arrival to its
//     answer), matched by X-Request-Id;
//   - the longest transaction: pg_stat_activity (xact_start of every client backend but the sampler's)
//     sampled every 20 ms while the request runs; a transaction's age is the last sample's
//     clock_timestamp() − xact_start (so it may be up to 20 ms short). The move is one transaction
//     (after the administrator's deferred-row catch-up, a statement of its own);
//   - CPU time of the Parley process and of PostgreSQL (all processes of the cluster) from /proc;
//   - that every message of the topic arrived (counted with SQL afterwards).
import { copyFileSync, mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, pg, type PgPool, type Person } from './lib/messages-seed.ts';
import { createPublicChannels } from './lib/bench-db.ts';
import { findPostmaster, PARLEY_SERVER_CMD, sleep, startBenchParley, stopBenchDatabase, treeCpuMs, waitIdle, type ServerProcess } from './lib/processes.ts';
import { SAMPLE_EVERY_MS, sampleTransactions } from './lib/transactions.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps } from '../apps/server/src/server.ts';
import { insertUser, prepareNewUser } from '../apps/server/src/actions/users.ts';
import { inTransaction } from '../apps/server/src/data/transactions.ts';
import { findFirstRealm } from '../apps/server/src/data/realms.repo.ts';
import { findUserById } from '../apps/server/src/data/users.repo.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
const SIZES = (process.env.BENCH_SUBSCRIBERS ?? '10,1000').split(',').map((s) => Number(s.trim()));
const MOVES = Number(process.env.BENCH_MOVES ?? 5);
const HISTORY_MESSAGES = Number(process.env.BENCH_HISTORY_MESSAGES ?? 100_000);
const PG_LOG_MS = process.env.BENCH_PG_LOG_MS ? Number(process.env.BENCH_PG_LOG_MS) : null;
const EXPLAIN_MS = process.env.BENCH_EXPLAIN_MS ? Number(process.env.BENCH_EXPLAIN_MS) : null;
const TOPIC = 'moving topic';
const SENDERS = 10;
const FOLLOWERS = 5;
const FOLLOWED = 3; // VisibilityPolicy.FOLLOWED
const GOAL_P50_MS = 1000;
const GOAL_LONGEST_MS = 2000;
/** "Flat in the number of subscribers", read as: the larger size's p50 within 1.5× of the smaller's (noise). */
const GOAL_FLAT = 1.5;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const form = (fields: Record<string, string | number>) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
const log = (line: string) => console.log(`[bench] ${line}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const thousands = (n: number) => n.toLocaleString('en');

interface Answer {
  status: number;
  body: string;
  at: number;
}

function request(agent: http.Agent, url: string, options: { method: string; headers: Record<string, string>; body?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) };
    const req = http.request(url, { method: options.method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), at: performance.now() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

interface Size {
  subscribers: number;
  channelIds: [number, number];
  /** Index in channelIds of the channel holding the topic now. */
  at: 0 | 1;
  messageId: number;
  moves: Move[];
}

interface Move {
  round: number;
  from: number;
  to: number;
  moved: number;
  ms: number;
  serverMs: number;
  longestTxMs: number;
  transactions: number;
  serverCpuMs: number;
  pgCpuMs: number;
  requestId: string;
}

/** The administrator, the channels and the topics, written as described at the top. */
async function seedMoves(
  fixture: { databaseUrl: string; secretKey: string; realmId: number },
  dir: string,
  sql: PgPool,
): Promise<{ admin: Person; sizes: Size[] }> {
  const config = { ...loadConfig({}), secretKey: fixture.secretKey, dataDir: dir, publicUrl: 'http://parley.bench', ownerEmail: 'owner@parley.bench', validateResponses: false, rateLimit: null };
  const deps = await createDeps(config, fixture.databaseUrl, { poolSize: 4 });
  try {
    const realm = (await findFirstRealm(deps.db))!;
    const prepared = await prepareNewUser({ email: 'admin@parley.bench', fullName: 'Bench Administrator', password: null, role: 200 });
    const created = await inTransaction(deps.db, (tx) => insertUser(tx, deps, realm, prepared));
    const admin: Person = { id: created.user.id, email: 'admin@parley.bench', apiKey: created.apiKey };
    const adminRow = (await findUserById(deps.db, realm.id, admin.id))!;
    const names = SIZES.flatMap((s) => [`move ${s} a`, `move ${s} b`]);
    await createPublicChannels(deps, realm, adminRow, names);
    const channels = (await sql.query<{ id: number; name: string; history_public_to_subscribers: boolean; invite_only: boolean }>(
      'SELECT id, name, history_public_to_subscribers, invite_only FROM channel WHERE realm_id = $1 AND name = ANY($2::text[])',
      [realm.id, names],
    )).rows;
    if (channels.some((c) => c.invite_only || !c.history_public_to_subscribers)) throw new Error('the channels are not public with shared history');
    const idOf = (name: string) => channels.find((c) => c.name === name)!.id;
    const others = (await sql.query<{ id: number }>(
      `SELECT id FROM "user" WHERE realm_id = $1 AND role = 400 AND is_active AND NOT is_bot AND id <> $2 ORDER BY id`,
      [realm.id, admin.id],
    )).rows.map((r) => r.id);
    await sql.query('DELETE FROM subscription WHERE channel_id = ANY($1::int[])', [channels.map((c) => c.id)]);

    const sizes: Size[] = [];
    for (const subscribers of SIZES) {
      if (subscribers < SENDERS || subscribers - 1 > others.length) throw new Error(`BENCH_SUBSCRIBERS: ${subscribers} is not between ${SENDERS} and ${others.length + 1}`);
      const t = performance.now();
      const channelIds: [number, number] = [idOf(`move ${subscribers} a`), idOf(`move ${subscribers} b`)];
      const subs = [admin.id, ...others.slice(0, subscribers - 1)].sort((a, b) => a - b);
      for (const channelId of channelIds) {
        await sql.query(`INSERT INTO subscription (user_id, channel_id, active, color) SELECT unnest($1::int[]), $2, true, '#76ce90'`, [subs, channelId]);
      }
      // The first SENDERS subscribers (the administrator among them) send in turn; the next one has a device.
      const senders = [admin.id, ...others.slice(0, SENDERS - 1)];
      const device = others[SENDERS - 1]!;
      await sql.query(
        `INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client, deferred_recipient_ids)
         SELECT $1, s.sender, $2, $3, '{}', t.c, '<p>' || t.c || '</p>', now() - make_interval(secs => ($4 - i) * 240), 'website',
                array_remove(array_remove($6::int[], s.sender), $7)
         FROM generate_series(0, $4 - 1) AS i,
              LATERAL (SELECT ($5::int[])[1 + i % array_length($5::int[], 1)] AS sender) s,
              LATERAL (SELECT 'Move benchmark message ' || i || ': the quick brown fox jumps over the lazy dog while the topic changes channel.' AS c) t
         ORDER BY i`,
        [realm.id, channelIds[0], TOPIC, MESSAGES, senders, subs, device],
      );
      // Rows as sending writes them (the sender's, read; the device holder's, unread), and the
      // administrator's as catching up and reading wrote them.
      await sql.query(
        `INSERT INTO user_message (user_id, message_id, flags)
         SELECT sender_id, id, 1 FROM message WHERE channel_id = $1
         UNION ALL SELECT $2, id, 0 FROM message WHERE channel_id = $1
         UNION ALL SELECT $3, id, 1 FROM message WHERE channel_id = $1 AND sender_id <> $3`,
        [channelIds[0], device, admin.id],
      );
      await sql.query(
        `INSERT INTO user_topic (user_id, channel_id, topic_name, topic_key, visibility_policy, last_updated)
         SELECT unnest($1::int[]), $2, $3, lower($3), $4, now()`,
        [senders.slice(0, FOLLOWERS), channelIds[0], TOPIC, FOLLOWED],
      );
      const first = (await sql.query<{ id: number }>('SELECT min(id) AS id FROM message WHERE channel_id = $1', [channelIds[0]])).rows[0]!.id;
      sizes.push({ subscribers, channelIds, at: 0, messageId: first, moves: [] });
      log(`size ${thousands(subscribers)}: channels ${channelIds.join(' and ')}, ${thousands(MESSAGES)} messages in ${seconds(performance.now() - t)}`);
    }
    await sql.query(
      `INSERT INTO user_message_caught_up (user_id, message_id) VALUES ($1, (SELECT max(id) FROM message))
       ON CONFLICT (user_id) DO UPDATE SET message_id = EXCLUDED.message_id`,
      [admin.id],
    );
    await sql.query('TRUNCATE event');
    await sql.query('VACUUM ANALYZE');
    return { admin, sizes };
  } finally {
    await deps.db.$disconnect();
  }
}

/** Statements logged by PostgreSQL (log_min_duration_statement) after `offset` of its log: total ms and count per statement. */
function slowStatements(logFile: string, offset: number): Array<{ statement: string; totalMs: number; count: number; maxMs: number }> {
  const text = readFileSync(logFile, 'utf8').slice(offset);
  const byStatement = new Map<string, { totalMs: number; count: number; maxMs: number }>();
  // "LOG:  duration: 12.345 ms  execute s1: SELECT …" up to the next line that starts a new log entry.
  // Planning of an unnamed extended-protocol statement happens at bind: a slow bind is a slow plan.
  const entry = /duration: ([\d.]+) ms {2}(statement|execute|bind|parse)[^:]*: ([\s\S]*?)(?=\n\S|$)/g;
  for (let m = entry.exec(text); m; m = entry.exec(text)) {
    const statement = `${m[2] === 'execute' || m[2] === 'statement' ? '' : `(${m[2]}) `}${m[3]!.replace(/\s+/g, ' ').trim()}`.slice(0, 160);
    const s = byStatement.get(statement) ?? { totalMs: 0, count: 0, maxMs: 0 };
    const ms = Number(m[1]);
    s.totalMs += ms;
    s.count++;
    s.maxMs = Math.max(s.maxMs, ms);
    byStatement.set(statement, s);
  }
  return [...byStatement.entries()].map(([statement, s]) => ({ statement, ...s })).sort((a, b) => b.totalMs - a.totalMs);
}

/** The `ms` of Parley's request log lines, by request id. */
function serverTimes(logFile: string): Map<string, number> {
  const times = new Map<string, number>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as { req_id?: string; ms?: number; msg?: string };
      if (entry.msg === 'request' && entry.req_id && typeof entry.ms === 'number') times.set(entry.req_id, entry.ms);
    } catch {}
  }
  return times;
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'movebench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  const postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  const running: ServerProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  try {
    {
      const t = performance.now();
      await addHistory(sql, fixture, HISTORY_MESSAGES, fixture.member.id, log);
      log(`stored ${thousands(HISTORY_MESSAGES)} history messages in ${seconds(performance.now() - t)}`);
    }
    const { admin, sizes } = await seedMoves(fixture, dir, sql);
    log(`seeded in ${seconds(performance.now() - t0)}`);
    if (PG_LOG_MS !== null) await sql.query(`ALTER DATABASE parley_bench SET log_min_duration_statement = ${Math.round(PG_LOG_MS)}`);
    if (EXPLAIN_MS !== null) {
      await sql.query(`ALTER DATABASE parley_bench SET session_preload_libraries = 'auto_explain'`);
      for (const [name, value] of [['log_min_duration', String(Math.round(EXPLAIN_MS))], ['log_analyze', 'on'], ['log_buffers', 'on'], ['log_nested_statements', 'on'], ['log_timing', 'on'], ['log_triggers', 'on']]) {
        await sql.query(`ALTER DATABASE parley_bench SET auto_explain.${name} = '${value}'`);
      }
    }

    const parley = await startBenchParley({
      label: 'Parley',
      root: ROOT,
      databaseUrl: fixture.databaseUrl,
      secretKey: fixture.secretKey,
      realmUrl: fixture.realmUrl,
      dataDir: path.join(dir, 'parley'),
      logFile: path.join(dir, 'parley.log'),
      profile: true,
    });
    running.push(parley);
    log(`Parley answered (pid ${parley.pid}; log ${parley.logFile})`);
    const api = `${parley.url}/api/v1`;
    const auth = { authorization: basic(admin), 'content-type': 'application/x-www-form-urlencoded' };
    const pgLog = path.join(pgDataDir, 'postgres.log');
    let pgLogOffset = 0;

    const move = async (size: Size, round: number): Promise<Move> => {
      const from = size.channelIds[size.at];
      const to = size.channelIds[1 - size.at]!;
      const requestId = `move-${size.subscribers}-${round}-${Date.now()}`;
      await waitIdle(parley.pid);
      await sleep(300);
      const server0 = treeCpuMs(parley.pid);
      const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
      const sampler = sampleTransactions(fixture.databaseUrl);
      await sleep(SAMPLE_EVERY_MS * 2);
      const start = performance.now();
      const answer = await request(agent, `${api}/messages/${size.messageId}`, {
        method: 'PATCH',
        headers: { ...auth, 'x-request-id': requestId },
        body: form({ stream_id: to, topic: TOPIC, propagate_mode: 'change_all', send_notification_to_old_thread: 'false', send_notification_to_new_thread: 'true' }),
      });
      const ms = answer.at - start;
      const tx = await sampler.stop();
      await waitIdle(parley.pid);
      const serverCpuMs = treeCpuMs(parley.pid) - server0;
      const pgCpuMs = (postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0;
      if (answer.status !== 200) throw new Error(`PATCH /messages/${size.messageId} (size ${size.subscribers}, round ${round}): ${answer.status} ${answer.body.slice(0, 300)}`);
      const counts = (await sql.query<{ channel_id: number; n: string }>(
        'SELECT channel_id, count(*) AS n FROM message WHERE channel_id = ANY($1::int[]) AND lower(topic) = lower($2) GROUP BY channel_id',
        [size.channelIds, TOPIC],
      )).rows;
      const moved = Number(counts.find((c) => c.channel_id === to)?.n ?? 0);
      const left = Number(counts.find((c) => c.channel_id === from)?.n ?? 0);
      if (left !== 0 || moved < MESSAGES) throw new Error(`size ${size.subscribers}, round ${round}: ${left} messages left in channel ${from}, ${moved} in ${to}`);
      size.at = size.at === 0 ? 1 : 0;
      return { round, from, to, moved, ms, serverMs: Number.NaN, longestTxMs: tx.longestMs, transactions: tx.transactions, serverCpuMs, pgCpuMs, requestId };
    };

    log('warming up: one move per size');
    for (const size of sizes) {
      const m = await move(size, 0);
      log(`warm-up, ${thousands(size.subscribers)} subscribers: ${thousands(m.moved)} messages in ${fmt(m.ms)} ms`);
    }
    if (PG_LOG_MS !== null) pgLogOffset = readFileSync(pgLog, 'utf8').length;
    for (let round = 1; round <= MOVES; round++) {
      const order = round % 2 === 1 ? sizes : [...sizes].reverse();
      for (const size of order) {
        const m = await move(size, round);
        size.moves.push(m);
        log(
          `round ${round}, ${thousands(size.subscribers)} subscribers: ${thousands(m.moved)} messages ${m.from} → ${m.to} in ${fmt(m.ms)} ms, ` +
            `longest transaction ${fmt(m.longestTxMs)} ms, CPU Parley ${fmt(m.serverCpuMs)} ms + PostgreSQL ${fmt(m.pgCpuMs)} ms`,
        );
      }
    }
    await sleep(1000); // Parley's log lines are flushed every 250 ms
    const times = serverTimes(parley.logFile);
    for (const size of sizes) for (const m of size.moves) m.serverMs = times.get(m.requestId) ?? Number.NaN;

    // --- report -----------------------------------------------------------------------------------------
    const [small, large] = [sizes[0]!, sizes[sizes.length - 1]!];
    const p50 = (s: Size, f: (m: Move) => number) => percentile(s.moves.map(f), 50);
    const max = (s: Size, f: (m: Move) => number) => Math.max(...s.moves.map(f));
    const ratio = (f: (s: Size) => number) => `${fmt(f(large) / f(small), 2)}×`;
    const label = (s: Size) => `${thousands(s.subscribers)} subscribers`;
    const latencyP50 = (s: Size) => p50(s, (m) => m.ms);
    const latencyMax = (s: Size) => max(s, (m) => m.ms);
    const longest = (s: Size) => max(s, (m) => m.longestTxMs);
    const serverP50 = (s: Size) => p50(s, (m) => m.serverMs);
    const serverMax = (s: Size) => max(s, (m) => m.serverMs);
    const cpu = (s: Size) => median(s.moves.map((m) => m.serverCpuMs));
    const pgCpu = (s: Size) => median(s.moves.map((m) => m.pgCpuMs));
    const rows: string[][] = [
      [`PATCH /messages/{id}, change_all to another channel, ${thousands(MESSAGES)}-message topic, p50 ms`, fmt(latencyP50(small)), fmt(latencyP50(large)), ratio(latencyP50), `≤ ${thousands(GOAL_P50_MS)} ms; flat (≤ ${GOAL_FLAT}×)`,
        (Math.max(latencyP50(small), latencyP50(large)) <= GOAL_P50_MS ? '✓' : '✗') + (latencyP50(large) / latencyP50(small) <= GOAL_FLAT ? ' ✓' : ' ✗')],
      ['the same, max ms', fmt(latencyMax(small)), fmt(latencyMax(large)), ratio(latencyMax), '', 'info'],
      ['longest transaction while moving, max ms', fmt(longest(small)), fmt(longest(large)), ratio(longest), `≤ ${thousands(GOAL_LONGEST_MS)} ms`, Math.max(longest(small), longest(large)) <= GOAL_LONGEST_MS ? '✓' : '✗'],
      ['the server\'s own time (request log), p50 / max ms', `${fmt(serverP50(small))} / ${fmt(serverMax(small))}`, `${fmt(serverP50(large))} / ${fmt(serverMax(large))}`, ratio(serverP50), '', 'info'],
      ['CPU per move, Parley / PostgreSQL, median ms', `${fmt(cpu(small))} / ${fmt(pgCpu(small))}`, `${fmt(cpu(large))} / ${fmt(pgCpu(large))}`, ratio(cpu), '', 'info'],
    ];
    const details = sizes.flatMap((s) =>
      s.moves.map((m) => [label(s), String(m.round), `${m.from} → ${m.to}`, thousands(m.moved), fmt(m.ms), fmt(m.serverMs), fmt(m.longestTxMs), String(m.transactions), fmt(m.serverCpuMs), fmt(m.pgCpuMs)]),
    );

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; ${thousands(fixture.users + 1)} users, ${thousands(HISTORY_MESSAGES)} other messages`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(`Moving a topic of ${thousands(MESSAGES)} messages (+1 notice per earlier move) between two public channels with the same subscribers, as an administrator; ${MOVES} moves per size after one warm-up move:\n`);
    console.log(markdownTable(['measurement', label(small), label(large), `ratio ${thousands(large.subscribers)} ÷ ${thousands(small.subscribers)}`, 'goal', 'pass'], rows));
    console.log('\nEvery move (ms; transactions = transactions of Parley\'s connections seen while the request ran):\n');
    console.log(markdownTable(['size', 'round', 'channels', 'messages moved', 'latency', 'server', 'longest transaction', 'transactions', 'Parley CPU', 'PostgreSQL CPU'], details));
    if (PG_LOG_MS !== null) {
      const statements = slowStatements(pgLog, pgLogOffset).slice(0, 15);
      const moves = MOVES * sizes.length;
      console.log(`\nPostgreSQL statements of at least ${PG_LOG_MS} ms during the ${moves} measured moves (all sizes), by total time:\n`);
      console.log(markdownTable(['total ms', 'per move ms', 'count', 'max ms', 'statement (start)'], statements.map((s) => [fmt(s.totalMs), fmt(s.totalMs / moves), String(s.count), fmt(s.maxMs), s.statement.replace(/\|/g, '\\|')])));
    }
    if (EXPLAIN_MS !== null) {
      // The ephemeral cluster's directory goes with it: its log is copied into the work directory.
      copyFileSync(pgLog, path.join(dir, 'postgres.log'));
      log(`auto_explain plans: ${path.join(dir, 'postgres.log')}${process.env.BENCH_KEEP ? '' : ' (removed at the end; set BENCH_KEEP=1)'}`);
    }
    log(`total ${seconds(performance.now() - t0)}`);
  } finally {
    agent.destroy();
    for (const server of running.reverse()) await server.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
