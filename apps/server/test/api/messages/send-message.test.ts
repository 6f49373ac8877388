// POST /messages: channel and direct messages, addressing forms, topic and content rules, permissions,
// per-recipient flags, and the `message` event each recipient's queue receives.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, fresh, useChannel } from '../../helpers/channels.ts';
import { systemGroupIds } from '../../helpers/groups.ts';
import { pollEvents, pollUntil, registerQueue, type Queue, type RegisterBody } from '../../helpers/queues.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'polonius']);
const privateChannel = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

async function send(as: Person, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const form = new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  return env.raw('/messages', { method: 'POST', as, body: form, headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers } });
}

const register = (as: Person, body: RegisterBody = {}) => registerQueue(env.client(as), { event_types: ['message'], ...body });
const poll = (as: Person, q: Queue) => pollEvents(env.client(as), q);

async function flagsOf(messageId: number): Promise<Map<number, number>> {
  const rows = await db().userMessage.findMany({ where: { messageId } });
  return new Map(rows.map((r) => [r.userId, Number(r.flags)]));
}

describe('POST /messages to a channel', () => {
  it('stores the message, a row per subscriber, and delivers it with each recipient\'s flags', async () => {
    const hq = await register('hamlet', { apply_markdown: true });
    const oq = await register('othello');
    const res = await send('iago', { type: 'stream', to: channel.name, topic: 'greetings', content: 'Hello @**King Hamlet**, see **this**' }, { 'User-Agent': 'ZulipPython/0.9' });
    expect(res.status).toBe(200);
    const id = res.body.id as number;
    expect(Number.isInteger(id)).toBe(true);
    // Rows at once for the sender and the mentioned; the others' rows are written when they read.
    const flags = await flagsOf(id);
    expect([...flags.keys()].sort((a, b) => a - b)).toEqual([uid('iago'), uid('hamlet')].sort((a, b) => a - b));
    expect(flags.get(uid('hamlet'))! & 8).toBe(8); // mentioned
    expect(flags.get(uid('iago'))! & 1).toBe(0); // API clients' messages start unread for the sender
    expect((await db().message.findUniqueOrThrow({ where: { id } })).deferredRecipientIds).toEqual([uid('othello'), uid('polonius')].sort((a, b) => a - b));

    const [he] = await poll('hamlet', hq);
    expect(he.type).toBe('message');
    expect(he.flags).toEqual(['mentioned']);
    expect(he.message).toMatchObject({
      id,
      type: 'stream',
      stream_id: channel.id,
      display_recipient: channel.name,
      subject: 'greetings',
      sender_id: uid('iago'),
      client: 'ZulipPython',
      content_type: 'text/html',
    });
    expect(he.message.content).toContain('<span class="user-mention" data-user-id="' + uid('hamlet') + '">@King Hamlet</span>');
    const [oe] = await poll('othello', oq);
    expect(oe.flags).toEqual([]);
    expect(oe.message.content_type).toBe('text/x-markdown');
    expect(oe.message.content).toBe('Hello @**King Hamlet**, see **this**');

    // othello reads: his row is written then, unread; polonius's still waits.
    const read = await env.raw(`/messages/${id}`, { as: 'othello' });
    expect(read.status).toBe(200);
    expect(read.body.message.flags).toEqual([]);
    const after = await flagsOf(id);
    expect(after.get(uid('othello'))).toBe(0);
    expect(after.has(uid('polonius'))).toBe(false);
  });

  it("renders :name: emoji by Zulip's names and codes", async () => {
    const res = await send('hamlet', { type: 'stream', to: channel.name, topic: 'emoji', content: ':thumbs_up: :smile: :thumbsup:' });
    expect(res.status).toBe(200);
    const read = await env.raw(`/messages/${res.body.id as number}`, { as: 'hamlet' });
    expect(read.body.message.content).toBe(
      '<p><span aria-label="thumbs up" class="emoji emoji-1f44d" role="img" title="thumbs up">:thumbs_up:</span> ' +
        '<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span> :thumbsup:</p>',
    );
  });

  it('accepts the channel by id, as JSON, and a JSON list of one', async () => {
    for (const to of [String(channel.id), JSON.stringify(channel.name), JSON.stringify([channel.id])]) {
      const res = await send('hamlet', { type: 'channel', to, topic: 't', content: 'x' });
      expect(res.status, to).toBe(200);
    }
  });

  it('echoes local_id to the sending queue only, and marks read for clients that read their own messages', async () => {
    const q = await register('hamlet');
    const other = await register('hamlet');
    const res = await send('hamlet', { type: 'stream', to: channel.name, topic: 'echo', content: 'mine', queue_id: q.queue_id, local_id: '1.01' }, { 'User-Agent': 'ZulipMobile/27.1' });
    expect(res.status).toBe(200);
    const [e] = await poll('hamlet', q);
    expect(e.local_message_id).toBe('1.01');
    expect(e.flags).toContain('read');
    const [e2] = await poll('hamlet', other);
    expect(e2).not.toHaveProperty('local_message_id');
  });

  it('maps the empty topic names, truncates long topics and content, strips the topic', async () => {
    for (const topic of ['(no topic)', 'general chat', '  ']) {
      const res = await send('hamlet', { type: 'stream', to: channel.name, topic, content: 'x' });
      expect((await db().message.findUniqueOrThrow({ where: { id: res.body.id } })).topic).toBe('');
    }
    const long = await send('hamlet', { type: 'stream', to: channel.name, topic: 'x'.repeat(70), content: 'y'.repeat(10_050) });
    const row = await db().message.findUniqueOrThrow({ where: { id: long.body.id } });
    expect(row.topic).toBe('x'.repeat(57) + '...');
    expect(row.content).toHaveLength(10_000);
    expect(row.content.endsWith('\n[message truncated]')).toBe(true);
    const stripped = await send('hamlet', { type: 'stream', to: channel.name, topic: '  spaced  ', content: 'x' });
    expect((await db().message.findUniqueOrThrow({ where: { id: stripped.body.id } })).topic).toBe('spaced');
  });

  it('lets post where posting is for administrators only administrators, by the channel\'s name in any case or its id', async () => {
    const admins = (await systemGroupIds(env))['role:administrators'];
    const announcements = await createChannel(env, 'iago', { can_send_message_group: admins }, ['hamlet', 'othello']);
    expectJsonError(await send('hamlet', { type: 'stream', to: announcements.name, topic: 't', content: 'x' }), 400, 'You do not have permission to post in this channel.');
    const oq = await register('othello');
    const byName = await send('iago', { type: 'stream', to: announcements.name.toUpperCase(), topic: 'news', content: 'by name' });
    expect(byName.status).toBe(200);
    const byId = await send('iago', { type: 'stream', to: String(announcements.id), topic: 'news', content: 'by id' });
    expect(byId.status).toBe(200);
    const events = await pollUntil(env.client('othello'), oq, (all) => all.filter((e) => e.type === 'message').length >= 2);
    expect(events.filter((e) => e.type === 'message').map((e) => [(e.message as { id: number }).id, (e.message as { stream_id: number }).stream_id])).toEqual([
      [byName.body.id, announcements.id],
      [byId.body.id, announcements.id],
    ]);
  });

  it('answers Zulip\'s errors', async () => {
    expectJsonError(await send('hamlet', { type: 'stream', to: 'no such channel', topic: 't', content: 'x' }), 400, "Channel 'no such channel' does not exist", 'STREAM_DOES_NOT_EXIST');
    expectJsonError(await send('hamlet', { type: 'stream', to: '999999', topic: 't', content: 'x' }), 400, "Channel with ID '999999' does not exist", 'STREAM_DOES_NOT_EXIST');
    expectJsonError(await send('hamlet', { type: 'stream', to: channel.name, content: 'x' }), 400, 'Missing topic');
    expectJsonError(await send('hamlet', { type: 'stream', to: channel.name, topic: 't', content: '   ' }), 400, 'Message must not be empty');
    expectJsonError(await send('hamlet', { type: 'stream', to: channel.name, topic: 'a\u0007b', content: 'x' }), 400, 'Invalid character in topic, at position 2!');
    // NUL is refused for every parameter before any operation sees it (Parley's hardening rule).
    expectJsonError(await send('hamlet', { type: 'stream', to: channel.name, topic: 't', content: 'a\u0000' }), 400, 'content contains a NUL character');
    expectJsonError(await send('hamlet', { type: 'stream', to: privateChannel.name, topic: 't', content: 'x' }), 400, `Not authorized to send to channel '${privateChannel.name}'`);
    expectJsonError(await send('hamlet', { type: 'stream', to: '[1,2]', topic: 't', content: 'x' }), 400, 'Expected exactly one channel');
    expectJsonError(await send('hamlet', { type: 'private', to: '[999999]', content: 'x' }), 400, 'Invalid user ID 999999');
    expectJsonError(await send('hamlet', { type: 'private', to: 'nobody@parley.test', content: 'x' }), 400, "Invalid email 'nobody@parley.test'");
    expectJsonError(await send('hamlet', { type: 'private', to: '[]', content: 'x' }), 400, 'Message must have recipients');
    expectJsonError(await send('hamlet', { type: 'private', to: JSON.stringify([uid('othello'), env.users.iago.email]), content: 'x' }), 400, 'Recipient lists may contain emails or user IDs, but not both.');
  });

  it('answers Invalid type for an unknown type (case-sensitive), and a missing one as missing', async () => {
    for (const type of ['bogus', 'Stream', 'DIRECT', '']) {
      expectJsonError(await send('hamlet', { type, to: channel.name, topic: 't', content: 'x' }), 400, 'Invalid type', 'BAD_REQUEST');
    }
    expectJsonError(await send('hamlet', { to: channel.name, topic: 't', content: 'x' }), 400, "Missing 'type' argument", 'REQUEST_VARIABLE_MISSING');
  });

  it('escapes HTML in content', async () => {
    const q = await register('othello', { apply_markdown: true });
    await send('hamlet', { type: 'stream', to: channel.name, topic: 'xss', content: '<script>alert(1)</script>' });
    const [e] = await poll('othello', q);
    expect(e.message.content).not.toContain('<script>');
    expect(e.message.content).toContain('&lt;script&gt;');
  });
});

