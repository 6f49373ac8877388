// Organization import (`pnpm manage import`, apps/server/src/import/zulip-import.ts) against a plain
// COPY of the same rows. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/import.bench.ts
//
// Environment:
//   BENCH_USERS      users of the exported organization (1,000)
//   BENCH_MESSAGES   messages (1,000,000), in files of 1,000 as Zulip writes them, over 10 channels
//                    and 20 topics each, every tenth a direct message between two users
//   BENCH_ROWS       per-user message rows per message (3: the sender's, read, and two recipients')
//   BENCH_KEEP=1     keep the work directory
//   BENCH_TRACE=1    the import's diagnostics on stderr: a line per message file (wall time, waits on
//                    PostgreSQL per table); with BENCH_EXPLAIN_MS=<ms>, the plans (auto_explain, ANALYZE,
//                    BUFFERS, triggers' statements included) of its statements slower than that
//
// What runs: an embedded PostgreSQL with Parley's migrations; an export folder in Zulip's layout is
// written (realm.json with the users, channels, subscriptions and groups; messages-NNNNNN.json), and,
// alongside, CSV files of exactly the message and user_message rows the import will write. Then:
//   1. the import of the folder (importRealmFromDirectory, what `manage import` runs after extracting
//      the tarball; extraction is not timed), the process's RSS sampled every 50 ms;
//   2. the floor: COPY … FROM of the two CSV files into message and user_message (new ids, same
//      organization, same columns), in a transaction rolled back afterwards.
// Goal (issue 27): the import ≤ 2× the COPY, RSS ≤ 300 MB.
import { chmodSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../apps/server/src/config.ts';
import { createCommandDeps } from '../apps/server/src/import/command-deps.ts';
import { pg, startBenchPostgres } from './lib/bench-pg.ts';
import { runMeasuredChild, sampleRss } from './lib/measured-child.ts';
import { fmt, markdownTable } from './lib/stats.ts';

const USERS = Number(process.env.BENCH_USERS ?? 1000);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1_000_000);
const ROWS = Math.max(1, Number(process.env.BENCH_ROWS ?? 3));
const CHANNELS = 10;
const PER_FILE = 1000;
const log = (line: string) => console.log(`[bench] ${line}`);
const T0 = 1_600_000_000;

const csvField = (v: string | number | null) => (v === null ? '' : typeof v === 'number' ? String(v) : `"${v.replaceAll('"', '""')}"`);

