// The real `zulip-js` npm package (2.1.0) against a Parley test server. It is configured from a
// zuliprc file (and once with username + password, which makes it POST /fetch_api_key first). Its
// requests pass through a small recording proxy so the tests can also check which wire shape was
// exercised: multipart POST bodies (empty ones too, content-length 0), and GET/PATCH/DELETE
// parameters in the query string with no body. Effects are checked through the typed client.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TEST_PASSWORD, type Person } from '../helpers/fixtures.ts';
import { useTestServer } from '../helpers/test-server.ts';
import { zulipJs as zulip } from '../helpers/zulip-js.ts';

interface Recorded {
  method: string;
  url: string;
  contentType: string | undefined;
  contentLength: string | undefined;
  body: Buffer;
}

const env = useTestServer();
let proxy: http.Server;
let proxyUrl: string;
let recorded: Recorded[] = [];
let rcDir: string;

beforeAll(async () => {
  const upstream = new URL(env.url);
  proxy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      recorded.push({
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
        contentLength: req.headers['content-length'],
        body,
      });
      const forward = http.request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      forward.on('error', (e) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(e));
      });
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  rcDir = mkdtempSync(path.join(os.tmpdir(), 'parley-zuliprc-'));
});

afterAll(async () => {
  await new Promise<void>((resolve) => {
    proxy.close(() => resolve());
    proxy.closeAllConnections();
  });
  rmSync(rcDir, { recursive: true, force: true });
});

beforeEach(() => {
  recorded = [];
});

/** Writes `[api] email/key/site` for someone and builds the client from that file. */
async function clientFromZuliprc(credentials: { email: string; apiKey: string }): Promise<any> {
  const file = path.join(rcDir, `zuliprc-${randomUUID().slice(0, 8)}`);
  writeFileSync(file, `[api]\nemail=${credentials.email}\nkey=${credentials.apiKey}\nsite=${proxyUrl}\n`);
  return zulip({ zuliprc: file });
}
const clientFor = (person: Person) => clientFromZuliprc(env.users[person]);

function lastRequest(method: string, pathPrefix: string): Recorded {
  const found = [...recorded].reverse().find((r) => r.method === method && r.url.startsWith(`/api/v1${pathPrefix}`));
  if (!found) throw new Error(`no ${method} ${pathPrefix} recorded; saw ${recorded.map((r) => `${r.method} ${r.url}`).join(', ')}`);
  return found;
}

function expectSuccess(result: any): void {
  if (result?.result !== 'success') throw new Error(`expected success, got ${JSON.stringify(result)}`);
  expect(result.msg).toBe('');
}

async function userById(id: number) {
  const { data, error } = await env.client('iago').GET('/users/{user_id}', { params: { path: { user_id: id } } });
  if (!data) throw new Error(`GET /users/${id} failed: ${JSON.stringify(error)}`);
  return data.user;
}

/** A fresh member: zulip-js users.create as iago (multipart), then a password login with zulip-js. */
async function freshUser(): Promise<{ id: number; email: string; client: any }> {
  const iago = await clientFor('iago');
  const email = `js-${randomUUID().slice(0, 8)}@parley.test`;
  const created = await iago.users.create({ email, password: TEST_PASSWORD, full_name: 'Zulip JS Newcomer' });
  expectSuccess(created);
  const client = await zulip({ username: email, password: TEST_PASSWORD, realm: proxyUrl });
  return { id: created.user_id, email, client };
}

describe('configuration', () => {
  it('a client built from a zuliprc file talks to the server (server.settings, users.me.getProfile)', async () => {
    const client = await clientFor('hamlet');
    expect(client.config.apiURL).toBe(`${proxyUrl}/api/v1`);
    expect(recorded).toEqual([]); // no start-up call with a key

    const settings = await client.server.settings();
    expectSuccess(settings);
    expect(typeof settings.zulip_version).toBe('string');

    const me = await client.users.me.getProfile();
    expectSuccess(me);
    expect(me).toMatchObject({ user_id: env.users.hamlet.id, email: env.users.hamlet.email, role: 400 });
  });

  it('username + password: POST /fetch_api_key (multipart) and the key works', async () => {
    const client = await zulip({ username: env.users.othello.email, password: TEST_PASSWORD, realm: proxyUrl });
    const login = lastRequest('POST', '/fetch_api_key');
    expect(login.contentType).toMatch(/^multipart\/form-data;\s*boundary=/);
    expect(client.config.apiKey).toBe(env.users.othello.apiKey);
    const me = await client.users.me.getProfile();
    expectSuccess(me);
    expect(me.user_id).toBe(env.users.othello.id);
  });
});

