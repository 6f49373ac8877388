// Reminders: POST /reminders, GET /reminders, DELETE /reminders/{id}, their events and /register state,
// and delivery: at its time the notification bot sends the user a direct message quoting the message.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { waitFor } from '../../helpers/wait.ts';
import { deliveryJobs } from '../../helpers/jobs.ts';
import { sendMessage } from '../../helpers/queues.ts';
import type { RequestParams } from '@parley/api-types';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago']);

const uid = (p: Person) => env.users[p].id;
const db = () => env.running.deps.db;
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

const send = (as: Person, to: string, topic: string, content: string) => sendMessage(env.client(as), { type: 'stream', to, topic, content });
const remind = (as: Person, body: RequestParams<'create-reminder'>) => env.client(as).POST('/reminders', { body });
async function reminded(as: Person, body: RequestParams<'create-reminder'>): Promise<number> {
  const { data, error } = await remind(as, body);
  if (error) throw new Error(JSON.stringify(error));
  return data!.reminder_id;
}
const reminders = async (as: Person) => (await env.client(as).GET('/reminders')).data!.reminders;

describe('POST /reminders', () => {
  it('sets a reminder about a readable message: listed, in /register, told to the user\'s clients, not a scheduled message', async () => {
    const messageId = await send('othello', channel.name, 'plans', 'Meet at **noon**');
    const mark = await markEvents(env);
    const at = inSeconds(3600);
    const id = await reminded('hamlet', { message_id: messageId, scheduled_delivery_timestamp: at, note: '\n\nBring the slides  \n' });
    const [listed, ...others] = (await reminders('hamlet')).filter((r) => r.reminder_id === id);
    expect(others).toEqual([]);
    expect(listed).toMatchObject({ type: 'private', to: [uid('hamlet')], scheduled_delivery_timestamp: at, failed: false, reminder_target_message_id: messageId });
    expect(listed!.content).toContain(`/#narrow/id/${messageId}`);
    expect(listed!.content).toContain('> Bring the slides\n'); // the note, normalized
    expect(listed!.content).toContain(`@_**Othello, the Moor of Venice|${uid('othello')}** wrote in #**${channel.name}>plans**:`);
    expect(listed!.content).toMatch(/```quote\nMeet at \*\*noon\*\*\n```$/);
    expect(listed!.rendered_content).toContain('<blockquote>');

    const events = await eventPayloadsSince(env, mark);
    expect(events.filter((e) => e.type === 'reminders')).toEqual([{ type: 'reminders', op: 'add', reminders: [listed] }]);
    expect(await reminders('othello')).not.toContainEqual(expect.objectContaining({ reminder_id: id }));
    const { data: scheduled } = await env.client('hamlet').GET('/scheduled_messages');
    expect(scheduled!.scheduled_messages.map((m) => m.scheduled_message_id)).not.toContain(id);
    const registered = await env.raw('/register', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ fetch_event_types: '["reminders","realm"]' }) });
    expect(registered.body.reminders).toContainEqual(listed);
    expect(registered.body.max_reminder_note_length).toBe(1000);
  });

  it("answers Zulip's errors, and never touches another user's reminders", async () => {
    const messageId = await send('iago', channel.name, 'errors', 'x');
    expectJsonError(await remind('hamlet', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(-5) }), 400, 'Scheduled delivery time must be in the future.');
    expectJsonError(await remind('hamlet', { message_id: 987654321, scheduled_delivery_timestamp: inSeconds(600) }), 400, 'Invalid message(s)');
    const hidden = await send('iago', secret.name, 'private', 'not for hamlet');
    expectJsonError(await remind('hamlet', { message_id: hidden, scheduled_delivery_timestamp: inSeconds(600) }), 400, 'Invalid message(s)');
    expectJsonError(await remind('hamlet', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(600), note: 'x'.repeat(1001) }), 400, 'Maximum reminder note length: 1000 characters');
    expect(await reminders('hamlet')).not.toContainEqual(expect.objectContaining({ reminder_target_message_id: hidden }));

    const id = await reminded('hamlet', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(600) });
    expectJsonError(await env.client('othello').DELETE('/reminders/{reminder_id}', { params: { path: { reminder_id: id } } }), 404, 'Reminder does not exist');
    expectJsonError(await env.client('hamlet').DELETE('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: id } } }), 404, 'Scheduled message does not exist');
    expect((await reminders('hamlet')).map((r) => r.reminder_id)).toContain(id);
    // A scheduled message is not a reminder either.
    const { data } = await env.client('hamlet').POST('/scheduled_messages', { body: { type: 'stream', to: channel.id, topic: 't', content: 'later', scheduled_delivery_timestamp: inSeconds(600) } });
    const scheduledId = data!.scheduled_message_id;
    expectJsonError(await env.client('hamlet').DELETE('/reminders/{reminder_id}', { params: { path: { reminder_id: scheduledId } } }), 404, 'Reminder does not exist');
  });
});

