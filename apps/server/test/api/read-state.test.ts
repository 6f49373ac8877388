// Read state: POST /messages/flags, /mark_topic_as_read, /mark_stream_as_read, /mark_all_as_read, the
// update_message_flags events they deliver, and unread_msgs in /register.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, startTestServer, type TestServer } from '../helpers/test-server.ts';
import type { Person } from '../helpers/fixtures.ts';
import { createChannel } from '../helpers/channels.ts';

let env: TestServer;
let channel: { id: number; name: string };
let secret: { id: number; name: string };
beforeAll(async () => {
  env = await startTestServer();
  channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
  secret = await createChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);
});
afterAll(() => env.close());

const uid = (p: Person) => env.users[p].id;

async function send(as: Person, body: Record<string, unknown>): Promise<number> {
  const { data, error } = await env.client(as).POST('/messages', { body: body as any });
  if (error) throw new Error(JSON.stringify(error));
  return (data as any).id;
}
const toChannel = (as: Person, topic: string, content = 'hello', to = channel.name) => send(as, { type: 'stream', to, topic, content });

async function unreadIds(person: Person): Promise<number[]> {
  const rows = await env.running.deps.db.$queryRaw<{ id: number }[]>`SELECT message_id AS id FROM user_message WHERE user_id = ${uid(person)} AND (flags & 1) = 0 ORDER BY message_id`;
  return rows.map((r) => r.id);
}

async function register(as: Person) {
  const { data, error } = await env.client(as).POST('/register', { body: { event_types: ['update_message_flags'] } as any });
  if (error) throw new Error(JSON.stringify(error));
  return data as any;
}
async function events(as: Person, q: any): Promise<any[]> {
  const { data } = await env.client(as).GET('/events', { params: { query: { queue_id: q.queue_id, last_event_id: q.last_event_id, dont_block: true } as any } });
  return (data as any).events;
}

describe('POST /messages/flags', () => {
  it('sets and clears read and starred, telling every client of the user which messages changed', async () => {
    const a = await toChannel('iago', 'flags');
    const b = await toChannel('iago', 'flags');
    const q = await register('hamlet');
    const res = await env.client('hamlet').POST('/messages/flags', { body: { messages: [a, b], op: 'add', flag: 'read' } as any });
    expect(res.data).toMatchObject({ result: 'success', messages: [a, b] });
    expect(await unreadIds('hamlet')).not.toContain(a);
    // Already read: nothing changes, no event.
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'read' } as any });
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [b], op: 'remove', flag: 'read' } as any });
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'starred' } as any });
    const got = await events('hamlet', q);
    expect(got.map((e) => [e.op, e.flag, e.messages])).toEqual([
      ['add', 'read', [a, b]],
      ['remove', 'read', [b]],
      ['add', 'starred', [a]],
    ]);
    expect(got[1].message_details).toEqual({ [String(b)]: { type: 'stream', stream_id: channel.id, topic: 'flags', unmuted_stream_msg: true } });
    expect(got[0]).toMatchObject({ operation: 'add', all: false });
  });

  it('describes direct messages and mentions when read is removed', async () => {
    const dm = await send('iago', { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'hi @**King Hamlet**' });
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [dm], op: 'add', flag: 'read' } as any });
    const q = await register('hamlet');
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [dm], op: 'remove', flag: 'read' } as any });
    const [e] = await events('hamlet', q);
    expect(e.message_details).toEqual({ [String(dm)]: { type: 'private', user_ids: [uid('iago')], mentioned: true } });
  });

  it('answers Zulip\'s errors', async () => {
    const a = await toChannel('iago', 'errors');
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'bogus' } as any }), 400, "Invalid flag: 'bogus'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'mentioned' } as any }), 400, "Flag not editable: 'mentioned'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'toggle', flag: 'read' } as any }), 400, "Invalid message flag operation: 'toggle'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a, 999999], op: 'add', flag: 'read' } as any }), 400, 'Invalid message(s)');
    // A message of a private channel the user never received.
    const hidden = await toChannel('iago', 'hidden', 'x', secret.name);
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [hidden], op: 'add', flag: 'read' } as any }), 400, 'Invalid message(s)');
    const notList = await env.raw('/messages/flags', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ messages: '5', op: 'add', flag: 'read' }), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(notList.status).toBe(400);
    expect(notList.body.result).toBe('error');
  });
});

