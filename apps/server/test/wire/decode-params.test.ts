// Zulip's wire format as the server decodes it (zulip-behaviours.md §0, zulip-clients.md): where
// parameters may arrive (form body, multipart body, empty multipart, no body, query string on every
// method), how JSON-encoded parameters are parsed and checked, `ignored_parameters_unsupported`, and
// the JSON envelope of every routing / decoding / validation failure. Raw HTTP throughout.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_PASSWORD } from '../helpers/fixtures.ts';
import { expectJsonError, useTestServer, type TestServer } from '../helpers/test-server.ts';
import { basicAuth } from '../helpers/auth.ts';

const env = useTestServer();

type Fields = Record<string, string>;
type Raw = Awaited<ReturnType<TestServer['raw']>>;

/** Body encodings real clients use. */
const enc = {
  form: (fields: Fields): RequestInit => ({
    body: new URLSearchParams(fields).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  }),
  formCharset: (fields: Fields): RequestInit => ({
    body: new URLSearchParams(fields).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
  }),
  multipart: (fields: Fields): RequestInit => {
    const fd = new FormData();
    for (const [k, v] of Object.entries(fields)) fd.append(k, v);
    return { body: fd }; // fetch sets multipart/form-data; boundary=…
  },
  /** zulip-js's no-parameter POST: multipart Content-Type, empty body, content-length 0. */
  emptyMultipart: (): RequestInit => ({
    body: '',
    headers: { 'Content-Type': 'multipart/form-data; boundary=----parleyEmptyBoundary' },
  }),
  /** The Python client's no-parameter call: no body, no Content-Type. */
  none: (): RequestInit => ({}),
};

function qs(fields: Fields): string {
  return `?${new URLSearchParams(fields).toString()}`;
}

/** Every error response: JSON, result=error, a string msg; no HTML, stack trace or raw validator text. */
function expectCleanError(res: Raw): void {
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(typeof res.body).toBe('object');
  expect(res.body.result).toBe('error');
  expect(typeof res.body.msg).toBe('string');
  expect(res.body.msg).not.toMatch(/must (be|have|NOT|match|equal)|\/body\/|request\/body|\.ts:\d|at .*\(|Error:|<html|<!DOCTYPE/i);
  expect(res.body).not.toHaveProperty('stack');
  expect(res.body).not.toHaveProperty('errors');
  expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
}

function expectSuccess(res: Raw): void {
  if (res.status !== 200 || res.body?.result !== 'success') {
    throw new Error(`expected success, got ${res.status} ${JSON.stringify(res.body)}`);
  }
  expect(res.body.msg).toBe('');
}

async function getUser(id: number, query = ''): Promise<any> {
  const res = await env.raw(`/users/${id}${query}`, { as: 'iago' });
  expectSuccess(res);
  return res.body.user;
}

/** A fresh member created by iago (form body), with its own API key from /fetch_api_key. */
async function throwawayUser(): Promise<{ id: number; email: string; apiKey: string; auth: string }> {
  const email = `throwaway-${randomUUID().slice(0, 8)}@parley.test`;
  const created = await env.raw('/users', {
    method: 'POST',
    as: 'iago',
    ...enc.form({ email, password: TEST_PASSWORD, full_name: 'Throwaway Person' }),
  });
  expectSuccess(created);
  const key = await env.raw('/fetch_api_key', { method: 'POST', ...enc.form({ username: email, password: TEST_PASSWORD }) });
  expectSuccess(key);
  return {
    id: created.body.user_id,
    email,
    apiKey: key.body.api_key,
    auth: basicAuth(email, key.body.api_key),
  };
}

// ------------------------------------------------------------------------------------------------
// Where parameters may arrive
// ------------------------------------------------------------------------------------------------

describe('body encodings', () => {
  it.each([
    ['form-urlencoded', enc.form],
    ['form-urlencoded with ; charset=utf-8', enc.formCharset],
    ['multipart/form-data', enc.multipart],
  ] as const)('PATCH /users/{id} with a %s body is decoded (spaces, plus, ampersand, equals, percent and non-ASCII survive)', async (_label, encode) => {
    const target = await throwawayUser();
    const name = `A&B = 100% + ü ${randomUUID().slice(0, 4)}`;
    const res = await env.raw(`/users/${target.id}`, { method: 'PATCH', as: 'iago', ...encode({ full_name: name }) });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(target.id)).full_name).toBe(name);
  });

  it('POST /users with a multipart body (zulip-js) creates the user', async () => {
    const email = `multipart-${randomUUID().slice(0, 8)}@parley.test`;
    const res = await env.raw('/users', {
      method: 'POST',
      as: 'iago',
      ...enc.multipart({ email, password: TEST_PASSWORD, full_name: 'Multi Part' }),
    });
    expectSuccess(res);
    expect(Number.isInteger(res.body.user_id)).toBe(true);
    const user = await getUser(res.body.user_id);
    expect(user).toMatchObject({ full_name: 'Multi Part', is_active: true, role: 400 });
  });

  it.each([
    ['an EMPTY multipart body with content-length 0 (zulip-js)', enc.emptyMultipart],
    ['no body and no Content-Type (python zulip)', enc.none],
  ] as const)('POST /users/{id}/reactivate with %s counts as "no parameters"', async (_label, encode) => {
    const target = await throwawayUser();
    expectSuccess(await env.raw(`/users/${target.id}`, { method: 'DELETE', as: 'iago' }));
    expect((await getUser(target.id)).is_active).toBe(false);

    const res = await env.raw(`/users/${target.id}/reactivate`, { method: 'POST', as: 'iago', ...encode() });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(target.id)).is_active).toBe(true);
  });

  it('an EMPTY multipart body is "no parameters" for validation too: Missing \'op\', not a body error', async () => {
    const res = await env.raw('/typing', { method: 'POST', as: 'hamlet', ...enc.emptyMultipart() });
    expectJsonError(res, 400, "Missing 'op' argument", 'REQUEST_VARIABLE_MISSING');
    expect(res.body.var_name).toBe('op');
    expectCleanError(res);
  });

  it('bodyless DELETE /users/me with no Content-Type deactivates the caller, whose key then fails', async () => {
    const me = await throwawayUser();
    const res = await env.raw('/users/me', { method: 'DELETE', headers: { Authorization: me.auth } });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(me.id)).is_active).toBe(false);
    const after = await env.raw('/users/me', { headers: { Authorization: me.auth } });
    expectJsonError(after, 401, 'Account is deactivated');
    expectCleanError(after);
  });
});