describe('list users', () => {
  it('users.retrieve() lists every person', async () => {
    const client = await clientFor('cordelia');
    const result = await client.users.retrieve();
    expectSuccess(result);
    const ids = result.members.map((m: any) => m.user_id);
    for (const person of Object.keys(env.users) as Person[]) expect(ids).toContain(env.users[person].id);
    expect(result).not.toHaveProperty('ignored_parameters_unsupported');
    const get = lastRequest('GET', '/users');
    expect(get.body.length).toBe(0);
  });

  it('users.retrieve({ client_gravatar: false, include_custom_profile_fields: true }) → query string', async () => {
    const client = await clientFor('cordelia');
    const result = await client.users.retrieve({ client_gravatar: false, include_custom_profile_fields: true });
    expectSuccess(result);
    const get = lastRequest('GET', '/users');
    expect(get.url).toBe('/api/v1/users?client_gravatar=false&include_custom_profile_fields=true');
    const hamlet = result.members.find((m: any) => m.user_id === env.users.hamlet.id);
    expect(typeof hamlet.avatar_url).toBe('string');
    expect(hamlet).toHaveProperty('profile_data');
  });

  it('users.retrieve({ user_ids: JSON text }) limits the listing', async () => {
    const client = await clientFor('cordelia');
    const wanted = [env.users.iago.id, env.users.shiva.id];
    const result = await client.users.retrieve({ user_ids: JSON.stringify(wanted) });
    expectSuccess(result);
    expect(result.members.map((m: any) => m.user_id).sort((a: number, b: number) => a - b)).toEqual([...wanted].sort((a, b) => a - b));
  });
});

describe('edit a user as the owner', () => {
  it("callEndpoint('/users/ID', 'PATCH', { full_name, role }) — parameters in the query string, no body", async () => {
    const target = await freshUser();
    const owner = await clientFor('desdemona');
    const result = await owner.callEndpoint(`/users/${target.id}`, 'PATCH', { full_name: 'Renamed by JS', role: 300 });
    expectSuccess(result);
    expect(result).not.toHaveProperty('ignored_parameters_unsupported');

    const patch = lastRequest('PATCH', `/users/${target.id}`);
    expect(patch.url).toBe(`/api/v1/users/${target.id}?full_name=Renamed+by+JS&role=300`);
    expect(patch.body.length).toBe(0);

    expect(await userById(target.id)).toMatchObject({ full_name: 'Renamed by JS', role: 300, is_admin: false });
  });

  it('extra parameters are ignored and reported', async () => {
    const target = await freshUser();
    const owner = await clientFor('desdemona');
    const result = await owner.callEndpoint(`/users/${target.id}`, 'PATCH', { role: 200, stream_id: 5, dont_block: true });
    expectSuccess(result);
    expect(result.ignored_parameters_unsupported).toEqual(['dont_block', 'stream_id']);
    expect((await userById(target.id)).role).toBe(200);
  });

  it('an invalid role comes back as a Zulip error object', async () => {
    const owner = await clientFor('desdemona');
    const result = await owner.callEndpoint(`/users/${env.users.hamlet.id}`, 'PATCH', { role: 'admin' });
    expect(result).toMatchObject({ result: 'error', msg: 'role is not valid JSON', code: 'BAD_REQUEST' });
    expect((await userById(env.users.hamlet.id)).role).toBe(400);
  });
});

