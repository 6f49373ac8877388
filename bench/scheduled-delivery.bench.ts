// Scheduled delivery under a burst: 10,000 scheduled messages due in the same second, delivered by two
// Parley server processes working the same job queue. Not a test: it prints figures. From the
// repository root:
//
//   npx tsx bench/scheduled-delivery.bench.ts
//
// Environment:
//   PARLEY_BENCH_PARLEY_SERVER_CMD  how to start Parley (run by the shell in the repository root; default
//                            `node --expose-gc --import tsx apps/server/src/main.ts`); it gets DATABASE_URL,
//                            PARLEY_SECRET_KEY, PARLEY_DATA_DIR, PARLEY_URL, HOST, PORT,
//                            NODE_ENV=production and PARLEY_RATE_LIMIT=0, as in messages.bench.ts
//   BENCH_SCHEDULED          scheduled messages (10000)
//   BENCH_PROCESSES          server processes (2)
//   BENCH_LEAD_SECONDS       how far ahead of the end of setting up the due second lies (10)
//   BENCH_DEADLINE_SECONDS   how long after the due second to wait for the last delivery (180)
//   BENCH_PG_ACTIVITY=1      sample pg_stat_activity every 50 ms while delivering and print what the
//                            sessions were doing (state, wait event, statement), most frequent first
//   BENCH_CPU_PROF=<dir>     run Parley with --cpu-prof into <dir> (summarise with
//                            `npx tsx bench/lib/profile-summary.ts <dir>/*.cpuprofile`)
//   BENCH_KEEP=1             keep the work directory (the servers' logs)
//
// Set-up: the organization of bench/lib/messages-seed.ts (5,001 users; the member sends, to the
// channel `ten` of 10 subscribers) with 10,000 history messages (so that the planner has statistics
// of a non-empty message table). With the servers running, one message is scheduled through the
// server's own action (doCreateScheduledMessage: checked, stored, its job enqueued in the same
// transaction); the other 9,999 are copies of its row made with SQL (content "… message <i> …"),
// their jobs enqueued through the server's job queue (JobQueue.sendMany) in the same transaction —
// setup speed only: delivery runs entirely in the server processes, through pg-boss, as always.
//
// Figures (from the database once every message is delivered or failed, or the deadline passed):
//   - time from the due second until every message is delivered (committed, as the polling saw it),
//     and the date_sent of the first and the last message
//   - delivered: scheduled messages marked delivered, and messages in the topic
//   - duplicates: messages beyond one per scheduled message (same content sent twice)
//   - failures: scheduled messages marked failed, plus those neither delivered nor failed (lost)
//   - job retries (pg-boss retry_count > 0) and jobs in state failed
//   - CPU time per delivery of the server processes and of PostgreSQL
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addHistory, createMessagesDatabase, pg, type PgPool } from './lib/messages-seed.ts';
import { findPostmaster, PARLEY_SERVER_CMD, type ServerProcess, sleep, startBenchParley, stopBenchDatabase, treeCpuMs } from './lib/processes.ts';
import { clusterCpuMs } from './lib/cpu.ts';
import { fmt, markdownTable } from './lib/stats.ts';
import { loadConfig } from '../apps/server/src/config.ts';
import { createDeps } from '../apps/server/src/server.ts';
import { inTransaction } from '../apps/server/src/data/transactions.ts';
import { findRealmById } from '../apps/server/src/data/realms.repo.ts';
import { findUserById } from '../apps/server/src/data/users.repo.ts';
import { doCreateScheduledMessage } from '../apps/server/src/actions/scheduled-messages.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COUNT = Number(process.env.BENCH_SCHEDULED ?? 10_000);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 2);
const LEAD_SECONDS = Number(process.env.BENCH_LEAD_SECONDS ?? 10);
const DEADLINE_SECONDS = Number(process.env.BENCH_DEADLINE_SECONDS ?? 180);
const GOAL_SECONDS = 30;
const TOPIC = 'scheduled bench';
const contentOf = (i: number) => `Scheduled bench message ${i}: the quick brown fox jumps over the lazy dog at the due second.`;
const log = (line: string) => console.log(`[bench] ${line}`);

interface Progress {
  delivered: number;
  failed: number;
}

async function progress(sql: PgPool, senderId: number): Promise<Progress> {
  const { rows } = await sql.query<{ delivered: string; failed: string }>(
    `SELECT count(*) FILTER (WHERE delivered) AS delivered, count(*) FILTER (WHERE failed) AS failed
     FROM scheduled_message WHERE sender_id = $1 AND topic = $2`,
    [senderId, TOPIC],
  );
  return { delivered: Number(rows[0]!.delivered), failed: Number(rows[0]!.failed) };
}