describe('POST /mark_topic_as_read and /mark_stream_as_read', () => {
  it('marks one topic (case-insensitively) and leaves the others', async () => {
    const t1 = await toChannel('iago', 'Castle');
    const t2 = await toChannel('iago', 'moat');
    const res = await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: channel.id, topic_name: 'castle' } });
    expect(res.data).toEqual({ result: 'success', msg: '' });
    const unread = await unreadIds('hamlet');
    expect(unread).not.toContain(t1);
    expect(unread).toContain(t2);
  });

  it('answers No such topic, Invalid channel ID, and marks the whole channel for the empty topic name', async () => {
    expectJsonError(await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: channel.id, topic_name: 'never used' } }), 400, "No such topic 'never used'");
    expectJsonError(await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: secret.id, topic_name: 'x' } }), 400, 'Invalid channel ID');
    expectJsonError(await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: 999999, topic_name: 'x' } }), 400, 'Invalid channel ID');
    const a = await toChannel('iago', 'one');
    const b = await toChannel('iago', 'two');
    await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: channel.id, topic_name: '' } });
    const unread = await unreadIds('hamlet');
    expect(unread).not.toContain(a);
    expect(unread).not.toContain(b);
  });

  it('maps the empty topic display name to the empty topic', async () => {
    const a = await toChannel('iago', '');
    const other = await toChannel('iago', 'elsewhere');
    await env.client('hamlet').POST('/mark_topic_as_read', { body: { stream_id: channel.id, topic_name: 'general chat' } });
    const unread = await unreadIds('hamlet');
    expect(unread).not.toContain(a);
    expect(unread).not.toContain(other); // "" marks the whole channel, as Zulip does
  });

  it('marks a channel read, and only that channel', async () => {
    const inChannel = await toChannel('iago', 'x');
    const dm = await send('iago', { type: 'private', to: JSON.stringify([uid('othello')]), content: 'dm' });
    const inSecret = await toChannel('iago', 'y', 'x', secret.name);
    await env.client('othello').POST('/mark_stream_as_read', { body: { stream_id: channel.id } as any });
    const unread = await unreadIds('othello');
    expect(unread).not.toContain(inChannel);
    expect(unread).toContain(dm);
    expect(unread).toContain(inSecret);
  });
});

describe('POST /mark_all_as_read', () => {
  it('marks everything read, telling the user\'s clients', async () => {
    await toChannel('iago', 'all');
    await send('iago', { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'dm' });
    const q = await register('hamlet');
    const before = await unreadIds('hamlet');
    expect(before.length).toBeGreaterThan(0);
    const res = await env.client('hamlet').POST('/mark_all_as_read', {});
    expect(res.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await unreadIds('hamlet')).toEqual([]);
    const marked = (await events('hamlet', q)).flatMap((e) => e.messages);
    expect(marked.sort((x: number, y: number) => x - y)).toEqual(before);
  });

  it('works in batches newest first and answers complete: false when its time runs out; a second call finishes', async () => {
    const db = env.running.deps.db;
    // 12,000 unread messages for cordelia, written directly.
    const realmId = (await db.user.findUniqueOrThrow({ where: { id: uid('cordelia') } })).realmId;
    await db.$executeRaw`
      WITH m AS (
        INSERT INTO message (realm_id, sender_id, channel_id, topic, content, rendered_content, direct_user_ids)
        SELECT ${realmId}, ${uid('iago')}, ${channel.id}, 'bulk', 'x', '<p>x</p>', '{}' FROM generate_series(1, 12000)
        RETURNING id)
      INSERT INTO user_message (user_id, message_id, flags) SELECT ${uid('cordelia')}, id, 0 FROM m`;
    const all = await unreadIds('cordelia');
    expect(all.length).toBeGreaterThanOrEqual(12_000);
    env.running.deps.config.markReadBudgetMs = 1;
    try {
      const first = await env.client('cordelia').POST('/mark_all_as_read', {});
      expect(first.data).toEqual({ result: 'success', msg: '', complete: false });
      const left = await unreadIds('cordelia');
      expect(left.length).toBeGreaterThan(0);
      // Newest first: what is left is the oldest.
      expect(Math.max(...left)).toBeLessThan(Math.min(...all.filter((id) => !left.includes(id))));
    } finally {
      env.running.deps.config.markReadBudgetMs = 50_000;
    }
    const second = await env.client('cordelia').POST('/mark_all_as_read', {});
    expect(second.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await unreadIds('cordelia')).toEqual([]);
  });
});

describe('unread_msgs in /register', () => {
  it('counts unread channel messages by topic, direct messages by sender, and mentions', async () => {
    await env.client('othello').POST('/mark_all_as_read', {});
    const a = await toChannel('iago', 'reg', 'hi @**Othello, the Moor of Venice**');
    const b = await send('iago', { type: 'private', to: JSON.stringify([uid('othello')]), content: 'dm' });
    const { data } = await env.client('othello').POST('/register', { body: { fetch_event_types: ['message'] } as any });
    const unread = (data as any).unread_msgs;
    expect(unread.count).toBe(2);
    expect(unread.streams).toEqual([{ stream_id: channel.id, topic: 'reg', unread_message_ids: [a] }]);
    expect(unread.pms).toEqual([{ other_user_id: uid('iago'), sender_id: uid('iago'), unread_message_ids: [b] }]);
    expect(unread.mentions).toEqual([a]);
    expect(unread.old_unreads_missing).toBe(false);
  });
});
