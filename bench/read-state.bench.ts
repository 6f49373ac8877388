// Read state at 100,000 unread messages: POST /mark_all_as_read against one bulk SQL UPDATE of the same
// rows, the longest transaction mark_all_as_read holds, and POST /register's unread_msgs. Not a test:
// it prints figures. From the repository root:
//
//   npx tsx bench/read-state.bench.ts
//
// Environment:
//   PARLEY_BENCH_PARLEY_SERVER_CMD  how to start Parley (run by the shell in the repository root; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`), with NODE_ENV=production and
//                            PARLEY_RATE_LIMIT=0, as in bench/messages.bench.ts
//   BENCH_UNREAD             unread messages of the reader (100000)
//   BENCH_RUNS               alternating runs of mark_all_as_read and the bulk UPDATE (5)
//   BENCH_REGISTER_RUNS      measured POST /register requests, after 3 (15)
//   BENCH_DIRECT_UNREAD      unread direct messages of the second reader (60000; 0 skips that row)
//   BENCH_DIRECT_RUNS        measured POST /register requests of the second reader, after 1 (5)
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> (summarise with
//                            `npx tsx bench/lib/profile-summary.ts <dir>/*.cpuprofile`)
//   BENCH_KEEP=1             keep the work directory (Parley's log)
//
// Set-up: bench/lib/messages-seed.ts's database (5,001 users; the member subscribed to 5 "history"
// channels), then BENCH_UNREAD messages written with SQL, all unread for the member: 19 in 20 in the
// history channels (20 topics each), 1 in 20 direct messages to the member from 50 senders (50
// conversations); about 1 in 100 mentions the member. VACUUM ANALYZE afterwards.
//
// Rows:
//   mark_all  POST /mark_all_as_read as the member, repeated while it answers complete: false (total wall
//             time), against `UPDATE user_message SET flags = flags | 1` on the same rows in one
//             statement from this process; before each run the rows are made unread again and the table
//             vacuumed, so that both start from the same state. Medians of BENCH_RUNS alternating runs.
//   longest   the longest transaction of Parley's connections while mark_all_as_read runs: pg_stat_activity
//             (xact_start of every client backend but this one's) sampled every 20 ms; a transaction's
//             age is the last sample's clock_timestamp() − xact_start (so it may be up to 20 ms short).
//             The same sampling also runs during the reference UPDATE, so that both pay for it.
//   register  POST /register, event_types ["message", "update_message_flags"] (unread_msgs and
//             max_message_id), as the member with BENCH_UNREAD unread messages; p50 of the runs. Then
//             the same as a crowd member with BENCH_DIRECT_UNREAD (60000) unread messages all in one
//             direct-message conversation (from the member), BENCH_DIRECT_RUNS (5) runs after 1.
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMessagesDatabase, pg, type MessagesFixture, type PgPool, type PgQueryable, type Person } from './lib/messages-seed.ts';
import { PARLEY_SERVER_CMD, type ServerProcess, sleep, startBenchParley, stopBenchDatabase, waitIdle } from './lib/processes.ts';
import { SAMPLE_EVERY_MS, sampleTransactions } from './lib/transactions.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const UNREAD = Number(process.env.BENCH_UNREAD ?? 100_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const REGISTER_RUNS = Number(process.env.BENCH_REGISTER_RUNS ?? 15);
const REGISTER_WARMUP = 3;
const DIRECT_UNREAD = Number(process.env.BENCH_DIRECT_UNREAD ?? 60_000);
const DIRECT_RUNS = Number(process.env.BENCH_DIRECT_RUNS ?? 5);

const GOAL_RATIO = 1.5;
const GOAL_LONGEST_MS = 1000;
const GOAL_REGISTER_MS = 150;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const FORM = 'application/x-www-form-urlencoded';
const log = (line: string) => console.log(`[bench] ${line}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function request(agent: http.Agent, url: string, options: { method?: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers: { ...options.headers, ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}) }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

async function post(agent: http.Agent, url: string, who: Person, fields: Record<string, string>): Promise<Record<string, unknown>> {
  const answer = await request(agent, url, { method: 'POST', headers: { authorization: basic(who), 'content-type': FORM }, body: new URLSearchParams(fields).toString() });
  if (answer.status !== 200) throw new Error(`POST ${url}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return JSON.parse(answer.body) as Record<string, unknown>;
}

/**
 * Writes `count` messages unread for the member (see the header), in one statement each for the
 * messages and the rows; returns the first id written.
 */
