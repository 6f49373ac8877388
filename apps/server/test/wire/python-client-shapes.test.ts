// Requests shaped exactly as the Python `zulip` package (python-zulip-api 0.9.x, on `requests`) sends
// them (zulip-clients.md): HTTP Basic auth; GET parameters in the query string; POST/PATCH/DELETE
// parameters as an application/x-www-form-urlencoded body (urllib's quote_plus); strings raw and every
// other value `json.dumps`-ed (", " and ": " separators, non-ASCII escaped); None dropped; a call
// without parameters sends no body and no Content-Type (requests adds `Content-Length: 0` on non-GET).
// Sent with node:http so that no fetch implementation adds or changes anything.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ParleyClient } from '@parley/client';
import { TEST_PASSWORD, type Person } from '../helpers/fixtures.ts';
import { expectJsonError, useTestServer } from '../helpers/test-server.ts';
import { basicAuth, fetchApiKey } from '../helpers/auth.ts';

const env = useTestServer();

// ---------------------------------------------------------------------------------------------
// The Python client's encoding
// ---------------------------------------------------------------------------------------------

/** Python's json.dumps defaults: separators (', ', ': '), ensure_ascii=True. Integers only. */
function jsonDumps(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new Error('jsonDumps: floats are not used here');
    return String(value);
  }
  if (typeof value === 'string') {
    return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  }
  if (Array.isArray(value)) return `[${value.map(jsonDumps).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${jsonDumps(k)}: ${jsonDumps(v)}`)
      .join(', ')}}`;
  }
  throw new Error(`jsonDumps: unsupported ${typeof value}`);
}

/** urllib.parse.quote_plus: only A-Z a-z 0-9 _ . - ~ stay as they are; space becomes +. */
function quotePlus(s: string): string {
  return encodeURIComponent(s)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, '+');
}

/** zulip.Client.do_api_query: strings raw, everything else json.dumps; None dropped; urlencode. */
function pythonEncode(request: Record<string, unknown>): string {
  return Object.entries(request)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => `${quotePlus(k)}=${quotePlus(typeof v === 'string' ? v : jsonDumps(v))}`)
    .join('&');
}

interface PyResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

interface Credentials {
  email: string;
  apiKey: string;
}

/** One request as `client.call_endpoint(url, method, request)` puts it on the wire. */
function pythonCall(credentials: Credentials, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, request: Record<string, unknown> = {}): Promise<PyResponse> {
  const encoded = pythonEncode(request);
  let path = `/api/v1/${url}`;
  const headers: Record<string, string> = {
    'User-Agent': 'ZulipPython/0.9.0 (Linux; 6.1.0)',
    'Accept-Encoding': 'identity',
    Accept: '*/*',
    Connection: 'keep-alive',
  };
  let body: Buffer | null = null;
  if (method === 'GET') {
    if (encoded) path += `?${encoded}`;
  } else if (encoded) {
    body = Buffer.from(encoded, 'utf8');
    headers['Content-Length'] = String(body.length);
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  } else {
    headers['Content-Length'] = '0'; // requests: no data → no Content-Type, Content-Length 0
  }
  headers.Authorization = basicAuth(credentials.email, credentials.apiKey);

  const target = new URL(path, env.url);
  return new Promise((resolve, reject) => {
    const req = http.request(target, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any = text;
        try {
          parsed = JSON.parse(text);
        } catch {}
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body) req.write(body);
    req.end();
  });
}

const as = (person: Person): Credentials => env.users[person];

function expectSuccess(res: PyResponse): void {
  if (res.status !== 200 || res.body?.result !== 'success') {
    throw new Error(`expected success, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  expect(res.body.msg).toBe('');
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
}

async function userById(client: ParleyClient, id: number) {
  const { data, error } = await client.GET('/users/{user_id}', { params: { path: { user_id: id } } });
  if (!data) throw new Error(`GET /users/${id} failed: ${JSON.stringify(error)}`);
  return data.user;
}

/** A fresh account: create_user as iago (Python shape), key through /fetch_api_key. */
async function freshUser(): Promise<Credentials & { id: number }> {
  const email = `py-${randomUUID().slice(0, 8)}@parley.test`;
  const created = await pythonCall(as('iago'), 'POST', 'users', { email, password: TEST_PASSWORD, full_name: 'Python Newcomer' });
  expectSuccess(created);
  return { id: created.body.user_id, email, apiKey: await fetchApiKey(env, email) };
}

// ---------------------------------------------------------------------------------------------

