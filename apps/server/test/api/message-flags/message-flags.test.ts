// Read state: POST /messages/flags, /messages/flags/narrow, /mark_topic_as_read, /mark_stream_as_read,
// /mark_all_as_read, the update_message_flags events they deliver, and unread_msgs in /register.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { writeDeferredRows } from '../../../src/data/deferred-rows.repo.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { pollUntil, registerQueue, sendMessage, type Queue, type SendMessageBody } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';
import type { RequestParams } from '@parley/api-types';
import type { ParleyClient } from '@parley/client';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);

const uid = (p: Person) => env.users[p].id;

const send = (as: Person, body: SendMessageBody) => sendMessage(env.client(as), body);
const toChannel = (as: Person, topic: string, content = 'hello', to = channel.name) => send(as, { type: 'stream', to, topic, content });

/** The person's unread rows in the database, after writing their deferred rows (as every read of them does). */
async function unreadIds(person: Person): Promise<number[]> {
  await writeDeferredRows(env.running.deps.db, env.realmId, uid(person));
  const rows = await env.running.deps.db.$queryRaw<{ id: number }[]>`SELECT message_id AS id FROM user_message WHERE user_id = ${uid(person)} AND (flags & 1) = 0 ORDER BY message_id`;
  return rows.map((r) => r.id);
}

const register = (as: Person) => registerQueue(env.client(as), { event_types: ['update_message_flags'] });
/**
 * The events of the queue after its registration, once there are `count` at least, as a client
 * long-polling for them gets them (events are announced to the polls after the request that stored them has answered).
 */
const events = (as: Person, q: Queue, count: number) => pollUntil(env.client(as), q, (got) => got.length >= count);

describe('POST /messages/flags', () => {
  it('sets and clears read and starred, telling every client of the user which messages changed', async () => {
    const a = await toChannel('iago', 'flags');
    const b = await toChannel('iago', 'flags');
    const q = await register('hamlet');
    const res = await env.client('hamlet').POST('/messages/flags', { body: { messages: [a, b], op: 'add', flag: 'read' } });
    expect(res.data).toMatchObject({ result: 'success', messages: [a, b] });
    expect(await unreadIds('hamlet')).not.toContain(a);
    // Already read: nothing changes, no event.
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'read' } });
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [b], op: 'remove', flag: 'read' } });
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'starred' } });
    const got = await events('hamlet', q, 3);
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
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [dm], op: 'add', flag: 'read' } });
    const q = await register('hamlet');
    await env.client('hamlet').POST('/messages/flags', { body: { messages: [dm], op: 'remove', flag: 'read' } });
    const [e] = await events('hamlet', q, 1);
    expect(e.message_details).toEqual({ [String(dm)]: { type: 'private', user_ids: [uid('iago')], mentioned: true } });
  });

  it('answers Zulip\'s errors', async () => {
    const a = await toChannel('iago', 'errors');
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'bogus' } }), 400, "Invalid flag: 'bogus'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'add', flag: 'mentioned' } }), 400, "Flag not editable: 'mentioned'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a], op: 'toggle', flag: 'read' } }), 400, "Invalid message flag operation: 'toggle'");
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [a, 999999], op: 'add', flag: 'read' } }), 400, 'Invalid message(s)');
    // A refused request changes nothing: hamlet's own message of it stays unread.
    const { data: still } = await env.client('hamlet').GET('/messages/{message_id}', { params: { path: { message_id: a } } });
    expect(still!.message.flags).not.toContain('read');
    // A message of a private channel the user never received.
    const hidden = await toChannel('iago', 'hidden', 'x', secret.name);
    expectJsonError(await env.client('hamlet').POST('/messages/flags', { body: { messages: [hidden], op: 'add', flag: 'read' } }), 400, 'Invalid message(s)');
    const notList = await env.raw('/messages/flags', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ messages: '5', op: 'add', flag: 'read' }), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(notList.status).toBe(400);
    expect(notList.body.result).toBe('error');
  });
});