describe('query-string parameters on every method', () => {
  it('GET: /users?user_ids=[…] limits the listing', async () => {
    const { hamlet, othello } = env.users;
    const res = await env.raw(`/users${qs({ user_ids: JSON.stringify([hamlet.id, othello.id]) })}`, { as: 'cordelia' });
    expectSuccess(res);
    expect(res.body.members.map((m: any) => m.user_id).sort((a: number, b: number) => a - b)).toEqual(
      [hamlet.id, othello.id].sort((a, b) => a - b),
    );
  });

  it('POST: /users?email=…&password=…&full_name=… with no body creates the user', async () => {
    const email = `query-post-${randomUUID().slice(0, 8)}@parley.test`;
    const res = await env.raw(`/users${qs({ email, password: TEST_PASSWORD, full_name: 'Query Poster' })}`, {
      method: 'POST',
      as: 'iago',
    });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect(await getUser(res.body.user_id)).toMatchObject({ full_name: 'Query Poster', is_active: true });
  });

  it('POST: a query-string op is validated (POST /typing?op=bogus → Invalid op)', async () => {
    const res = await env.raw(`/typing${qs({ op: 'bogus', to: '[1]' })}`, { method: 'POST', as: 'hamlet' });
    expectJsonError(res, 400, 'Invalid op', 'BAD_REQUEST');
    expectCleanError(res);
  });

  it('PATCH: /users/{id}?full_name=Query+Name (a + is a space) with no body', async () => {
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}?full_name=Query+Name%21`, { method: 'PATCH', as: 'iago' });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(target.id)).full_name).toBe('Query Name!');
  });

  it('PATCH: JSON parameters in the query string (role=200)', async () => {
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}${qs({ role: '200' })}`, { method: 'PATCH', as: 'desdemona' });
    expectSuccess(res);
    expect((await getUser(target.id)).role).toBe(200);
  });

  it('DELETE: /users/{id}?deactivation_notification_comment=… is a known parameter', async () => {
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}${qs({ deactivation_notification_comment: 'bye now' })}`, {
      method: 'DELETE',
      as: 'iago',
    });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(target.id)).is_active).toBe(false);
  });

  it('DELETE: /users/me?zzz=1&aaa=2 reads the query (every param of a no-parameter endpoint is ignored)', async () => {
    const me = await throwawayUser();
    const res = await env.raw(`/users/me${qs({ zzz: '1', aaa: '2' })}`, { method: 'DELETE', headers: { Authorization: me.auth } });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['aaa', 'zzz']);
    expect((await getUser(me.id)).is_active).toBe(false);
  });
});

describe('body wins over the query string for the same name', () => {
  it.each([
    ['form', enc.form],
    ['multipart', enc.multipart],
  ] as const)('PATCH /users/{id}?full_name=FromQuery with %s body full_name=FromBody', async (_label, encode) => {
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}${qs({ full_name: 'From Query' })}`, {
      method: 'PATCH',
      as: 'iago',
      ...encode({ full_name: 'From Body' }),
    });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
    expect((await getUser(target.id)).full_name).toBe('From Body');
  });

  it('POST /typing?op=start with body op=bogus → Invalid op (the body value is the one validated)', async () => {
    const res = await env.raw(`/typing${qs({ op: 'start' })}`, { method: 'POST', as: 'hamlet', ...enc.form({ op: 'bogus', to: '[1]' }) });
    expectJsonError(res, 400, 'Invalid op', 'BAD_REQUEST');
    expectCleanError(res);
  });

  it('POST /typing?op=bogus with body op=start passes validation (reaches the handler)', async () => {
    const { othello } = env.users;
    const res = await env.raw(`/typing${qs({ op: 'bogus' })}`, {
      method: 'POST',
      as: 'hamlet',
      ...enc.form({ op: 'start', to: JSON.stringify([othello.id]) }),
    });
    // Served; never a validation error about op.
    expectSuccess(res);
  });
});