describe('the encoder itself (so the shapes below are the real ones)', () => {
  it('matches what requests + json.dumps put on the wire', () => {
    expect(pythonEncode({ client_gravatar: true })).toBe('client_gravatar=true');
    expect(pythonEncode({ full_name: 'Prinz Hämlet', role: 200, skip: null })).toBe('full_name=Prinz+H%C3%A4mlet&role=200');
    expect(pythonEncode({ to: [10, 11] })).toBe('to=%5B10%2C+11%5D');
    expect(pythonEncode({ profile_data: [{ id: 3, value: 'é' }] })).toBe(
      'profile_data=%5B%7B%22id%22%3A+3%2C+%22value%22%3A+%22%5Cu00e9%22%7D%5D',
    );
  });
});

describe('client start-up', () => {
  it('GET /server_settings with Basic auth reports zulip_version and a feature level ≥ 106 (no double-encoding)', async () => {
    const res = await pythonCall(as('hamlet'), 'GET', 'server_settings');
    expectSuccess(res);
    expect(typeof res.body.zulip_version).toBe('string');
    expect(res.body.zulip_version.length).toBeGreaterThan(0);
    expect(Number.isInteger(res.body.zulip_feature_level)).toBe(true);
    expect(res.body.zulip_feature_level).toBeGreaterThanOrEqual(106);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
  });
});

describe('list users: client.get_members({"client_gravatar": True})', () => {
  it('GET /users?client_gravatar=true lists every person', async () => {
    const res = await pythonCall(as('hamlet'), 'GET', 'users', { client_gravatar: true });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    const byId = new Map<number, any>(res.body.members.map((m: any) => [m.user_id, m]));
    for (const person of ['desdemona', 'iago', 'shiva', 'hamlet', 'othello', 'cordelia', 'polonius'] as const) {
      const member = byId.get(env.users[person].id);
      expect(member, person).toBeDefined();
      expect(member.is_active).toBe(true);
    }
    expect(byId.get(env.users.desdemona.id)).toMatchObject({ role: 100, is_owner: true, is_admin: true });
    expect(byId.get(env.users.polonius.id)).toMatchObject({ role: 600, is_guest: true });
    // client_gravatar=true: gravatar avatars are left to the client
    expect(byId.get(env.users.hamlet.id).avatar_url).toBeNull();
  });

  it('GET /users?client_gravatar=false&include_custom_profile_fields=true', async () => {
    const res = await pythonCall(as('hamlet'), 'GET', 'users', { client_gravatar: false, include_custom_profile_fields: true });
    expectSuccess(res);
    const hamlet = res.body.members.find((m: any) => m.user_id === env.users.hamlet.id);
    expect(typeof hamlet.avatar_url).toBe('string');
    expect(hamlet).toHaveProperty('profile_data');
  });

  it('get_user_by_id(id, include_custom_profile_fields=True)', async () => {
    const res = await pythonCall(as('hamlet'), 'GET', `users/${env.users.othello.id}`, { include_custom_profile_fields: true });
    expectSuccess(res);
    expect(res.body.user).toMatchObject({ user_id: env.users.othello.id, email: expect.any(String), profile_data: expect.any(Object) });
  });
});

