// Scheduled messages: POST/PATCH/DELETE/GET /scheduled_messages, their events and /register state, and
// delivery through the job queue: on time, once, re-checked, across processes and restarts.
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, startTestServer, type TestServer } from '../helpers/test-server.ts';
import type { Person } from '../helpers/fixtures.ts';
import { TEST_SECRET } from '../helpers/fixtures.ts';
import { createChannel } from '../helpers/channels.ts';
import { loadConfig } from '../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../src/server.ts';
import { deliverScheduledMessage } from '../../src/actions/scheduled-messages.ts';
import { waitFor } from '../helpers/wait.ts';

let env: TestServer;
let channel: { id: number; name: string };
beforeAll(async () => {
  env = await startTestServer();
  channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
});
afterAll(() => env.close());

const uid = (p: Person) => env.users[p].id;
const db = () => env.running.deps.db;
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

async function schedule(as: Person, body: Record<string, unknown>) {
  return env.client(as).POST('/scheduled_messages', { body: body as any });
}
async function scheduled(as: Person, body: Record<string, unknown>): Promise<number> {
  const { data, error } = await schedule(as, body);
  if (error) throw new Error(JSON.stringify(error));
  return (data as any).scheduled_message_id;
}
async function list(as: Person): Promise<any[]> {
  return ((await env.client(as).GET('/scheduled_messages', {})).data as any).scheduled_messages;
}

