// `pnpm start` with several server processes (src/cluster/), started once as the other end-to-end tests
// start it (src/main.ts, the entry scripts/start.mjs runs once built; building here would race the
// code generation of whoever edits the sources) on a throwaway data directory with the embedded
// PostgreSQL, then hurt the way production hurts:
// - a worker killed with SIGKILL is replaced, and the server answers meanwhile;
// - a worker killed with SIGKILL while clients long-poll on it: they poll again (another process) and
//   receive every event once, in order;
// - the embedded PostgreSQL stopped under load (fast shutdown, as `pg_ctl stop -m fast` does) is
//   started again on its port; every process serves again, and no acknowledged message is lost;
// - kill -9 of the primary: its workers exit with the IPC channel, the embedded PostgreSQL's watchdog
//   stops PostgreSQL, and a start at once on the same data directory serves every message;
// - SIGTERM drains every worker, stops PostgreSQL and exits 0.
// Every request opens its own connection, which any worker may accept (they share the listening socket).
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childrenOf, connectionOwner, freePort, isAlive, spawnCollecting, until, type StartedProcess } from '../helpers/processes.ts';

const serverDir = fileURLToPath(new URL('../..', import.meta.url));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-cluster-'));
let server: StartedProcess;
let port: number;
let auth: string;

interface Answer {
  status: number;
  body: { result?: string; msg?: string; [key: string]: unknown };
}

/** One request on a connection of its own; `onSocket` sees the client's local port once connected. */
function request(method: string, endpoint: string, params: Record<string, unknown> = {}, onSocket?: (localPort: number) => void): Promise<Answer> {
  const form = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();
  const query = method === 'GET' && form ? `?${form}` : '';
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: `/api/v1/${endpoint}${query}`, agent: false, headers: { Authorization: auth, 'Content-Type': 'application/x-www-form-urlencoded' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Answer['body'] });
          } catch {
            reject(new Error(`not JSON (${res.statusCode}): ${text.slice(0, 200)}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('socket', (socket) => socket.once('connect', () => onSocket?.(socket.localPort!)));
    req.on('error', reject);
    req.end(method === 'GET' ? undefined : form);
  });
}

const workers = () => childrenOf(server.child.pid!).filter((p) => p.comm === 'node').map((p) => p.pid);
const postmasterPid = () => Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
const databaseUrl = () =>
  `postgresql://parley:${encodeURIComponent(readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim())}@127.0.0.1:${readFileSync(path.join(dataDir, 'postgres.port'), 'utf8').trim()}/parley`;
const count = (text: string, pattern: RegExp) => (text.match(new RegExp(pattern, 'g')) ?? []).length;

async function send(content: string): Promise<number> {
  const res = await request('POST', 'messages', { type: 'stream', to: 'general', topic: 'cluster', content });
  if (res.status !== 200) throw new Error(`send failed: ${res.status} ${res.body.msg}`);
  return res.body['id'] as number;
}

/** `pnpm start` with two workers on the data directory and port of this file. */
const startServer = () =>
  spawnCollecting(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDir,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), INIT_CWD: serverDir, DATABASE_URL: '', PARLEY_WORKERS: '2', PARLEY_LOG_LEVEL: 'error', PARLEY_RATE_LIMIT: '100000/60' },
  });
const listening = (started: StartedProcess) =>
  until('the server to listen', () => {
    if (started.child.exitCode !== null) throw new Error(`server exited (${started.child.exitCode}):\n${started.output()}`);
    return /listening on/.test(started.output());
  }, 240_000);
/** Gone, or a zombie nobody has reaped yet (an orphan's new parent may be slow to reap it). */
const ended = (pid: number) => {
  if (!isAlive(pid)) return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
};

beforeAll(async () => {
  port = await freePort();
  server = startServer();
  await listening(server);
  const rc = readFileSync(path.join(dataDir, 'zuliprc'), 'utf8');
  const get = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(rc)![1]!;
  auth = `Basic ${Buffer.from(`${get('email')}:${get('key')}`).toString('base64')}`;
}, 300_000);

