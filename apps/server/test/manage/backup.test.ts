// `pnpm manage backup` and `pnpm manage restore`: an organization built through the API is backed up
// (the command line, against a running server), restored into a new empty database and data directory,
// and a server started on that serves the same organization to the same people (same API keys, same
// ids, messages with reactions and flags, the uploaded file). A damaged or cut-short backup, and a
// database that is not empty, are refused with a clear message and leave the target as it was.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { loadConfig } from '../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../src/server.ts';
import { createStorage } from '../../src/storage/index.ts';
import { restoreBackup } from '../../src/backup/restore.ts';
import { useTestServer } from '../helpers/test-server.ts';
import { TEST_SECRET, type Person } from '../helpers/fixtures.ts';
import { createChannel } from '../helpers/channels.ts';
import { basicAuth } from '../helpers/auth.ts';
import { download, uploadFile } from '../helpers/uploads.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const sourceDir = mkdtempSync(path.join(os.tmpdir(), 'parley-backup-source-'));
const targetDir = mkdtempSync(path.join(os.tmpdir(), 'parley-backup-target-'));
const backupFile = path.join(sourceDir, 'backup.tar.gz');
const env = useTestServer({ config: { storage: { kind: 'local', dir: path.join(sourceDir, 'uploads') } } });

/** `pnpm manage …` as a user runs it, with the given environment (and no PARLEY_SECRET_KEY unless given). */
async function manage(args: string[], vars: Record<string, string>) {
  const { PARLEY_SECRET_KEY: _unused, ...inherited } = process.env;
  return promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(here, '../../src/manage.ts'), ...args], {
    cwd: path.join(here, '../..'),
    env: { ...inherited, PARLEY_LOG_LEVEL: 'silent', ...vars },
  });
}