describe('POST /scheduled_messages', () => {
  it('schedules channel and direct messages, lists them by delivery time, and tells the sender\'s clients', async () => {
    const { data: q } = await env.client('hamlet').POST('/register', { body: { event_types: ['scheduled_messages'] } as any });
    const later = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'plans', content: 'later **bold**', scheduled_delivery_timestamp: inSeconds(3600) });
    const sooner = await scheduled('hamlet', { type: 'direct', to: [uid('othello'), uid('othello')], content: 'sooner', scheduled_delivery_timestamp: inSeconds(1800) });
    const items = await list('hamlet');
    const mine = items.filter((m) => [later, sooner].includes(m.scheduled_message_id));
    expect(mine.map((m) => m.scheduled_message_id)).toEqual([sooner, later]);
    expect(mine[1]).toMatchObject({ type: 'stream', to: channel.id, topic: 'plans', content: 'later **bold**', rendered_content: '<p>later <strong>bold</strong></p>', failed: false });
    expect(mine[0]).toMatchObject({ type: 'private', to: [uid('othello')] });
    expect(mine[0]).not.toHaveProperty('topic');
    const { data: ev } = await env.client('hamlet').GET('/events', { params: { query: { queue_id: (q as any).queue_id, last_event_id: (q as any).last_event_id, dont_block: true } as any } });
    expect((ev as any).events.map((e: any) => [e.op, e.scheduled_messages[0].scheduled_message_id])).toEqual([['add', later], ['add', sooner]]);
    const { data: state } = await env.client('hamlet').POST('/register', { body: { fetch_event_types: ['scheduled_messages'] } as any });
    expect((state as any).scheduled_messages.map((m: any) => m.scheduled_message_id)).toEqual(expect.arrayContaining([later, sooner]));
  });

  it('answers Zulip\'s errors', async () => {
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(-10) }), 400, 'Scheduled delivery time must be in the future.');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: [channel.id], topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid data type for channel ID');
    expectJsonError(await schedule('hamlet', { type: 'direct', to: uid('othello'), content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid data type for recipients');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: 999999, topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, "Channel with ID '999999' does not exist", 'STREAM_DOES_NOT_EXIST');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Missing topic');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, topic: 't', content: '  ', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Message must not be empty');
    expectJsonError(await schedule('hamlet', { type: 'direct', to: [999999], content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid user ID 999999');
    const res = await schedule('hamlet', { type: 'stream', to: channel.id, subject: 'a', topic: 'b', content: 'x', scheduled_delivery_timestamp: inSeconds(60) });
    expect(res.response.status).toBe(400);
    expect((res.error as any).code).toBe('REQUEST_CONFUSING_VAR');
  });
});

describe('PATCH and DELETE /scheduled_messages/{id}', () => {
  it('edits content, topic, time and type, re-checking like sending', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'old', content: 'old', scheduled_delivery_timestamp: inSeconds(3600) });
    const patch = (body: Record<string, unknown>) => env.client('hamlet').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: body as any });
    expect((await patch({ content: 'new', topic: 'new topic' })).data).toEqual({ result: 'success', msg: '' });
    expect((await list('hamlet')).find((m) => m.scheduled_message_id === id)).toMatchObject({ content: 'new', topic: 'new topic' });
    expectJsonError(await patch({}), 400, 'Nothing to change');
    expectJsonError(await patch({ type: 'direct' }), 400, 'Recipient required when updating type of scheduled message.');
    expectJsonError(await patch({ type: 'stream', to: channel.id }), 400, 'Topic required when updating scheduled message type to channel.');
    expectJsonError(await patch({ scheduled_delivery_timestamp: inSeconds(-5) }), 400, 'Scheduled delivery time must be in the future.');
    expectJsonError(await patch({ to: 999999 }), 400, "Channel with ID '999999' does not exist", 'STREAM_DOES_NOT_EXIST');
    await patch({ type: 'direct', to: [uid('othello')] });
    const now = (await list('hamlet')).find((m) => m.scheduled_message_id === id);
    expect(now).toMatchObject({ type: 'private', to: [uid('othello')] });
    expect(now).not.toHaveProperty('topic');
    // Someone else's: does not exist.
    const other = await env.client('othello').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { content: 'x' } as any });
    expectJsonError(other, 404, 'Scheduled message does not exist');
    expectJsonError(await env.client('othello').DELETE('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } } }), 404, 'Scheduled message does not exist');
    expect((await env.client('hamlet').DELETE('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } } })).data).toEqual({ result: 'success', msg: '' });
    expect((await list('hamlet')).some((m) => m.scheduled_message_id === id)).toBe(false);
  });
});

describe('delivery', () => {
  it('sends the message at its time, once, removes it from the list and tells the sender', async () => {
    const { data: q } = await env.client('othello').POST('/register', { body: { event_types: ['message'] } as any });
    const at = inSeconds(2);
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'timed', content: 'on time', scheduled_delivery_timestamp: at });
    const row = await waitFor(() => db().scheduledMessage.findFirst({ where: { id, delivered: true } }));
    const message = await db().message.findUniqueOrThrow({ where: { id: row.deliveredMessageId! } });
    const lateness = message.dateSent.getTime() - at * 1000;
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(2_000); // goal: within 2 s of the scheduled second
    expect(message).toMatchObject({ content: 'on time', topic: 'timed', channelId: channel.id, senderId: uid('hamlet') });
    expect(await db().message.count({ where: { content: 'on time', senderId: uid('hamlet') } })).toBe(1);
    expect((await list('hamlet')).some((m) => m.scheduled_message_id === id)).toBe(false);
    const { data } = await env.client('othello').GET('/events', { params: { query: { queue_id: (q as any).queue_id, last_event_id: (q as any).last_event_id, dont_block: true } as any } });
    expect((data as any).events.filter((e: any) => e.type === 'message').map((e: any) => e.message.id)).toEqual([message.id]);
  });

  it('marks it failed with the reason when the sender may no longer post', async () => {
    const secret = await createChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);
    const id = await scheduled('othello', { type: 'stream', to: secret.id, topic: 't', content: 'too late', scheduled_delivery_timestamp: inSeconds(2) });
    await db().subscription.update({ where: { userId_channelId: { userId: uid('othello'), channelId: secret.id } }, data: { active: false } });
    const row = await waitFor(() => db().scheduledMessage.findFirst({ where: { id, failed: true } }));
    expect(row.failureMessage).toBe(`Not authorized to send to channel '${secret.name}'`);
    expect(row.delivered).toBe(false);
    expect((await list('othello')).find((m) => m.scheduled_message_id === id)).toMatchObject({ failed: true });
    // The notification bot tells the sender in a direct message, as Zulip does.
    const narrow = encodeURIComponent(JSON.stringify([{ operator: 'is', operand: 'dm' }]));
    const history = await env.raw(`/messages?anchor=newest&num_before=5&num_after=0&apply_markdown=false&narrow=${narrow}`, { as: 'othello' });
    const notice = history.body.messages.find((m: any) => m.content.includes(`> Not authorized to send to channel '${secret.name}'`));
    expect(notice).toMatchObject({ type: 'private', sender_full_name: 'Notification Bot' });
    expect(notice.content).toContain('[View scheduled messages](#scheduled)');
    const { data: bot } = await env.client('othello').GET('/users/{user_id}', { params: { path: { user_id: notice.sender_id } } });
    expect(bot!.user).toMatchObject({ is_bot: true, bot_type: 1, full_name: 'Notification Bot', bot_owner_id: null });
    // Editing a failed message needs a new time.
    const res = await env.client('othello').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { content: 'again' } as any });
    expectJsonError(res, 400, 'Scheduled delivery time must be in the future.');
  });

  it('an edit to a later time outdates the earlier job', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 't', content: 'moved', scheduled_delivery_timestamp: inSeconds(2) });
    await env.client('hamlet').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { scheduled_delivery_timestamp: inSeconds(3600) } as any });
    await new Promise((r) => setTimeout(r, 3_500));
    expect((await db().scheduledMessage.findUniqueOrThrow({ where: { id } })).delivered).toBe(false);
  });

  it('with two processes and many due messages, each is sent exactly once', async () => {
    const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: 'http://parley.test', validateResponses: true, rateLimit: null, logLevel: 'error' };
    const second: RunningServer = await listen(await createDeps(config, env.databaseUrl, { poolSize: 4 }), '127.0.0.1', 0);
    try {
      const at = inSeconds(6); // room for 20 requests on a loaded machine before the time comes
      const ids: number[] = [];
      for (let i = 0; i < 20; i++) ids.push(await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'burst', content: `burst ${i}`, scheduled_delivery_timestamp: at }));
      await waitFor(async () => (await db().scheduledMessage.count({ where: { id: { in: ids }, delivered: true } })) === 20 || null, { timeoutMs: 40_000 });
      for (let i = 0; i < 20; i++) expect(await db().message.count({ where: { content: `burst ${i}` } })).toBe(1);
    } finally {
      await second.close();
    }
  });

  it('a message whose time passed while no server ran is sent at the next start', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'downtime', content: 'after restart', scheduled_delivery_timestamp: inSeconds(2) });
    // Stop the job workers of this process (as if every server were down), let the time pass, start again.
    await env.running.deps.jobs.stop();
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await db().scheduledMessage.findUniqueOrThrow({ where: { id } })).delivered).toBe(false);
    await env.running.deps.jobs.start();
    await waitFor(() => db().scheduledMessage.findFirst({ where: { id, delivered: true } }));
    expect(await db().message.count({ where: { content: 'after restart' } })).toBe(1);
  });

  it('a message more than 10 minutes overdue (servers down longer) is marked failed, as Zulip does', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'downtime', content: 'far too late', scheduled_delivery_timestamp: inSeconds(3600) });
    // As if every server had been down since 11 minutes before its time: the job runs now.
    const overdue = new Date(Math.floor(Date.now() / 1000 - 11 * 60) * 1000);
    await db().scheduledMessage.update({ where: { id }, data: { scheduledAt: overdue } });
    expect(await deliverScheduledMessage(env.running.deps, { id, at: overdue.toISOString() })).toBe('failed');
    expect((await list('hamlet')).find((m) => m.scheduled_message_id === id)).toMatchObject({ failed: true });
    expect((await db().scheduledMessage.findUniqueOrThrow({ where: { id } })).failureMessage).toBe('Message could not be sent at the scheduled time.');
    expect(await db().message.count({ where: { content: 'far too late' } })).toBe(0);
  });
});
