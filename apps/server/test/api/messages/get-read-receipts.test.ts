// GET /messages/{message_id}/read_receipts: who has read a message (their row has the read flag),
// without the sender, deactivated users and users who turned send_read_receipts off; recipients whose
// row is still deferred have not read it. The requester must be able to read the message, and the
// organization must have read receipts on.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { sendMessage } from '../../helpers/queues.ts';
import { createAccount, deactivateUser } from '../../helpers/people.ts';
import { withRealm } from '../../helpers/realm.ts';
import { sorted } from '../../helpers/groups.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'cordelia', 'polonius']);
const privateChannel = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);

const uid = (p: Person) => env.users[p].id;

const receipts = (as: Person, messageId: number) => env.raw(`/messages/${messageId}/read_receipts`, { method: 'GET', as });

async function markRead(as: Person, messageId: number): Promise<void> {
  const { error } = await env.client(as).POST('/messages/flags', { body: { messages: [messageId], op: 'add', flag: 'read' } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
}

async function setSendReadReceipts(as: Person, value: boolean): Promise<void> {
  const { error } = await env.client(as).PATCH('/settings', { body: { send_read_receipts: value } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
}

describe('GET /messages/{message_id}/read_receipts', () => {
  it('lists the readers, the requester and guests included, but never the sender; unread and deferred recipients are absent', async () => {
    const id = await sendMessage(env.client('hamlet'), { type: 'channel', to: channel.name, topic: 'receipts', content: 'read me' });
    for (const p of ['hamlet', 'othello', 'polonius'] as const) await markRead(p, id);
    // iago never read it (his row is deferred); cordelia's row exists and stays unread.
    await env.raw(`/messages/${id}`, { as: 'cordelia' });
    const res = await receipts('othello', id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', user_ids: expect.any(Array) });
    expect(sorted(res.body.user_ids)).toEqual(sorted([uid('othello'), uid('polonius')]));
    // The sender asks: the same list.
    expect(sorted((await receipts('hamlet', id)).body.user_ids)).toEqual(sorted([uid('othello'), uid('polonius')]));
  });

  it('leaves out users who turned send_read_receipts off, and deactivated users', async () => {
    const account = await createAccount(env, { label: 'receipts', fullName: 'Receipt Reader' });
    await subscribeDirectly(env, account.id, channel.id);
    const id = await sendMessage(env.client('hamlet'), { type: 'channel', to: channel.name, topic: 'receipts', content: 'settings' });
    for (const p of ['othello', 'cordelia'] as const) await markRead(p, id);
    {
      const { error } = await account.client.POST('/messages/flags', { body: { messages: [id], op: 'add', flag: 'read' } });
      expect(error).toBeUndefined();
    }
    expect(sorted((await receipts('hamlet', id)).body.user_ids)).toEqual(sorted([uid('othello'), uid('cordelia'), account.id]));

    await setSendReadReceipts('cordelia', false);
    try {
      expect(sorted((await receipts('hamlet', id)).body.user_ids)).toEqual(sorted([uid('othello'), account.id]));
      // Her own setting does not stop her from seeing others' receipts.
      expect(sorted((await receipts('cordelia', id)).body.user_ids)).toEqual(sorted([uid('othello'), account.id]));
    } finally {
      await setSendReadReceipts('cordelia', true);
    }
    await deactivateUser(env, account.id);
    expect(sorted((await receipts('hamlet', id)).body.user_ids)).toEqual(sorted([uid('othello'), uid('cordelia')]));
  });

  it('answers Invalid message(s) for a message the requester cannot read, before looking at the organization setting', async () => {
    const secret = await sendMessage(env.client('iago'), { type: 'channel', to: privateChannel.name, topic: 'secret', content: 'hidden' });
    const dm = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([uid('othello')]), content: 'just us' });
    expectJsonError(await receipts('hamlet', secret), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expectJsonError(await receipts('polonius', secret), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expectJsonError(await receipts('cordelia', dm), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expectJsonError(await receipts('hamlet', 999_999_999), 400, 'Invalid message(s)', 'BAD_REQUEST');
    expect((await receipts('othello', secret)).status).toBe(200);
    expect((await receipts('othello', dm)).status).toBe(200);
    await withRealm(env, env.realmId, { enableReadReceipts: false }, async () => {
      expectJsonError(await receipts('hamlet', secret), 400, 'Invalid message(s)', 'BAD_REQUEST');
      expectJsonError(await receipts('othello', secret), 400, 'Read receipts are disabled in this organization.', 'BAD_REQUEST');
    });
    expect((await receipts('othello', secret)).status).toBe(200);
  });

  it('reads a protected history through the requester\'s row, also while it is still deferred', async () => {
    const protectedChannel = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['othello']);
    const id = await sendMessage(env.client('iago'), { type: 'channel', to: protectedChannel.name, topic: 'protected', content: 'before' });
    const rows = await env.running.deps.db.userMessage.findMany({ where: { messageId: id } });
    expect(rows.map((r) => r.userId)).not.toContain(uid('othello'));
    const res = await receipts('othello', id);
    expect(res.status).toBe(200);
    expect(res.body.user_ids).toEqual([]);
    // Subscribed after the message: no row, no access.
    await subscribeDirectly(env, uid('hamlet'), protectedChannel.id);
    expectJsonError(await receipts('hamlet', id), 400, 'Invalid message(s)', 'BAD_REQUEST');
  });

  it('answers messages of archived channels', async () => {
    const archived = await createChannel(env, 'iago', {}, ['othello']);
    const id = await sendMessage(env.client('iago'), { type: 'channel', to: archived.name, topic: 'old', content: 'then' });
    await markRead('othello', id);
    const { error } = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } });
    expect(error).toBeUndefined();
    const res = await receipts('iago', id);
    expect(res.status).toBe(200);
    expect(res.body.user_ids).toEqual([uid('othello')]);
  });

  it("answers the Python client's get_read_receipts (a GET without parameters)", async () => {
    const id = await sendMessage(env.client('othello'), { type: 'channel', to: channel.name, topic: 'python', content: 'from python' });
    await markRead('hamlet', id);
    const res = await env.raw(`/messages/${id}/read_receipts`, { method: 'GET', as: 'othello', headers: { 'User-Agent': 'ZulipPython/0.9.0', Accept: '*/*' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', user_ids: [uid('hamlet')] });
  });
});
