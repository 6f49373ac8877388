// The path a newcomer takes: the server started as the README's `start` runs it (embedded PostgreSQL,
// migrations, first-start organization and zuliprc), then the real `zulip-js` client configured from
// that zuliprc, and requests shaped exactly as the Python `zulip` client sends them. Covers the
// "done" flows of the foundation and of channels / user groups, then a clean SIGTERM shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zulipJs as zulip } from '../helpers/zulip-js.ts';

const serverDir = fileURLToPath(new URL('../..', import.meta.url));

let dataDir: string;
let child: ChildProcess;
let site: string;
let rc: { email: string; key: string; site: string };
let owner: any;
let output = '';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Form-encodes as the Python client does: strings raw, everything else json.dumps (with spaces). */
function pythonForm(params: Record<string, unknown>): string {
  const dumps = (v: unknown) => JSON.stringify(v).replace(/,/g, ', ').replace(/":/g, '": ');
  return new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : dumps(v)])).toString();
}

/** A request as the Python client makes it; the body is whatever the server answered (raw HTTP). */
async function python(method: string, endpoint: string, params: Record<string, unknown> | null, auth: { email: string; key: string }): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { Authorization: `Basic ${Buffer.from(`${auth.email}:${auth.key}`).toString('base64')}` };
  let url = `${site}/api/v1/${endpoint}`;
  let body: string | undefined;
  if (params && method === 'GET') url += `?${pythonForm(params)}`;
  else if (params) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = pythonForm(params);
  }
  const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-e2e-'));
  const port = await freePort();
  site = `http://127.0.0.1:${port}`;
  child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDir,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), INIT_CWD: serverDir, DATABASE_URL: '', PARLEY_OWNER_EMAIL: 'boss@example.com' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const deadline = Date.now() + 90_000;
  // The first start prints where it wrote the zuliprc once it is listening.
  while (!/zuliprc: /.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const ini = readFileSync(path.join(dataDir, 'zuliprc'), 'utf8');
  const get = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(ini)?.[1] ?? '';
  rc = { email: get('email'), key: get('key'), site: get('site') };
  owner = await zulip({ zuliprc: path.join(dataDir, 'zuliprc') });
}, 120_000);