describe('GET /reminders', () => {
  it("lists the caller's own undelivered reminders, soonest first, failed ones too; never another user's or a scheduled message", async () => {
    const hour = 3600;
    const messageId = await send('othello', channel.name, 'listing', 'Remind us');
    const latest = await reminded('cordelia', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(3 * hour) });
    const soonest = await reminded('cordelia', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(hour), note: 'first' });
    const middle = await reminded('cordelia', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(2 * hour) });
    const theirs = await reminded('othello', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(hour / 2) });
    const { data: scheduled, error } = await env.client('cordelia').POST('/scheduled_messages', {
      body: { type: 'direct', to: [uid('othello')], content: 'a scheduled message is not a reminder', scheduled_delivery_timestamp: inSeconds(hour / 4) },
    });
    expect(error).toBeUndefined();
    // A reminder that could not be sent stays listed, marked failed.
    await db().scheduledMessage.update({ where: { id: latest }, data: { failed: true, failureMessage: 'Message could not be sent at the scheduled time.' } });

    const listed = await reminders('cordelia');
    expect(listed.map((r) => r.reminder_id)).toEqual([soonest, middle, latest]);
    expect(listed.map((r) => r.failed)).toEqual([false, false, true]);
    expect(listed.every((r) => r.type === 'private' && r.reminder_target_message_id === messageId && r.to.length === 1 && r.to[0] === uid('cordelia'))).toBe(true);
    expect(listed[0]!.content).toContain('> first\n');
    expect(listed.map((r) => r.reminder_id)).not.toContain(scheduled!.scheduled_message_id);
    expect((await reminders('othello')).map((r) => r.reminder_id)).toEqual(expect.arrayContaining([theirs]));
    expect((await reminders('othello')).map((r) => r.reminder_id)).not.toContain(soonest);
  });
});

describe('DELETE /reminders/{reminder_id}', () => {
  it('cancels it: gone from the list, told to the clients, never delivered', async () => {
    const messageId = await send('othello', channel.name, 'cancel', 'cancel me');
    const id = await reminded('hamlet', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(2) });
    const mark = await markEvents(env);
    const { response } = await env.client('hamlet').DELETE('/reminders/{reminder_id}', { params: { path: { reminder_id: id } } });
    expect(response.status).toBe(200);
    expect((await eventPayloadsSince(env, mark)).filter((e) => e.type === 'reminders')).toEqual([{ type: 'reminders', op: 'remove', reminder_id: id }]);
    expect((await reminders('hamlet')).map((r) => r.reminder_id)).not.toContain(id);
    // Its delivery job runs at its time and finds it gone.
    await waitFor(async () => (await deliveryJobs(env, id))[0]?.state === 'completed', { what: 'the delivery job' });
    expect(await db().message.count({ where: { content: { contains: `/#narrow/id/${messageId})` } } })).toBe(0);
  });
});

describe('delivery', () => {
  it('at its time the notification bot sends the user a direct message quoting the message, unread; the reminder is removed', async () => {
    const messageId = await send('othello', channel.name, 'due', 'Remember the ```fences```');
    const id = await reminded('hamlet', { message_id: messageId, scheduled_delivery_timestamp: inSeconds(2) });
    const mark = await markEvents(env);
    const row = await waitFor(() => db().scheduledMessage.findFirst({ where: { id, delivered: true } }));
    const message = await db().message.findUniqueOrThrow({ where: { id: row.deliveredMessageId! }, include: { sender: true } });
    expect(message.sender).toMatchObject({ fullName: 'Notification Bot', isBot: true, systemBot: 'notification-bot' });
    expect(message.directUserIds.sort()).toEqual([message.senderId, uid('hamlet')].sort((a, b) => a - b));
    expect(message.content).toContain('````quote\nRemember the ```fences```\n````'); // a fence longer than any inside
    const hamletRow = await db().userMessage.findUniqueOrThrow({ where: { messageId_userId: { messageId: message.id, userId: uid('hamlet') } } });
    expect(Number(hamletRow.flags) & 1).toBe(0); // unread
    expect((await reminders('hamlet')).map((r) => r.reminder_id)).not.toContain(id);
    const events = await eventPayloadsSince(env, mark);
    expect(events).toContainEqual({ type: 'reminders', op: 'remove', reminder_id: id });
    expect(events.some((e) => e.type === 'message' && e.message.id === message.id)).toBe(true);
  });
});
