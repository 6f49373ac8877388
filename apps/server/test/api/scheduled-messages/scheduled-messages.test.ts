// Scheduled messages: POST/PATCH/DELETE/GET /scheduled_messages, their events and /register state, and
// delivery through the job queue: on time, once, re-checked, across processes and restarts.
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { TEST_SECRET } from '../../helpers/fixtures.ts';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { loadConfig } from '../../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../../src/server.ts';
import { deliverScheduledMessage } from '../../../src/actions/scheduled-messages.ts';
import { waitFor } from '../../helpers/wait.ts';
import { deliveryJobs } from '../../helpers/jobs.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';
import type { RequestParams } from '@parley/api-types';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);

const uid = (p: Person) => env.users[p].id;
const db = () => env.running.deps.db;
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

type ScheduleBody = RequestParams<'create-scheduled-message'>;
async function schedule(as: Person, body: ScheduleBody) {
  return env.client(as).POST('/scheduled_messages', { body });
}
async function scheduled(as: Person, body: ScheduleBody): Promise<number> {
  const { data, error } = await schedule(as, body);
  if (!data) throw new Error(JSON.stringify(error));
  return data.scheduled_message_id;
}
async function list(as: Person) {
  const { data, error } = await env.client(as).GET('/scheduled_messages', {});
  if (!data) throw new Error(JSON.stringify(error));
  return data.scheduled_messages;
}
const jobs = (id: number) => deliveryJobs(env, id);

describe('POST /scheduled_messages', () => {
  it('schedules channel and direct messages, lists them by delivery time, and tells the sender\'s clients', async () => {
    const q = await registerQueue(env.client('hamlet'), { event_types: ['scheduled_messages'] });
    const later = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'plans', content: 'later **bold**', scheduled_delivery_timestamp: inSeconds(3600) });
    const sooner = await scheduled('hamlet', { type: 'direct', to: [uid('othello'), uid('othello')], content: 'sooner', scheduled_delivery_timestamp: inSeconds(1800) });
    const items = await list('hamlet');
    const mine = items.filter((m) => [later, sooner].includes(m.scheduled_message_id));
    expect(mine.map((m) => m.scheduled_message_id)).toEqual([sooner, later]);
    expect(mine[1]).toMatchObject({ type: 'stream', to: channel.id, topic: 'plans', content: 'later **bold**', rendered_content: '<p>later <strong>bold</strong></p>', failed: false });
    expect(mine[0]).toMatchObject({ type: 'private', to: [uid('othello')] });
    expect(mine[0]).not.toHaveProperty('topic');
    const events = await pollEvents(env.client('hamlet'), q);
    expect(events.map((e) => [e.op, e.scheduled_messages[0].scheduled_message_id])).toEqual([['add', later], ['add', sooner]]);
    const state = await registerQueue(env.client('hamlet'), { fetch_event_types: ['scheduled_messages'] });
    expect(state.scheduled_messages!.map((m) => m.scheduled_message_id)).toEqual(expect.arrayContaining([later, sooner]));
  });

  it('answers Zulip\'s errors', async () => {
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(-10) }), 400, 'Scheduled delivery time must be in the future.');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: [channel.id], topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid data type for channel ID');
    expectJsonError(await schedule('hamlet', { type: 'direct', to: uid('othello'), content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid data type for recipients');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: 999999, topic: 't', content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, "Channel with ID '999999' does not exist", 'STREAM_DOES_NOT_EXIST');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Missing topic');
    expectJsonError(await schedule('hamlet', { type: 'stream', to: channel.id, topic: 't', content: '  ', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Message must not be empty');
    expectJsonError(await schedule('hamlet', { type: 'direct', to: [999999], content: 'x', scheduled_delivery_timestamp: inSeconds(60) }), 400, 'Invalid user ID 999999');
    const res = await unchecked(env.client('hamlet')).POST('/scheduled_messages', { body: { type: 'stream', to: channel.id, subject: 'a', topic: 'b', content: 'x', scheduled_delivery_timestamp: inSeconds(60) } });
    expect(res.response.status).toBe(400);
    expect(res.error.code).toBe('REQUEST_CONFUSING_VAR');
  });
});

describe('GET /scheduled_messages', () => {
  it("lists the caller's own undelivered messages, soonest first, failed ones too; never another user's or a reminder", async () => {
    const hour = 3600;
    const latest = await scheduled('cordelia', { type: 'direct', to: [uid('othello')], content: 'latest', scheduled_delivery_timestamp: inSeconds(3 * hour) });
    const soonest = await scheduled('cordelia', { type: 'stream', to: channel.id, topic: 'soon', content: '*soonest*', scheduled_delivery_timestamp: inSeconds(hour) });
    const middle = await scheduled('cordelia', { type: 'direct', to: [uid('hamlet')], content: 'middle', scheduled_delivery_timestamp: inSeconds(2 * hour) });
    const theirs = await scheduled('othello', { type: 'direct', to: [uid('cordelia')], content: "othello's", scheduled_delivery_timestamp: inSeconds(hour / 2) });
    const messageId = await sendMessage(env.client('iago'), { type: 'stream', to: channel.name, topic: 'remind me', content: 'a reminder is not a scheduled message' });
    const reminder = await env.client('cordelia').POST('/reminders', { body: { message_id: messageId, scheduled_delivery_timestamp: inSeconds(hour / 4) } });
    expect(reminder.error).toBeUndefined();
    // A message that failed to be sent stays listed, marked failed, until it is edited or deleted.
    await db().scheduledMessage.update({ where: { id: latest }, data: { failed: true, failureMessage: 'Message could not be sent at the scheduled time.' } });

    const listed = await list('cordelia');
    expect(listed.map((m) => m.scheduled_message_id)).toEqual([soonest, middle, latest]);
    expect(listed[0]).toEqual({
      scheduled_message_id: soonest,
      type: 'stream',
      to: channel.id,
      topic: 'soon',
      content: '*soonest*',
      rendered_content: '<p><em>soonest</em></p>',
      scheduled_delivery_timestamp: expect.any(Number),
      failed: false,
    });
    expect(listed[1]).toMatchObject({ type: 'private', to: [uid('hamlet')], content: 'middle', failed: false });
    expect(listed[2]).toMatchObject({ type: 'private', to: [uid('othello')], content: 'latest', failed: true });
    expect((await list('othello')).map((m) => m.scheduled_message_id)).toContain(theirs);
    expect((await list('othello')).map((m) => m.scheduled_message_id)).not.toContain(soonest);
  });
});

describe('PATCH /scheduled_messages/{scheduled_message_id}', () => {
  it('edits content, topic, time and type, re-checking like sending', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'old', content: 'old', scheduled_delivery_timestamp: inSeconds(3600) });
    const patch = (body: RequestParams<'update-scheduled-message'>) =>
      env.client('hamlet').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body });
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
    const other = await env.client('othello').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { content: 'x' } });
    expectJsonError(other, 404, 'Scheduled message does not exist');
  });
});