// ------------------------------------------------------------------------------------------------
// JSON-encoded parameters
// ------------------------------------------------------------------------------------------------

describe('JSON-encoded values', () => {
  it.each([
    ['without spaces', (a: number, b: number) => `[${a},${b}]`],
    ['with spaces (python json.dumps)', (a: number, b: number) => `[${a}, ${b}]`],
    ['with newlines and padding', (a: number, b: number) => ` [\n  ${a} ,\n  ${b}\n] `],
  ])('lists %s: user_ids', async (_label, render) => {
    const { cordelia, polonius } = env.users;
    const res = await env.raw(`/users${qs({ user_ids: render(cordelia.id, polonius.id) })}`, { as: 'hamlet' });
    expectSuccess(res);
    expect(res.body.members.map((m: any) => m.user_id).sort((a: number, b: number) => a - b)).toEqual(
      [cordelia.id, polonius.id].sort((a, b) => a - b),
    );
  });

  it('objects inside lists, with and without spaces: profile_data', async () => {
    const field = await env.raw('/realm/profile_fields', {
      method: 'POST',
      as: 'iago',
      ...enc.form({ name: `Wire ${randomUUID().slice(0, 6)}`, field_type: '1' }),
    });
    expectSuccess(field);
    const fieldId: number = field.body.id;
    const target = await throwawayUser();

    const spaced = await env.raw(`/users/${target.id}`, {
      method: 'PATCH',
      as: 'iago',
      ...enc.form({ profile_data: `[{"id": ${fieldId}, "value": "spaced value"}]` }),
    });
    expectSuccess(spaced);
    let user = await getUser(target.id, '?include_custom_profile_fields=true');
    expect(user.profile_data?.[String(fieldId)]?.value).toBe('spaced value');

    const compact = await env.raw(`/users/${target.id}`, {
      method: 'PATCH',
      as: 'iago',
      ...enc.form({ profile_data: JSON.stringify([{ id: fieldId, value: 'compact value' }]) }),
    });
    expectSuccess(compact);
    user = await getUser(target.id, '?include_custom_profile_fields=true');
    expect(user.profile_data?.[String(fieldId)]?.value).toBe('compact value');
  });

  it('booleans true / false are honoured (client_gravatar, include_custom_profile_fields)', async () => {
    const id = env.users.hamlet.id;
    const withGravatar = await getUser(id, qs({ client_gravatar: 'false', include_custom_profile_fields: 'true' }));
    expect(typeof withGravatar.avatar_url).toBe('string');
    expect(withGravatar).toHaveProperty('profile_data');
    const without = await getUser(id, qs({ client_gravatar: 'true', include_custom_profile_fields: 'false' }));
    expect(without.avatar_url).toBeNull();
    expect(without).not.toHaveProperty('profile_data');
  });

  it('plain-string parameters are taken raw, never JSON-decoded (full_name=true, =12345, =[1, 2])', async () => {
    const target = await throwawayUser();
    for (const name of ['true', '12345', '[1, 2]', "{'a': 1}"]) {
      const res = await env.raw(`/users/${target.id}`, { method: 'PATCH', as: 'iago', ...enc.form({ full_name: name }) });
      expectSuccess(res);
      expect((await getUser(target.id)).full_name).toBe(name);
    }
  });
});

