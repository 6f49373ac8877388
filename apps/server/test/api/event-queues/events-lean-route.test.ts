// GET /events' lean route (src/http/events-route.ts): the usual re-poll is served without the pipeline's
// steps, and must answer exactly as the pipeline does. Each case sends the same request twice: as
// `/api/v1/events?…` (the route's form) and as `/api/v1//events?…`, a spelling the door accepts and
// brings to the same operation but which only the pipeline serves; the route's counter tells which
// one answered.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import client from 'prom-client';
import { eventsRouteFigures } from '../../../src/http/events-route.ts';
import { useTestServer, type TestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createAccount, deactivateUser } from '../../helpers/people.ts';
import { registerQueue } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';

const RATE_POINTS = 30;
const env = useTestServer({ rateLimit: { points: RATE_POINTS, durationSeconds: 60 } });

type Answer = Awaited<ReturnType<TestServer['raw']>>;
interface Caller {
  as?: Person;
  headers?: Record<string, string>;
}

/** The request as the route's form, then as the pipeline's; whether the route took the first. */
async function both(query: string, caller: Caller): Promise<{ lean: Answer; general: Answer; taken: number }> {
  const before = eventsRouteFigures.taken;
  const lean = await env.raw(`/events?${query}`, caller);
  const taken = eventsRouteFigures.taken - before;
  const general = await env.raw(`//events?${query}`, caller);
  expect(eventsRouteFigures.taken - before, 'the pipeline form is never taken').toBe(taken);
  return { lean, general, taken };
}