describe('POST /messages/flags/narrow', () => {
  type NarrowTerm = { operator: string; operand: string | number | number[]; negated?: boolean };
  type FlagNarrowBody = Omit<RequestParams<'update-message-flags-for-narrow'>, 'narrow'> & { narrow: NarrowTerm[] };
  // The spec's Narrow type makes `negated` required (it has a default), Zulip's clients leave it out.
  const flagNarrowAs = (client: ParleyClient, body: FlagNarrowBody) =>
    client.POST('/messages/flags/narrow', { body: { ...body, narrow: body.narrow.map((t) => ({ ...t, negated: t.negated ?? false })) } });
  const flagNarrow = (as: Person, body: FlagNarrowBody) => flagNarrowAs(env.client(as), body);
  const inChannel = (c: { id: number }): NarrowTerm[] => [{ operator: 'channel', operand: c.id }];

  /** The flags of the person's rows of these messages, in their order. */
  async function flagsOf(person: Person, ids: number[]): Promise<number[]> {
    const rows = await env.running.deps.db.userMessage.findMany({ where: { userId: uid(person), messageId: { in: ids } } });
    const byId = new Map(rows.map((r) => [r.messageId, Number(r.flags)]));
    return ids.map((id) => byId.get(id) ?? -1);
  }
  const isUnread = (flags: number) => (flags & 1) === 0;
  const isStarred = (flags: number) => (flags & 2) !== 0;

  async function fiveMessages(label: string) {
    const c = await createChannel(env, 'iago', { name: label }, ['shiva']);
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await toChannel('iago', label, `message ${i}`, c.name));
    return { c, ids };
  }

  it('flags the range around the anchor and says where it stopped, so that a client can continue', async () => {
    const { c, ids } = await fiveMessages('range');
    const narrow = inChannel(c);
    const q = await register('shiva');
    const newest = await flagNarrow('shiva', { anchor: 'newest', num_before: 2, num_after: 0, narrow, op: 'add', flag: 'read' });
    expect(newest.data).toEqual({
      result: 'success',
      msg: '',
      processed_count: 2,
      updated_count: 2,
      first_processed_id: ids[3],
      last_processed_id: ids[4],
      found_oldest: false,
      found_newest: true,
      ignored_because_not_subscribed_channels: [],
    });
    // On from first_processed_id (an integer anchor), without it.
    const older = await flagNarrow('shiva', { anchor: String(ids[3]!), include_anchor: false, num_before: 10, num_after: 0, narrow, op: 'add', flag: 'read' });
    expect(older.data).toMatchObject({ processed_count: 3, updated_count: 3, first_processed_id: ids[0], last_processed_id: ids[2], found_oldest: true, found_newest: false });
    expect((await flagsOf('shiva', ids)).filter(isUnread)).toEqual([]);
    // The whole narrow from the oldest: everything is processed, nothing left to change.
    const all = await flagNarrow('shiva', { anchor: 'oldest', num_before: 0, num_after: 10, narrow, op: 'add', flag: 'read' });
    expect(all.data).toMatchObject({ processed_count: 5, updated_count: 0, first_processed_id: ids[0], last_processed_id: ids[4], found_oldest: true, found_newest: true });
    // Both sides of an anchor given as a string.
    const around = await flagNarrow('shiva', { anchor: String(ids[2]), num_before: 1, num_after: 1, narrow, op: 'add', flag: 'read' });
    expect(around.data).toMatchObject({ processed_count: 3, first_processed_id: ids[1], last_processed_id: ids[3], found_oldest: false, found_newest: false });
    const got = await events('shiva', q, 2);
    expect(got.map((e) => [e.type, e.op, e.flag, e.messages, e.all])).toEqual([
      ['update_message_flags', 'add', 'read', [ids[3], ids[4]], false],
      ['update_message_flags', 'add', 'read', [ids[0], ids[1], ids[2]], false],
    ]);
  });

  it('marks unread from an anchor on (telling where the messages are), then anchors at the first unread one', async () => {
    const { c, ids } = await fiveMessages('unread');
    const narrow = inChannel(c);
    await flagNarrow('shiva', { anchor: 'newest', num_before: 10, num_after: 0, narrow, op: 'add', flag: 'read' });
    const q = await register('shiva');
    const unread = await flagNarrow('shiva', { anchor: String(ids[2]!), num_before: 0, num_after: 10, narrow, op: 'remove', flag: 'read' });
    expect(unread.data).toMatchObject({ processed_count: 3, updated_count: 3, first_processed_id: ids[2], last_processed_id: ids[4], found_oldest: false, found_newest: true, ignored_because_not_subscribed_channels: [] });
    expect((await flagsOf('shiva', ids)).map(isUnread)).toEqual([false, false, true, true, true]);
    const [removed] = await events('shiva', q, 1);
    expect(removed).toMatchObject({ op: 'remove', flag: 'read', messages: [ids[2], ids[3], ids[4]] });
    const where = { type: 'stream', stream_id: c.id, topic: 'unread', unmuted_stream_msg: true };
    expect(removed.message_details).toEqual({ [String(ids[2])]: where, [String(ids[3])]: where, [String(ids[4])]: where });

    const first = await flagNarrow('shiva', { anchor: 'first_unread', num_before: 0, num_after: 1, narrow, op: 'add', flag: 'read' });
    expect(first.data).toMatchObject({ processed_count: 2, updated_count: 2, first_processed_id: ids[2], last_processed_id: ids[3] });
    await flagNarrow('shiva', { anchor: 'first_unread', num_before: 0, num_after: 0, narrow, op: 'add', flag: 'read' });
    // Nothing unread any more: first_unread is the newest position, where nothing comes after.
    const none = await flagNarrow('shiva', { anchor: 'first_unread', num_before: 0, num_after: 5, narrow, op: 'add', flag: 'read' });
    expect(none.data).toMatchObject({ processed_count: 0, updated_count: 0, first_processed_id: null, last_processed_id: null, found_newest: true });
  });

  it('stars and unstars, within narrows on the flag itself', async () => {
    const { c, ids } = await fiveMessages('stars');
    const q = await register('shiva');
    const star = await flagNarrow('shiva', { anchor: 'newest', num_before: 3, num_after: 0, narrow: inChannel(c), op: 'add', flag: 'starred' });
    expect(star.data).toMatchObject({ processed_count: 3, updated_count: 3, first_processed_id: ids[2] });
    const unstar = await flagNarrow('shiva', {
      anchor: 'oldest',
      num_before: 0,
      num_after: 1,
      narrow: [...inChannel(c), { operator: 'is', operand: 'starred' }],
      op: 'remove',
      flag: 'starred',
    });
    expect(unstar.data).toMatchObject({ processed_count: 1, updated_count: 1, first_processed_id: ids[2], found_oldest: true, found_newest: false, ignored_because_not_subscribed_channels: [] });
    expect((await flagsOf('shiva', ids)).map(isStarred)).toEqual([false, false, false, true, true]);
    // Starring is not reading.
    expect((await flagsOf('shiva', ids)).every(isUnread)).toBe(true);
    const got = await events('shiva', q, 2);
    expect(got.map((e) => [e.op, e.flag, e.messages])).toEqual([
      ['add', 'starred', [ids[2], ids[3], ids[4]]],
      ['remove', 'starred', [ids[2]]],
    ]);
    expect(got[1]).not.toHaveProperty('message_details');
  });

  it('flags direct messages, which are never skipped', async () => {
    const dms = [
      await send('iago', { type: 'private', to: JSON.stringify([uid('shiva')]), content: 'first' }),
      await send('iago', { type: 'private', to: JSON.stringify([uid('shiva')]), content: 'second' }),
    ];
    const group = await send('iago', { type: 'private', to: JSON.stringify([uid('shiva'), uid('othello')]), content: 'group' });
    const narrow = [{ operator: 'dm', operand: [uid('iago')] }];
    const read = await flagNarrow('shiva', { anchor: 'newest', num_before: 100, num_after: 0, narrow, op: 'add', flag: 'read' });
    expect(read.data).toMatchObject({ processed_count: 2, updated_count: 2, first_processed_id: dms[0], last_processed_id: dms[1], found_oldest: true });
    expect((await flagsOf('shiva', [...dms, group])).map(isUnread)).toEqual([false, false, true]);
    const q = await register('shiva');
    const unread = await flagNarrow('shiva', { anchor: String(dms[1]!), num_before: 0, num_after: 0, narrow: [{ operator: 'is', operand: 'dm' }], op: 'remove', flag: 'read' });
    expect(unread.data).toMatchObject({ processed_count: 1, updated_count: 1, first_processed_id: dms[1], ignored_because_not_subscribed_channels: [] });
    const [e] = await events('shiva', q, 1);
    expect(e.message_details).toEqual({ [String(dms[1])]: { type: 'private', user_ids: [uid('iago')] } });
  });

  it('leaves read the messages of a private channel the user left, and lists the channel', async () => {
    const secret = await createChannel(env, 'iago', { name: 'left', invite_only: true }, ['shiva']);
    const open = await createChannel(env, 'iago', { name: 'stayed' }, ['shiva']);
    const inSecret = [await toChannel('iago', 'leaving', 'a', secret.name), await toChannel('iago', 'leaving', 'b', secret.name)];
    const inOpen = await toChannel('iago', 'leaving', 'c', open.name);
    const all = [...inSecret, inOpen];
    const topic = [{ operator: 'topic', operand: 'leaving' }];
    await flagNarrow('shiva', { anchor: 'oldest', num_before: 0, num_after: 10, narrow: topic, op: 'add', flag: 'read' });
    const left = await env.client('shiva').DELETE('/users/me/subscriptions', { body: { subscriptions: [secret.name] } });
    expect(left.data).toMatchObject({ removed: [secret.name] });

    const q = await register('shiva');
    const unread = await flagNarrow('shiva', { anchor: 'oldest', num_before: 0, num_after: 10, narrow: topic, op: 'remove', flag: 'read' });
    expect(unread.data).toMatchObject({
      processed_count: 3,
      updated_count: 1,
      first_processed_id: inSecret[0],
      last_processed_id: inOpen,
      ignored_because_not_subscribed_channels: [secret.id],
    });
    expect((await flagsOf('shiva', all)).map(isUnread)).toEqual([false, false, true]);
    const [e] = await events('shiva', q, 1);
    expect(e).toMatchObject({ op: 'remove', flag: 'read', messages: [inOpen] });
    expect(Object.keys(e.message_details)).toEqual([String(inOpen)]);

    // A narrow naming the channel still reaches the user's own messages of it; other flags change.
    const starred = await flagNarrow('shiva', { anchor: 'newest', num_before: 10, num_after: 0, narrow: inChannel(secret), op: 'add', flag: 'starred' });
    expect(starred.data).toMatchObject({ processed_count: 2, updated_count: 2, ignored_because_not_subscribed_channels: [] });
    const again = await flagNarrow('shiva', { anchor: 'newest', num_before: 10, num_after: 0, narrow: inChannel(secret), op: 'remove', flag: 'read' });
    expect(again.data).toMatchObject({ processed_count: 2, updated_count: 0, ignored_because_not_subscribed_channels: [secret.id] });
    // The message list of POST /messages/flags follows the same rule, and its answer lists the channel.
    const listed = await env.client('shiva').POST('/messages/flags', { body: { messages: [...inSecret, inOpen], op: 'remove', flag: 'read' } });
    expect(listed.data).toMatchObject({ messages: [...inSecret, inOpen], ignored_because_not_subscribed_channels: [secret.id] });
    expect((await flagsOf('shiva', inSecret)).some(isUnread)).toBe(false);
    const starredAgain = await env.client('shiva').POST('/messages/flags', { body: { messages: inSecret, op: 'add', flag: 'starred' } });
    expect(starredAgain.data).toMatchObject({ ignored_because_not_subscribed_channels: [] });
    // A message of a private channel the user never received is invalid, not "ignored" (which would
    // tell them its channel).
    const hidden = await createChannel(env, 'iago', { name: 'never joined', invite_only: true }, []);
    const notTheirs = await toChannel('iago', 'hidden', 'x', hidden.name);
    expectJsonError(await env.client('shiva').POST('/messages/flags', { body: { messages: [notTheirs], op: 'remove', flag: 'read' } }), 400, 'Invalid message(s)');
  });

  it('lowers num_before and num_after to 5000 messages in all', async () => {
    const c = await createChannel(env, 'iago', { name: 'many' }, ['shiva']);
    const db = env.running.deps.db;
    const realmId = (await db.user.findUniqueOrThrow({ where: { id: uid('shiva') } })).realmId;
    const rows = await db.$queryRaw<{ id: number }[]>`
      WITH m AS (
        INSERT INTO message (realm_id, sender_id, channel_id, topic, content, rendered_content, direct_user_ids)
        SELECT ${realmId}, ${uid('iago')}, ${c.id}, 'many', 'x', '<p>x</p>', '{}' FROM generate_series(1, 6000)
        RETURNING id)
      INSERT INTO user_message (user_id, message_id, flags) SELECT ${uid('shiva')}, id, 0 FROM m RETURNING message_id AS id`;
    const ids = rows.map((r) => r.id).sort((a, b) => a - b);
    const narrow = inChannel(c);
    const newest = await flagNarrow('shiva', { anchor: 'newest', num_before: 6000, num_after: 0, narrow, op: 'add', flag: 'read' });
    expect(newest.data).toMatchObject({ processed_count: 5000, updated_count: 5000, first_processed_id: ids[1000], last_processed_id: ids[5999], found_oldest: false, found_newest: true });
    // Both sides asked for 4000: each gets 2500 (num_before is lowered first, to half at the least).
    const middle = await flagNarrow('shiva', { anchor: String(ids[3000]!), num_before: 4000, num_after: 4000, narrow, op: 'add', flag: 'starred' });
    expect(middle.data).toMatchObject({ processed_count: 5001, first_processed_id: ids[500], last_processed_id: ids[5500], found_oldest: false, found_newest: false });
    // num_after alone: what num_before leaves.
    const oldest = await flagNarrow('shiva', { anchor: 'oldest', num_before: 0, num_after: 1e9, narrow, op: 'add', flag: 'read' });
    expect(oldest.data).toMatchObject({ processed_count: 5000, updated_count: 1000, first_processed_id: ids[0], last_processed_id: ids[4999], found_newest: false });
  });

  it('answers Zulip\'s errors, never a server error, and changes nothing then', async () => {
    const { c, ids } = await fiveMessages('errors');
    const narrow = inChannel(c);
    const valid: FlagNarrowBody = { anchor: 'newest', num_before: 5, num_after: 0, narrow, op: 'add', flag: 'read' };
    const mark = await markEvents(env);
    const refused = async (body: Record<string, unknown>, msg: string, code = 'BAD_REQUEST') =>
      expectJsonError(await unchecked(env.client('shiva')).POST('/messages/flags/narrow', { body }), 400, msg, code);
    const { num_before: _numBefore, ...withoutNumBefore } = valid;
    const { narrow: _narrow, ...withoutNarrow } = valid;
    await refused(withoutNumBefore, "Missing 'num_before' argument", 'REQUEST_VARIABLE_MISSING');
    await refused(withoutNarrow, "Missing 'narrow' argument", 'REQUEST_VARIABLE_MISSING');
    await refused({ ...valid, num_after: -1 }, 'num_after is too small');
    await refused({ ...valid, anchor: 'bogus' }, 'Invalid anchor');
    await refused({ ...valid, anchor: 'date' }, 'Invalid anchor');
    await refused({ ...valid, num_before: 1, num_after: 1, include_anchor: false }, 'The anchor can only be excluded at an end of the range');
    await refused({ ...valid, narrow: [{ operator: 'bogus', operand: 'x' }] }, 'Invalid narrow operator: unknown operator bogus', 'BAD_NARROW');
    await refused({ ...valid, narrow: [{ operator: 'channel', operand: 'no such channel' }] }, 'Invalid narrow operator: unknown channel no such channel', 'BAD_NARROW');
    await refused({ ...valid, flag: 'bogus' }, "Invalid flag: 'bogus'");
    await refused({ ...valid, flag: 'mentioned' }, "Flag not editable: 'mentioned'");
    await refused({ ...valid, op: 'toggle' }, "Invalid message flag operation: 'toggle'");
    // The narrow is checked before the flag, as in Zulip.
    await refused({ ...valid, flag: 'bogus', narrow: [{ operator: 'bogus', operand: 'x' }] }, 'Invalid narrow operator: unknown operator bogus', 'BAD_NARROW');

    const form = (fields: Record<string, string>) =>
      env.raw('/messages/flags/narrow', {
        method: 'POST',
        as: 'shiva',
        body: new URLSearchParams({ anchor: 'newest', num_before: '5', num_after: '0', narrow: JSON.stringify(narrow), op: 'add', flag: 'read', ...fields }),
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      });
    expectJsonError(await form({ num_before: 'many' }), 400, 'num_before is not valid JSON');
    expectJsonError(await form({ num_before: '1.5' }), 400, 'num_before is not an integer');
    expectJsonError(await form({ include_anchor: 'True' }), 400, 'include_anchor is not valid JSON');
    expectJsonError(await form({ narrow: '{"operator": "channel"}' }), 400, 'narrow is not a list');
    const odd: Record<string, string>[] = [
      { narrow: '[1]' },
      { narrow: '[["channel"]]' },
      { narrow: '[{"operator": "id", "operand": "abc"}]' },
      { narrow: '[{"operator": "dm", "operand": ["x"]}]' },
      { narrow: '[{"operator": "search", "operand": "  "}]' },
      { anchor: '' },
      { anchor: '-5' },
      { anchor: '99999999999999999999999' },
      { num_before: '1e400' },
      { num_before: '100000000000000000000' },
      { op: '' },
    ];
    for (const fields of odd) {
      const res = await form(fields);
      expect(res.status, JSON.stringify(fields)).toBeLessThan(500);
      if (res.status !== 200) expect(res.body.result, JSON.stringify(fields)).toBe('error');
    }
    const anonymous = await flagNarrowAs(env.anonymous(), valid);
    expect(anonymous.response.status).toBe(401);
    // Nothing above changed a flag but the accepted odd requests (all add read): no star, no unread.
    expect((await flagsOf('shiva', ids)).some(isStarred)).toBe(false);
    expect((await eventPayloadsSince(env, mark)).every((e) => e.op === 'add' && e.flag === 'read')).toBe(true);
  });

  it('sends no event when nothing changed', async () => {
    const { c } = await fiveMessages('quiet');
    await flagNarrow('shiva', { anchor: 'newest', num_before: 10, num_after: 0, narrow: inChannel(c), op: 'add', flag: 'read' });
    const mark = await markEvents(env);
    const res = await flagNarrow('shiva', { anchor: 'newest', num_before: 10, num_after: 0, narrow: inChannel(c), op: 'add', flag: 'read' });
    expect(res.data).toMatchObject({ processed_count: 5, updated_count: 0 });
    expect(await eventPayloadsSince(env, mark)).toEqual([]);
  });
});