async function write(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

/** The export folder, and CSVs of the rows the import writes (ids relative: 0-based message index, 1-based user index). */
async function writeExport(dir: string): Promise<void> {
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: i + 1, email: `user${i + 1}@example.org`, delivery_email: `user${i + 1}@example.org`, full_name: `User ${i + 1}`, role: i === 0 ? 100 : 400,
    is_active: true, is_bot: false, bot_type: null, bot_owner: null, date_joined: T0, timezone: '', avatar_source: 'G', avatar_version: 1, realm: 1, twenty_four_hour_time: i % 2 === 0,
  }));
  const recipients = [...users.map((u) => ({ id: u.id, type: 1, type_id: u.id })), ...Array.from({ length: CHANNELS }, (_, c) => ({ id: 100_000 + c, type: 2, type_id: c + 1 }))];
  const streams = Array.from({ length: CHANNELS }, (_, c) => ({ id: c + 1, name: `channel ${c + 1}`, description: '', rendered_description: '', invite_only: false, is_web_public: false, history_public_to_subscribers: true, deactivated: false, date_created: T0, creator: 1, realm: 1, recipient: 100_000 + c }));
  const subscriptions = users.flatMap((u) => [{ id: u.id, user_profile: u.id, recipient: u.id, active: true, color: '#c2c2c2' }, ...streams.map((s) => ({ id: u.id * 100 + s.id, user_profile: u.id, recipient: s.recipient, active: true, color: '#76ce90', is_muted: false, pin_to_top: false }))]);
  writeFileSync(path.join(dir, 'realm.json'), JSON.stringify({ zerver_realm: [{ id: 1, name: 'Bench', string_id: 'bench' }], zerver_userprofile: users, zerver_recipient: recipients, zerver_stream: streams, zerver_subscription: subscriptions, zerver_client: [{ id: 1, name: 'website' }] }));
  const messagesCsv = createWriteStream(path.join(dir, '..', 'message.csv'));
  const flagsCsv = createWriteStream(path.join(dir, '..', 'user_message.csv'));
  for (let file = 0; file * PER_FILE < MESSAGES; file++) {
    const zerver_message: unknown[] = [];
    const zerver_usermessage: unknown[] = [];
    let messageLines = '';
    let flagLines = '';
    for (let k = file * PER_FILE; k < Math.min(MESSAGES, (file + 1) * PER_FILE); k++) {
      const sender = (k % USERS) + 1;
      const direct = k % 10 === 9;
      const other = ((k * 7) % USERS) + 1 === sender ? (sender % USERS) + 1 : ((k * 7) % USERS) + 1;
      const channel = (k % CHANNELS) + 1;
      const content = `Message ${k} about **something** with a [link](https://example.org/${k})`;
      const rendered = `<p>Message ${k} about <strong>something</strong> with a <a href="https://example.org/${k}">link</a></p>`;
      const topic = direct ? '' : `topic ${k % 20}`;
      zerver_message.push({ id: k + 1, sender, recipient: direct ? other : 100_000 + channel - 1, realm: 1, subject: topic, content, rendered_content: rendered, rendered_content_version: 1, date_sent: T0 + k, last_edit_time: null, edit_history: null, sending_client: 1 });
      const readers = [sender, other, ...Array.from({ length: Math.max(0, ROWS - 2) }, (_, j) => ((k + 13 * (j + 1)) % USERS) + 1)].filter((u, i, all) => all.indexOf(u) === i).slice(0, ROWS);
      for (const u of readers) {
        const flags = (u === sender ? 1 : 0) | (direct ? 2048 : 0);
        zerver_usermessage.push({ id: k * ROWS + u, message: k + 1, user_profile: u, flags_mask: flags });
        flagLines += `${k},${u},${flags}\n`;
      }
      const participants = direct ? `"{${[sender, other].sort((a, b) => a - b).join(',')}}"` : '"{}"';
      messageLines += [k, sender, direct ? '' : channel, csvField(topic), participants, csvField(content), csvField(rendered), csvField(new Date((T0 + k) * 1000).toISOString()), csvField('website')].join(',') + '\n';
    }
    writeFileSync(path.join(dir, `messages-${String(file + 1).padStart(6, '0')}.json`), JSON.stringify({ zerver_message, zerver_usermessage }));
    await write(messagesCsv, messageLines);
    await write(flagsCsv, flagLines);
  }
  messagesCsv.end();
  flagsCsv.end();
  await Promise.all([once(messagesCsv, 'close'), once(flagsCsv, 'close')]);
  for (const f of ['message.csv', 'user_message.csv']) chmodSync(path.join(dir, '..', f), 0o644);
}

/**
 * The import itself runs in a child process of its own (as `manage import` does), so that its RSS is
 * the import's and not this process's (which wrote the export): it prints one JSON line of figures.
 */
async function importChild(): Promise<void> {
  // As `manage import` runs (src/import/commands.ts): the command's dependencies, not the server's, and the
  // importer loaded after them.
  const config = JSON.parse(process.env.BENCH_IMPORT_CONFIG!) as Config;
  const deps = await createCommandDeps(config, process.env.BENCH_IMPORT_DATABASE!);
  const { importRealmFromDirectory } = await import('../apps/server/src/import/zulip-import.ts');
  const rss = sampleRss();
  const started = performance.now();
  const result = await importRealmFromDirectory(deps, process.env.BENCH_IMPORT_DIR!, {
    url: 'http://imported.parley.bench',
    ...(process.env.BENCH_TRACE === '1' ? { trace: (line: string) => console.error(line) } : {}),
    ...(process.env.BENCH_EXPLAIN_MS ? { explainMinMs: Number(process.env.BENCH_EXPLAIN_MS) } : {}),
    onProgress: (step, done, total) => (step.startsWith('messages (') && done % 100 !== 0 ? undefined : log(`${step} ${done}/${total ?? ''} (RSS ${fmt(process.memoryUsage().rss / 2 ** 20, 0)} MB, heap ${fmt(process.memoryUsage().heapUsed / 2 ** 20, 0)} MB, external ${fmt(process.memoryUsage().external / 2 ** 20, 0)} MB)`)),
  });
  const importMs = performance.now() - started;
  const { baseline, peak } = rss.stop();
  console.log(JSON.stringify({ importMs, baseline, peak, realmId: result.realmId, counts: result.counts }));
  await deps.db.$disconnect();
}

if (process.env.BENCH_IMPORT_DIR) {
  await importChild();
  process.exit(0);
}