/** Status, body and the headers clients read; the rate-limit budget is one request apart. */
function expectSameAnswer(lean: Answer, general: Answer) {
  expect(lean.status).toBe(general.status);
  expect(lean.body).toEqual(general.body);
  for (const name of ['content-type', 'www-authenticate', 'x-ratelimit-limit']) expect(lean.headers.get(name), name).toBe(general.headers.get(name));
  const remaining = lean.headers.get('x-ratelimit-remaining');
  if (remaining !== null) expect(Number(general.headers.get('x-ratelimit-remaining'))).toBe(Math.max(0, Number(remaining) - 1));
  else expect(general.headers.get('x-ratelimit-remaining')).toBeNull();
  expect(lean.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
}

/** A GET with a form body (fetch refuses one), as some clients send. */
function getWithBody(path: string, body: string, authorization: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${env.url}${path}`, { method: 'GET', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const requestsCounted = async (status: number): Promise<number> => {
  const metric = client.register.getSingleMetric('parley_http_requests_total');
  const values = (await metric!.get()).values;
  return values.find((v) => v.labels['operation'] === 'get-events' && v.labels['status'] === String(status))?.value ?? 0;
};

describe('GET /events', () => {
  it('takes the usual re-poll and answers it as the pipeline does, headers and metrics included', async () => {
    const q = await registerQueue(env.client('hamlet'));
    const counted = await requestsCounted(200);
    const { lean, general, taken } = await both(`queue_id=${q.queue_id}&last_event_id=${q.last_event_id}&dont_block=true`, { as: 'hamlet' });
    expect(taken).toBe(1);
    expect(lean.status).toBe(200);
    expect(lean.body).toEqual({ result: 'success', msg: '', events: [], queue_id: q.queue_id });
    expectSameAnswer(lean, general);
    expect(await requestsCounted(200)).toBe(counted + 2);
    // A request id the client gives is kept, as the pipeline keeps it.
    const named = await env.raw(`/events?queue_id=${q.queue_id}&dont_block=true`, { as: 'hamlet', headers: { 'X-Request-Id': 'poll-42.a:b' } });
    expect(named.headers.get('x-request-id')).toBe('poll-42.a:b');
  });

  it('answers BAD_EVENT_QUEUE_ID for an unknown queue and for another user’s queue', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    await registerQueue(env.client('othello')); // (the route serves headers that authenticated before)
    const a = await both(`queue_id=${unknown}&last_event_id=-1&dont_block=true`, { as: 'othello' });
    expect(a.taken).toBe(1);
    expect(a.lean.status).toBe(400);
    expect(a.lean.body).toEqual({ result: 'error', msg: `Bad event queue ID: ${unknown}`, code: 'BAD_EVENT_QUEUE_ID', queue_id: unknown });
    expectSameAnswer(a.lean, a.general);
    const hamlets = await registerQueue(env.client('hamlet'));
    const b = await both(`queue_id=${hamlets.queue_id}&dont_block=true`, { as: 'othello' });
    expect(b.taken).toBe(1);
    expect(b.lean.body.code).toBe('BAD_EVENT_QUEUE_ID');
    expectSameAnswer(b.lean, b.general);
  });

  it('leaves missing, malformed, unknown and repeated parameters to the pipeline, which answers them', async () => {
    const q = await registerQueue(env.client('cordelia'));
    const cases = [
      'last_event_id=-1&dont_block=true', // no queue_id
      `queue_id=${q.queue_id}&last_event_id=abc&dont_block=true`,
      `queue_id=${q.queue_id}&last_event_id=1.5&dont_block=true`,
      `queue_id=${q.queue_id}&last_event_id=&dont_block=true`,
      `queue_id=${q.queue_id}&dont_block=yes`,
      `queue_id=${q.queue_id}&dont_block=true&client_gravatar=true`, // unknown: ignored_parameters_unsupported
      `queue_id=${q.queue_id}&queue_id=${q.queue_id}&dont_block=true`,
      `queue_id=${q.queue_id.replace('-', '%2D')}&dont_block=true`,
    ];
    const statuses: number[] = [];
    for (const query of cases) {
      const { lean, general, taken } = await both(query, { as: 'cordelia' });
      expect(taken, query).toBe(0);
      expectSameAnswer(lean, general);
      statuses.push(lean.status);
    }
    expect(statuses).toEqual([400, 400, 400, 400, 400, 200, 200, 200]);
    // Parameters in a body (any method may carry one): the pipeline reads it, the route never takes it.
    const before = eventsRouteFigures.taken;
    const withBody = await getWithBody(`/api/v1/events?queue_id=${q.queue_id}&last_event_id=-1`, 'dont_block=yes', basicAuth(env.users.cordelia.email, env.users.cordelia.apiKey));
    expect(eventsRouteFigures.taken).toBe(before);
    expect(withBody.status).toBe(400);
    expect(withBody.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    const missing = await env.raw('/events?last_event_id=-1', { as: 'cordelia' });
    expect(missing.body).toMatchObject({ result: 'error', msg: "Missing 'queue_id' argument", code: 'REQUEST_VARIABLE_MISSING' });
  });

  it('leaves unknown, malformed and missing credentials to the pipeline, which refuses them', async () => {
    const q = await registerQueue(env.client('shiva'));
    const query = `queue_id=${q.queue_id}&dont_block=true`;
    const headers: Record<string, string>[] = [
      { authorization: basicAuth(env.users.shiva.email, 'A'.repeat(32)) },
      { authorization: basicAuth(env.users.hamlet.email, env.users.shiva.apiKey) },
      { authorization: 'Basic !!!' },
      { authorization: 'Bearer abc' },
      {},
    ];
    const statuses: number[] = [];
    for (const h of headers) {
      const { lean, general, taken } = await both(query, { headers: h });
      expect(taken).toBe(0);
      expectSameAnswer(lean, general);
      statuses.push(lean.status);
    }
    expect(statuses).toEqual([401, 401, 401, 400, 401]);
  });

  it('refuses a deactivated user as the pipeline does, though their header was known', async () => {
    const account = await createAccount(env, { label: 'lean-gone', fullName: 'Lean Gone' });
    const q = await registerQueue(account.client);
    const query = `queue_id=${q.queue_id}&dont_block=true`;
    expect((await both(query, { headers: { authorization: account.auth } })).taken).toBe(1);
    await deactivateUser(env, account.id);
    const { lean, general, taken } = await both(query, { headers: { authorization: account.auth } });
    expect(taken).toBe(0);
    expect(lean.status).toBe(401);
    expect(lean.body).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
    expectSameAnswer(lean, general);
  });

  it('counts polls against the rate limit with the pipeline’s key, and answers 429 as it does', async () => {
    const account = await createAccount(env, { label: 'lean-limit', fullName: 'Lean Limit' });
    const q = await registerQueue(account.client); // (one request of the budget)
    const poll = (path: string) => env.raw(`${path}?queue_id=${q.queue_id}&dont_block=true`, { headers: { authorization: account.auth } });
    const before = eventsRouteFigures.taken;
    const remaining: string[] = [];
    for (let i = 0; i < RATE_POINTS - 3; i++) remaining.push((await poll('/events')).headers.get('x-ratelimit-remaining')!);
    expect(eventsRouteFigures.taken - before).toBe(RATE_POINTS - 3);
    expect(remaining[0]).toBe(String(RATE_POINTS - 2));
    expect(remaining.at(-1)).toBe('2');
    expect((await poll('//events')).headers.get('x-ratelimit-remaining')).toBe('1'); // the pipeline, same budget
    expect((await poll('/events')).headers.get('x-ratelimit-remaining')).toBe('0');
    const lean = await poll('/events');
    const general = await poll('//events');
    expect(eventsRouteFigures.taken - before).toBe(RATE_POINTS - 1);
    for (const answer of [lean, general]) {
      expect(answer.status).toBe(429);
      expect(answer.body).toMatchObject({ result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
      expect(answer.body['retry-after']).toBeGreaterThan(0);
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(answer.headers.get('x-ratelimit-limit')).toBe(String(RATE_POINTS));
      expect(answer.headers.get('x-ratelimit-remaining')).toBe('0');
    }
    expect(Object.keys(lean.body).sort()).toEqual(Object.keys(general.body).sort());
  });

  it('parks a poll until its event arrives, and frees it when the client goes away', async () => {
    const parked = (count: number) => waitFor(async () => env.running.deps.delivery.parked === count, { what: `${count} parked polls` });
    const q = await registerQueue(env.client('iago'), { event_types: ['typing'] });
    const auth = basicAuth(env.users.iago.email, env.users.iago.apiKey);
    const url = `${env.url}/api/v1/events?queue_id=${q.queue_id}&last_event_id=${q.last_event_id}`;
    const start = env.running.deps.delivery.parked;
    const before = eventsRouteFigures.taken;

    const leaving = new AbortController();
    const abandoned = fetch(url, { headers: { authorization: auth }, signal: leaving.signal }).catch((error: unknown) => error);
    await parked(start + 1);
    leaving.abort();
    expect(await abandoned).toBeInstanceOf(Error);
    await parked(start);

    const waiting = fetch(url, { headers: { authorization: auth } });
    await parked(start + 1);
    const { error } = await env.client('desdemona').POST('/typing', { body: { op: 'start', to: [env.users.iago.id] } });
    expect(error).toBeUndefined();
    const answer = await waiting;
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { events: { type: string; op: string; sender: { user_id: number } }[]; queue_id: string };
    expect(body.queue_id).toBe(q.queue_id);
    expect(body.events.map((e) => [e.type, e.op, e.sender.user_id])).toEqual([['typing', 'start', env.users.desdemona.id]]);
    expect(eventsRouteFigures.taken - before).toBe(2);
  });
});