afterAll(async () => {
  // SIGTERM lets the server stop its embedded PostgreSQL; SIGKILL only if it does not exit.
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

describe('a server started as the README says', () => {
  it('wrote a zuliprc for the owner and prints how to reach it', () => {
    expect(rc).toEqual({ email: 'boss@example.com', key: expect.stringMatching(/^[A-Za-z0-9]{32}$/), site });
    expect(output).toContain('zuliprc');
    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
  });

  it('greets the new organization: the welcome bot has written in #general, unread for the owner', async () => {
    const res = await python('GET', 'messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: 'general' }] }, rc);
    expect(res.status).toBe(200);
    const messages = res.body.messages as Array<Record<string, unknown>>;
    expect(messages.length).toBeGreaterThanOrEqual(2);
    for (const m of messages) expect(m).toMatchObject({ sender_full_name: 'Welcome Bot', display_recipient: 'general', flags: [] });
    expect(messages[0]).toMatchObject({ subject: 'welcome to Parley!' });
    const bot = (await python('GET', `users/${messages[0]!['sender_id']}`, null, rc)).body.user;
    expect(bot).toMatchObject({ is_bot: true, full_name: 'Welcome Bot' });
  });

  let memberId: number;
  let member: { email: string; key: string };

  it('zulip-js lists users; the owner creates and edits a user', async () => {
    const created = await python('POST', 'users', { email: 'ann@example.com', password: 'a good password', full_name: 'Ann Example' }, rc);
    expect(created.status).toBe(200);
    memberId = created.body.user_id;
    const fetched = await fetch(`${site}/api/v1/fetch_api_key`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'username=ann%40example.com&password=a+good+password',
    });
    member = { email: 'ann@example.com', key: ((await fetched.json()) as { api_key: string }).api_key };

    const listed = await owner.users.retrieve({ client_gravatar: true });
    expect(listed.result).toBe('success');
    expect(listed.members.map((u: any) => u.email)).toEqual(expect.arrayContaining(['boss@example.com', 'ann@example.com']));

    const edited = await owner.callEndpoint(`/users/${memberId}`, 'PATCH', { full_name: 'Ann Edited', role: 300 });
    expect(edited).toMatchObject({ result: 'success' });
    const after = await python('GET', `users/${memberId}`, null, rc);
    expect(after.body.user).toMatchObject({ full_name: 'Ann Edited', role: 300 });
  });

  it('creates and updates a channel, edits a group and its members and subgroups, deactivates it', async () => {
    const sub = await owner.users.me.subscriptions.add({ subscriptions: JSON.stringify([{ name: 'general' }, { name: 'denmark' }]) });
    expect(sub.result).toBe('success');
    const streamId = (await python('GET', 'get_stream_id', { stream: 'denmark' }, rc)).body.stream_id;
    const updated = await python('PATCH', `streams/${streamId}`, { stream_id: streamId, description: 'Something rotten', is_private: true }, rc);
    expect(updated.body).toMatchObject({ result: 'success', ignored_parameters_unsupported: ['stream_id'] });
    expect((await python('GET', `streams/${streamId}`, null, rc)).body.stream).toMatchObject({ description: 'Something rotten', invite_only: true });

    const group = await python('POST', 'user_groups/create', { name: 'players', description: 'The players', members: [memberId] }, rc);
    expect(group.status).toBe(200);
    const inner = await python('POST', 'user_groups/create', { name: 'leads', description: 'Leads', members: [] }, rc);
    const g = group.body.group_id;
    expect((await python('PATCH', `user_groups/${g}`, { group_id: g, description: 'Travelling players' }, rc)).body).toMatchObject({
      result: 'success',
      ignored_parameters_unsupported: ['group_id'],
    });
    expect((await python('POST', `user_groups/${g}/members`, { delete: [memberId] }, rc)).status).toBe(200);
    expect((await owner.callEndpoint(`/user_groups/${g}/subgroups`, 'POST', { add: JSON.stringify([inner.body.group_id]) })).result).toBe('success');
    expect((await python('GET', `user_groups/${g}/subgroups`, null, rc)).body.subgroups).toEqual([inner.body.group_id]);
    expect((await owner.callEndpoint(`/user_groups/${g}/deactivate`, 'POST', {})).result).toBe('success');
    const groups = (await python('GET', 'user_groups', { include_deactivated_groups: true }, rc)).body.user_groups;
    expect(groups.find((x: any) => x.id === g)).toMatchObject({ deactivated: true, description: 'Travelling players' });
  });

  it('unsubscribes users by id and by e-mail', async () => {
    expect((await python('POST', 'users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [memberId] }, rc)).status).toBe(200);
    const byEmail = await python('DELETE', 'users/me/subscriptions', { subscriptions: ['general'], principals: ['ann@example.com'] }, rc);
    expect(byEmail.body).toMatchObject({ result: 'success', removed: ['general'], not_removed: [] });
    const own = await owner.users.me.subscriptions.remove({ subscriptions: JSON.stringify(['general']) });
    expect(own).toMatchObject({ result: 'success', removed: ['general'] });
    const byId = await python('DELETE', 'users/me/subscriptions', { subscriptions: ['general'], principals: [memberId] }, rc);
    expect(byId.body).toMatchObject({ removed: [], not_removed: ['general'] });
  });

  it('deactivates an account (no body, no Content-Type), after which its key is refused', async () => {
    const res = await python('DELETE', 'users/me', null, member);
    expect(res).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    const again = await python('GET', 'users/me', null, member);
    expect(again.status).toBe(401);
    expect(again.body.msg).toBe('Account is deactivated');
  });

  it('stops cleanly on SIGTERM and the data survives a restart, the database on the port it keeps', async () => {
    // Another process attaches as the README says: the kept port and password, the `parley` database.
    const keptPort = readFileSync(path.join(dataDir, 'postgres.port'), 'utf8').trim();
    const attachedUrl = `postgresql://parley:${encodeURIComponent(readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim())}@127.0.0.1:${keptPort}/parley`;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    output = '';
    child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: serverDir,
      env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: new URL(site).port, INIT_CWD: serverDir, DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    while (!/listening on/.test(output)) {
      if (child.exitCode !== null) throw new Error(output);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(output).not.toContain('created organization');
    expect(readFileSync(path.join(dataDir, 'postgres.port'), 'utf8').trim()).toBe(keptPort);
    const attached = new pg.Client({ connectionString: attachedUrl });
    await attached.connect();
    try {
      expect((await attached.query(`SELECT full_name FROM "user" WHERE id = $1`, [memberId])).rows).toEqual([{ full_name: 'Ann Edited' }]);
    } finally {
      await attached.end();
    }
    const users = await python('GET', 'users', null, rc);
    expect(users.body.members.find((u: any) => u.user_id === memberId)).toMatchObject({ full_name: 'Ann Edited', is_active: false });
    const exited2 = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited2).toBe(0);
  }, 90_000);
});