const work = mkdtempSync(path.join(os.tmpdir(), 'parley-import-bench-'));
chmodSync(work, 0o755); // the CSV files are read by PostgreSQL's own user
const { database, databaseUrl } = await startBenchPostgres(work);
try {
  const config = { ...loadConfig({}), secretKey: randomBytes(32).toString('hex'), dataDir: work, publicUrl: 'http://parley.bench', validateResponses: false, rateLimit: null, storage: { kind: 'local' as const, dir: path.join(work, 'files') } };
  const exportDir = path.join(work, 'export');
  mkdirSync(exportDir);
  log(`writing an export of ${USERS.toLocaleString('en')} users and ${MESSAGES.toLocaleString('en')} messages (${ROWS} per-user rows each) …`);
  let started = performance.now();
  await writeExport(exportDir);
  log(`written in ${fmt((performance.now() - started) / 1000, 1)} s`);

  // The import, in its own process (migrations are applied by the first createDeps there).
  started = performance.now();
  const result = await runMeasuredChild<{ importMs: number; baseline: number; peak: number; realmId: number; counts: Record<string, number> }>(
    import.meta.url,
    { BENCH_IMPORT_DIR: exportDir, BENCH_IMPORT_DATABASE: databaseUrl, BENCH_IMPORT_CONFIG: JSON.stringify(config) },
    'the import',
  );
  const { importMs, baseline, peak } = result;
  log(`imported: ${JSON.stringify(result.counts)} (${fmt((performance.now() - started) / 1000, 1)} s with the process's start)`);

  // The floor: the same message and user_message rows by COPY, new ids above the import's.
  const sql = new pg.Client({ connectionString: database.adminUrl.replace(/\/postgres$/, '/parley_bench') });
  await sql.connect();
  const { rows } = await sql.query<{ m: number; u: number; c: number }>('SELECT (SELECT max(id) FROM message) AS m, (SELECT min(id) FROM "user" WHERE realm_id = $1) AS u, (SELECT min(id) FROM channel WHERE realm_id = $1) AS c', [result.realmId]);
  const baseMessage = rows[0]!.m + 1;
  const baseUser = rows[0]!.u - 1;
  await sql.query('BEGIN');
  await sql.query(`CREATE TEMP TABLE m_in (k int, sender int, channel int, topic text, direct_user_ids int[], content text, rendered text, sent timestamp(3), client text) ON COMMIT DROP`);
  await sql.query(`CREATE TEMP TABLE um_in (k int, u int, flags bigint) ON COMMIT DROP`);
  started = performance.now();
  await sql.query(`COPY m_in FROM '${path.join(work, 'message.csv')}' WITH (FORMAT csv)`);
  await sql.query(`COPY um_in FROM '${path.join(work, 'user_message.csv')}' WITH (FORMAT csv)`);
  const loadMs = performance.now() - started;
  // Parley's tables need real ids (the CSV carries the export's): one INSERT … SELECT each, as a COPY
  // straight into them would do with ids already known.
  started = performance.now();
  await sql.query(
    `INSERT INTO message (id, realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client)
     SELECT $1::int + k, $2::int, $3::int + sender, $4::int + channel - 1, topic,
            ARRAY(SELECT $3::int + x FROM unnest(direct_user_ids) x), content, rendered, sent, client FROM m_in`,
    [baseMessage, result.realmId, baseUser, rows[0]!.c],
  );
  await sql.query(`INSERT INTO user_message (message_id, user_id, flags) SELECT $1::int + k, $2::int + u, flags FROM um_in`, [baseMessage, baseUser]);
  const insertMs = performance.now() - started;
  await sql.query('ROLLBACK');
  await sql.end();
  const copyMs = loadMs + insertMs;

  console.log(
    markdownTable(
      ['', 'seconds', 'vs COPY', 'goal'],
      [
        ['import (folder → new organization, one transaction)', fmt(importMs / 1000, 1), `${fmt(importMs / copyMs, 2)}×`, '≤ 2×'],
        ['COPY of the same message + user_message rows (load + insert with ids)', fmt(copyMs / 1000, 1), '1×', ''],
        ['  of which COPY … FROM the CSV files', fmt(loadMs / 1000, 1), '', ''],
      ],
    ),
  );
  console.log(`RSS of the importing process (its own, as manage import runs): peak ${fmt(peak / 2 ** 20, 0)} MB (before the import, after start-up: ${fmt(baseline / 2 ** 20, 0)} MB); goal ≤ 300 MB`);
} finally {
  await database.stop();
  if (process.env.BENCH_KEEP !== '1') rmSync(work, { recursive: true, force: true });
  else log(`kept ${work}`);
}