describe('POST bodies are multipart', () => {
  it('users.create({ email, password, full_name }) creates the user', async () => {
    const iago = await clientFor('iago');
    const email = `js-create-${randomUUID().slice(0, 8)}@parley.test`;
    const result = await iago.users.create({ email, password: TEST_PASSWORD, full_name: 'Made By Zulip JS' });
    expectSuccess(result);
    expect(lastRequest('POST', '/users').contentType).toMatch(/^multipart\/form-data;\s*boundary=/);
    expect(await userById(result.user_id)).toMatchObject({ full_name: 'Made By Zulip JS', is_active: true, role: 400 });
  });

  it("a POST without parameters sends an EMPTY multipart body: callEndpoint('/users/ID/reactivate', 'POST')", async () => {
    const target = await freshUser();
    const iago = await clientFor('iago');
    expectSuccess(await iago.callEndpoint(`/users/${target.id}`, 'DELETE', {}));
    expect((await userById(target.id)).is_active).toBe(false);

    const result = await iago.callEndpoint(`/users/${target.id}/reactivate`, 'POST', {});
    expectSuccess(result);
    const post = lastRequest('POST', `/users/${target.id}/reactivate`);
    expect(post.contentType).toMatch(/^multipart\/form-data;\s*boundary=/);
    expect(post.contentLength).toBe('0');
    expect(post.body.length).toBe(0);
    expect((await userById(target.id)).is_active).toBe(true);
  });

  it('typing.send with an invalid op is decoded from multipart and refused: Invalid op', async () => {
    const client = await clientFor('hamlet');
    const result = await client.typing.send({ to: [env.users.othello.id, env.users.cordelia.id], op: 'bogus' });
    expect(result).toMatchObject({ result: 'error', msg: 'Invalid op', code: 'BAD_REQUEST' });
    expect(lastRequest('POST', '/typing').contentType).toMatch(/^multipart\/form-data;\s*boundary=/);
  });

  it('typing.send({ to: [id], op: "start" }) passes decoding and validation', async () => {
    const client = await clientFor('hamlet');
    const result = await client.typing.send({ to: [env.users.othello.id], op: 'start' });
    expectSuccess(result);
  });
});

