// Organization export (`pnpm manage export`, apps/server/src/export/realm-export.ts): streaming an
// organization with many users and messages into a .tar.gz. Not a test: it prints figures. From the
// repository root:
//
//   npx tsx bench/export.bench.ts
//
// Environment:
//   BENCH_MESSAGES  channel messages of the organization's history (1,000,000), written by SQL
//                   (bench/lib/messages-seed.ts addHistory: an INSERT … SELECT, as a COPY would)
//
// What runs: the messages bench's organization (5,001 users, channels of 10 and 1,000 subscribers,
// history channels; bench/lib/messages-seed.ts) with BENCH_MESSAGES messages of history, then:
//   1. the floor, in this process: the same messages read in id order a thousand at a time (the
//      export's cursor, the same columns), nothing else;
//   2. the public export (type 1) of the organization into a file, in a child process of its own
//      (what `manage export` or the server's export job holds, without the seeding's memory), its RSS
//      sampled every 50 ms and its peak (VmHWM) read at the end.
// Goal (issue 27): streamed — RSS ≤ 300 MB whatever the size of the organization.
import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../apps/server/src/config.ts';
import { createCommandDeps } from '../apps/server/src/import/command-deps.ts';
import { exportRealm } from '../apps/server/src/export/realm-export.ts';
import type { PgPool } from './lib/messages-seed.ts';
import { runMeasuredChild, sampleRss } from './lib/measured-child.ts';
import { stopBenchDatabase } from './lib/processes.ts';
import { fmt, markdownTable } from './lib/stats.ts';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1_000_000);
const GOAL_RSS_MB = 300;
const log = (line: string) => console.log(`[bench] ${line}`);
const rssMb = () => process.memoryUsage().rss / 1024 / 1024;

async function main() {
  // The seeding loads the whole server (createDeps): only here, not in the export's own process.
  const { addHistory, createMessagesDatabase, pg } = await import('./lib/messages-seed.ts');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-bench-'));
  log(`node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)}; work directory ${dir}`);
  const t0 = performance.now();
  const { database, fixture } = await createMessagesDatabase(dir, log);
  const sql: PgPool = new pg.Pool({ connectionString: fixture.databaseUrl, max: 3 });
  try {
    await addHistory(sql, fixture, MESSAGES, fixture.member.id, log);
    log(`seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const config = { ...loadConfig({}), secretKey: fixture.secretKey, dataDir: dir, publicUrl: fixture.realmUrl, validateResponses: false, rateLimit: null, storage: { kind: 'local' as const, dir: path.join(dir, 'uploads') } };

    // 1. The floor: the messages, a thousand at a time by id.
    const f0 = performance.now();
    let after = 0;
    let read = 0;
    for (;;) {
      const { rows } = await sql.query<{ id: number }>(
        `SELECT id, sender_id, channel_id, direct_user_ids, topic, content, rendered_content, date_sent, last_edit_time, sending_client, edit_history
           FROM message WHERE realm_id = $1 AND id > $2 ORDER BY id LIMIT 1000`,
        [fixture.realmId, after],
      );
      if (rows.length === 0) break;
      read += rows.length;
      after = rows[rows.length - 1]!.id;
    }
    const floorS = (performance.now() - f0) / 1000;
    log(`floor: ${read.toLocaleString('en')} messages read in ${fmt(floorS)} s`);

    // 2. The export, in its own process.
    const { exportS, baseline, peak, heapAfterGc, messages, bytes } = await runMeasuredChild<{ exportS: number; baseline: number; peak: number; heapAfterGc: number[]; messages: number; bytes: number }>(
      import.meta.url,
      { BENCH_EXPORT_CONFIG: JSON.stringify(config), BENCH_EXPORT_DATABASE: fixture.databaseUrl, BENCH_EXPORT_REALM: String(fixture.realmId), BENCH_EXPORT_FILE: path.join(dir, 'export.tar.gz') },
      'the export',
    );
    const result = { messages };

    console.log(
      markdownTable(
        ['', 'value', 'goal'],
        [
          ['users', String(fixture.users), ''],
          ['messages exported', result.messages.toLocaleString('en'), ''],
          ['export time', `${fmt(exportS)} s (${fmt(result.messages / exportS)} messages/s)`, ''],
          ['floor (the messages read by id, 1,000 at a time)', `${fmt(floorS)} s`, ''],
          ['export ÷ floor', `${fmt(exportS / floorS)}×`, ''],
          ['tarball', `${fmt(bytes / 1024 / 1024)} MB`, ''],
          ['RSS of the exporting process before the export (after start-up)', `${fmt(baseline)} MB`, ''],
          ['peak RSS of the exporting process', `${fmt(peak)} MB (growth ${fmt(peak - baseline)} MB)`, `≤ ${GOAL_RSS_MB} MB: ${peak <= GOAL_RSS_MB ? 'met' : 'NOT met'}`],
          ['heap after a full GC, every 50,000 messages', heapAfterGc.map((h) => `${fmt(h)} MB`).join(', ') || '(run with node --expose-gc)', 'flat'],
        ],
      ),
    );
  } finally {
    await sql.end();
    await stopBenchDatabase(database, dir);
    if (!process.env.BENCH_KEEP) rmSync(dir, { recursive: true, force: true });
  }
}

/** The export in a process of its own: prints its figures as one JSON line. */
async function exportChild(): Promise<void> {
  // As `manage export` runs (src/import/commands.ts): the command's dependencies, not the server's.
  const config = JSON.parse(process.env.BENCH_EXPORT_CONFIG!) as Config;
  const deps = await createCommandDeps(config, process.env.BENCH_EXPORT_DATABASE!);
  const rss = sampleRss();
  const heapAfterGc: number[] = [];
  const file = process.env.BENCH_EXPORT_FILE!;
  const e0 = performance.now();
  const result = await exportRealm(deps, Number(process.env.BENCH_EXPORT_REALM), 1, createWriteStream(file), {
    onProgress: (n) => {
      if (n % 50_000 !== 0) return;
      // Garbage or retention? The heap after a full collection tells (node --expose-gc).
      const before = rssMb();
      if (global.gc) global.gc();
      const heap = process.memoryUsage().heapUsed / 1024 / 1024;
      heapAfterGc.push(heap);
      log(`  ${n.toLocaleString('en')} messages exported, RSS ${fmt(before)} MB; after a full GC: heap ${fmt(heap)} MB, RSS ${fmt(rssMb())} MB, external ${fmt(process.memoryUsage().external / 1024 / 1024)} MB`);
    },
  });
  const exportS = (performance.now() - e0) / 1000;
  const { baseline, peak } = rss.stop();
  const bytes = statSync(file).size;
  log(`export: ${result.messages.toLocaleString('en')} messages, ${fmt(bytes / 1024 / 1024)} MB in ${fmt(exportS)} s`);
  console.log(JSON.stringify({ exportS, baseline: baseline / 2 ** 20, peak: peak / 2 ** 20, heapAfterGc, messages: result.messages, bytes }));
  await deps.db.$disconnect();
}

(process.env.BENCH_EXPORT_FILE ? exportChild() : main()).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