describe('POST /messages, direct', () => {
  it('delivers to every participant, by id or by address, with is_private kept internal', async () => {
    const oq = await register('othello');
    const res = await send('hamlet', { type: 'direct', to: JSON.stringify([uid('othello')]), content: 'psst' });
    expect(res.status).toBe(200);
    const flags = await flagsOf(res.body.id);
    expect([...flags.keys()].sort((a, b) => a - b)).toEqual([uid('hamlet'), uid('othello')].sort((a, b) => a - b));
    expect(flags.get(uid('othello'))! & 2048).toBe(2048);
    const [e] = await poll('othello', oq);
    expect(e.flags).toEqual([]);
    expect(e.message.type).toBe('private');
    expect(e.message.display_recipient.map((p: any) => p.id).sort()).toEqual([uid('hamlet'), uid('othello')].sort());
    const byEmail = await send('hamlet', { type: 'private', to: `${env.users.othello.email},${env.users.iago.email}`, content: 'group' });
    expect(byEmail.status).toBe(200);
    expect((await db().message.findUniqueOrThrow({ where: { id: byEmail.body.id } })).directUserIds).toEqual([uid('iago'), uid('hamlet'), uid('othello')].sort((a, b) => a - b));
    const self = await send('hamlet', { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'note to self' });
    expect([...(await flagsOf(self.body.id)).keys()]).toEqual([uid('hamlet')]);
  });
});