// ------------------------------------------------------------------------------------------------
// Validation errors (all 400, first failure only, Zulip's wording)
// ------------------------------------------------------------------------------------------------

interface ErrorCase {
  name: string;
  method: string;
  path: () => string;
  as?: 'hamlet' | 'iago' | 'desdemona';
  init?: () => RequestInit;
  status: number;
  msg: string;
  code?: string;
  extra?: Record<string, unknown>;
}

const hamletPath = () => `/users/${env.users.hamlet.id}`;
const draft = (over: Record<string, unknown> = {}) => ({ type: 'private', to: [], topic: '', content: 'hello', ...over });

const validationCases: ErrorCase[] = [
  // missing required
  { name: 'POST /typing without any body → Missing op', method: 'POST', path: () => '/typing', init: enc.none, status: 400, msg: "Missing 'op' argument", code: 'REQUEST_VARIABLE_MISSING', extra: { var_name: 'op' } },
  { name: 'POST /typing with form to=[…] but no op → Missing op', method: 'POST', path: () => '/typing', init: () => enc.form({ to: '[1]' }), status: 400, msg: "Missing 'op' argument", code: 'REQUEST_VARIABLE_MISSING', extra: { var_name: 'op' } },
  { name: 'POST /typing multipart without op → Missing op', method: 'POST', path: () => '/typing', init: () => enc.multipart({ to: '[1]' }), status: 400, msg: "Missing 'op' argument", code: 'REQUEST_VARIABLE_MISSING', extra: { var_name: 'op' } },
  { name: 'POST /typing with a JSON (application/json) body is not read → Missing op', method: 'POST', path: () => '/typing', init: () => ({ body: JSON.stringify({ op: 'start', to: [1] }), headers: { 'Content-Type': 'application/json' } }), status: 400, msg: "Missing 'op' argument", code: 'REQUEST_VARIABLE_MISSING', extra: { var_name: 'op' } },
  { name: 'POST /users as iago without full_name → Missing full_name', method: 'POST', path: () => '/users', as: 'iago', init: () => enc.form({ email: 'x-missing@parley.test', password: TEST_PASSWORD }), status: 400, msg: "Missing 'full_name' argument", code: 'REQUEST_VARIABLE_MISSING', extra: { var_name: 'full_name' } },
  // enum mismatch
  { name: 'POST /typing op=bogus (form) → Invalid op', method: 'POST', path: () => '/typing', init: () => enc.form({ op: 'bogus', to: '[1]' }), status: 400, msg: 'Invalid op', code: 'BAD_REQUEST' },
  { name: 'POST /typing op=bogus (multipart) → Invalid op', method: 'POST', path: () => '/typing', init: () => enc.multipart({ op: 'bogus', to: '[1]' }), status: 400, msg: 'Invalid op', code: 'BAD_REQUEST' },
  { name: 'POST /typing op=Start (case matters) → Invalid op', method: 'POST', path: () => '/typing', init: () => enc.form({ op: 'Start', to: '[1]' }), status: 400, msg: 'Invalid op', code: 'BAD_REQUEST' },
  { name: 'POST /typing type=bogus → Invalid type', method: 'POST', path: () => '/typing', init: () => enc.form({ type: 'bogus', op: 'start', to: '[1]' }), status: 400, msg: 'Invalid type', code: 'BAD_REQUEST' },
  { name: 'PATCH /users/{id} role=201 → Invalid role: Value error, Not in the list…', method: 'PATCH', path: hamletPath, as: 'desdemona', init: () => enc.form({ role: '201' }), status: 400, msg: 'Invalid role: Value error, Not in the list of possible values', code: 'BAD_REQUEST' },
  // booleans
  { name: 'GET /users?client_gravatar=True → not valid JSON', method: 'GET', path: () => `/users${qs({ client_gravatar: 'True' })}`, status: 400, msg: 'client_gravatar is not valid JSON', code: 'BAD_REQUEST' },
  { name: 'GET /users?client_gravatar=1 → not a boolean', method: 'GET', path: () => `/users${qs({ client_gravatar: '1' })}`, status: 400, msg: 'client_gravatar is not a boolean', code: 'BAD_REQUEST' },
  { name: 'GET /users?client_gravatar="true" → not a boolean', method: 'GET', path: () => `/users${qs({ client_gravatar: '"true"' })}`, status: 400, msg: 'client_gravatar is not a boolean', code: 'BAD_REQUEST' },
  { name: 'GET /users/{id}?include_custom_profile_fields=yes → not valid JSON', method: 'GET', path: () => `${hamletPath()}${qs({ include_custom_profile_fields: 'yes' })}`, status: 400, msg: 'include_custom_profile_fields is not valid JSON', code: 'BAD_REQUEST' },
  { name: 'GET /users/{id}?include_custom_profile_fields=null → not a boolean', method: 'GET', path: () => `${hamletPath()}${qs({ include_custom_profile_fields: 'null' })}`, status: 400, msg: 'include_custom_profile_fields is not a boolean', code: 'BAD_REQUEST' },
  { name: 'POST /realm/profile_fields required=1 → not a boolean', method: 'POST', path: () => '/realm/profile_fields', as: 'iago', init: () => enc.form({ name: 'Boolean check', field_type: '1', required: '1' }), status: 400, msg: 'required is not a boolean', code: 'BAD_REQUEST' },
  // integers
  { name: 'PATCH /users/{id} role="200" → not an integer', method: 'PATCH', path: hamletPath, as: 'desdemona', init: () => enc.form({ role: '"200"' }), status: 400, msg: 'role is not an integer', code: 'BAD_REQUEST' },
  { name: 'PATCH /users/{id} role=200.0 → not an integer', method: 'PATCH', path: hamletPath, as: 'desdemona', init: () => enc.form({ role: '200.0' }), status: 400, msg: 'role is not an integer', code: 'BAD_REQUEST' },
  { name: 'PATCH /users/{id} role=True → not valid JSON', method: 'PATCH', path: hamletPath, as: 'desdemona', init: () => enc.form({ role: 'True' }), status: 400, msg: 'role is not valid JSON', code: 'BAD_REQUEST' },
  { name: 'POST /realm/profile_fields field_type="1" → not an integer', method: 'POST', path: () => '/realm/profile_fields', as: 'iago', init: () => enc.form({ name: 'Int check', field_type: '"1"' }), status: 400, msg: 'field_type is not an integer', code: 'BAD_REQUEST' },
  { name: 'POST /realm/profile_fields field_type=1.0 → not an integer', method: 'POST', path: () => '/realm/profile_fields', as: 'iago', init: () => enc.form({ name: 'Float check', field_type: '1.0' }), status: 400, msg: 'field_type is not an integer', code: 'BAD_REQUEST' },
  { name: 'POST /typing stream_id="5" → not an integer', method: 'POST', path: () => '/typing', init: () => enc.form({ type: 'channel', op: 'start', stream_id: '"5"', topic: 't' }), status: 400, msg: 'stream_id is not an integer', code: 'BAD_REQUEST' },
  { name: 'POST /typing stream_id=5.0 → not an integer', method: 'POST', path: () => '/typing', init: () => enc.form({ type: 'channel', op: 'start', stream_id: '5.0', topic: 't' }), status: 400, msg: 'stream_id is not an integer', code: 'BAD_REQUEST' },
  // lists
  { name: 'GET /users?user_ids=5 → not a list', method: 'GET', path: () => `/users${qs({ user_ids: '5' })}`, status: 400, msg: 'user_ids is not a list', code: 'BAD_REQUEST' },
  { name: 'GET /users?user_ids={"a":1} → not a list', method: 'GET', path: () => `/users${qs({ user_ids: '{"a": 1}' })}`, status: 400, msg: 'user_ids is not a list', code: 'BAD_REQUEST' },
  { name: 'GET /users?user_ids=[1, "2"] → user_ids[1] not an integer', method: 'GET', path: () => `/users${qs({ user_ids: '[1, "2"]' })}`, status: 400, msg: 'user_ids[1] is not an integer', code: 'BAD_REQUEST' },
  { name: 'GET /users?user_ids=[1,2.5] → user_ids[1] not an integer', method: 'GET', path: () => `/users${qs({ user_ids: '[1,2.5]' })}`, status: 400, msg: 'user_ids[1] is not an integer', code: 'BAD_REQUEST' },
  { name: 'GET /users?user_ids=[1, 2 → not valid JSON', method: 'GET', path: () => `/users${qs({ user_ids: '[1, 2' })}`, status: 400, msg: 'user_ids is not valid JSON', code: 'BAD_REQUEST' },
  { name: 'POST /typing to=5 → to is not a list', method: 'POST', path: () => '/typing', init: () => enc.form({ op: 'start', to: '5' }), status: 400, msg: 'to is not a list', code: 'BAD_REQUEST' },
  { name: 'POST /typing to=[1, "a"] → to[1] is not an integer', method: 'POST', path: () => '/typing', init: () => enc.form({ op: 'start', to: '[1, "a"]' }), status: 400, msg: 'to[1] is not an integer', code: 'BAD_REQUEST' },
  { name: 'PATCH /users/{id} profile_data={"id":1} → not a list', method: 'PATCH', path: hamletPath, as: 'iago', init: () => enc.form({ profile_data: '{"id": 1, "value": "x"}' }), status: 400, msg: 'profile_data is not a list', code: 'BAD_REQUEST' },
  // nested names (POST /drafts)
  { name: 'POST /drafts drafts=nope → not valid JSON', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: 'nope' }), status: 400, msg: 'drafts is not valid JSON', code: 'BAD_REQUEST' },
  { name: 'POST /drafts drafts={} → not a list', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: '{}' }), status: 400, msg: 'drafts is not a list', code: 'BAD_REQUEST' },
  { name: 'POST /drafts drafts=[1] → drafts[0] is not a dict', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: '[1]' }), status: 400, msg: 'drafts[0] is not a dict', code: 'BAD_REQUEST' },
  { name: 'POST /drafts type=bogus → Invalid drafts[0]["type"]', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: JSON.stringify([draft({ type: 'bogus' })]) }), status: 400, msg: 'Invalid drafts[0]["type"]', code: 'BAD_REQUEST' },
  { name: 'POST /drafts second draft to=["a"] → drafts[1]["to"][0] is not an integer', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: JSON.stringify([draft(), draft({ to: ['a'] })]) }), status: 400, msg: 'drafts[1]["to"][0] is not an integer', code: 'BAD_REQUEST' },
  { name: 'POST /drafts content=7 → drafts[0]["content"] is not a string', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: JSON.stringify([draft({ content: 7 })]) }), status: 400, msg: 'drafts[0]["content"] is not a string', code: 'BAD_REQUEST' },
  { name: 'POST /drafts with an id key → Argument "id" at drafts[0]["id"] is unexpected', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: JSON.stringify([draft({ id: 3 })]) }), status: 400, msg: 'Argument "id" at drafts[0]["id"] is unexpected', code: 'BAD_REQUEST' },
  { name: 'POST /drafts content="" → drafts[0]["content"] cannot be blank', method: 'POST', path: () => '/drafts', init: () => enc.form({ drafts: JSON.stringify([draft({ content: '' })]) }), status: 400, msg: 'drafts[0]["content"] cannot be blank', code: 'BAD_REQUEST' },
];