describe('POST /mark_topic_as_read', () => {
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
});

describe('POST /mark_stream_as_read', () => {
  it('marks a channel read, and only that channel', async () => {
    const inChannel = await toChannel('iago', 'x');
    const dm = await send('iago', { type: 'private', to: JSON.stringify([uid('othello')]), content: 'dm' });
    const inSecret = await toChannel('iago', 'y', 'x', secret.name);
    const mark = await markEvents(env);
    await env.client('othello').POST('/mark_stream_as_read', { body: { stream_id: channel.id } });
    const unread = await unreadIds('othello');
    expect(unread).not.toContain(inChannel);
    // The clients learn which messages (Zulip's event for a channel lists them).
    const [event] = await eventPayloadsSince(env, mark);
    expect(event).toMatchObject({ op: 'add', flag: 'read', all: false });
    expect(event.messages).toContain(inChannel);
    expect(event.messages).not.toContain(dm);
    expect(unread).toContain(dm);
    expect(unread).toContain(inSecret);
  });
});

describe('POST /mark_all_as_read', () => {
  it('marks everything read, telling the user\'s clients once, as Zulip does (all: true, no IDs)', async () => {
    await toChannel('iago', 'all');
    await send('iago', { type: 'private', to: JSON.stringify([uid('hamlet')]), content: 'dm' });
    const q = await register('hamlet');
    expect((await unreadIds('hamlet')).length).toBeGreaterThan(0);
    const mark = await markEvents(env);
    const res = await env.client('hamlet').POST('/mark_all_as_read', {});
    expect(res.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await unreadIds('hamlet')).toEqual([]);
    const [e] = await events('hamlet', q, 1);
    expect(e).toMatchObject({ type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [], all: true });
    expect(await eventPayloadsSince(env, mark)).toHaveLength(1);
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
    const mark = await markEvents(env);
    try {
      const first = await env.client('cordelia').POST('/mark_all_as_read', {});
      expect(first.data).toEqual({ result: 'success', msg: '', complete: false });
      const left = await unreadIds('cordelia');
      expect(left.length).toBeGreaterThan(0);
      // Newest first: what is left is the oldest.
      expect(Math.max(...left)).toBeLessThan(Math.min(...all.filter((id) => !left.includes(id))));
      // Unfinished: the clients are not told yet.
      expect(await eventPayloadsSince(env, mark)).toEqual([]);
    } finally {
      env.running.deps.config.markReadBudgetMs = 50_000;
    }
    const second = await env.client('cordelia').POST('/mark_all_as_read', {});
    expect(second.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await unreadIds('cordelia')).toEqual([]);
    expect((await eventPayloadsSince(env, mark)).map((e) => [e.messages, e.all])).toEqual([[[], true]]);
  });
});

