// Scheduled delivery survives a crashed server: two real server processes (src/main.ts, as `pnpm start`
// runs it) on one database deliver 60 scheduled messages due over five seconds; once the first are out,
// one process is killed with SIGKILL — whichever is first caught inside a delivery transaction, the
// jobs of its batch claimed — and a replacement process is started. Every
// message must then be delivered exactly once — none lost with the dead process's claimed jobs, none
// sent twice by the retry — and none may remain in GET /scheduled_messages.
//
// Only the overall deadline is a time assertion: everything delivered within 60 s of the kill (a job
// claimed by a dead process is retried once its expiry passes, about 20 s; see src/jobs/queue.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { copyTemplateDatabase } from '../helpers/template-copy.ts';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { TEST_SECRET } from '../helpers/fixtures.ts';

const serverDir = fileURLToPath(new URL('../..', import.meta.url));
const MESSAGES = 60;
const SECONDS = 5; // the messages are due over this many consecutive seconds
const TOPIC = 'crash test';
const DEADLINE_AFTER_KILL_MS = 60_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 100): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out (${timeoutMs} ms) waiting for ${what}`);
    await sleep(everyMs);
  }
}

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<void>;
}

const template = inject('parleyTemplate');
const database = `t_crash_${randomBytes(5).toString('hex')}`;
const databaseUrl = template.adminUrl.replace(/\/postgres$/, `/${database}`);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-crash-'));
const servers: Server[] = [];
let sql: pg.Pool;

/**
 * A server process on the test database. Its database sessions carry `application_name` = name
 * (PGAPPNAME; the job queue's own pool says parley-jobs), so that the test can see its transactions.
 */
async function startServer(name: string): Promise<Server> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDir,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PGAPPNAME: name,
      PORT: String(port),
      HOST: '127.0.0.1',
      PARLEY_URL: template.realmUrl,
      PARLEY_SECRET_KEY: TEST_SECRET,
      PARLEY_DATA_DIR: dataDir,
      INIT_CWD: serverDir,
      PARLEY_RATE_LIMIT: '0',
      PARLEY_LOG_LEVEL: 'warn',
      // One server process under the cluster's primary: the crash kills the primary, and its worker
      // with it (a worker ends when its primary's channel closes).
      PARLEY_WORKERS: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server: Server = { name, child, url: `http://127.0.0.1:${port}`, output: () => output, exited };
  servers.push(server);
  await until(`${name} to listen`, () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}):\n${output}`);
    return /listening on/.test(output);
  }, 120_000);
  return server;
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 15_000);
  await server.exited;
  clearTimeout(timer);
}

const client = (server: Server, person: 'iago' | 'hamlet' | 'othello'): ParleyClient =>
  createParleyClient({ site: server.url, email: template.users[person].email, apiKey: template.users[person].apiKey });

beforeAll(async () => {
  await copyTemplateDatabase(template.adminUrl, template.templateDatabase, database);
  sql = new pg.Pool({ connectionString: databaseUrl, max: 2 });
}, 120_000);

afterAll(async () => {
  // Every process this file started ends here, whatever happened to the test.
  await Promise.all(servers.map(stopServer));
  await sql?.end();
  const admin = new pg.Client({ connectionString: template.adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('scheduled delivery across a crashed server process', () => {
  it('delivers every message exactly once although a process is killed with SIGKILL mid-run and replaced', async () => {
    const [a, b] = await Promise.all([startServer('parley-a'), startServer('parley-b')]);

    // A channel of three, made through the API.
    const channelName = `crash ${randomBytes(3).toString('hex')}`;
    const made = await client(a, 'iago').POST('/users/me/subscriptions', {
      body: { subscriptions: [{ name: channelName }], principals: [template.users.iago.id, template.users.hamlet.id, template.users.othello.id] },
    });
    expect(made.response.status).toBe(200);
    const channelId = Number((await sql.query('SELECT id FROM channel WHERE name = $1', [channelName])).rows[0].id);

    // 60 messages, 12 due in each of 5 consecutive seconds, scheduled through both processes.
    const first = Math.ceil(Date.now() / 1000) + 6;
    const ids: number[] = [];
    const times: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = next++; i < MESSAGES; i = next++) {
          // A slow machine may have taken the planned second already: then the next free one.
          const at = Math.max(first + Math.floor((i * SECONDS) / MESSAGES), Math.ceil(Date.now() / 1000) + 2);
          const { data, error } = await client(i % 2 ? a : b, 'hamlet').POST('/scheduled_messages', {
            body: { type: 'stream', to: channelId, topic: TOPIC, content: `crash message ${i}`, scheduled_delivery_timestamp: at },
          });
          if (error) throw new Error(`scheduling ${i}: ${JSON.stringify(error)}`);
          ids.push(data!.scheduled_message_id);
          times.push(at);
        }
      }),
    );
    expect(ids).toHaveLength(MESSAGES);

    const deliveredCount = async () =>
      Number((await sql.query('SELECT count(*) AS n FROM scheduled_message WHERE id = ANY($1::int[]) AND delivered', [ids])).rows[0].n);
    /** The server processes with a transaction open on scheduled_message (a delivery under way). */
    const delivering = async (): Promise<string[]> =>
      (
        await sql.query<{ app: string }>(
          `SELECT DISTINCT s.application_name AS app FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid
           WHERE l.relation = 'scheduled_message'::regclass AND s.application_name LIKE 'parley-_'`,
        )
      ).rows.map((r) => r.app);

    // Once the first messages are out, kill the first process seen inside a delivery transaction (the
    // jobs of its batch claimed); should none be caught before the last second is due, kill A then,
    // with messages still to come.
    const lastDue = Math.max(...times) * 1000;
    let victim: Server | undefined;
    while (Date.now() < lastDue - 1_000 && (await deliveredCount()) === 0) await sleep(20);
    while (!victim && Date.now() < lastDue - 500) {
      const busy = await delivering();
      victim = [a, b].find((s) => busy.includes(s.name));
      if (!victim) await sleep(5);
    }
    const killedMidDelivery = victim !== undefined;
    victim ??= a;
    const survivor = victim === a ? b : a;
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    await victim.exited;
    const deliveredAtKill = await deliveredCount();
    // The jobs it had claimed stay claimed until their expiry: the case this test is about.
    const claimedAtKill = Number(
      (await sql.query(`SELECT count(*) AS n FROM pgboss.job WHERE name = 'deliver-scheduled-message' AND state = 'active'`)).rows[0].n,
    );
    console.log(`[crash test] killed ${victim.name} with ${deliveredAtKill}/${MESSAGES} delivered; inside a delivery: ${killedMidDelivery}; jobs claimed then: ${claimedAtKill}`);
    expect(deliveredAtKill).toBeLessThan(MESSAGES); // the kill happened mid-run
    if (killedMidDelivery) expect(claimedAtKill).toBeGreaterThan(0);

    // A replacement process, as a supervisor would start one.
    await sleep(500);
    const c = await startServer('parley-c');

    await until('every message to be delivered', async () => (await deliveredCount()) === MESSAGES, Math.max(1_000, killedAt + DEADLINE_AFTER_KILL_MS - Date.now()), 250);
    console.log(`[crash test] all ${MESSAGES} delivered ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`);

    // Exactly once: one message per scheduled message, each the one recorded as its delivery.
    const sent = (
      await sql.query<{ content: string; n: string }>(
        `SELECT content, count(*) AS n FROM message WHERE channel_id = $1 AND topic = $2 GROUP BY content`,
        [channelId, TOPIC],
      )
    ).rows;
    expect(sent.filter((r) => Number(r.n) !== 1)).toEqual([]);
    expect(sent.map((r) => r.content).sort()).toEqual(Array.from({ length: MESSAGES }, (_, i) => `crash message ${i}`).sort());
    const rows = (await sql.query('SELECT delivered, failed, delivered_message_id FROM scheduled_message WHERE id = ANY($1::int[])', [ids])).rows;
    expect(rows.filter((r) => !r.delivered || r.failed || r.delivered_message_id === null)).toEqual([]);
    expect(new Set(rows.map((r) => r.delivered_message_id)).size).toBe(MESSAGES);

    // The same through the API, from a surviving and from the new process.
    const query = new URLSearchParams({
      anchor: 'newest',
      num_before: '200',
      num_after: '0',
      apply_markdown: 'false',
      narrow: JSON.stringify([{ operator: 'channel', operand: channelId }, { operator: 'topic', operand: TOPIC }]),
    });
    const history = await fetch(`${c.url}/api/v1/messages?${query}`, {
      headers: { Authorization: `Basic ${Buffer.from(`${template.users.othello.email}:${template.users.othello.apiKey}`).toString('base64')}` },
    });
    expect(history.status).toBe(200);
    const contents = ((await history.json()) as { messages: Array<{ content: string }> }).messages.map((m) => m.content);
    expect(contents.sort()).toEqual(Array.from({ length: MESSAGES }, (_, i) => `crash message ${i}`).sort());
    for (const server of [survivor, c]) {
      const { data } = await client(server, 'hamlet').GET('/scheduled_messages', {});
      expect(data!.scheduled_messages.filter((m) => ids.includes(m.scheduled_message_id))).toEqual([]);
    }
  }, 240_000);
});