afterAll(async () => {
  if (server && server.child.exitCode === null) {
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 30_000);
    await server.exited;
    clearTimeout(timer);
  }
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('`pnpm start` with two server processes', () => {
  it('says how many server processes it runs, and runs them', () => {
    expect(server.output()).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+ with 2 server processes/);
    expect(workers()).toHaveLength(2);
  });

  it('replaces a worker killed with SIGKILL, answering meanwhile', async () => {
    const [victim] = workers();
    const replaced = count(server.output(), /is listening/);
    process.kill(victim!, 'SIGKILL');
    await until('the primary to notice', () => server.output().includes(`server process ${victim} was killed (SIGKILL); starting another`), 30_000);
    for (let i = 0; i < 4; i++) expect((await request('GET', 'users/me')).status).toBe(200); // the other worker
    await until('the replacement to listen', () => count(server.output(), /is listening/) > replaced, 120_000);
    const now = workers();
    expect(now).toHaveLength(2);
    expect(now).not.toContain(victim);
    for (let i = 0; i < 4; i++) expect((await request('GET', 'users/me')).status).toBe(200); // both
  }, 180_000);

  it('clients long-polling on a killed worker poll again elsewhere and get every event once, in order', async () => {
    interface Client {
      queueId: string;
      lastEventId: number;
      eventIds: number[];
      messageIds: number[];
      failures: number;
      localPort: number | null;
    }
    const clients: Client[] = [];
    for (let i = 0; i < 4; i++) {
      const reg = await request('POST', 'register', { event_types: ['message'] });
      expect(reg.status).toBe(200);
      clients.push({ queueId: reg.body['queue_id'] as string, lastEventId: reg.body['last_event_id'] as number, eventIds: [], messageIds: [], failures: 0, localPort: null });
    }
    let done = false;
    const poll = async (client: Client) => {
      while (!done) {
        client.localPort = null;
        try {
          const res = await request('GET', 'events', { queue_id: client.queueId, last_event_id: client.lastEventId }, (p) => (client.localPort = p));
          if (res.status !== 200) throw new Error(`GET /events: ${res.status} ${res.body.msg}`);
          for (const event of res.body['events'] as Array<{ id: number; type: string; message?: { id: number } }>) {
            client.lastEventId = Math.max(client.lastEventId, event.id);
            if (event.type !== 'message') continue;
            client.eventIds.push(event.id);
            client.messageIds.push(event.message!.id);
          }
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('GET /events')) throw error;
          client.failures++; // the connection broke (its worker died): poll again
        }
      }
    };
    const polling = Promise.all(clients.map(poll));
    const sent = [await send('before the kill')];
    await until('every client to receive the first message', () => clients.every((c) => c.messageIds.length === 1), 30_000);

    // Kill the worker that holds the first client's parked poll.
    let victim: number | null = null;
    await until('the first client to be parked on a worker', () => {
      const localPort = clients[0]!.localPort;
      victim = localPort === null ? null : connectionOwner(port, localPort, workers());
      return victim !== null;
    }, 30_000);
    const replaced = count(server.output(), /is listening/);
    process.kill(victim!, 'SIGKILL');
    await until('the primary to notice', () => server.output().includes(`server process ${victim} was killed (SIGKILL)`), 30_000);
    for (let i = 0; i < 4; i++) sent.push(await send(`after the kill ${i}`));
    await until('every client to receive every message', () => clients.every((c) => c.messageIds.length >= sent.length), 60_000);
    done = true;

    expect(clients[0]!.failures).toBeGreaterThan(0); // its poll was cut
    for (const client of clients) {
      expect(client.messageIds).toEqual(sent); // once each, in order
      expect([...client.eventIds].sort((a, b) => a - b)).toEqual(client.eventIds);
      expect(new Set(client.eventIds).size).toBe(client.eventIds.length);
    }
    // The parked polls end with the server (SIGTERM answers them) or their heartbeat.
    void polling.catch(() => {});
    await until('the replacement to listen', () => count(server.output(), /is listening/) > replaced, 120_000);
  }, 240_000);

  it('serves again, every process, after PostgreSQL restarts under load; no acknowledged message is lost', async () => {
    const acknowledged: number[] = [];
    const answers: Answer[] = [];
    let stopWriting = false;
    let n = 0;
    const writer = async () => {
      while (!stopWriting) {
        try {
          const res = await request('POST', 'messages', { type: 'stream', to: 'general', topic: 'restart', content: `load ${n++}` });
          answers.push(res);
          if (res.status === 200) acknowledged.push(res.body['id'] as number);
        } catch {
          // A connection broken by a dying backend is not an acknowledgement either.
        }
      }
    };
    const writing = Promise.all([writer(), writer(), writer()]);
    await until('some messages to be acknowledged', () => acknowledged.length >= 5, 30_000);
    const before = postmasterPid();
    process.kill(before, 'SIGINT'); // fast shutdown
    await until('PostgreSQL to be started again', () => /the embedded PostgreSQL runs again/.test(server.output()), 60_000);
    expect(postmasterPid()).not.toBe(before);

    // Every process serves again: each has its LISTEN connection back (events/listener.ts), and writes
    // succeed again.
    const sql = new pg.Client({ connectionString: databaseUrl() });
    await sql.connect();
    try {
      let listeners = 0;
      await until('both workers to listen again', async () => {
        const rows = await sql.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'parley-listener'`);
        listeners = rows.rows[0].n as number;
        return listeners === 2;
      }, 30_000).catch((error: unknown) => {
        throw new Error(`${String(error)} (${listeners} listening); the server said:\n${server.output().slice(-3000)}`);
      });
      let streak = 0;
      await until('six successful writes in a row', async () => {
        const res = await request('POST', 'messages', { type: 'stream', to: 'general', topic: 'restart', content: 'after' });
        if (res.status === 200) acknowledged.push(res.body['id'] as number);
        streak = res.status === 200 ? streak + 1 : 0;
        return streak >= 6;
      }, 30_000);
      stopWriting = true;
      await writing;

      // Failures while PostgreSQL was down were answers in the envelope.
      for (const answer of answers) if (answer.status !== 200) expect(answer.body).toMatchObject({ result: 'error', msg: expect.any(String) });
      const stored = await sql.query(`SELECT id FROM message WHERE id = ANY($1::int[])`, [acknowledged]);
      expect(stored.rows.map((r: { id: number }) => r.id).sort((a, b) => a - b)).toEqual([...new Set(acknowledged)].sort((a, b) => a - b));
    } finally {
      await sql.end();
    }
  }, 180_000);

  it('kill -9 of the primary: its workers exit, its PostgreSQL stops, and a start at once on the same data directory has every message', async () => {
    const id = await send('before the primary is killed');
    const [pids, postgres] = [workers(), postmasterPid()];
    expect(pids).toHaveLength(2);
    // PostgreSQL is held (SIGSTOP) so that the next start surely finds it still running: its watchdog's
    // SIGINT waits until it continues, as a slow fast-shutdown would make it wait.
    process.kill(postgres, 'SIGSTOP');
    try {
      process.kill(server.child.pid!, 'SIGKILL');
      await server.exited;
      await until('the old workers to exit (they held the port)', () => pids.every(ended), 30_000);
      server = startServer(); // at once, on the same data directory
      await until('the next start to wait for the old PostgreSQL', () => server.output().includes(`the PostgreSQL (pid ${postgres}) of a Parley that ended without stopping it`), 60_000);
    } finally {
      process.kill(postgres, 'SIGCONT');
    }
    await until('the old PostgreSQL to stop (its watchdog)', () => ended(postgres), 60_000);
    await listening(server);
    expect(postmasterPid()).not.toBe(postgres);
    expect(workers()).toHaveLength(2);
    const res = await request('GET', `messages/${id}`);
    expect(res.status).toBe(200);
    expect(res.body['message']).toMatchObject({ id, content: '<p>before the primary is killed</p>' });
  }, 300_000);

  it('drains every worker on SIGTERM, stops PostgreSQL and exits 0', async () => {
    const pids = workers();
    const postgres = postmasterPid();
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    for (const pid of [...pids, postgres]) expect(isAlive(pid)).toBe(false);
    expect(server.output()).toContain('SIGTERM: shutting down');
  }, 60_000);
});