/** Samples what the other sessions of the database do, every 50 ms, until stop(). */
function sampleActivity(databaseUrl: string): { stop(): Promise<Map<string, number>> } {
  const counts = new Map<string, number>();
  const client = new pg.Client({ connectionString: databaseUrl });
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ k: string }>(
        `SELECT coalesce(state, '?') || ' / ' || coalesce(wait_event_type || ':' || wait_event, '-') || ' / ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 90) AS k
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`,
      );
      for (const { k } of rows) counts.set(k, (counts.get(k) ?? 0) + 1);
      await sleep(50);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return counts;
    },
  };
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sbench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; Parley command: ${PARLEY_SERVER_CMD}; ${PROCESSES} processes; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture, pgDataDir } = await createMessagesDatabase(dir, log);
  const postmaster = findPostmaster(pgDataDir);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  await addHistory(sql, fixture, 10_000, fixture.member.id);
  log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const running: ServerProcess[] = [];
  let deps: Awaited<ReturnType<typeof createDeps>> | undefined;
  try {
    // --- the server processes ---------------------------------------------------------------------------
    await Promise.all(
      Array.from({ length: PROCESSES }, async (_, i) => {
        const server = await startBenchParley({
          label: `Parley ${i + 1}`,
          root: ROOT,
          databaseUrl: fixture.databaseUrl,
          secretKey: fixture.secretKey,
          realmUrl: fixture.realmUrl,
          dataDir: path.join(dir, `parley-${i + 1}`),
          logFile: path.join(dir, `parley-${i + 1}.log`),
          profile: true,
          env: { PARLEY_LOG_LEVEL: process.env.PARLEY_LOG_LEVEL ?? 'warn' },
        });
        running.push(server);
        log(`Parley ${i + 1} answers (pid ${server.pid}, port ${server.port}, log ${server.logFile})`);
      }),
    );

    // --- the scheduled messages ---------------------------------------------------------------------------
    const config = { ...loadConfig({}), secretKey: fixture.secretKey, dataDir: dir, publicUrl: fixture.realmUrl, validateResponses: false, rateLimit: null, logLevel: 'warn' };
    deps = await createDeps(config, fixture.databaseUrl, { poolSize: 2 });
    const realm = (await findRealmById(deps.db, fixture.realmId))!;
    const sender = (await findUserById(deps.db, fixture.realmId, fixture.member.id))!;
    const due = Math.ceil(Date.now() / 1000) + LEAD_SECONDS;
    const dueAt = new Date(due * 1000);
    const tSetup = performance.now();
    const firstId = await doCreateScheduledMessage(deps, realm, sender, {
      type: 'stream',
      to: fixture.tenChannelId,
      topic: TOPIC,
      content: contentOf(0),
      scheduledDeliveryTimestamp: due,
      readBySender: undefined,
      client: 'bench',
    });
    await inTransaction(deps.db, async (tx) => {
      const copies = await tx.$queryRawUnsafe<{ id: number }[]>(
        `INSERT INTO scheduled_message (realm_id, sender_id, type, channel_id, direct_user_ids, topic, content, rendered_content, scheduled_at, read_by_sender)
         SELECT t.realm_id, t.sender_id, t.type, t.channel_id, t.direct_user_ids, t.topic,
                replace(t.content, 'message 0:', 'message ' || i || ':'), replace(t.rendered_content, 'message 0:', 'message ' || i || ':'),
                t.scheduled_at, t.read_by_sender
         FROM scheduled_message t, generate_series(1, $2::int) AS i WHERE t.id = $1 ORDER BY i
         RETURNING id`,
        firstId,
        COUNT - 1,
      );
      await deps!.jobs.sendMany(tx, 'deliver-scheduled-message', copies.map((c) => ({ data: { id: c.id, at: dueAt.toISOString() }, startAfter: dueAt })));
    });
    const setupDoneAt = Date.now();
    log(`scheduled ${COUNT.toLocaleString('en')} messages due at ${dueAt.toISOString()} in ${((performance.now() - tSetup) / 1000).toFixed(1)} s`);
    if (setupDoneAt > dueAt.getTime() - 500) log(`WARNING: setting up ended ${setupDoneAt - dueAt.getTime()} ms after the due second (raise BENCH_LEAD_SECONDS): the figures below are not valid`);

    // --- delivery -------------------------------------------------------------------------------------------
    await sleep(Math.max(0, dueAt.getTime() - Date.now() - 200));
    const cpu0 = running.reduce((s, r) => s + treeCpuMs(r.pid), 0);
    const pg0 = postmaster ? clusterCpuMs(postmaster) : Number.NaN;
    const deadline = dueAt.getTime() + DEADLINE_SECONDS * 1000;
    const activity = process.env.BENCH_PG_ACTIVITY ? sampleActivity(fixture.databaseUrl) : null;
    let last: Progress = { delivered: 0, failed: 0 };
    let lastLog = 0;
    let doneAt = Number.NaN;
    while (Date.now() < deadline) {
      last = await progress(sql, fixture.member.id);
      if (last.delivered + last.failed >= COUNT) {
        doneAt = Date.now();
        break;
      }
      if (Date.now() - lastLog >= 5_000) {
        lastLog = Date.now();
        log(`  +${((Date.now() - dueAt.getTime()) / 1000).toFixed(1)} s: ${last.delivered} delivered, ${last.failed} failed`);
      }
      await sleep(200);
    }
    const sampled = await activity?.stop();
    const serverCpuMs = running.reduce((s, r) => s + treeCpuMs(r.pid), 0) - cpu0;
    const pgCpuMs = (postmaster ? clusterCpuMs(postmaster) : Number.NaN) - pg0;
    // Late duplicates would come after the last delivery: give retried jobs a moment to show them.
    await sleep(2_000);
    last = await progress(sql, fixture.member.id);

    const times = (
      await sql.query<{ first: Date | null; last: Date | null; messages: string; distinct_contents: string }>(
        `SELECT min(date_sent) AS first, max(date_sent) AS last, count(*) AS messages, count(DISTINCT content) AS distinct_contents
         FROM message WHERE sender_id = $1 AND channel_id = $2 AND topic = $3`,
        [fixture.member.id, fixture.tenChannelId, TOPIC],
      )
    ).rows[0]!;
    const messages = Number(times.messages);
    const duplicates = messages - Number(times.distinct_contents);
    const jobs = (
      await sql.query<{ retried: string; failed: string; pending: string }>(
        `SELECT count(*) FILTER (WHERE retry_count > 0) AS retried, count(*) FILTER (WHERE state = 'failed') AS failed,
                count(*) FILTER (WHERE state < 'completed') AS pending
         FROM pgboss.job WHERE name = 'deliver-scheduled-message'`,
      )
    ).rows[0]!;
    const lost = COUNT - last.delivered - last.failed;
    // Seen committed by the polling (every 200 ms); a message's date_sent is the start of the
    // transaction that stored it, up to a batch's duration earlier than its commit.
    const toDone = (doneAt - dueAt.getTime()) / 1000;
    const toLast = times.last ? (times.last.getTime() - dueAt.getTime()) / 1000 : Number.NaN;
    const toFirst = times.first ? (times.first.getTime() - dueAt.getTime()) / 1000 : Number.NaN;
    const allIn = last.delivered === COUNT;

    console.log('');
    console.log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? ''}); Parley: \`${PARLEY_SERVER_CMD}\` × ${PROCESSES}; ${fixture.users.toLocaleString('en')} users, channel of 10 subscribers`);
    console.log(`load average (1 min) at the end: ${os.loadavg()[0]!.toFixed(1)} (other work on the machine slows every figure)\n`);
    console.log(
      markdownTable(
        ['measurement', 'Parley', 'goal', 'pass'],
        [
          [`time from the due second until all ${COUNT.toLocaleString('en')} are delivered (committed, polled every 0.2 s), s`, fmt(toDone), `≤ ${GOAL_SECONDS} s`, allIn && toDone <= GOAL_SECONDS ? '✓' : '✗'],
          ['date_sent of the first / the last message, s after the due second', `${fmt(toFirst)} / ${fmt(toLast)}`, '', ''],
          ['delivered (scheduled messages marked delivered / messages in the topic)', `${last.delivered} / ${messages}`, `${COUNT} / ${COUNT}`, allIn && messages === COUNT ? '✓' : '✗'],
          ['duplicates (messages beyond one per scheduled message)', String(duplicates), '0', duplicates === 0 ? '✓' : '✗'],
          ['failures (marked failed + neither delivered nor failed)', `${last.failed} + ${lost}`, '0', last.failed + lost === 0 ? '✓' : '✗'],
          ['delivery jobs retried / failed / still pending', `${jobs.retried} / ${jobs.failed} / ${jobs.pending}`, '', ''],
          ['deliveries per second (due second → all delivered)', fmt(last.delivered / (Number.isFinite(toDone) ? toDone : DEADLINE_SECONDS)), '', ''],
          ['CPU per delivery: servers / PostgreSQL, ms', `${fmt(serverCpuMs / Math.max(1, last.delivered))} / ${fmt(pgCpuMs / Math.max(1, last.delivered))}`, '', ''],
        ],
      ),
    );
    if (sampled) {
      const total = [...sampled.values()].reduce((a, b) => a + b, 0);
      console.log(`\nSessions of the servers by state, wait event and statement (${total} samples):\n`);
      console.log(markdownTable(['samples', 'state / wait / statement'], [...sampled].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, n]) => [String(n), k])));
    }
    log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  } finally {
    await deps?.db.$disconnect();
    for (const server of running.reverse()) await server.stop();
    await sql.end();
    await stopBenchDatabase(database, dir);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