describe('DELETE /scheduled_messages/{scheduled_message_id}', () => {
  it("deletes the caller's own: gone from the list; someone else's does not exist", async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'doomed', content: 'never sent', scheduled_delivery_timestamp: inSeconds(3600) });
    const remove = (as: Person) => env.client(as).DELETE('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } } });
    // Someone else's: does not exist.
    expectJsonError(await remove('othello'), 404, 'Scheduled message does not exist');
    const q = await registerQueue(env.client('hamlet'), { event_types: ['scheduled_messages'] });
    expect((await remove('hamlet')).data).toEqual({ result: 'success', msg: '' });
    expect((await list('hamlet')).some((m) => m.scheduled_message_id === id)).toBe(false);
    expect(await pollEvents(env.client('hamlet'), q)).toMatchObject([{ type: 'scheduled_messages', op: 'remove', scheduled_message_id: id }]);
    expectJsonError(await remove('hamlet'), 404, 'Scheduled message does not exist');
  });
});

describe('delivery', () => {
  it('sends the message at its time, once, removes it from the list and tells the sender', async () => {
    const q = await registerQueue(env.client('othello'), { event_types: ['message'] });
    const at = inSeconds(2);
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 'timed', content: 'on time', scheduled_delivery_timestamp: at });
    const row = await waitFor(() => db().scheduledMessage.findFirst({ where: { id, delivered: true } }));
    const message = await db().message.findUniqueOrThrow({ where: { id: row.deliveredMessageId! } });
    // Never early. (How late: bench/scheduled-delivery.bench.ts with BENCH_SCHEDULED=1, see bench/README.md.)
    expect(message.dateSent.getTime()).toBeGreaterThanOrEqual(at * 1000);
    expect(message).toMatchObject({ content: 'on time', topic: 'timed', channelId: channel.id, senderId: uid('hamlet') });
    expect(await db().message.count({ where: { content: 'on time', senderId: uid('hamlet') } })).toBe(1);
    expect((await list('hamlet')).some((m) => m.scheduled_message_id === id)).toBe(false);
    const events = await pollEvents(env.client('othello'), q);
    expect(events.filter((e) => e.type === 'message').map((e) => e.message.id)).toEqual([message.id]);
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
    const res = await env.client('othello').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { content: 'again' } });
    expectJsonError(res, 400, 'Scheduled delivery time must be in the future.');
  });

  it('an edit to a later time outdates the earlier job', async () => {
    const id = await scheduled('hamlet', { type: 'stream', to: channel.id, topic: 't', content: 'moved', scheduled_delivery_timestamp: inSeconds(2) });
    await env.client('hamlet').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } }, body: { scheduled_delivery_timestamp: inSeconds(3600) } });
    // The earlier job runs at its time and finds the message moved: it completes without sending.
    const [earlier, later] = await jobs(id);
    expect([earlier!.state, later!.state]).toEqual(['created', 'created']);
    await waitFor(async () => (await jobs(id))[0]!.state === 'completed', { what: 'the earlier delivery job' });
    expect((await db().scheduledMessage.findUniqueOrThrow({ where: { id } })).delivered).toBe(false);
    expect((await jobs(id))[1]!.state).toBe('created');
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
    await waitFor(async () => (await jobs(id))[0]!.due, { what: 'the delivery time' });
    expect((await jobs(id)).map((j) => j.state)).toEqual(['created']); // due, and no worker took it
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