describe('validation errors', () => {
  it.each(validationCases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const res = await env.raw(c.path(), { method: c.method, as: c.as ?? 'hamlet', ...(c.init?.() ?? {}) });
    expectJsonError(res, c.status, c.msg, c.code);
    if (c.extra) expect(res.body).toMatchObject(c.extra);
    expectCleanError(res);
  });

  it('topic and its alias subject together → REQUEST_CONFUSING_VAR', async () => {
    const res = await env.raw('/typing', {
      method: 'POST',
      as: 'hamlet',
      ...enc.form({ type: 'channel', op: 'start', stream_id: '1', topic: 'a', subject: 'b' }),
    });
    expectJsonError(res, 400, "Can't decide between 'topic' and 'subject' arguments", 'REQUEST_CONFUSING_VAR');
    expect(res.body).toMatchObject({ var_name1: 'topic', var_name2: 'subject' });
    expectCleanError(res);
  });

  it('a repeated name takes its last value, as Django QueryDict does (body op=bogus&op=start passes)', async () => {
    const { othello } = env.users;
    const res = await env.raw('/typing', {
      method: 'POST',
      as: 'hamlet',
      body: `op=bogus&op=start&to=${encodeURIComponent(JSON.stringify([othello.id]))}`,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expectSuccess(res);
  });

  it('auth comes before parameters: bad credentials with bad params → 401, not 400', async () => {
    const res = await env.raw(`/users${qs({ client_gravatar: 'True' })}`, {
      headers: { Authorization: basicAuth('hamlet@parley.test', 'x'.repeat(32)) },
    });
    expectJsonError(res, 401, 'Invalid API key', 'UNAUTHORIZED');
    expectCleanError(res);
  });
});

// ------------------------------------------------------------------------------------------------
// ignored_parameters_unsupported
// ------------------------------------------------------------------------------------------------

describe('ignored_parameters_unsupported', () => {
  it('unknown body and query names are ignored and listed, sorted, once each (PATCH)', async () => {
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}${qs({ middle: 'q', both: 'q' })}`, {
      method: 'PATCH',
      as: 'iago',
      ...enc.form({ zeta: '1', full_name: 'Ignored Params', alpha: '[1, 2]', both: 'b' }),
    });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['alpha', 'both', 'middle', 'zeta']);
    expect((await getUser(target.id)).full_name).toBe('Ignored Params');
  });

  it('on GET too (GET /users?client_gravatar=true&foo=bar&Foo=baz)', async () => {
    const res = await env.raw('/users?client_gravatar=true&foo=bar&Foo=baz', { as: 'hamlet' });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['Foo', 'foo']);
  });

  it('in a multipart body (POST /users with an extra field)', async () => {
    const email = `ignored-${randomUUID().slice(0, 8)}@parley.test`;
    const res = await env.raw('/users', {
      method: 'POST',
      as: 'iago',
      ...enc.multipart({ email, password: TEST_PASSWORD, full_name: 'Ignored Multi', role: '200' }),
    });
    expectSuccess(res);
    expect(res.body.ignored_parameters_unsupported).toEqual(['role']);
  });

  it('absent when every parameter is used', async () => {
    const res = await env.raw('/users?client_gravatar=false&include_custom_profile_fields=false', { as: 'hamlet' });
    expectSuccess(res);
    expect(res.body).not.toHaveProperty('ignored_parameters_unsupported');
  });

  it('a body parameter named like the path parameter (user_id) is not a request parameter: listed', async () => {
    // Zulip's path-only parameters are never "processed" request parameters, so a client echoing the
    // id in the body (the Python client's update_stream sends stream_id) sees it reported.
    const target = await throwawayUser();
    const res = await env.raw(`/users/${target.id}`, {
      method: 'PATCH',
      as: 'iago',
      ...enc.form({ user_id: String(target.id), full_name: 'Path Echo' }),
    });
    expectSuccess(res);
    expect((await getUser(target.id)).full_name).toBe('Path Echo');
    expect(res.body.ignored_parameters_unsupported).toEqual(['user_id']);
  });

  it.each([
    ['a validation error', () => ['PATCH', hamletPath(), 'desdemona', enc.form({ role: '"200"', zzz: '1' })] as const, 400, 'role is not an integer'],
    ['a missing argument', () => ['POST', '/typing', 'hamlet', enc.form({ zzz: '1' })] as const, 400, "Missing 'op' argument"],
    ['a handler error', () => ['PATCH', '/users/987654', 'iago', enc.form({ full_name: 'Nobody Here', zzz: '1' })] as const, 400, 'No such user'],
  ])('never on errors: %s', async (_label, make, status, msg) => {
    const [method, path, as, init] = make();
    const res = await env.raw(`${path}?qqq=1`, { method, as, ...init });
    expectJsonError(res, status as number, msg as string);
    expectCleanError(res);
  });
});

// ------------------------------------------------------------------------------------------------
// Routing: unknown routes, wrong methods, non-numeric ids
// ------------------------------------------------------------------------------------------------

describe('routing errors are JSON', () => {
  it.each([
    ['GET', '/no_such_endpoint'],
    ['POST', '/no_such_endpoint'],
    ['POST', '/users/abc/reactivate'],
    ['GET', '/users/12abc/status'],
    ['GET', '/users/me/no_such_thing'],
  ])('%s %s → 404 JSON envelope', async (method, path) => {
    const res = await env.raw(path, { method, as: 'hamlet' });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ result: 'error', msg: 'Not Found' });
    expectCleanError(res);
  });

  // A segment of other than digits after /users/ is an e-mail address (GET and PATCH /users/{user_id} take one), as in Zulip.
  it.each([
    ['GET', '/users/abc'],
    ['GET', '/users/12abc'],
    ['PATCH', '/users/abc'],
  ])('%s %s → No such user (an address naming nobody)', async (method, path) => {
    const res = await env.raw(path, { method, as: 'hamlet' });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
    expectCleanError(res);
  });

  it('DELETE /users/-1 → 405 JSON envelope (the address form has no DELETE)', async () => {
    const res = await env.raw('/users/-1', { method: 'DELETE', as: 'hamlet' });
    expect(res.status).toBe(405);
    expect(res.body).toMatchObject({ result: 'error', msg: 'Method Not Allowed', allowed_methods: ['GET', 'PATCH'] });
    expectCleanError(res);
  });

  it.each(['99999999999999999999', '2147483648'])('GET /users/%s (an id beyond any row) → No such user, not a 500', async (id) => {
    const res = await env.raw(`/users/${id}`, { as: 'hamlet' });
    expectJsonError(res, 400, 'No such user', 'BAD_REQUEST');
    expectCleanError(res);
  });

  it.each(['/api/v2/users', '/api/v1', '/nowhere', '/api/v1x/users'])('GET %s (outside the API) → 404 JSON', async (path) => {
    const response = await fetch(`${env.url}${path}`);
    const body = await response.json();
    expect(response.status).toBe(404);
    expect(body).toMatchObject({ result: 'error', msg: 'Not Found' });
    expect(response.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  });

  it.each([
    ['PUT', '/users', ['GET', 'POST']],
    ['DELETE', '/users', ['GET', 'POST']],
    ['DELETE', '/server_settings', ['GET']],
    ['POST', '/users/me', ['DELETE', 'GET']],
    ['PUT', '/typing', ['POST']],
    ['GET', '/typing', ['POST']],
    ['POST', '/users/12', ['DELETE', 'GET', 'PATCH']],
    ['GET', '/users/12/reactivate', ['POST']],
  ] as const)('%s %s → 405 with allowed_methods (and a code, as every error)', async (method, path, allowed) => {
    for (const as of ['hamlet', undefined] as const) {
      const res = await env.raw(path, { method, ...(as ? { as } : {}) });
      expect(res.status).toBe(405);
      expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(['allowed_methods', 'code', 'msg', 'result']);
      expect(res.body.code).toBe('BAD_REQUEST');
      expect(res.headers.get('allow')).toBe([...allowed].sort().join(', '));
      expect(res.body.result).toBe('error');
      expect(res.body.msg).toBe('Method Not Allowed');
      expect([...res.body.allowed_methods].sort()).toEqual([...allowed].sort());
    }
  });
});

describe('malformed requests still answer the JSON envelope', () => {
  it.each<[string, () => RequestInit]>([
    ['a multipart Content-Type with a non-multipart body', () => ({ body: 'op=start', headers: { 'Content-Type': 'multipart/form-data; boundary=xyz' } })],
    ['a multipart Content-Type without a boundary', () => ({ body: 'op=start', headers: { 'Content-Type': 'multipart/form-data' } })],
    [
      'a multipart body carrying a file',
      () => {
        const fd = new FormData();
        fd.append('op', 'start');
        fd.append('upload', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
        return { body: fd };
      },
    ],
    ['a form body in an unsupported charset', () => ({ body: 'op=start', headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=klingon' } })],
  ])('POST /typing with %s', async (_label, init) => {
    const res = await env.raw('/typing', { method: 'POST', as: 'hamlet', ...init() });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expectCleanError(res);
  });
});
