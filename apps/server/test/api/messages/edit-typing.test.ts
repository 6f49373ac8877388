// POST /messages/{message_id}/typing: "someone is editing this message", an ephemeral
// `typing_edit_message` event to the people of the conversation who receive typing notifications and
// may read the message (none for channels of more than 100 subscribers); the content-edit permission
// checks without their grace period, and the editor's typing settings, with Zulip's errors.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { pollUntil, registerQueue, sendMessage, type Queue } from '../../helpers/queues.ts';
import { withRealm } from '../../helpers/realm.ts';
import { sorted } from '../../helpers/groups.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', { name: 'edit typing' }, ['iago', 'hamlet', 'othello']);
const privateChannel = useChannel(env, 'iago', { name: 'edit typing private', invite_only: true }, ['iago', 'othello']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

const typing = (as: Person, messageId: number, op: 'start' | 'stop' = 'start') =>
  env.client(as).POST('/messages/{message_id}/typing', { params: { path: { message_id: messageId } }, body: { op } });

const toChannel = (as: Person, to: { name: string }, content = 'to be edited') => sendMessage(env.client(as), { type: 'channel', to: to.name, topic: 'drafting', content });
const toPeople = (as: Person, to: Person[]) => sendMessage(env.client(as), { type: 'direct', to: JSON.stringify(to.map(uid)), content: 'to be edited' });

/** A queue for the edit-typing events and the marker messages that end each read. */
const register = (as: Person) => registerQueue(env.client(as), { event_types: ['typing_edit_message', 'message'] });

/**
 * The typing_edit_message events the queue received before a marker (a direct message from desdemona,
 * sent now): events of one organization reach a queue in id order, so anything sent before the marker
 * has arrived once the marker has.
 */
async function editTypingEvents(as: Person, q: Queue): Promise<any[]> {
  await sendMessage(env.client('desdemona'), { type: 'direct', to: JSON.stringify([uid(as)]), content: `marker ${randomBytes(3).toString('hex')}` });
  const events = await pollUntil(env.client(as), q, (got) => got.some((e) => e.type === 'message'), { maxPolls: 10 });
  return events.filter((e) => e.type === 'typing_edit_message');
}

async function setSetting(as: Person, name: 'receives_typing_notifications' | 'send_stream_typing_notifications' | 'send_private_typing_notifications', value: boolean) {
  const { error } = await env.client(as).PATCH('/settings', { body: { [name]: value } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
}

async function backdate(messageId: number, seconds: number): Promise<void> {
  await db().$executeRaw`UPDATE message SET date_sent = date_sent - make_interval(secs => ${seconds}::int) WHERE id = ${messageId}::int`;
}

describe('POST /messages/{message_id}/typing', () => {
  it('relays a direct message\'s edit typing to its participants who receive typing notifications, the editor included', async () => {
    const id = await toPeople('hamlet', ['othello', 'cordelia']);
    await setSetting('cordelia', 'receives_typing_notifications', false);
    try {
      const queues = { hamlet: await register('hamlet'), othello: await register('othello'), cordelia: await register('cordelia'), iago: await register('iago') };
      const { data, error } = await typing('hamlet', id, 'start');
      expect(error).toBeUndefined();
      expect(data).toEqual({ result: 'success', msg: '' });
      expect((await typing('hamlet', id, 'stop')).error).toBeUndefined();
      const expected = (op: string) => ({
        type: 'typing_edit_message',
        op,
        sender_id: uid('hamlet'),
        message_id: id,
        recipient: { type: 'direct', user_ids: sorted([uid('hamlet'), uid('othello')]) },
      });
      for (const who of ['hamlet', 'othello'] as const) {
        const events = await editTypingEvents(who, queues[who]);
        expect(events.map(({ id: _, ...rest }) => rest)).toEqual([expected('start'), expected('stop')]);
      }
      expect(await editTypingEvents('cordelia', queues.cordelia)).toEqual([]);
      expect(await editTypingEvents('iago', queues.iago)).toEqual([]);
    } finally {
      await setSetting('cordelia', 'receives_typing_notifications', true);
    }
  });

  it("relays a channel message's edit typing to the channel's subscribers, and to no one else", async () => {
    const id = await toChannel('hamlet', channel);
    const queues = { iago: await register('iago'), hamlet: await register('hamlet'), othello: await register('othello'), cordelia: await register('cordelia') };
    expect((await typing('hamlet', id)).error).toBeUndefined();
    for (const who of ['iago', 'hamlet', 'othello'] as const) {
      const events = await editTypingEvents(who, queues[who]);
      expect(events).toHaveLength(1);
      expect(events[0]).toEqual({
        id: expect.any(Number),
        type: 'typing_edit_message',
        op: 'start',
        sender_id: uid('hamlet'),
        message_id: id,
        recipient: { type: 'channel', channel_id: channel.id, topic: 'drafting' },
      });
    }
    expect(await editTypingEvents('cordelia', queues.cordelia)).toEqual([]);
  });

  it('leaves out subscribers who cannot read the message (a protected history they joined after it)', async () => {
    const guarded = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['hamlet', 'othello']);
    const id = await toChannel('hamlet', guarded);
    await subscribeDirectly(env, uid('cordelia'), guarded.id);
    const queues = { othello: await register('othello'), cordelia: await register('cordelia') };
    expect((await typing('hamlet', id)).error).toBeUndefined();
    // othello's row is still deferred: the message reached him.
    expect(await editTypingEvents('othello', queues.othello)).toHaveLength(1);
    expect(await editTypingEvents('cordelia', queues.cordelia)).toEqual([]);
  });

  it('sends nothing for a channel of more than 100 subscribers, and still succeeds', async () => {
    const big = await createChannel(env, 'iago', {}, ['hamlet']);
    const tag = randomBytes(4).toString('hex');
    await db().user.createMany({
      data: Array.from({ length: 100 }, (_, i) => {
        const email = `edit-typing-${tag}-${i}@parley.test`;
        return { realmId: env.realmId, email, deliveryEmail: email, fullName: `Subscriber ${i}`, role: 400 };
      }),
    });
    const extra = await db().user.findMany({ where: { deliveryEmail: { startsWith: `edit-typing-${tag}-` } }, select: { id: true } });
    await db().subscription.createMany({ data: extra.map((u) => ({ userId: u.id, channelId: big.id, active: true })) });
    const id = await toChannel('hamlet', big);
    const q = await register('hamlet');
    expect((await typing('hamlet', id)).error).toBeUndefined();
    expect(await editTypingEvents('hamlet', q)).toEqual([]);
  });

  it('checks message access and the content-edit permissions (without the grace period) before the typing settings', async () => {
    const mine = await toChannel('hamlet', channel);
    const secret = await toChannel('iago', privateChannel);
    expectJsonError(await typing('hamlet', 999_999_999), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expectJsonError(await typing('hamlet', secret), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expectJsonError(await typing('othello', mine), 400, "You don't have permission to edit this message", 'BAD_REQUEST');
    // Not even an administrator may edit another's content.
    expectJsonError(await typing('iago', mine), 400, "You don't have permission to edit this message", 'BAD_REQUEST');
    await withRealm(env, env.realmId, { allowMessageEditing: false }, async () => {
      expectJsonError(await typing('hamlet', mine), 400, 'Your organization has turned off message editing', 'BAD_REQUEST');
      expectJsonError(await typing('hamlet', secret), 400, 'Invalid message(s)', 'BAD_REQUEST');
    });

    // 600 s limit: a message 590 s old may still be edited; one 610 s old may not (an edit itself would
    // have 20 s more).
    const recent = await toChannel('hamlet', channel);
    const old = await toChannel('hamlet', channel);
    await backdate(recent, 590);
    await backdate(old, 610);
    await withRealm(env, env.realmId, { messageContentEditLimitSeconds: 600 }, async () => {
      expect((await typing('hamlet', recent)).error).toBeUndefined();
      expectJsonError(await typing('hamlet', old), 400, 'The time limit for editing this message has passed', 'BAD_REQUEST');
    });
    await withRealm(env, env.realmId, { messageContentEditLimitSeconds: null }, async () => {
      await backdate(old, 365 * 86_400);
      expect((await typing('hamlet', old)).error).toBeUndefined();
    });
  });

  it('refuses messages of archived channels', async () => {
    const archived = await createChannel(env, 'iago', {}, ['hamlet']);
    const id = await toChannel('hamlet', archived);
    const { error } = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } });
    expect(error).toBeUndefined();
    expectJsonError(await typing('hamlet', id), 400, 'Invalid message(s)', 'BAD_REQUEST');
  });

  it("refuses an editor who turned typing notifications off for the message's kind", async () => {
    const inChannel = await toChannel('hamlet', channel);
    const direct = await toPeople('hamlet', ['othello']);
    const othellos = await toChannel('othello', channel);
    await setSetting('hamlet', 'send_stream_typing_notifications', false);
    try {
      expectJsonError(await typing('hamlet', inChannel), 400, 'User has disabled typing notifications for channel messages', 'BAD_REQUEST');
      expect((await typing('hamlet', direct)).error).toBeUndefined();
      // The permission checks come first.
      expectJsonError(await typing('hamlet', othellos), 400, "You don't have permission to edit this message", 'BAD_REQUEST');
    } finally {
      await setSetting('hamlet', 'send_stream_typing_notifications', true);
    }
    await setSetting('hamlet', 'send_private_typing_notifications', false);
    try {
      expectJsonError(await typing('hamlet', direct), 400, 'User has disabled typing notifications for direct messages', 'BAD_REQUEST');
      expect((await typing('hamlet', inChannel)).error).toBeUndefined();
    } finally {
      await setSetting('hamlet', 'send_private_typing_notifications', true);
    }
  });

  it("answers Zulip's parameter errors, and a form-encoded POST as the Python client sends it", async () => {
    const id = await toChannel('hamlet', channel);
    const post = (body: string) => env.raw(`/messages/${id}/typing`, { method: 'POST', as: 'hamlet', headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'ZulipPython/0.9.0' }, body });
    expectJsonError(await post('op=bogus'), 400, 'Invalid op', 'BAD_REQUEST');
    expectJsonError(await post(''), 400, "Missing 'op' argument", 'REQUEST_VARIABLE_MISSING');
    const ok = await post('op=stop');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ result: 'success', msg: '' });
  });
});