async function addUnread(sql: PgPool, fixture: MessagesFixture, count: number): Promise<number> {
  const senders = fixture.crowd.slice(1, 51).map((p) => p.id);
  const member = fixture.member.id;
  const { rows } = await sql.query<{ first: number }>(
    `WITH m AS (
       INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client)
       SELECT $1, s.sender,
              CASE WHEN i % 20 = 0 THEN NULL ELSE ($3::int[])[1 + i % 5] END,
              CASE WHEN i % 20 = 0 THEN '' ELSE 'unread topic ' || lpad(((i / 5) % 20 + 1)::text, 2, '0') END,
              CASE WHEN i % 20 = 0 THEN ARRAY[LEAST(s.sender, $4), GREATEST(s.sender, $4)] ELSE '{}'::int[] END,
              t.c, '<p>' || t.c || '</p>', now() - make_interval(secs => ($5 - i)), 'website'
       FROM generate_series(1, $5::int) AS i,
            LATERAL (SELECT ($2::int[])[1 + (CASE WHEN i % 20 = 0 THEN i / 20 ELSE i END) % 50] AS sender) s,
            LATERAL (SELECT 'Unread message ' || i || ': the quick brown fox jumps over the lazy dog while the bench counts every row.' AS c) t
       ORDER BY i
       RETURNING id, channel_id
     ), rows AS (
       INSERT INTO user_message (user_id, message_id, flags)
       SELECT $4, id, (CASE WHEN channel_id IS NULL THEN 2048 ELSE 0 END) | (CASE WHEN id % 100 = 0 THEN 8 ELSE 0 END) FROM m
       RETURNING message_id
     )
     SELECT min(message_id) AS first FROM rows`,
    [fixture.realmId, senders, fixture.historyChannelIds, member, count],
  );
  await sql.query('VACUUM ANALYZE message');
  await sql.query('VACUUM ANALYZE user_message');
  return rows[0]!.first;
}

/** Writes `count` direct messages from `sender` to `reader`, unread for the reader (the sender's rows are left out). */
async function addDirectUnread(sql: PgPool, fixture: MessagesFixture, reader: Person, sender: Person, count: number): Promise<void> {
  const pair = [reader.id, sender.id].sort((x, y) => x - y);
  await sql.query(
    `WITH m AS (
       INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client)
       SELECT $1, $2, NULL, '', $3::int[], 'Direct ' || i, '<p>Direct ' || i || '</p>', now() - make_interval(secs => ($5 - i)), 'website'
       FROM generate_series(1, $5::int) AS i ORDER BY i
       RETURNING id
     )
     INSERT INTO user_message (user_id, message_id, flags) SELECT $4, id, 2048 FROM m`,
    [fixture.realmId, sender.id, pair, reader.id, count],
  );
  await sql.query('VACUUM ANALYZE message');
  await sql.query('VACUUM ANALYZE user_message');
}

/** The member's seeded messages unread again, and the table vacuumed: every run starts from this state. */
async function makeUnreadAgain(sql: PgPool, memberId: number, firstId: number): Promise<void> {
  await sql.query('UPDATE user_message SET flags = flags & ~1::bigint WHERE user_id = $1 AND message_id >= $2 AND (flags & 1) <> 0', [memberId, firstId]);
  await sql.query('VACUUM ANALYZE user_message');
}

