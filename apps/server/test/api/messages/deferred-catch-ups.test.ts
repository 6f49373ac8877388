// How many times one request catches up the user's deferred rows (data/deferred-rows.repo.ts
// writeDeferredRows): once for every request that reads the user's rows or flags, a mark-all-as-read
// once per batch, and never for a request refused before it reads them. (Earlier commits removed
// repeated catch-ups on purpose; this pins the count of each entry point.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';

// A catch-up is the one statement that records how far the user was caught up (counted from the
// database client's query events, so the count is what reached PostgreSQL).
const CATCH_UP = /^\s*WITH mark AS[\s\S]*INSERT INTO user_message_caught_up/;
const calls = { count: 0 };

let env: TestServer;
beforeAll(async () => {
  env = await startTestServer({ emitQueryEvents: true });
  env.running.deps.db.$on('query' as never, ((e: { query: string }) => {
    if (CATCH_UP.test(e.query)) calls.count++;
  }) as never);
});
afterAll(() => env.close());

const form = (body: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };
const get = (as: Person, path: string, params: Record<string, unknown> = {}) => env.raw(`${path}?${form(params)}`, { as });
const post = (as: Person, path: string, body: Record<string, unknown> = {}) => env.raw(path, { method: 'POST', as, body: form(body), headers: FORM });

async function send(as: Person, channel: { name: string }, topic: string, content: string): Promise<number> {
  const res = await post(as, '/messages', { type: 'stream', to: channel.name, topic, content });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as number;
}

/** The request's answer status and the catch-ups it ran. */
async function catchUpsOf(request: () => Promise<{ status: number; body: unknown }>): Promise<[number, number]> {
  calls.count = 0;
  const res = await request();
  return [res.status, calls.count];
}

describe('catch-ups of deferred rows per request', () => {
  let channel: { id: number; name: string };
  let secret: { id: number; name: string };
  let id: number;
  beforeAll(async () => {
    channel = await createChannel(env, 'iago', {}, ['iago', 'cordelia']);
    secret = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago', 'cordelia']);
    id = await send('iago', channel, 'counted', 'one');
    await send('iago', channel, 'counted', 'two');
    await send('iago', secret, 'hidden', 'three');
  });
  const narrow = () => [{ operator: 'channel', operand: channel.id }];

  it('GET /messages: once; with a `with:` term, once; refused parameters, none', async () => {
    expect(await catchUpsOf(() => get('cordelia', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: narrow() }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => get('cordelia', '/messages', { anchor: 'first_unread', num_before: 10, num_after: 10, narrow: [{ operator: 'with', operand: id }] }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => get('cordelia', '/messages', { anchor: 'newest', num_after: 0 }))).toEqual([400, 0]);
    expect(await catchUpsOf(() => get('cordelia', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [['bogus']] }))).toEqual([400, 0]);
    expect(await catchUpsOf(() => get('cordelia', '/messages', { message_ids: [id], narrow: narrow() }))).toEqual([200, 1]);
  });

  it('GET /messages/{id}: once; an id no message can have, none', async () => {
    expect(await catchUpsOf(() => get('cordelia', `/messages/${id}`))).toEqual([200, 1]);
    expect(await catchUpsOf(() => get('cordelia', '/messages/0'))).toEqual([400, 0]);
  });

  it('GET /users/me/{stream_id}/topics: once for a protected history (read from the rows), none otherwise', async () => {
    expect(await catchUpsOf(() => get('cordelia', `/users/me/${secret.id}/topics`))).toEqual([200, 1]);
    expect(await catchUpsOf(() => get('cordelia', `/users/me/${channel.id}/topics`))).toEqual([200, 0]);
    expect(await catchUpsOf(() => get('hamlet', `/users/me/${secret.id}/topics`))).toEqual([400, 0]);
  });

  it('flag updates: once each; a refused flag, none', async () => {
    expect(await catchUpsOf(() => post('cordelia', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => post('cordelia', '/messages/flags', { messages: [id], op: 'add', flag: 'bogus' }))).toEqual([400, 0]);
    const forNarrow = { anchor: 'newest', num_before: 10, num_after: 0, narrow: narrow(), op: 'remove', flag: 'starred' };
    expect(await catchUpsOf(() => post('cordelia', '/messages/flags/narrow', forNarrow))).toEqual([200, 1]);
    expect(await catchUpsOf(() => post('cordelia', '/messages/flags/narrow', { ...forNarrow, narrow: [{ operator: 'with', operand: id }] }))).toEqual([200, 1]);
  });

  it('marking read: a channel or topic once, everything once per batch', async () => {
    await send('iago', channel, 'counted', 'three');
    expect(await catchUpsOf(() => post('cordelia', '/mark_topic_as_read', { stream_id: channel.id, topic_name: 'counted' }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => post('cordelia', '/mark_stream_as_read', { stream_id: channel.id }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => post('cordelia', '/mark_stream_as_read', { stream_id: 987654 }))).toEqual([400, 0]);
    expect(await catchUpsOf(() => post('cordelia', '/mark_all_as_read'))).toEqual([200, 1]);
  });

  it('POST /register: once; POST /reminders: once, none for an id no message can have', async () => {
    expect(await catchUpsOf(() => post('cordelia', '/register', { fetch_event_types: ['message', 'update_message_flags'] }))).toEqual([200, 1]);
    const at = Math.floor(Date.now() / 1000) + 3600;
    expect(await catchUpsOf(() => post('cordelia', '/reminders', { message_id: id, scheduled_delivery_timestamp: at }))).toEqual([200, 1]);
    expect(await catchUpsOf(() => post('cordelia', '/reminders', { message_id: 0, scheduled_delivery_timestamp: at }))).toEqual([400, 0]);
  });
});