describe('edit a user as the owner: client.update_user_by_id(id, full_name=…, role=…)', () => {
  it('PATCH /users/{id} full_name=…&role=200 (form body) changes both', async () => {
    const target = await freshUser();
    const res = await pythonCall(as('desdemona'), 'PATCH', `users/${target.id}`, { full_name: 'Prinz Hämlet + Co', role: 200 });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    const user = await userById(env.client('iago'), target.id);
    expect(user).toMatchObject({ full_name: 'Prinz Hämlet + Co', role: 200, is_admin: true });
  });

  it('PATCH /users/{id} role=100 makes a second owner (owner-only change)', async () => {
    const target = await freshUser();
    const res = await pythonCall(as('desdemona'), 'PATCH', `users/${target.id}`, { role: 100 });
    expectSuccess(res);
    expect(await userById(env.client('iago'), target.id)).toMatchObject({ role: 100, is_owner: true });
  });

  it('PATCH /users/{id} profile_data=json.dumps([{"id": f, "value": "…"}]) with spaces and \\u escapes', async () => {
    const field = await pythonCall(as('iago'), 'POST', 'realm/profile_fields', {
      name: `Python field ${randomUUID().slice(0, 6)}`,
      hint: 'Set from Python',
      field_type: 1,
    });
    expectSuccess(field);
    const target = await freshUser();
    const res = await pythonCall(as('desdemona'), 'PATCH', `users/${target.id}`, {
      profile_data: [{ id: field.body.id, value: 'Café owner' }],
    });
    expectSuccess(res);
    const { data } = await env.client('iago').GET('/users/{user_id}', {
      params: { path: { user_id: target.id }, query: { include_custom_profile_fields: true } },
    });
    expect(data?.user.profile_data?.[String(field.body.id)]?.value).toBe('Café owner');
  });

  it('an extra parameter echoing the path id (as update_stream sends stream_id) is ignored and reported', async () => {
    const target = await freshUser();
    const res = await pythonCall(as('desdemona'), 'PATCH', `users/${target.id}`, { user_id: target.id, full_name: 'Echoed Id' });
    expectSuccess(res);
    expect((await userById(env.client('iago'), target.id)).full_name).toBe('Echoed Id');
    expect(res.body.ignored_parameters_unsupported).toEqual(['user_id']);
  });

  it('other extra parameters are ignored and reported, sorted', async () => {
    const target = await freshUser();
    const res = await pythonCall(as('desdemona'), 'PATCH', `users/${target.id}`, { stream_id: 5, full_name: 'Extra Params', group_id: 7 });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['group_id', 'stream_id']);
    expect((await userById(env.client('iago'), target.id)).full_name).toBe('Extra Params');
  });

  it('update_stream({"stream_id": id, "description": …}): stream_id in the PATCH body is ignored and reported', async () => {
    const name = `python-${randomUUID().slice(0, 6)}`;
    // client.add_subscriptions(streams=[{"name": name}])
    const subscribed = await pythonCall(as('iago'), 'POST', 'users/me/subscriptions', { subscriptions: [{ name }] });
    expectSuccess(subscribed);
    // client.get_stream_id(name)
    const found = await pythonCall(as('iago'), 'GET', 'get_stream_id', { stream: name });
    expectSuccess(found);
    const streamId: number = found.body.stream_id;

    const res = await pythonCall(as('iago'), 'PATCH', `streams/${streamId}`, { stream_id: streamId, description: 'Set from Python' });
    expectSuccess(res);
    const { data } = await env.client('iago').GET('/streams/{stream_id}', { params: { path: { stream_id: streamId } } });
    expect(data?.stream.description).toBe('Set from Python');
    expect(res.body.ignored_parameters_unsupported).toEqual(['stream_id']);
  });

  it('update_user_group({"group_id": id, "name": …, "description": …}): group_id is ignored and reported', async () => {
    const name = `py-group-${randomUUID().slice(0, 6)}`;
    // client.create_user_group({"name": …, "description": …, "members": [ids]})
    const created = await pythonCall(as('iago'), 'POST', 'user_groups/create', {
      name,
      description: 'Made from Python',
      members: [env.users.hamlet.id, env.users.othello.id],
    });
    expectSuccess(created);
    const groupId: number = created.body.group_id;

    const renamed = `${name}-renamed`;
    const res = await pythonCall(as('iago'), 'PATCH', `user_groups/${groupId}`, { group_id: groupId, name: renamed, description: 'Renamed from Python' });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['group_id']);
    const groups = await pythonCall(as('iago'), 'GET', 'user_groups');
    expectSuccess(groups);
    expect(groups.body.user_groups.find((g: any) => g.id === groupId)).toMatchObject({ name: renamed, description: 'Renamed from Python' });
  });

  it('a non-owner cannot grant the owner role: 400 UNAUTHORIZED_PRINCIPAL', async () => {
    const target = await freshUser();
    const res = await pythonCall(as('iago'), 'PATCH', `users/${target.id}`, { role: 100 });
    expectJsonError(res, 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await userById(env.client('iago'), target.id)).role).toBe(400);
  });
});

describe('deactivate an account: client.call_endpoint(url="users/me", method="DELETE")', () => {
  it('DELETE /users/me with no body and no Content-Type, then every authenticated call is 401 Account is deactivated', async () => {
    const me = await freshUser();
    const before = await pythonCall(me, 'GET', 'users/me');
    expectSuccess(before);
    expect(before.body.user_id).toBe(me.id);

    const res = await pythonCall(me, 'DELETE', 'users/me');
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await userById(env.client('iago'), me.id)).is_active).toBe(false);

    // Public: a new zulip.Client(...) with this zuliprc is built fine, and its first real call gets 401.
    expectSuccess(await pythonCall(me, 'GET', 'server_settings'));
    for (const [method, url] of [
      ['GET', 'users/me'],
      ['DELETE', 'users/me'],
    ] as const) {
      const after = await pythonCall(me, method, url);
      expect(after.status, `${method} ${url}`).toBe(401);
      expect(after.body).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
      expect(after.headers['www-authenticate']).toBe('Basic realm="zulip"');
    }
  });

  it('deactivate_user_by_id / reactivate_user_by_id: bodyless DELETE and POST by an administrator', async () => {
    const target = await freshUser();
    const off = await pythonCall(as('iago'), 'DELETE', `users/${target.id}`);
    expectSuccess(off);
    expect((await userById(env.client('iago'), target.id)).is_active).toBe(false);
    const denied = await pythonCall(target, 'GET', 'users/me');
    expectJsonError(denied, 401, 'Account is deactivated');

    const on = await pythonCall(as('iago'), 'POST', `users/${target.id}/reactivate`);
    expectSuccess(on);
    expect((await userById(env.client('iago'), target.id)).is_active).toBe(true);
    expectSuccess(await pythonCall(target, 'GET', 'users/me'));
  });
});