async function unreadCount(sql: PgQueryable, memberId: number): Promise<number> {
  return Number((await sql.query<{ n: string }>('SELECT count(*) AS n FROM user_message WHERE user_id = $1 AND (flags & 1) = 0', [memberId])).rows[0]!.n);
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rsbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  log(`seeded ${fixture.users.toLocaleString('en')} users in ${seconds(performance.now() - t0)} (PostgreSQL data in ${pgDataDir})`);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 2 });
  const member = fixture.member;
  const running: ServerProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const rows: string[][] = [];
  const details: string[] = [];
  try {
    const t1 = performance.now();
    const firstId = await addUnread(sql, fixture, UNREAD);
    log(`wrote ${UNREAD.toLocaleString('en')} unread messages for the member in ${seconds(performance.now() - t1)}; unread now ${(await unreadCount(sql, member.id)).toLocaleString('en')}`);

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
    log(`Parley answers (pid ${parley.pid}, port ${parley.port}, log ${parley.logFile})`);
    const api = `${parley.url}/api/v1`;

    // --- register -------------------------------------------------------------------------------------
    const registerFields = { event_types: JSON.stringify(['message', 'update_message_flags']) };
    const probe = await post(agent, `${api}/register`, member, registerFields);
    const unreadMsgs = probe['unread_msgs'] as { count: number; streams: unknown[]; pms: unknown[]; huddles: unknown[]; mentions: unknown[]; old_unreads_missing: boolean };
    log(
      `register: unread_msgs.count ${unreadMsgs.count}, ${unreadMsgs.streams.length} topics, ${unreadMsgs.pms.length} direct conversations, ` +
        `${unreadMsgs.mentions.length} mentions, old_unreads_missing ${unreadMsgs.old_unreads_missing}; ${(JSON.stringify(probe).length / 1024).toFixed(0)} KiB`,
    );
    /** Latencies of `runs` registrations (each queue deleted afterwards) after `warmup`. */
    const registrations = async (who: Person, warmup: number, runs: number) => {
      const latencies: number[] = [];
      for (let n = 0; n < warmup + runs; n++) {
        const start = performance.now();
        const queue = await post(agent, `${api}/register`, who, registerFields);
        if (n >= warmup) latencies.push(performance.now() - start);
        await request(agent, `${api}/events?${new URLSearchParams({ queue_id: String(queue['queue_id']) })}`, { method: 'DELETE', headers: { authorization: basic(who) } });
      }
      log(`register as ${who.email}: p50 ${fmt(percentile(latencies, 50))} ms, p90 ${fmt(percentile(latencies, 90))} ms, min ${fmt(Math.min(...latencies))} ms, max ${fmt(Math.max(...latencies))} ms (${runs} requests after ${warmup})`);
      return percentile(latencies, 50);
    };
    const registerP50 = await registrations(member, REGISTER_WARMUP, REGISTER_RUNS);
    rows.push([`POST /register (unread_msgs) at ${UNREAD.toLocaleString('en')} unread, p50 ms`, fmt(registerP50), '', '', `≤ ${GOAL_REGISTER_MS} ms`, registerP50 <= GOAL_REGISTER_MS ? '✓' : '✗']);
    if (DIRECT_UNREAD > 0) {
      const reader = fixture.crowd[1]!;
      const t2 = performance.now();
      await addDirectUnread(sql, fixture, reader, member, DIRECT_UNREAD);
      log(`wrote ${DIRECT_UNREAD.toLocaleString('en')} unread direct messages from the member to ${reader.email} in ${seconds(performance.now() - t2)}`);
      const directP50 = await registrations(reader, 1, DIRECT_RUNS);
      rows.push([`POST /register (unread_msgs) at ${DIRECT_UNREAD.toLocaleString('en')} unread in one direct conversation, p50 ms`, fmt(directP50), '', '', `≤ ${GOAL_REGISTER_MS} ms`, directP50 <= GOAL_REGISTER_MS ? '✓' : '✗']);
    }

    // --- mark_all_as_read against one UPDATE ------------------------------------------------------------
    const markAll: { ms: number; calls: number; longestMs: number; transactions: number }[] = [];
    const bulk: number[] = [];
    for (let run = 1; run <= RUNS; run++) {
      await makeUnreadAgain(sql, member.id, firstId);
      await waitIdle(parley.pid);
      const before = await unreadCount(sql, member.id);
      const sampler = sampleTransactions(fixture.databaseUrl);
      await sleep(3 * SAMPLE_EVERY_MS);
      const start = performance.now();
      let calls = 0;
      for (;;) {
        calls++;
        const answer = await post(agent, `${api}/mark_all_as_read`, member, {});
        if (answer['complete'] === true) break;
      }
      const ms = performance.now() - start;
      const seen = await sampler.stop();
      const left = await unreadCount(sql, member.id);
      markAll.push({ ms, calls, longestMs: seen.longestMs, transactions: seen.transactions });
      log(`run ${run}: mark_all_as_read ${before.toLocaleString('en')} → ${left} unread in ${fmt(ms)} ms (${calls} call${calls > 1 ? 's' : ''}); longest transaction ${fmt(seen.longestMs)} ms of ${seen.transactions} seen in ${seen.samples} samples`);

      await makeUnreadAgain(sql, member.id, firstId);
      // The same sampling runs (and costs the same CPU) while the reference runs.
      const bulkSampler = sampleTransactions(fixture.databaseUrl);
      await sleep(3 * SAMPLE_EVERY_MS);
      const client = await sql.connect();
      try {
        const bulkStart = performance.now();
        const updated = await client.query('UPDATE user_message SET flags = flags | 1 WHERE user_id = $1 AND (flags & 1) = 0', [member.id]);
        const bulkMs = performance.now() - bulkStart;
        bulk.push(bulkMs);
        log(`run ${run}: bulk UPDATE of ${updated.rowCount?.toLocaleString('en')} rows in ${fmt(bulkMs)} ms`);
      } finally {
        client.release();
        await bulkSampler.stop();
      }
    }
    const markAllMs = median(markAll.map((r) => r.ms));
    const bulkMs = median(bulk);
    const ratio = markAllMs / bulkMs;
    const longest = Math.max(...markAll.map((r) => r.longestMs));
    rows.push([`POST /mark_all_as_read, ${UNREAD.toLocaleString('en')} unread, total ms (median of ${RUNS})`, fmt(markAllMs), fmt(bulkMs), `${fmt(ratio, 2)}×`, `≤ ${GOAL_RATIO}×`, ratio <= GOAL_RATIO ? '✓' : '✗']);
    rows.push(['longest transaction during mark_all_as_read, ms (all runs)', fmt(longest), '', '', `≤ ${GOAL_LONGEST_MS} ms`, longest <= GOAL_LONGEST_MS ? '✓' : '✗']);
    details.push(
      `mark_all_as_read runs (reference: one \`UPDATE user_message SET flags = flags | 1\` of the same rows from this process), ms:\n\n` +
        markdownTable(
          ['run', 'mark_all_as_read', 'calls', 'longest transaction', 'transactions seen', 'bulk UPDATE', 'ratio'],
          markAll.map((r, i) => [String(i + 1), fmt(r.ms), String(r.calls), fmt(r.longestMs), String(r.transactions), fmt(bulk[i]!), `${fmt(r.ms / bulk[i]!, 2)}×`]),
        ),
    );

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; ${fixture.users.toLocaleString('en')} users`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(markdownTable(['measurement', 'Parley', 'reference', 'ratio', 'goal', 'pass'], rows));
    for (const d of details) console.log(`\n${d}`);
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