describe('100 concurrent senders to one topic', () => {
  it('stores each message once and delivers every message event once, in id order', async () => {
    const q = await register('othello');
    const senders: Person[] = ['iago', 'hamlet', 'othello', 'polonius'];
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => send(senders[i % senders.length]!, { type: 'stream', to: channel.name, topic: 'storm', content: `message ${i}` })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    const ids = results.map((r) => r.body.id as number);
    expect(new Set(ids).size).toBe(100);
    const messages = (events: any[]) => events.filter((e) => e.type === 'message');
    const received = messages(await pollUntil(env.client('othello'), q, (got) => messages(got).length >= 100, { maxPolls: 20 })).map((e) => e.message.id);
    expect(received).toHaveLength(100);
    expect(received).toEqual([...ids].sort((a, b) => a - b));
  });
});

describe('user_message rows, their message and their user (checked per statement, not per row)', () => {
  it('a row for a message or a user that does not exist is refused; deleting a message deletes its rows', async () => {
    const res = await send('hamlet', { type: 'stream', to: channel.name, topic: 'integrity', content: 'to be deleted, @**Othello, the Moor of Venice**' });
    const id = res.body.id as number;
    await expect(db().$executeRawUnsafe('INSERT INTO user_message (user_id, message_id, flags) VALUES ($1, 2147483000, 0)', uid('hamlet'))).rejects.toThrow(/violates its reference to table "message"/);
    await expect(db().$executeRawUnsafe('INSERT INTO user_message (user_id, message_id, flags) VALUES (2147483000, $1, 0)', id)).rejects.toThrow(/violates its reference to table "user"/);
    expect(await db().userMessage.count({ where: { messageId: id } })).toBeGreaterThan(1);
    await db().message.delete({ where: { id } });
    expect(await db().userMessage.count({ where: { messageId: id } })).toBe(0);
  });
});

