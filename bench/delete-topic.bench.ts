// Deleting a 100,000-message topic through the API: POST /streams/{stream_id}/delete_topic, repeated
// while it answers complete: false, as a client does. Not a test: it prints figures. From the
// repository root:
//
//   npx tsx bench/delete-topic.bench.ts
//
// Environment:
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (bench/lib/processes.ts; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`), with NODE_ENV=production,
//                            PARLEY_RATE_LIMIT=0 and PARLEY_LOG_LEVEL=debug (for the per-batch lines, below)
//   BENCH_TOPIC_MESSAGES     messages of the deleted topic (100000)
//   BENCH_BUDGET_MS          the server's time budget per call, PARLEY_DELETE_TOPIC_BUDGET_MS (Zulip's 50000)
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir>
//   BENCH_KEEP=1             keep the work directory (Parley's log)
//
// Set-up: bench/lib/messages-seed.ts's database (5,001 users; the public channel "crowd" with 1,000
// subscribers), then with SQL, in "crowd": BENCH_TOPIC_MESSAGES messages in the topic "Doomed topic"
// (one in ten spelled "doomed TOPIC": the topic is matched whatever its case) from 50 senders, and
// 10,000 in another topic that must survive. Each message has rows for its sender (read) and the
// member (unread for 1 in 10, with a push showing for 1 in 100); the newest 10,000 list 100 crowd
// members as deferred recipients (not caught up: the deletion fences their rows). 200 reminders of the
// member point at messages of the topic, and 500 crowd members follow it (cleared at the end).
//
// Measured: the calls (complete: false, then again) and the wall time until complete: true, as the
// owner (an administrator). The longest transaction two ways:
//   - per batch, from the server's own debug line `delete_topic batch` (time around the batch's
//     transaction in the server: BEGIN to COMMIT as the server sees them, including its round trips),
//     and `delete_topic policies cleared` for the last transaction;
//   - from the database: pg_stat_activity sampled every 20 ms (every client backend but the sampler's),
//     a transaction's age being the last sample's clock_timestamp() − xact_start (up to 20 ms short).
// The first is exact per batch but is the server's own account; the second is independent of the
// server's code but coarse. Both must stay under the goal (every transaction ≤ 1 s).
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createMessagesDatabase, pg, type MessagesFixture, type PgPool, type Person } from './lib/messages-seed.ts';
import { PARLEY_SERVER_CMD, type ServerProcess, sleep, startBenchParley, stopBenchDatabase, waitIdle } from './lib/processes.ts';
import { SAMPLE_EVERY_MS, sampleTransactions } from './lib/transactions.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOPIC_MESSAGES = Number(process.env.BENCH_TOPIC_MESSAGES ?? 100_000);
const BUDGET_MS = Number(process.env.BENCH_BUDGET_MS ?? 50_000);
const OTHER_MESSAGES = 10_000;
const DEFERRED_NEWEST = 10_000;
const DEFERRED_USERS = 100;
const REMINDERS = 200;
const FOLLOWERS = 500;
const TOPIC = 'Doomed topic';
const GOAL_LONGEST_MS = 1000;

const basic = (p: Person) => `Basic ${Buffer.from(`${p.email}:${p.apiKey}`).toString('base64')}`;
const log = (line: string) => console.log(`[bench] ${line}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function post(agent: http.Agent, url: string, who: Person, fields: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const body = new URLSearchParams(fields).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent, headers: { authorization: basic(who), 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The topic (and the other one) written with SQL, as the header says. */
async function seedTopic(sql: PgPool, fixture: MessagesFixture): Promise<void> {
  const senders = fixture.crowd.slice(1, 51).map((p) => p.id);
  const member = fixture.member.id;
  const deferred = fixture.crowd.slice(100, 100 + DEFERRED_USERS).map((p) => p.id).sort((a, b) => a - b);
  const insert = (topic: string, count: number, deferredFrom: number) =>
    sql.query(
      `WITH m AS (
         INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client, deferred_recipient_ids)
         SELECT $1, ($2::int[])[1 + i % 50], $3,
                CASE WHEN i % 10 = 0 THEN lower($4) ELSE $4 END, '{}'::int[],
                'Message ' || i || ' of a topic that will not last: the quick brown fox jumps over the lazy dog.',
                '<p>Message ' || i || ' of a topic that will not last: the quick brown fox jumps over the lazy dog.</p>',
                now() - make_interval(secs => ($5 - i)), 'website',
                CASE WHEN i > $6 THEN $7::int[] ELSE '{}'::int[] END
         FROM generate_series(1, $5::int) AS i ORDER BY i
         RETURNING id, sender_id
       ), senders AS (
         INSERT INTO user_message (user_id, message_id, flags) SELECT sender_id, id, 1 FROM m WHERE sender_id <> $8
       )
       INSERT INTO user_message (user_id, message_id, flags)
       SELECT $8, id, (CASE WHEN id % 10 = 0 THEN 0 ELSE 1 END) | (CASE WHEN id % 100 = 0 THEN 4096 ELSE 0 END) FROM m`,
      [fixture.realmId, senders, fixture.crowdChannelId, topic, count, deferredFrom, deferred, member],
    );
  await insert('Another topic', OTHER_MESSAGES, OTHER_MESSAGES);
  await insert(TOPIC, TOPIC_MESSAGES, TOPIC_MESSAGES - DEFERRED_NEWEST);
  // Reminders of the member about messages of the topic (not due for an hour; no delivery job).
  await sql.query(
    `INSERT INTO scheduled_message (realm_id, sender_id, type, direct_user_ids, topic, content, rendered_content, scheduled_at, delivery_type, reminder_target_message_id)
     SELECT $1, $2, 'private', ARRAY[$2::int], '', 'reminder', '<p>reminder</p>', now() + interval '1 hour', 2, id
     FROM (SELECT id FROM message WHERE channel_id = $3 AND lower(topic) = lower($4) ORDER BY random() LIMIT $5) t`,
    [fixture.realmId, fixture.member.id, fixture.crowdChannelId, TOPIC, REMINDERS],
  );
  await sql.query(
    `INSERT INTO user_topic (user_id, channel_id, topic_name, topic_key, visibility_policy, last_updated)
     SELECT unnest($1::int[]), $2, $3, lower($3), 3, now()`,
    [fixture.crowd.slice(0, FOLLOWERS).map((p) => p.id), fixture.crowdChannelId, TOPIC],
  );
  await sql.query('VACUUM ANALYZE');
}


/** The server's `delete_topic …` debug lines of its log (see the header). */
function serverLines(logFile: string): { batches: Array<{ deleted: number; ms: number }>; cleared: Array<{ cleared: number; ms: number }> } {
  const batches: Array<{ deleted: number; ms: number }> = [];
  const cleared: Array<{ cleared: number; ms: number }> = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('delete_topic')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; deleted?: number; cleared?: number; ms?: number };
      if (entry.msg === 'delete_topic batch') batches.push({ deleted: entry.deleted!, ms: entry.ms! });
      if (entry.msg === 'delete_topic policies cleared') cleared.push({ cleared: entry.cleared!, ms: entry.ms! });
    } catch {
      // not a JSON line
    }
  }
  return { batches, cleared };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'dtbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  log(`seeded ${fixture.users.toLocaleString('en')} users in ${seconds(performance.now() - t0)} (PostgreSQL data in ${pgDataDir})`);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 2 });
  const running: ServerProcess[] = [];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  try {
    const t1 = performance.now();
    await seedTopic(sql, fixture);
    const count = async (where: string) => Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM message WHERE channel_id = $1 AND ${where}`, [fixture.crowdChannelId])).rows[0]!.n);
    log(`wrote ${(await count(`lower(topic) = lower('${TOPIC}')`)).toLocaleString('en')} messages of the topic and ${(await count(`lower(topic) = 'another topic'`)).toLocaleString('en')} of another in ${seconds(performance.now() - t1)}`);

    const logFile = path.join(dir, 'parley.log');
    const parley = await startBenchParley({
      label: 'Parley',
      root: ROOT,
      databaseUrl: fixture.databaseUrl,
      secretKey: fixture.secretKey,
      realmUrl: fixture.realmUrl,
      dataDir: path.join(dir, 'parley'),
      logFile,
      profile: true,
      env: { PARLEY_LOG_LEVEL: 'debug', PARLEY_DELETE_TOPIC_BUDGET_MS: String(BUDGET_MS) },
    });
    running.push(parley);
    log(`Parley answers (pid ${parley.pid}, port ${parley.port}, log ${logFile})`);
    await waitIdle(parley.pid);
    const url = `${parley.url}/api/v1/streams/${fixture.crowdChannelId}/delete_topic`;

    const sampler = sampleTransactions(fixture.databaseUrl);
    await sleep(3 * SAMPLE_EVERY_MS);
    const start = performance.now();
    const calls: number[] = [];
    for (;;) {
      const callStart = performance.now();
      const answer = await post(agent, url, fixture.owner, { topic_name: TOPIC.toUpperCase() });
      calls.push(performance.now() - callStart);
      if (answer.status !== 200) throw new Error(`delete_topic: ${answer.status} ${JSON.stringify(answer.body)}`);
      log(`call ${calls.length}: complete ${String(answer.body['complete'])} after ${fmt(calls.at(-1)!)} ms`);
      if (answer.body['complete'] === true) break;
    }
    const totalMs = performance.now() - start;
    const seen = await sampler.stop();
    await sleep(500); // the log lines of the last call
    const server = serverLines(logFile);
    const left = await count(`lower(topic) = lower('${TOPIC}')`);
    const kept = await count(`lower(topic) = 'another topic'`);
    const reminders = Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM scheduled_message WHERE delivery_type = 2`)).rows[0]!.n);
    const policies = Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM user_topic WHERE channel_id = $1`, [fixture.crowdChannelId])).rows[0]!.n);
    const events = (await sql.query<{ type: string; n: string }>(`SELECT type, count(*) AS n FROM event GROUP BY type ORDER BY type`)).rows;
    const orphans = Number((await sql.query<{ n: string }>(`SELECT count(*) AS n FROM user_message um WHERE NOT EXISTS (SELECT 1 FROM message m WHERE m.id = um.message_id)`)).rows[0]!.n);
    log(`left in the topic: ${left}; the other topic: ${kept.toLocaleString('en')}; reminders left: ${reminders}; policies left in the channel: ${policies}; user_message rows without a message: ${orphans}`);
    log(`events stored: ${events.map((e) => `${e.type} ${e.n}`).join(', ')}`);

    const batchMs = server.batches.map((b) => b.ms);
    const longestBatch = Math.max(...batchMs);
    const clearedMs = server.cleared.map((c) => c.ms);
    const longestServer = Math.max(longestBatch, ...clearedMs);
    const rows = [
      [`POST /streams/{id}/delete_topic, ${TOPIC_MESSAGES.toLocaleString('en')} messages: calls until complete`, String(calls.length), '', ''],
      ['total wall time, s', fmt(totalMs / 1000), '', ''],
      [`batches (transactions of ${server.batches[0]?.deleted ?? '—'} messages), per the server's log`, String(server.batches.length), '', ''],
      ['batch transaction, p50 / p99 / max ms (server log)', `${fmt(median(batchMs))} / ${fmt(percentile(batchMs, 99))} / ${fmt(longestBatch)}`, `≤ ${GOAL_LONGEST_MS} ms`, longestBatch <= GOAL_LONGEST_MS ? '✓' : '✗'],
      [`last transaction (${server.cleared[0]?.cleared ?? 0} followers' policies cleared), ms (server log)`, fmt(Math.max(0, ...clearedMs)), `≤ ${GOAL_LONGEST_MS} ms`, Math.max(0, ...clearedMs) <= GOAL_LONGEST_MS ? '✓' : '✗'],
      [`longest transaction seen by pg_stat_activity, ms (${seen.transactions} transactions in ${seen.samples} samples)`, fmt(seen.longestMs), `≤ ${GOAL_LONGEST_MS} ms`, seen.longestMs <= GOAL_LONGEST_MS ? '✓' : '✗'],
    ];
    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\`; ${fixture.users.toLocaleString('en')} users; channel of ${fixture.crowd.length.toLocaleString('en')} subscribers`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)}; longest transaction overall (server log) ${fmt(longestServer)} ms\n`);
    console.log(markdownTable(['measurement', 'Parley', 'goal', 'pass'], rows));
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