describe('deactivate an account', () => {
  it("callEndpoint('/users/me', 'DELETE', {}) deactivates the caller; its key then fails with 401", async () => {
    const me = await freshUser();
    expectSuccess(await me.client.users.me.getProfile());

    const result = await me.client.callEndpoint('/users/me', 'DELETE', {});
    expectSuccess(result);
    expect(result).not.toHaveProperty('ignored_parameters_unsupported');
    const del = lastRequest('DELETE', '/users/me');
    expect(del.url).toBe('/api/v1/users/me');
    expect(del.body.length).toBe(0);

    expect(await userById(me.id)).toMatchObject({ is_active: false, user_id: me.id });

    const after = await me.client.users.me.getProfile();
    expect(after).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
    const again = await me.client.users.retrieve();
    expect(again).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
  });

  it('a deactivated account cannot log in with its password either', async () => {
    const me = await freshUser();
    expectSuccess(await me.client.callEndpoint('/users/me', 'DELETE', {}));
    const login = await zulip({ username: me.email, password: TEST_PASSWORD, realm: proxyUrl });
    // zulip-js stores whatever came back as the key; the response itself was an error
    expect(login.config.apiKey).toBeUndefined();
    const res = await env.raw('/fetch_api_key', {
      method: 'POST',
      body: new URLSearchParams({ username: me.email, password: TEST_PASSWORD }).toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(401); // spec/paths/fetch_api_key.yaml: every failure is 401, told apart by code
    expect(res.body).toMatchObject({ result: 'error', msg: 'Account is deactivated', code: 'USER_DEACTIVATED' });
  });
});

describe('messages and events with zulip-js', () => {
  it('sends a channel message and a direct message, registers a queue, receives message and typing events', async () => {
    const hamlet = await clientFor('hamlet');
    const othello = await clientFor('othello');
    const channelName = `js-chat-${randomUUID().slice(0, 6)}`;
    expectSuccess(await hamlet.users.me.subscriptions.add({ subscriptions: JSON.stringify([{ name: channelName }]), principals: JSON.stringify([env.users.othello.id]) }));

    const queue = await othello.queues.register({ event_types: ['message', 'typing'], apply_markdown: 'true' });
    expectSuccess(queue);
    expect(typeof queue.queue_id).toBe('string');

    const sent = await hamlet.messages.send({ to: channelName, type: 'stream', topic: 'from zulip-js', content: 'Hello **Othello**' });
    expectSuccess(sent);
    const direct = await hamlet.messages.send({ to: env.users.othello.email, type: 'private', content: 'a word in private' });
    expectSuccess(direct);
    expectSuccess(await hamlet.typing.send({ to: [env.users.othello.id], op: 'start' }));

    const received: any[] = [];
    let last = queue.last_event_id;
    for (let attempt = 0; attempt < 10 && received.length < 3; attempt++) {
      const answer = await othello.events.retrieve({ queue_id: queue.queue_id, last_event_id: last });
      expectSuccess(answer);
      for (const e of answer.events) {
        received.push(e);
        last = Math.max(last, e.id);
      }
    }
    const messages = received.filter((e) => e.type === 'message');
    expect(messages.map((e) => e.message.id)).toEqual([sent.id, direct.id]);
    expect(messages[0].message).toMatchObject({ type: 'stream', display_recipient: channelName, subject: 'from zulip-js', content: '<p>Hello <strong>Othello</strong></p>' });
    expect(messages[1].message).toMatchObject({ type: 'private', content: '<p>a word in private</p>' });
    expect(received.find((e) => e.type === 'typing')).toMatchObject({ op: 'start', message_type: 'direct', sender: { user_id: env.users.hamlet.id } });

    expectSuccess(await othello.queues.deregister({ queue_id: queue.queue_id }));
  });
});

describe('read state with zulip-js', () => {
  it('marks a message read and unread, and sees the update_message_flags events', async () => {
    const iago = await clientFor('iago');
    const cordelia = await clientFor('cordelia');
    const sent = await iago.messages.send({ to: JSON.stringify([env.users.cordelia.id]), type: 'private', content: 'read me' });
    expectSuccess(sent);
    const queue = await cordelia.queues.register({ event_types: ['update_message_flags'] });
    expectSuccess(queue);
    expectSuccess(await cordelia.messages.flags.add({ messages: [sent.id], flag: 'read' }));
    expectSuccess(await cordelia.messages.flags.remove({ messages: [sent.id], flag: 'read' }));
    const answer = await cordelia.events.retrieve({ queue_id: queue.queue_id, last_event_id: queue.last_event_id, dont_block: 'true' });
    expectSuccess(answer);
    expect(answer.events.map((e: any) => [e.type, e.op, e.flag, e.messages])).toEqual([
      ['update_message_flags', 'add', 'read', [sent.id]],
      ['update_message_flags', 'remove', 'read', [sent.id]],
    ]);
    expect(answer.events[1].message_details[String(sent.id)]).toEqual({ type: 'private', user_ids: [env.users.iago.id] });
  });
});

describe('reactions with zulip-js', () => {
  it('reactions.add (multipart POST) and reactions.remove (DELETE, parameters in the query string), with the reaction events', async () => {
    const iago = await clientFor('iago');
    const cordelia = await clientFor('cordelia');
    const sent = await iago.messages.send({ to: JSON.stringify([env.users.cordelia.id]), type: 'private', content: 'react to me' });
    expectSuccess(sent);
    const queue = await iago.queues.register({ event_types: ['reaction'] });
    expectSuccess(queue);
    expectSuccess(await cordelia.reactions.add({ message_id: sent.id, emoji_name: 'octopus' }));
    expect(lastRequest('POST', `/messages/${sent.id}/reactions`).contentType).toMatch(/^multipart\/form-data;\s*boundary=/);
    const refused = await cordelia.reactions.add({ message_id: sent.id, emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' });
    expect(refused).toMatchObject({ result: 'error', msg: 'Reaction already exists.', code: 'REACTION_ALREADY_EXISTS' });
    expectSuccess(await cordelia.reactions.remove({ message_id: sent.id, emoji_code: '1f419', reaction_type: 'unicode_emoji' }));
    const removal = lastRequest('DELETE', `/messages/${sent.id}/reactions`);
    expect(removal.url).toContain('emoji_code=1f419');
    expect(removal.body.length).toBe(0);
    const answer = await iago.events.retrieve({ queue_id: queue.queue_id, last_event_id: queue.last_event_id, dont_block: 'true' });
    expectSuccess(answer);
    expect(answer.events.map((e: any) => [e.type, e.op, e.user_id, e.message_id, e.emoji_name, e.emoji_code])).toEqual([
      ['reaction', 'add', env.users.cordelia.id, sent.id, 'octopus', '1f419'],
      ['reaction', 'remove', env.users.cordelia.id, sent.id, 'octopus', '1f419'],
    ]);
  });
});

describe('history, drafts, scheduled messages and settings with zulip-js', () => {
  it('fetches history narrowed to a topic', async () => {
    const hamlet = await clientFor('hamlet');
    const channelName = `js-history-${randomUUID().slice(0, 6)}`;
    expectSuccess(await hamlet.users.me.subscriptions.add({ subscriptions: JSON.stringify([{ name: channelName }]) }));
    const ids: number[] = [];
    for (const content of ['one', 'two', 'three']) ids.push((await hamlet.messages.send({ to: channelName, type: 'stream', topic: 'history', content })).id);
    const history = await hamlet.messages.retrieve({
      anchor: 'newest',
      num_before: 10,
      num_after: 0,
      narrow: [
        { operator: 'channel', operand: channelName },
        { operator: 'topic', operand: 'history' },
      ],
    });
    expectSuccess(history);
    expect(history.messages.map((m: any) => m.id)).toEqual(ids);
    expect(history.found_newest).toBe(true);
  });

  it('creates and lists drafts, schedules a message, and the events reach a registered queue', async () => {
    const othello = await clientFor('othello');
    const queue = await othello.queues.register({ event_types: ['drafts', 'scheduled_messages'] });
    expectSuccess(queue);
    const created = await othello.callEndpoint('/drafts', 'POST', {
      drafts: JSON.stringify([{ type: 'private', to: [env.users.hamlet.id], topic: '', content: 'draft from zulip-js', timestamp: 1700000000 }]),
    });
    expectSuccess(created);
    const listed = await othello.callEndpoint('/drafts', 'GET', {});
    expectSuccess(listed);
    expect(listed.drafts.find((d: any) => d.id === created.ids[0])).toMatchObject({ content: 'draft from zulip-js', to: [env.users.hamlet.id] });
    const scheduled = await othello.callEndpoint('/scheduled_messages', 'POST', {
      type: 'direct',
      to: JSON.stringify([env.users.hamlet.id]),
      content: 'later from zulip-js',
      scheduled_delivery_timestamp: String(Math.floor(Date.now() / 1000) + 3600),
    });
    expectSuccess(scheduled);
    const answer = await othello.events.retrieve({ queue_id: queue.queue_id, last_event_id: queue.last_event_id, dont_block: 'true' });
    expectSuccess(answer);
    expect(answer.events.map((e: any) => `${e.type}/${e.op}`)).toEqual(['drafts/add', 'scheduled_messages/add']);
  });

  it('changes settings (sent in the query string, as zulip-js sends PATCH parameters)', async () => {
    const cordelia = await clientFor('cordelia');
    expectSuccess(await cordelia.callEndpoint('/settings', 'PATCH', { twenty_four_hour_time: 'true', emojiset: 'text' }));
    const request = lastRequest('PATCH', '/settings');
    expect(request.url).toContain('twenty_four_hour_time=true');
    const state = await cordelia.queues.register({ fetch_event_types: JSON.stringify(['user_settings']), client_capabilities: JSON.stringify({ user_settings_object: true }) });
    expectSuccess(state);
    expect(state.user_settings).toMatchObject({ twenty_four_hour_time: true, emojiset: 'text' });
  });
});

describe('deleting a message with zulip-js', () => {
  it('messages.deleteById (DELETE, message_id in the path and the query string), with the delete_message event', async () => {
    const hamlet = await clientFor('hamlet');
    const othello = await clientFor('othello');
    const sent = await hamlet.messages.send({ to: JSON.stringify([env.users.othello.id]), type: 'private', content: 'delete me' });
    expectSuccess(sent);
    const queue = await othello.queues.register({ event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
    expectSuccess(queue);
    expectSuccess(await hamlet.messages.deleteById({ message_id: sent.id }));
    const removal = lastRequest('DELETE', `/messages/${sent.id}`);
    expect(removal.body.length).toBe(0);
    const answer = await othello.events.retrieve({ queue_id: queue.queue_id, last_event_id: queue.last_event_id, dont_block: 'true' });
    expectSuccess(answer);
    expect(answer.events).toEqual([{ id: expect.any(Number), type: 'delete_message', message_type: 'private', message_ids: [sent.id] }]);
    expect(await hamlet.messages.deleteById({ message_id: sent.id })).toMatchObject({ result: 'error', msg: 'Invalid message(s)' });
  });
});