describe("a message's channel (checked per statement, not per row)", () => {
  it('a message naming a channel that does not exist is refused, inserted or moved; deleting a channel deletes its messages', async () => {
    const id = (await send('hamlet', { type: 'stream', to: channel.name, topic: 'integrity', content: 'its channel must exist' })).body.id as number;
    const row = (await db().message.findUniqueOrThrow({ where: { id } }));
    await expect(db().$executeRawUnsafe(`INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content) VALUES ($1, $2, 2147483000, 't', '{}', 'x', '<p>x</p>')`, row.realmId, row.senderId)).rejects.toThrow(/INSERT on table "message" violates its reference to table "channel"/);
    await expect(db().$executeRawUnsafe('UPDATE message SET channel_id = 2147483000 WHERE id = $1', id)).rejects.toThrow(/UPDATE on table "message" violates its reference to table "channel"/);
    expect((await db().message.findUniqueOrThrow({ where: { id } })).channelId).toBe(channel.id);

    // No operation deletes a channel (they are archived); the rule that replaced ON DELETE CASCADE still holds.
    const doomed = await db().channel.create({ data: { realmId: row.realmId, name: fresh('doomed'), canAddSubscribersGroupId: 0, canAdministerChannelGroupId: 0, canDeleteAnyMessageGroupId: 0, canDeleteOwnMessageGroupId: 0, canMoveMessagesOutOfChannelGroupId: 0, canMoveMessagesWithinChannelGroupId: 0, canRemoveSubscribersGroupId: 0, canResolveTopicsGroupId: 0, canSendMessageGroupId: 0, canSubscribeGroupId: 0 } });
    await db().$executeRawUnsafe('UPDATE message SET channel_id = $1 WHERE id = $2', doomed.id, id);
    await db().channel.delete({ where: { id: doomed.id } });
    expect(await db().message.count({ where: { id } })).toBe(0);
    expect(await db().userMessage.count({ where: { messageId: id } })).toBe(0);
  });
});