describe('unread_msgs in /register', () => {
  it('counts unread channel messages by topic, direct messages by sender, and mentions', async () => {
    await env.client('othello').POST('/mark_all_as_read', {});
    const a = await toChannel('iago', 'reg', 'hi @**Othello, the Moor of Venice**');
    const b = await send('iago', { type: 'private', to: JSON.stringify([uid('othello')]), content: 'dm' });
    const unread = (await registerQueue(env.client('othello'), { fetch_event_types: ['message'] })).unread_msgs!;
    expect(unread.count).toBe(2);
    expect(unread.streams).toEqual([{ stream_id: channel.id, topic: 'reg', unread_message_ids: [a] }]);
    expect(unread.pms).toEqual([{ other_user_id: uid('iago'), sender_id: uid('iago'), unread_message_ids: [b] }]);
    expect(unread.mentions).toEqual([a]);
    expect(unread.old_unreads_missing).toBe(false);
  });

  it('groups topics case-insensitively (spelled as their oldest unread message), group conversations apart, oldest conversation first', async () => {
    await env.client('othello').POST('/mark_all_as_read', {});
    const castle1 = await toChannel('iago', 'Castle');
    const group1 = await send('iago', { type: 'private', to: JSON.stringify([uid('othello'), uid('hamlet')]), content: 'hi @**Othello, the Moor of Venice**' });
    const castle2 = await toChannel('iago', 'castle');
    const direct = await send('hamlet', { type: 'private', to: JSON.stringify([uid('othello')]), content: 'dm' });
    const group2 = await send('hamlet', { type: 'private', to: JSON.stringify([uid('othello'), uid('iago')]), content: 'again' });
    const moat = await toChannel('iago', 'moat', '@**Othello, the Moor of Venice**');
    const unread = (await register('othello')).unread_msgs;
    expect(unread).toEqual({
      count: 6,
      streams: [
        { stream_id: channel.id, topic: 'Castle', unread_message_ids: [castle1, castle2] },
        { stream_id: channel.id, topic: 'moat', unread_message_ids: [moat] },
      ],
      pms: [{ other_user_id: uid('hamlet'), sender_id: uid('hamlet'), unread_message_ids: [direct] }],
      huddles: [{ user_ids_string: [uid('iago'), uid('hamlet'), uid('othello')].sort((x, y) => x - y).join(','), unread_message_ids: [group1, group2] }],
      mentions: [group1, moat],
      old_unreads_missing: false,
    });
  });

  it('lists the newest 50,000 unread messages and says older ones are missing', async () => {
    const db = env.running.deps.db;
    const realmId = (await db.user.findUniqueOrThrow({ where: { id: uid('desdemona') } })).realmId;
    await env.client('desdemona').POST('/mark_all_as_read', {});
    const rows = await db.$queryRaw<{ id: number }[]>`
      WITH m AS (
        INSERT INTO message (realm_id, sender_id, channel_id, topic, content, rendered_content, direct_user_ids)
        SELECT ${realmId}, ${uid('iago')}, ${channel.id}, 'flood', 'x', '<p>x</p>', '{}' FROM generate_series(1, 50001)
        RETURNING id)
      INSERT INTO user_message (user_id, message_id, flags) SELECT ${uid('desdemona')}, id, 0 FROM m RETURNING message_id AS id`;
    const ids = rows.map((r) => r.id).sort((x, y) => x - y);
    const unread = (await register('desdemona')).unread_msgs!;
    expect(unread.count).toBe(50_000);
    expect(unread.old_unreads_missing).toBe(true);
    expect(unread.streams).toEqual([{ stream_id: channel.id, topic: 'flood', unread_message_ids: ids.slice(1) }]);
  });
});
