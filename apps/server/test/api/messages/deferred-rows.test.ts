// Deferred user_message rows: a channel message's recipients with no flag of their own get their row
// when they next read (message.deferred_recipient_ids, user_message_caught_up). What a user sees must
// be what they would see had every row been written at send: the same messages, the same unread
// state, whatever happened to their subscriptions in between, and whatever runs concurrently.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';

const env = useTestServer();

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const form = (body: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

async function send(as: Person, channel: { name: string }, content: string): Promise<number> {
  const res = await env.raw('/messages', { method: 'POST', as, body: form({ type: 'stream', to: channel.name, topic: 'deferred', content }), headers: FORM });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as number;
}

/** The channel's messages as `as` reads them: id → flags. */
async function channelFlags(as: Person, channel: { id: number }, narrow: unknown[] = []): Promise<Map<number, string[]>> {
  const query = form({ anchor: 'newest', num_before: 1000, num_after: 0, narrow: [{ operator: 'channel', operand: channel.id }, ...narrow] });
  const res = await env.raw(`/messages?${query}`, { as });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return new Map(res.body.messages.map((m: any) => [m.id, m.flags]));
}

const unread = async (as: Person, channel: { id: number }) => [...(await channelFlags(as, channel, [{ operator: 'is', operand: 'unread' }])).keys()];

describe('deferred rows', () => {
  it('are written at the first read, unread, and only for messages sent while the user was subscribed', async () => {
    const channel = await createChannel(env, 'iago', {}, ['iago', 'cordelia', 'polonius']);
    const m1 = await send('iago', channel, 'one');
    // No row for cordelia yet: the message lists her.
    expect(await db().userMessage.count({ where: { messageId: m1, userId: uid('cordelia') } })).toBe(0);
    expect((await db().message.findUniqueOrThrow({ where: { id: m1 } })).deferredRecipientIds).toContain(uid('cordelia'));

    const left = await env.raw(`/users/me/subscriptions?${form({ subscriptions: [channel.name] })}`, { method: 'DELETE', as: 'cordelia' });
    expect(left.status).toBe(200);
    const m2 = await send('iago', channel, 'two, while cordelia is away');
    const back = await env.raw('/users/me/subscriptions', { method: 'POST', as: 'cordelia', body: form({ subscriptions: [{ name: channel.name }] }), headers: FORM });
    expect(back.status).toBe(200);
    const m3 = await send('iago', channel, 'three');

    // Received: m1 and m3, unread; m2 is history he may read but never received.
    const seen = await channelFlags('cordelia', channel);
    expect(seen.get(m1)).toEqual([]);
    expect(seen.get(m2)).toEqual(['read', 'historical']);
    expect(seen.get(m3)).toEqual([]);
    expect(await unread('cordelia', channel)).toEqual([m1, m3]);
    const rows = await db().userMessage.findMany({ where: { userId: uid('cordelia'), messageId: { in: [m1, m2, m3] } }, orderBy: { messageId: 'asc' } });
    expect(rows.map((r) => [r.messageId, Number(r.flags)])).toEqual([[m1, 0], [m3, 0]]);

    // Flags work on them as on any row.
    const flagged = await env.raw('/messages/flags', { method: 'POST', as: 'cordelia', body: form({ messages: [m1], op: 'add', flag: 'read' }), headers: FORM });
    expect(flagged.body.messages).toEqual([m1]);
    expect(await unread('cordelia', channel)).toEqual([m3]);

    // polonius never read anything: his /register counts all three, and mark-all-as-read reads them.
    const registered = await env.raw('/register', { method: 'POST', as: 'polonius', body: form({ fetch_event_types: ['message', 'update_message_flags'] }), headers: FORM });
    expect(registered.status).toBe(200);
    const topics = registered.body.unread_msgs.streams.filter((s: any) => s.stream_id === channel.id);
    expect(topics.flatMap((s: any) => s.unread_message_ids)).toEqual([m1, m2, m3]);
    expect(registered.body.max_message_id).toBeGreaterThanOrEqual(m3);
    const all = await env.raw('/mark_all_as_read', { method: 'POST', as: 'polonius' });
    expect(all.status).toBe(200);
    expect(await unread('polonius', channel)).toEqual([]);
  });

  it('are written before a first mark_topic_as_read checks the topic, and before a first `with:` narrow finds its message', async () => {
    const channel = await createChannel(env, 'iago', {}, ['iago', 'othello', 'desdemona']);
    const ids = [await send('iago', channel, 'one'), await send('iago', channel, 'two')];
    expect(await db().userMessage.count({ where: { userId: uid('othello'), messageId: { in: ids } } })).toBe(0);
    // othello's first request since: the topic exists only through the rows written now.
    const marked = await env.raw('/mark_topic_as_read', { method: 'POST', as: 'othello', body: form({ stream_id: channel.id, topic_name: 'deferred' }), headers: FORM });
    expect(marked.status, JSON.stringify(marked.body)).toBe(200);
    expect(await unread('othello', channel)).toEqual([]);

    // desdemona's first request since: the `with:` message is found with her (unread) row.
    const query = form({ anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'with', operand: ids[0] }] });
    const res = await env.raw(`/messages?${query}`, { as: 'desdemona' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual(ids.map((id) => [id, []]));
  });

  it('are written before a first `with:` narrow looks for a message only the row makes readable (history not public to subscribers)', async () => {
    const channel = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago', 'hamlet']);
    const id = await send('iago', channel, 'protected');
    expect(await db().userMessage.count({ where: { userId: uid('hamlet'), messageId: id } })).toBe(0);
    // hamlet's first request since: without his row the message is not his to read, and `with:` refuses.
    const query = form({ anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'with', operand: id }] });
    const res = await env.raw(`/messages?${query}`, { as: 'hamlet' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual([[id, []]]);
  });

  it('are written before a first POST /messages/flags/narrow picks its range', async () => {
    const channel = await createChannel(env, 'iago', {}, ['iago', 'cordelia']);
    const ids = [await send('iago', channel, 'one'), await send('iago', channel, 'two')];
    expect(await db().userMessage.count({ where: { userId: uid('cordelia'), messageId: { in: ids } } })).toBe(0);
    const body = { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: channel.id }], op: 'add', flag: 'starred' };
    const res = await env.raw('/messages/flags/narrow', { method: 'POST', as: 'cordelia', body: form(body), headers: FORM });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.updated_count).toBe(2);
    expect([...(await channelFlags('cordelia', channel)).entries()]).toEqual(ids.map((id) => [id, ['starred']]));
  });

  it('a user deactivated when a message is sent never receives it', async () => {
    const channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    await db().user.update({ where: { id: uid('hamlet') }, data: { isActive: false } });
    let during: number;
    try {
      during = await send('iago', channel, 'while hamlet is deactivated');
    } finally {
      await db().user.update({ where: { id: uid('hamlet') }, data: { isActive: true } });
    }
    const after = await send('iago', channel, 'hamlet is back');
    const seen = await channelFlags('hamlet', channel);
    expect(seen.get(during)).toEqual(['read', 'historical']);
    expect(seen.get(after)).toEqual([]);
  });

  it('reads racing sends: every message received exactly once, none skipped by a mark moved past it', async () => {
    const channel = await createChannel(env, 'iago', {}, ['iago', 'othello']);
    const sends: Promise<number>[] = [];
    const reads: Promise<unknown>[] = [];
    for (let i = 0; i < 12; i++) {
      sends.push(send('iago', channel, `race ${i}`));
      reads.push(channelFlags('othello', channel));
      if (i % 4 === 0) reads.push(env.raw('/register', { method: 'POST', as: 'othello', body: form({ fetch_event_types: ['message'] }), headers: FORM }));
    }
    const ids = (await Promise.all(sends)).sort((a, b) => a - b);
    await Promise.all(reads);
    expect(await unread('othello', channel)).toEqual(ids);
    const rows = await db().userMessage.findMany({ where: { userId: uid('othello'), messageId: { in: ids } } });
    expect(rows.map((r) => r.messageId).sort((a, b) => a - b)).toEqual(ids);
  });
});