/** A new empty database on the test cluster. */
async function emptyDatabase(): Promise<string> {
  const { adminUrl } = inject('parleyTemplate');
  const name = `backup_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return adminUrl.replace(/\/postgres$/, `/${name}`);
}

async function relationsIn(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query(`SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`)).rows[0].n);
  } finally {
    await client.end();
  }
}

afterAll(() => {
  rmSync(sourceDir, { recursive: true, force: true });
  rmSync(targetDir, { recursive: true, force: true });
});

describe('manage backup and restore', () => {
  let restored: RunningServer;
  let backupOutput = '';
  let fileUrl = '';
  const client = (p: Person): ParleyClient => createParleyClient({ site: restored.url, email: env.users[p].email, apiKey: env.users[p].apiKey });

  beforeAll(async () => {
    const raw = (p: Person, url: string, body: Record<string, string>) => env.raw(url, { method: 'POST', as: p, body: new URLSearchParams(body) });
    const channel = await createChannel(env, 'iago', { name: 'backup plans' }, ['hamlet', 'othello']);
    fileUrl = (await uploadFile(env, 'hamlet', 'minutes.txt', 'the minutes')).url;
    const sent = await raw('hamlet', '/messages', { type: 'stream', to: String(channel.id), topic: 'plans', content: `Hello, see [minutes](${fileUrl})` });
    expect(sent.status).toBe(200);
    expect((await raw('othello', '/messages', { type: 'private', to: JSON.stringify([env.users.hamlet.id]), content: 'A direct word' })).status).toBe(200);
    expect((await raw('othello', `/messages/${sent.body.id}/reactions`, { emoji_name: 'thumbs_up' })).status).toBe(200);
    expect((await env.client('hamlet').POST('/messages/flags', { body: { messages: [sent.body.id], op: 'add', flag: 'starred' } })).error).toBeUndefined();

    // Backed up while the server runs; restored into a new database and data directory.
    const backup = await manage(['backup', '--file', backupFile], { DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: sourceDir });
    backupOutput = backup.stdout + backup.stderr;
    const target = await emptyDatabase();
    const restore = await manage(['restore', '--file', backupFile], { DATABASE_URL: target, PARLEY_DATA_DIR: targetDir });
    expect(restore.stdout).toMatch(/^restored .* 1 files/m);
    const config = { ...loadConfig({}), secretKey: undefined, dataDir: targetDir, publicUrl: inject('parleyTemplate').realmUrl, validateResponses: true, rateLimit: null, logLevel: 'error', storage: { kind: 'local' as const, dir: path.join(targetDir, 'uploads') } };
    restored = await listen(await createDeps(config, target, { poolSize: 4 }), '127.0.0.1', 0);
  });

  afterAll(async () => {
    await restored?.close();
  });

  it('reports tables, rows and files, and keeps the server secret with the backup', () => {
    expect(backupOutput).toMatch(/^ {2}message: [1-9]\d* rows$/m);
    expect(backupOutput).toMatch(/^ {2}files: 1 /m);
    expect(backupOutput).toMatch(/^backup written to .*backup\.tar\.gz: \d+ tables, \d+ rows/m);
    expect(existsSync(`${backupFile}.partial`)).toBe(false);
    // The restored data directory got the backed-up server's secret: the same API keys work.
    expect(readFileSync(path.join(targetDir, 'secret.key'), 'utf8').trim()).toBe(TEST_SECRET);
  });

  it('serves the same organization: users, subscriptions, messages with reactions and flags, files', async () => {
    const users = async (c: ParleyClient) => (await c.GET('/users')).data!.members;
    expect(await users(client('desdemona'))).toEqual(await users(env.client('desdemona')));
    const subscriptions = async (c: ParleyClient) => (await c.GET('/users/me/subscriptions')).data!.subscriptions;
    expect(await subscriptions(client('hamlet'))).toEqual(await subscriptions(env.client('hamlet')));
    const messages = async (c: ParleyClient) => (await c.GET('/messages', { params: { query: { anchor: 'oldest', num_before: 0, num_after: 1000 } } })).data!.messages;
    const before = await messages(env.client('hamlet'));
    const after = await messages(client('hamlet'));
    expect(after).toEqual(before);
    const plans = after.find((m) => m.subject === 'plans')!;
    expect(plans.flags).toContain('starred');
    expect(plans.reactions.map((r) => [r.emoji_name, r.user_id])).toEqual([['thumbs_up', env.users.othello.id]]);
    expect((await download(restored.url, fileUrl, { auth: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey) })).text).toBe('the minutes');
    // Sequences were restored: a new message gets an id after every restored one, and search finds it.
    const sent = await client('hamlet').POST('/messages', { body: { type: 'private', to: JSON.stringify([env.users.othello.id]), content: 'after the restore' } });
    expect(sent.data!.id).toBeGreaterThan(Math.max(...before.map((m) => m.id)));
    const query = new URLSearchParams({ anchor: 'newest', num_before: '10', num_after: '0', narrow: JSON.stringify([{ operator: 'search', operand: 'minutes' }]) });
    const found = await fetch(`${restored.url}/api/v1/messages?${query}`, { headers: { Authorization: basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey) } });
    expect(((await found.json()) as { messages: Array<{ id: number }> }).messages.map((m) => m.id)).toEqual([plans.id]);
  });
});

describe('manage restore: refusals', () => {
  const restoreInto = async (url: string, data: Buffer) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-restore-refused-'));
    const storage = await createStorage({ kind: 'local', dir });
    try {
      await restoreBackup({ databaseUrl: url, storage, acceptSecret: () => {} }, Readable.from([data]));
      return null;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('refuses a cut-short or damaged backup, and leaves the database empty', async () => {
    const whole = readFileSync(backupFile);
    const target = await emptyDatabase();
    const cut = await restoreInto(target, whole.subarray(0, Math.floor(whole.length * 0.6)));
    expect(cut).toMatch(/damaged or was cut short; nothing was restored/);
    expect(await relationsIn(target)).toBe(0);
    const garbled = Buffer.from(whole);
    for (let i = Math.floor(garbled.length / 2); i < garbled.length / 2 + 64; i++) garbled[i] = garbled[i]! ^ 0x5a;
    expect(await restoreInto(target, garbled)).toMatch(/nothing was restored/);
    expect(await relationsIn(target)).toBe(0);
    const notGzip = path.join(sourceDir, 'not-a-backup.tar.gz');
    writeFileSync(notGzip, 'hello');
    expect(await restoreInto(target, readFileSync(notGzip))).toMatch(/not a whole \.tar\.gz backup .*nothing was restored/);
    expect(await relationsIn(target)).toBe(0);
  });

  it('refuses a database that is not empty', async () => {
    expect(await restoreInto(env.databaseUrl, readFileSync(backupFile))).toMatch(/^the target database is not empty \(\d+ tables, sequences or other relations\).*nothing was restored/);
  });
});
