// GET /messages (anchors, ranges, message_ids, every narrow operator, search, visibility), GET
// /messages/{message_id} and GET /users/me/{stream_id}/topics, through HTTP with responses validated
// against the spec; then the cost of a topic narrow in channels of 300,000 and 100,000 messages (query plan and
// statement count, never time).
import { writeDeferredRows } from '../../../src/data/deferred-rows.repo.ts';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { withRealm } from '../../helpers/realm.ts';

const NEWEST = 10_000_000_000_000_000;

const env = useTestServer({ emitQueryEvents: true });
/** SQL statements Prisma reports, while a measurement runs. */
let statements: Array<{ query: string; params: string }> | null = null;

beforeAll(async () => {
  env.running.deps.db.$on('query' as never, ((e: { query: string; params: string }) => statements?.push({ query: e.query, params: e.params })) as never);
});

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const email = (p: Person) => env.users[p].email;
type Channel = { id: number; name: string };
type Term = { operator: string; operand: unknown; negated?: boolean } | [string, string];

const encode = (params: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));

async function send(as: Person, body: Record<string, unknown>): Promise<number> {
  const res = await env.raw('/messages', { method: 'POST', as, body: encode(body), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  if (res.status !== 200) throw new Error(`setup: ${JSON.stringify(res.body)}`);
  return res.body.id as number;
}
const post = (as: Person, channel: Channel, topic: string, content: string) => send(as, { type: 'stream', to: channel.name, topic, content });
const dm = (as: Person, to: Person[], content: string) => send(as, { type: 'private', to: JSON.stringify(to.map(uid)), content });

/** GET with Zulip's encoding (strings raw, everything else JSON); `as` null: a spectator. */
async function get(as: Person | null, path: string, params: Record<string, unknown> = {}) {
  return env.raw(`${path}?${encode(params)}`, as ? { as } : {});
}
const messages = (as: Person | null, params: Record<string, unknown>) => get(as, '/messages', params);

/** The ids of every message matching the narrow (newest 1000), ascending; asserts success. */
async function ids(as: Person, narrow: Term[], extra: Record<string, unknown> = {}): Promise<number[]> {
  const res = await messages(as, { anchor: 'newest', num_before: 1000, num_after: 0, narrow, ...extra });
  if (res.status !== 200) throw new Error(`expected success, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messages.map((m: any) => m.id);
}
/** Only the ids of `within` (tests share one organization). */
const only = (all: number[], within: number[]) => all.filter((id) => within.includes(id));

/** Sets the person's flags in the database, after writing their deferred rows (as every read of them does). */
async function setFlags(person: Person, messageIds: number[], flags: number) {
  await writeDeferredRows(db(), env.realmId, uid(person));
  await db().userMessage.updateMany({ where: { userId: uid(person), messageId: { in: messageIds } }, data: { flags } });
}

function expectBadNarrow(res: { status: number; body: any }, desc: string) {
  expectJsonError(res, 400, `Invalid narrow operator: ${desc}`, 'BAD_NARROW');
  expect(res.body.desc).toBe(desc);
}

const channelTerm = (c: Channel) => ({ operator: 'channel', operand: c.id });

// ---------------------------------------------------------------------------------------------

describe('GET /messages: anchors and ranges', () => {
  let ch: Channel;
  let r: number[];
  const narrow = () => [channelTerm(ch), { operator: 'topic', operand: 'range' }];
  const fetch = (params: Record<string, unknown>) => messages('hamlet', { narrow: narrow(), ...params });
  const got = (res: { body: any }) => res.body.messages.map((m: any) => m.id);

  beforeAll(async () => {
    ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    r = [];
    for (let i = 0; i < 5; i++) r.push(await post('iago', ch, 'range', `message ${i}`));
  });

  it('newest: the last num_before messages, anchored above every id', async () => {
    const res = await fetch({ anchor: 'newest', num_before: 3, num_after: 0 });
    expect(res.status).toBe(200);
    expect(got(res)).toEqual(r.slice(2));
    expect(res.body).toMatchObject({ anchor: NEWEST, found_anchor: false, found_newest: true, found_oldest: false, history_limited: false });
    const all = await fetch({ anchor: 'newest', num_before: 10, num_after: 5 });
    expect(got(all)).toEqual(r);
    expect(all.body).toMatchObject({ found_oldest: true, found_newest: true, found_anchor: false });
  });

  it('oldest: the first num_after messages, anchored at 0', async () => {
    const res = await fetch({ anchor: 'oldest', num_before: 0, num_after: 2 });
    expect(got(res)).toEqual(r.slice(0, 2));
    expect(res.body).toMatchObject({ anchor: 0, found_anchor: false, found_oldest: true, found_newest: false });
  });

  it('an id: messages on both sides, the anchor included when it matches', async () => {
    const res = await fetch({ anchor: String(r[2]), num_before: 1, num_after: 1 });
    expect(got(res)).toEqual(r.slice(1, 4));
    expect(res.body).toMatchObject({ anchor: r[2], found_anchor: true, found_oldest: false, found_newest: false });
    const wide = await fetch({ anchor: String(r[2]), num_before: 10, num_after: 10 });
    expect(got(wide)).toEqual(r);
    expect(wide.body).toMatchObject({ found_anchor: true, found_oldest: true, found_newest: true });
  });

  it('include_anchor=false leaves the anchor out at either end', async () => {
    const before = await fetch({ anchor: String(r[2]), num_before: 2, num_after: 0, include_anchor: false });
    expect(got(before)).toEqual([r[0], r[1]]);
    // Zulip: found_newest is only true when fewer than num_after newer messages came back.
    expect(before.body).toMatchObject({ found_anchor: false, found_oldest: false, found_newest: false });
    const after = await fetch({ anchor: String(r[2]), num_before: 0, num_after: 5, include_anchor: false });
    expect(got(after)).toEqual([r[3], r[4]]);
    expect(after.body).toMatchObject({ found_anchor: false, found_newest: true, found_oldest: false });
  });

  it('num_before=num_after=0 returns the anchor alone (even with include_anchor=false, as Zulip)', async () => {
    const res = await fetch({ anchor: String(r[1]), num_before: 0, num_after: 0, include_anchor: false });
    expect(got(res)).toEqual([r[1]]);
    expect(res.body.found_anchor).toBe(true);
  });

  it('an id that matches no message is a position', async () => {
    const res = await fetch({ anchor: String(r[4]! + 1000), num_before: 2, num_after: 2 });
    expect(got(res)).toEqual([r[3], r[4]]);
    expect(res.body).toMatchObject({ anchor: r[4]! + 1000, found_anchor: false, found_newest: true, found_oldest: false });
  });

  it('parses anchors as Zulip does: clamped integers, blanks allowed, anything else refused', async () => {
    const negative = await fetch({ anchor: '-5', num_before: 0, num_after: 1 });
    expect(negative.body.anchor).toBe(0);
    expect(got(negative)).toEqual([r[0]]);
    const spaced = await fetch({ anchor: ` ${r[3]} `, num_before: 0, num_after: 0 });
    expect(got(spaced)).toEqual([r[3]]);
    expect((await fetch({ anchor: '99999999999999999999', num_before: 1, num_after: 0 })).body.anchor).toBe(NEWEST);
    for (const anchor of ['abc', '1.5', '', '0x10']) expectJsonError(await fetch({ anchor, num_before: 1, num_after: 0 }), 400, 'Invalid anchor', 'BAD_REQUEST');
  });

  it('refuses missing arguments, too large ranges and an excluded anchor inside the range', async () => {
    const missingAnchor = await fetch({ num_before: 1, num_after: 0 });
    expectJsonError(missingAnchor, 400, "Missing 'anchor' argument.", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await fetch({ anchor: 'newest', num_after: 0 }), 400, "Missing 'num_before' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await fetch({ anchor: 'newest', num_before: 0 }), 400, "Missing 'num_after' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await fetch({ anchor: 'newest', num_before: -1, num_after: 0 }), 400, 'num_before is too small');
    expectJsonError(await fetch({ anchor: 'newest', num_before: 4000, num_after: 1001 }), 400, 'Too many messages requested (maximum 5000).', 'BAD_REQUEST');
    expect((await fetch({ anchor: 'newest', num_before: 4000, num_after: 1000 })).status).toBe(200);
    expectJsonError(await fetch({ anchor: String(r[2]), num_before: 1, num_after: 1, include_anchor: false }), 400, 'The anchor can only be excluded at an end of the range');
  });

  it('use_first_unread_anchor replaces anchor', async () => {
    await setFlags('hamlet', r, 1);
    await setFlags('hamlet', [r[3]!], 0);
    const res = await fetch({ use_first_unread_anchor: true, num_before: 0, num_after: 0 });
    expect(res.body.anchor).toBe(r[3]);
    expect(got(res)).toEqual([r[3]]);
  });

  it('message_ids: the listed messages the user may read that match the narrow, without range fields', async () => {
    const secret = await dm('iago', ['othello'], 'not for hamlet');
    const res = await fetch({ message_ids: [r[3], r[1], secret, 999_999] });
    expect(res.status).toBe(200);
    expect(got(res)).toEqual([r[1], r[3]]);
    expect(res.body).toMatchObject({ found_anchor: false, found_oldest: false, found_newest: false, history_limited: false });
    expect(res.body).not.toHaveProperty('anchor');
    // num_before/num_after of 0 go with message_ids (Zulip tests them for truth).
    expect(got(await fetch({ message_ids: [r[0]], num_before: 0, num_after: 0 }))).toEqual([r[0]]);
    const combined = await fetch({ message_ids: [r[0]], anchor: 'newest' });
    expectJsonError(combined, 400, 'Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor', 'INCOMPATIBLE_PARAMETERS');
    expectJsonError(await fetch({ message_ids: [r[0]], num_before: 3 }), 400, combined.body.msg, 'INCOMPATIBLE_PARAMETERS');
    // 5001 ids (duplicates count, as in Zulip), written compactly to stay within the request-head limit.
    const many = await env.raw(`/messages?message_ids=[${Array(5001).fill(r[0]).join(',')}]`, { as: 'hamlet' });
    expectJsonError(many, 400, 'Too many messages requested (maximum 5000).');
    const most = await env.raw(`/messages?message_ids=[${Array(5000).fill(r[0]).join(',')}]`, { as: 'hamlet' });
    expect(most.body.messages.map((x: any) => x.id)).toEqual([r[0]]);
  });
});

describe('GET /messages: first_unread and date anchors', () => {
  it('first_unread is the oldest unread message of the narrow; none unread: newest', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const u: number[] = [];
    for (let i = 0; i < 4; i++) u.push(await post('iago', ch, 'u', `unread ${i}`));
    await setFlags('hamlet', [u[0]!, u[1]!], 1);
    const res = await messages('hamlet', { anchor: 'first_unread', num_before: 1, num_after: 5, narrow: [channelTerm(ch)] });
    expect(res.body.anchor).toBe(u[2]);
    expect(res.body.messages.map((m: any) => m.id)).toEqual([u[1], u[2], u[3]]);
    expect(res.body.messages.map((m: any) => m.flags)).toEqual([['read'], [], []]);
    expect(res.body).toMatchObject({ found_anchor: true, found_newest: true, found_oldest: false });

    await setFlags('hamlet', u, 1);
    const none = await messages('hamlet', { anchor: 'first_unread', num_before: 2, num_after: 2, narrow: [channelTerm(ch)] });
    expect(none.body).toMatchObject({ anchor: NEWEST, found_anchor: false, found_newest: true });
    expect(none.body.messages.map((m: any) => m.id)).toEqual([u[2], u[3]]);
  });

  it('first_unread skips muted channels unless the narrow names the channel', async () => {
    const muted = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const other = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    await writeDeferredRows(db(), env.realmId, uid('hamlet'));
    await db().userMessage.updateMany({ where: { userId: uid('hamlet') }, data: { flags: 1 } });
    await db().subscription.update({ where: { userId_channelId: { userId: uid('hamlet'), channelId: muted.id } }, data: { isMuted: true } });
    const inMuted = await post('iago', muted, 't', 'muted');
    const elsewhere = await post('iago', other, 't', 'not muted');
    expect((await messages('hamlet', { anchor: 'first_unread', num_before: 0, num_after: 0 })).body.anchor).toBe(elsewhere);
    expect((await messages('hamlet', { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [channelTerm(muted)] })).body.anchor).toBe(inMuted);
    // in:home leaves the muted channel out, is:muted keeps only it.
    expect(only(await ids('hamlet', [{ operator: 'in', operand: 'home' }]), [inMuted, elsewhere])).toEqual([elsewhere]);
    expect(only(await ids('hamlet', [{ operator: 'in', operand: 'all' }]), [inMuted, elsewhere])).toEqual([inMuted, elsewhere]);
    expect(only(await ids('hamlet', [{ operator: 'is', operand: 'muted' }]), [inMuted, elsewhere])).toEqual([inMuted]);
    expectBadNarrow(await messages('hamlet', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'in', operand: 'away' }] }), "unknown 'in' operand away");
  });

  it('date: the first message sent at or after anchor_date, else the newest; nothing matching: empty', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const d: number[] = [];
    for (const [i, when] of ['2025-01-01T00:00:00Z', '2025-02-01T00:00:00Z', '2025-03-01T00:00:00Z'].entries()) {
      d.push(await post('iago', ch, 'dates', `dated ${i}`));
      await db().message.update({ where: { id: d[i]! }, data: { dateSent: new Date(when) } });
    }
    const at = (anchor_date: string, extra: Record<string, unknown> = {}) =>
      messages('hamlet', { anchor: 'date', anchor_date, num_before: 1, num_after: 1, narrow: [channelTerm(ch)], ...extra });
    const mid = await at('2025-01-15');
    expect(mid.body.anchor).toBe(d[1]);
    expect(mid.body.messages.map((m: any) => m.id)).toEqual(d);
    expect(mid.body.found_anchor).toBe(true);
    expect((await at('2025-02-01T00:00:00Z')).body.anchor).toBe(d[1]);
    expect((await at('2025-02-01T01:00:00+02:00')).body.anchor).toBe(d[1]); // 2025-01-31T23:00Z
    expect((await at('2025-02-01 00:00:01')).body.anchor).toBe(d[2]); // no zone: UTC
    expect((await at('2030-01-01')).body.anchor).toBe(d[2]);
    const empty = await at('2025-01-01', { narrow: [channelTerm(ch), { operator: 'topic', operand: 'nothing here' }] });
    expect(empty.body).toMatchObject({ messages: [], anchor: NEWEST, found_anchor: false, found_oldest: false, found_newest: false });
    expectJsonError(await messages('hamlet', { anchor: 'date', num_before: 1, num_after: 0 }), 400, "Missing 'anchor_date' argument.");
    for (const bad of ['yesterday', '2025-02-30', '2025-13-01', '2025-01-01T25:00']) expectJsonError(await at(bad), 400, 'Invalid anchor_date');
  });
});

describe('GET /messages: narrow operators', () => {
  let ch: Channel;
  let all: number[];
  const m: Record<string, number> = {};
  const hamletSees = async (narrow: Term[]) => only(await ids('hamlet', narrow), all);
  const bad = (narrow: unknown, as: Person = 'hamlet') => messages(as, { anchor: 'newest', num_before: 1, num_after: 0, narrow });

  beforeAll(async () => {
    ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'cordelia']);
    m['Castle'] = await post('iago', ch, 'Castle', 'The castle walls');
    m['castle'] = await post('hamlet', ch, 'castle', 'Hello @**Othello, the Moor of Venice**, see https://example.com');
    m['moat'] = await post('othello', ch, 'moat', 'The moat, @**King Hamlet**');
    m['empty'] = await post('hamlet', ch, 'general chat', 'in the empty topic');
    m['resolved'] = await post('iago', ch, '✔ solved', 'done');
    m['d1'] = await dm('hamlet', ['othello'], 'hamlet to othello');
    m['d2'] = await dm('othello', ['hamlet'], 'othello to hamlet');
    m['d3'] = await dm('hamlet', ['othello', 'iago'], 'group of three');
    m['d4'] = await dm('hamlet', ['hamlet'], 'note to self');
    m['d5'] = await dm('iago', ['hamlet', 'othello', 'cordelia'], 'group of four');
    m['d6'] = await dm('iago', ['hamlet'], 'iago to hamlet');
    all = Object.values(m).sort((a, b) => a - b);
  });
  const pick = (...names: string[]) => names.map((n) => m[n]!).sort((a, b) => a - b);
  const channelMessages = () => pick('Castle', 'castle', 'moat', 'empty', 'resolved');
  const directMessages = () => pick('d1', 'd2', 'd3', 'd4', 'd5', 'd6');

  it('channel / stream: by id, by name (any case), legacy pairs; unknown channels are BAD_NARROW', async () => {
    expect(await hamletSees([channelTerm(ch)])).toEqual(channelMessages());
    expect(await hamletSees([{ operator: 'stream', operand: ch.name.toUpperCase() }])).toEqual(channelMessages());
    expect(await hamletSees([['stream', ch.name]])).toEqual(channelMessages());
    expect(await hamletSees([['channel', ch.name]])).toEqual(channelMessages());
    expectBadNarrow(await bad([{ operator: 'channel', operand: 'Atlantis' }]), 'unknown channel Atlantis');
    expectBadNarrow(await bad([{ operator: 'stream', operand: 999_999 }]), 'unknown channel 999999');
    // A name made of digits is a name, not an id.
    expectBadNarrow(await bad([['stream', String(ch.id)]]), `unknown channel ${ch.id}`);
  });

  it('negated terms keep everything else, direct messages included', async () => {
    expect(await hamletSees([{ operator: 'channel', operand: ch.id, negated: true }])).toEqual(directMessages());
    expect(await hamletSees([channelTerm(ch), { operator: 'topic', operand: 'castle', negated: true }])).toEqual(pick('moat', 'empty', 'resolved'));
    expect(await hamletSees([{ operator: 'topic', operand: 'moat', negated: true }])).toEqual(all.filter((id) => id !== m['moat']));
  });

  it('topic: case-insensitive, channel messages only; "general chat" and "(no topic)" name the empty topic', async () => {
    expect(await hamletSees([channelTerm(ch), { operator: 'topic', operand: 'CASTLE' }])).toEqual(pick('Castle', 'castle'));
    expect(await hamletSees([['topic', 'castle']])).toEqual(pick('Castle', 'castle'));
    for (const name of ['', 'general chat', '(no topic)']) expect(await hamletSees([{ operator: 'topic', operand: name }])).toEqual(pick('empty'));
    const [shown] = (await messages('hamlet', { anchor: String(m['empty']), num_before: 0, num_after: 0 })).body.messages;
    expect(shown.subject).toBe('general chat');
    const [raw] = (await messages('hamlet', { anchor: String(m['empty']), num_before: 0, num_after: 0, allow_empty_topic_name: true })).body.messages;
    expect(raw.subject).toBe('');
  });

  it('sender: by id or e-mail address', async () => {
    expect(await hamletSees([{ operator: 'sender', operand: uid('othello') }])).toEqual(pick('moat', 'd2'));
    expect(await hamletSees([['sender', email('othello').toUpperCase()]])).toEqual(pick('moat', 'd2'));
    expect(await hamletSees([{ operator: 'sender', operand: uid('othello'), negated: true }])).toEqual(all.filter((id) => id !== m['moat'] && id !== m['d2']));
    expectBadNarrow(await bad([['sender', 'nobody@parley.test']]), 'unknown user nobody@parley.test');
    expectBadNarrow(await bad([{ operator: 'sender', operand: 999_999 }]), 'unknown user 999999');
    // Zulip does not expand "me".
    expectBadNarrow(await bad([['sender', 'me']]), 'unknown user me');
  });

  it('dm / pm-with: exactly one conversation, both directions, by ids or addresses', async () => {
    expect(await hamletSees([{ operator: 'dm', operand: [uid('othello')] }])).toEqual(pick('d1', 'd2'));
    expect(await hamletSees([['pm-with', email('othello')]])).toEqual(pick('d1', 'd2'));
    expect(await hamletSees([{ operator: 'dm', operand: [uid('othello'), uid('hamlet')] }])).toEqual(pick('d1', 'd2'));
    expect(await hamletSees([{ operator: 'dm', operand: `${email('iago')},${email('othello')}` }])).toEqual(pick('d3'));
    expect(await hamletSees([{ operator: 'dm', operand: [uid('hamlet')] }])).toEqual(pick('d4'));
    expect(await hamletSees([{ operator: 'dm', operand: [uid('iago'), uid('cordelia')] }])).toEqual([]); // never existed
    expect(await hamletSees([{ operator: 'dm', operand: [uid('othello')], negated: true }])).toEqual(all.filter((id) => id !== m['d1'] && id !== m['d2']));
    // The other participant sees the same conversation from their side.
    expect(only(await ids('othello', [{ operator: 'dm', operand: [uid('hamlet')] }]), all)).toEqual(pick('d1', 'd2'));
    expectBadNarrow(await bad([{ operator: 'dm', operand: [999_999] }]), 'unknown user in [999999]');
    expectBadNarrow(await bad([{ operator: 'dm', operand: [uid('othello'), 999_999] }]), `unknown user in [${uid('othello')}, 999999]`);
    expectBadNarrow(await bad([['dm', 'nobody@parley.test']]), 'unknown user in nobody@parley.test');
  });

  it('dm-including and group-pm-with', async () => {
    expect(await hamletSees([{ operator: 'dm-including', operand: uid('othello') }])).toEqual(pick('d1', 'd2', 'd3', 'd5'));
    expect(await hamletSees([['dm-including', email('hamlet')]])).toEqual(directMessages());
    expect(await hamletSees([{ operator: 'group-pm-with', operand: uid('othello') }])).toEqual(pick('d3', 'd5'));
    expectBadNarrow(await bad([{ operator: 'dm-including', operand: 999_999 }]), 'unknown user 999999');
  });

  it('is: dm, private, starred, mentioned, unread, resolved, alerted, followed', async () => {
    expect(await hamletSees([{ operator: 'is', operand: 'dm' }])).toEqual(directMessages());
    expect(await hamletSees([['is', 'private']])).toEqual(directMessages());
    expect(await hamletSees([{ operator: 'is', operand: 'dm', negated: true }])).toEqual(channelMessages());
    await setFlags('hamlet', all, 1);
    await setFlags('hamlet', [m['castle']!, m['d2']!], 0);
    await setFlags('hamlet', [m['moat']!], 1 | 2 | 8);
    expect(await hamletSees([['is', 'unread']])).toEqual(pick('castle', 'd2'));
    expect(await hamletSees([{ operator: 'is', operand: 'unread', negated: true }])).toEqual(all.filter((id) => id !== m['castle'] && id !== m['d2']));
    expect(await hamletSees([['is', 'starred']])).toEqual(pick('moat'));
    expect(await hamletSees([['is', 'mentioned']])).toEqual(pick('moat'));
    expect(await hamletSees([['is', 'resolved']])).toEqual(pick('resolved'));
    expect(await hamletSees([['is', 'alerted']])).toEqual([]);
    // Topics hamlet started are followed automatically (test/api/user-topics/user-topics.test.ts); without any policy, none are.
    await db().userTopic.deleteMany({ where: { userId: uid('hamlet') } });
    expect(await hamletSees([['is', 'followed']])).toEqual([]);
    const [moat] = (await messages('hamlet', { anchor: String(m['moat']), num_before: 0, num_after: 0 })).body.messages;
    expect(moat.flags).toEqual(['read', 'starred', 'mentioned']);
    expectBadNarrow(await bad([['is', 'bogus']]), "unknown 'is' operand bogus");
  });

  it('the sender\'s mention flags as stored at send time', async () => {
    const [row] = await db().userMessage.findMany({ where: { userId: uid('othello'), messageId: m['castle']! } });
    expect(Number(row!.flags) & 8).toBe(8);
    expect(only(await ids('othello', [['is', 'mentioned']]), all)).toEqual(pick('castle'));
  });

  it('id, near, has', async () => {
    expect(await hamletSees([{ operator: 'id', operand: m['moat'] }])).toEqual(pick('moat'));
    expect(await hamletSees([['id', String(m['d4'])]])).toEqual(pick('d4'));
    expect(await hamletSees([{ operator: 'near', operand: String(m['moat']) }])).toEqual(all);
    for (const operand of ['abc', '-1', '99999999999']) expectBadNarrow(await bad([['id', operand]]), 'Invalid message ID');
    expectBadNarrow(await bad([{ operator: 'id', operand: -3 }]), 'Invalid message ID');
    expect(await hamletSees([['has', 'link']])).toEqual(pick('castle'));
    expect(await hamletSees([['has', 'reaction']])).toEqual([]);
    expectBadNarrow(await bad([['has', 'bogus']]), "unknown 'has' operand bogus");
  });

  it('channels:public, and unknown operators and operands', async () => {
    expect(only(await ids('hamlet', [['channels', 'public']]), all)).toEqual(channelMessages());
    expect(only(await ids('hamlet', [['streams', 'public']]), all)).toEqual(channelMessages());
    expectBadNarrow(await bad([['channels', 'bogus']]), 'unknown channels operand bogus');
    expectBadNarrow(await bad([['bogus', 'x']]), 'unknown operator bogus');
  });

  it('a narrow cannot ask for channel and direct messages at once', async () => {
    const desc = 'No message can be both a channel message and direct message';
    expectBadNarrow(await bad([channelTerm(ch), { operator: 'dm', operand: [uid('othello')] }]), desc);
    expectBadNarrow(await bad([['topic', 'x'], ['is', 'dm']]), desc);
    expectBadNarrow(await bad([['is', 'dm'], ['channels', 'public']]), desc);
    expectBadNarrow(await bad([{ operator: 'is', operand: 'dm', negated: true }, { operator: 'dm-including', operand: uid('othello') }]), desc);
    // Negated terms do not say what a message is.
    expect(await hamletSees([{ operator: 'channel', operand: ch.id, negated: true }, { operator: 'dm', operand: [uid('othello')] }])).toEqual(pick('d1', 'd2'));
  });

  it('operand types are checked before anything else', async () => {
    expectJsonError(await bad([{ operator: 'topic', operand: 5 }]), 400, 'operand is not a string');
    expectJsonError(await bad([{ operator: 'dm', operand: 5 }]), 400, 'operand is not a string or an integer list');
    expectJsonError(await bad([{ operator: 'sender', operand: [5] }]), 400, 'operand is not a string or integer');
    expectJsonError(await bad([{ operator: 'search', operand: '   ' }]), 400, 'operand cannot be blank');
    expectJsonError(await get('hamlet', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: '[{' }), 400, 'narrow is not valid JSON');
    // The first failing term wins, in order.
    expectBadNarrow(await bad([['bogus', 'x'], ['channel', 'Atlantis']]), 'unknown operator bogus');
    expectBadNarrow(await bad([['channel', 'Atlantis'], ['bogus', 'x']]), 'unknown channel Atlantis');
  });

  it('with: the conversation that holds the message', async () => {
    expect(await hamletSees([{ operator: 'with', operand: m['Castle'] }])).toEqual(pick('Castle', 'castle'));
    expect(await hamletSees([['with', String(m['d2'])], ['topic', 'moat']])).toEqual(pick('d1', 'd2'));
    expect(await hamletSees([{ operator: 'with', operand: m['moat'] }, { operator: 'sender', operand: uid('othello') }])).toEqual(pick('moat'));
    // Unreadable (or missing) message: the other terms stand when they define a conversation.
    expect(await hamletSees([{ operator: 'with', operand: 999_999 }, channelTerm(ch), ['topic', 'moat']])).toEqual(pick('moat'));
    expectBadNarrow(await bad([{ operator: 'with', operand: 999_999 }]), "Invalid 'with' operator");
    expectBadNarrow(await bad([['with', 'abc']]), "Invalid 'with' operator");
    const dup = await bad([['with', String(m['moat'])], ['with', String(m['moat'])]]);
    expectJsonError(dup, 400, "Invalid narrow operator combination: Duplicate 'with' operators.", 'BAD_NARROW');
    // cordelia may not read hamlet's direct messages: with gives her nothing of them.
    expectBadNarrow(await bad([{ operator: 'with', operand: m['d1'] }], 'cordelia'), "Invalid 'with' operator");
  });
});

describe('GET /messages: search', () => {
  let ch: Channel;
  const s: Record<string, number> = {};
  let within: number[];
  const search = (operand: string, as: Person = 'hamlet') => ids(as, [channelTerm(ch), { operator: 'search', operand }]);

  beforeAll(async () => {
    ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    s['run'] = await post('iago', ch, 'walls', 'The castles are **running** away');
    s['fox'] = await post('iago', ch, 'animals', 'A quick brown fox jumps');
    s['html'] = await post('iago', ch, 'Fox <b>&</b> "hounds"', 'hounds everywhere');
    s['quote'] = await post('iago', ch, 'plays', 'Hamlet said: to be or not to be');
    within = Object.values(s);
  });

  it('full-text with stemming over content and topic, all words required', async () => {
    expect(only(await search('castle run'), within)).toEqual([s['run']]);
    expect(only(await search('animals'), within)).toEqual([s['fox']]);
    expect(only(await search('fox'), within)).toEqual([s['fox'], s['html']]);
    expect(only(await search('fox jumps'), within)).toEqual([s['fox']]);
    expect(only(await search('unicorn'), within)).toEqual([]);
    // Without a channel term: the user's own messages only.
    expect(only(await ids('hamlet', [['search', 'castles']]), within)).toEqual([s['run']]);
  });

  it('quoted phrases must appear as written; several search terms are joined', async () => {
    expect(only(await search('"brown fox"'), within)).toEqual([s['fox']]);
    expect(only(await search('"fox brown"'), within)).toEqual([]);
    expect(only(await ids('hamlet', [channelTerm(ch), ['search', 'quick'], ['search', 'jumps']]), within)).toEqual([s['fox']]);
    expect(only(await ids('hamlet', [channelTerm(ch), { operator: 'search', operand: 'fox', negated: true }]), within)).toEqual([s['run'], s['quote']]);
  });

  it('adds match_content and match_subject with highlights, outside HTML tags, topic escaped', async () => {
    const res = await messages('hamlet', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [channelTerm(ch), ['search', 'running castle']] });
    const [hit] = res.body.messages;
    expect(hit.match_content).toBe('<p>The <span class="highlight">castles</span> are <strong><span class="highlight">running</span></strong> away</p>');
    expect(hit.match_subject).toBe('walls');
    const html = (await messages('hamlet', { anchor: String(s['html']), num_before: 0, num_after: 0, narrow: [channelTerm(ch), ['search', 'fox']] })).body.messages[0];
    expect(html.match_subject).toBe('<span class="highlight">Fox</span> &lt;b&gt;&amp;&lt;/b&gt; &quot;hounds&quot;');
    expect(html.subject).toBe('Fox <b>&</b> "hounds"');
    // No search term: no match fields.
    const plain = (await messages('hamlet', { anchor: String(s['fox']), num_before: 0, num_after: 0 })).body.messages[0];
    expect(plain).not.toHaveProperty('match_content');
    expect(plain).not.toHaveProperty('match_subject');
  });

  it('follows edits of content, renamed topics and moves to another channel', async () => {
    const other = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const edited = await post('iago', ch, 'ramparts', 'pelicans on the battlements');
    const patch = (body: Record<string, unknown>) =>
      env.raw(`/messages/${edited}`, { method: 'PATCH', as: 'iago', body: encode(body), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(only(await search('pelican'), [edited])).toEqual([edited]);
    expect((await patch({ content: 'cormorants on the battlements' })).status).toBe(200);
    expect(only(await search('pelican'), [edited])).toEqual([]);
    expect(only(await search('cormorant'), [edited])).toEqual([edited]);
    expect((await patch({ topic: 'parapets', propagate_mode: 'change_one' })).status).toBe(200);
    // (The notice the move leaves in the new thread names the old topic: only the message itself counts.)
    expect(only(await search('ramparts'), [edited])).toEqual([]);
    expect(only(await search('parapet cormorant'), [edited])).toEqual([edited]);
    // Moved to another channel under the same topic: found there, and no longer here.
    expect((await patch({ stream_id: other.id, propagate_mode: 'change_one' })).status).toBe(200);
    expect(only(await search('cormorant'), [edited])).toEqual([]);
    expect(only(await ids('hamlet', [channelTerm(other), { operator: 'search', operand: 'parapet cormorant' }]), [edited])).toEqual([edited]);
  });

  it('never finds what the user may not read', async () => {
    const priv = await createChannel(env, 'iago', { invite_only: true }, ['iago']);
    const hidden = await post('iago', priv, 'secret', 'turrets of the private channel');
    expect(await ids('hamlet', [['search', 'turrets']])).toEqual([]);
    expect(await ids('cordelia', [['search', 'turrets']])).toEqual([]);
    expect(await ids('cordelia', [channelTerm(priv), ['search', 'turrets']])).toEqual([]);
    expect(await ids('iago', [['search', 'turrets']])).toEqual([hidden]);
  });
});

describe('visibility', () => {
  let pub: Channel;
  let p1: number;
  let p2: number;

  beforeAll(async () => {
    pub = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    p1 = await post('iago', pub, 'before', 'sent before cordelia subscribed');
  });

  it('without a channel term, only messages the user received', async () => {
    expect(await ids('cordelia', [])).not.toContain(p1);
    expect(await ids('hamlet', [])).toContain(p1);
  });

  it('a public channel\'s history is readable with a channel term (or channels:public), flagged read and historical', async () => {
    const res = await messages('cordelia', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [['channel', pub.name]] });
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual([[p1, ['read', 'historical']]]);
    expect(await ids('cordelia', [['channels', 'public']])).toContain(p1);
    // A negated channel term does not open the history.
    expect(await ids('cordelia', [{ operator: 'channel', operand: pub.id, negated: true }])).not.toContain(p1);
    expect(await ids('cordelia', [{ operator: 'channels', operand: 'public', negated: true }])).not.toContain(p1);
    // is: terms other than is:resolved are about the user's own rows.
    expect(await ids('cordelia', [channelTerm(pub), ['is', 'unread']])).toEqual([]);
    const one = await get('cordelia', `/messages/${p1}`);
    expect(one.body.message.flags).toEqual(['read', 'historical']);
  });

  it('after subscribing, new messages are received and old ones stay historical', async () => {
    await subscribeDirectly(env, uid('cordelia'), pub.id);
    p2 = await post('iago', pub, 'after', 'sent after cordelia subscribed');
    expect(only(await ids('cordelia', []), [p1, p2])).toEqual([p2]);
    const res = await messages('cordelia', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [channelTerm(pub)] });
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual([
      [p1, ['read', 'historical']],
      [p2, []],
    ]);
  });

  it('guests never read public channels they are not subscribed to', async () => {
    expect(await ids('polonius', [channelTerm(pub)])).toEqual([]);
    expect(await ids('polonius', [['channels', 'public']])).not.toContain(p1);
    expectJsonError(await get('polonius', `/messages/${p1}`), 400, 'Invalid message(s)');
    expectJsonError(await get('polonius', `/users/me/${pub.id}/topics`), 400, 'Invalid channel ID');
    // Subscribed, a guest reads the shared history of a public channel.
    const guestChannel = await createChannel(env, 'iago', {}, ['iago']);
    const old = await post('iago', guestChannel, 'g', 'before the guest came');
    await subscribeDirectly(env, uid('polonius'), guestChannel.id);
    const res = await messages('polonius', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [channelTerm(guestChannel)] });
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual([[old, ['read', 'historical']]]);
    // Unsubscribed again: even the rows they received are out of reach.
    const received = await post('iago', guestChannel, 'g', 'while the guest was there');
    expect(await ids('polonius', [])).toContain(received);
    await subscribeDirectly(env, uid('polonius'), guestChannel.id, false);
    expect(await ids('polonius', [])).not.toContain(received);
    expect(await ids('polonius', [channelTerm(guestChannel)])).toEqual([]);
    expectJsonError(await get('polonius', `/messages/${received}`), 400, 'Invalid message(s)');
  });

  it('private channels with protected history: only the rows the user has', async () => {
    const priv = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago', 'othello']);
    const q1 = await post('iago', priv, 'early', 'before cordelia');
    await subscribeDirectly(env, uid('cordelia'), priv.id);
    const q2 = await post('iago', priv, 'late', 'after cordelia');
    expect(await ids('cordelia', [channelTerm(priv)])).toEqual([q2]);
    expect(only(await ids('cordelia', []), [q1, q2])).toEqual([q2]);
    expectJsonError(await get('cordelia', `/messages/${q1}`), 400, 'Invalid message(s)');
    expect((await get('cordelia', `/messages/${q2}`)).body.message.flags).toEqual([]);
    expect((await get('cordelia', `/users/me/${priv.id}/topics`)).body.topics).toEqual([{ name: 'late', max_id: q2 }]);
    expect((await get('othello', `/users/me/${priv.id}/topics`)).body.topics).toEqual([
      { name: 'late', max_id: q2 },
      { name: 'early', max_id: q1 },
    ]);
    // Not subscribed (even an administrator): nothing, and no error for the channel term.
    for (const p of ['hamlet', 'desdemona'] as Person[]) {
      expect(await ids(p, [channelTerm(priv)])).toEqual([]);
      expectJsonError(await get(p, `/messages/${q1}`), 400, 'Invalid message(s)');
      expectJsonError(await get(p, `/users/me/${priv.id}/topics`), 400, 'Invalid channel ID');
    }
    // Unsubscribed, othello loses the messages he received; subscribed again, he has them back.
    await subscribeDirectly(env, uid('othello'), priv.id, false);
    expect(only(await ids('othello', []), [q1, q2])).toEqual([]);
    expect(await ids('othello', [['search', 'cordelia']])).toEqual([]);
    expectJsonError(await get('othello', `/messages/${q1}`), 400, 'Invalid message(s)');
    await subscribeDirectly(env, uid('othello'), priv.id, true);
    expect(only(await ids('othello', []), [q1, q2])).toEqual([q1, q2]);
  });

  it('private channels with shared history: every message, for subscribers only', async () => {
    const shared = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: true }, ['iago']);
    const s1 = await post('iago', shared, 'old', 'shared history');
    expect(await ids('cordelia', [channelTerm(shared)])).toEqual([]);
    expectJsonError(await get('cordelia', `/messages/${s1}`), 400, 'Invalid message(s)');
    await subscribeDirectly(env, uid('cordelia'), shared.id);
    const res = await messages('cordelia', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [channelTerm(shared)] });
    expect(res.body.messages.map((m: any) => [m.id, m.flags])).toEqual([[s1, ['read', 'historical']]]);
    expect((await get('cordelia', `/messages/${s1}`)).body.message.flags).toEqual(['read', 'historical']);
    expect((await get('cordelia', `/users/me/${shared.id}/topics`)).body.topics).toEqual([{ name: 'old', max_id: s1 }]);
  });

  it('direct messages only for their participants', async () => {
    const secret = await dm('hamlet', ['othello'], 'between us');
    expectJsonError(await get('cordelia', `/messages/${secret}`), 400, 'Invalid message(s)');
    expect(await ids('cordelia', [{ operator: 'dm-including', operand: uid('hamlet') }])).not.toContain(secret);
    expect(await ids('cordelia', [{ operator: 'id', operand: secret }])).toEqual([]);
    const listed = await messages('cordelia', { message_ids: [secret] });
    expect(listed.status).toBe(200);
    expect(listed.body.messages).toEqual([]);
    expect((await get('othello', `/messages/${secret}`)).status).toBe(200);
  });
});

describe('GET /messages/{message_id}', () => {
  it('the message with the requester\'s flags and its Markdown source', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const id = await post('iago', ch, 'general chat', 'Some **bold** text');
    const res = await get('hamlet', `/messages/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.raw_content).toBe('Some **bold** text');
    expect(res.body.message).toMatchObject({
      id,
      type: 'stream',
      stream_id: ch.id,
      display_recipient: ch.name,
      subject: 'general chat',
      sender_id: uid('iago'),
      content: '<p>Some <strong>bold</strong> text</p>',
      content_type: 'text/html',
      flags: [],
    });
    expect(res.body.message).not.toHaveProperty('match_content');
    const raw = await get('hamlet', `/messages/${id}`, { apply_markdown: false, allow_empty_topic_name: true });
    expect(raw.body.message).toMatchObject({ content: 'Some **bold** text', content_type: 'text/x-markdown', subject: '' });
    expectJsonError(await get('hamlet', '/messages/999999'), 400, 'Invalid message(s)');
    const direct = await dm('iago', ['hamlet'], 'hi');
    const dmRes = await get('hamlet', `/messages/${direct}`);
    expect(dmRes.body.message.type).toBe('private');
    expect(dmRes.body.message.display_recipient.map((p: any) => p.id).sort()).toEqual([uid('iago'), uid('hamlet')].sort());
    // The same through the generated client.
    const typed = await env.client('hamlet').GET('/messages/{message_id}', { params: { path: { message_id: id } } });
    expect(typed.data!.message.id).toBe(id);
  });
});

describe('GET /users/me/{stream_id}/topics', () => {
  it('one entry per topic (any case), the newest casing, newest first', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const a1 = await post('iago', ch, 'alpha', 'x');
    await post('iago', ch, 'Beta', 'x');
    const e1 = await post('iago', ch, '(no topic)', 'x');
    const b2 = await post('hamlet', ch, 'beta', 'x');
    const a2 = await post('hamlet', ch, 'ALPHA', 'x');
    expect(a1).toBeLessThan(a2);
    const res = await get('cordelia', `/users/me/${ch.id}/topics`);
    expect(res.status).toBe(200);
    expect(res.body.topics).toEqual([
      { name: 'ALPHA', max_id: a2 },
      { name: 'beta', max_id: b2 },
      { name: 'general chat', max_id: e1 },
    ]);
    expect((await get('cordelia', `/users/me/${ch.id}/topics`, { allow_empty_topic_name: true })).body.topics[2]).toEqual({ name: '', max_id: e1 });
    const typed = await env.client('cordelia').GET('/users/me/{stream_id}/topics', { params: { path: { stream_id: ch.id } } });
    expect(typed.data!.topics[0]).toEqual({ name: 'ALPHA', max_id: a2 });
    expectJsonError(await get('cordelia', '/users/me/999999/topics'), 400, 'Invalid channel ID');
    await db().channel.update({ where: { id: ch.id }, data: { isArchived: true } });
    expectJsonError(await get('hamlet', `/users/me/${ch.id}/topics`), 400, 'Invalid channel ID');
  });
});

describe('spectators', () => {
  it('read web-public channels only, and must say so in the narrow', async () => {
    const web = await createChannel(env, 'iago', {}, ['iago']);
    const pub = await createChannel(env, 'iago', {}, ['iago']);
    await db().channel.update({ where: { id: web.id }, data: { isWebPublic: true } });
    const w = await post('iago', web, 'open', 'for everyone');
    const p = await post('iago', pub, 'closed', 'members only');
    const webPublic = ['channels', 'web-public'];
    await withRealm(env, env.realmId, { enableSpectatorAccess: true }, async () => {
      const res = await messages(null, { anchor: 'newest', num_before: 100, num_after: 0, narrow: [webPublic] });
      expect(res.status).toBe(200);
      const got = res.body.messages.map((m: any) => m.id);
      expect(got).toContain(w);
      expect(got).not.toContain(p);
      const shown = res.body.messages.find((m: any) => m.id === w);
      expect(shown.flags).toEqual(['read']);
      expect(shown.avatar_url).not.toBeNull();
      expect((await messages(null, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [webPublic, ['channel', web.name], ['in', 'home']] })).body.messages.map((m: any) => m.id)).toEqual([w]);
      expectBadNarrow(await messages(null, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [webPublic, ['channel', pub.name]] }), `unknown web-public channel ${pub.name}`);
      for (const narrow of [[], [['channel', web.name]], [webPublic, ['is', 'starred']], [{ operator: 'channels', operand: 'web-public', negated: true }]]) {
        expectJsonError(await messages(null, { anchor: 'newest', num_before: 10, num_after: 0, narrow }), 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
      }
      expect((await get(null, `/messages/${w}`)).body.message.flags).toEqual(['read']);
      expectJsonError(await get(null, `/messages/${p}`), 401, 'Missing authorization header for basic auth');
      expect((await get(null, `/users/me/${web.id}/topics`)).body.topics).toEqual([{ name: 'open', max_id: w }]);
      expectJsonError(await get(null, `/users/me/${pub.id}/topics`), 400, 'Invalid channel ID');
    });
    expect((await messages(null, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [webPublic] })).status).toBe(401);
  });
});

// ---------------------------------------------------------------------------------------------

describe('scale: a topic of channels of 300,000 and 100,000 messages', () => {
  // Big enough that a plan reading more than the page shows in its counts (a topic holds 300 or 100).
  const BIG = 300_000;
  const PRIV = 100_000;
  const TOPICS = 1000;
  let big: Channel;
  let priv: Channel;

  beforeAll(async () => {
    big = await createChannel(env, 'iago', {}, ['iago']);
    priv = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago', 'othello']);
    // 300,000 messages in a public channel (no rows: read as history), 100,000 in a private channel
    // with protected history whose rows othello has; topic t is message g with g % 1000 = t.
    const insert = (channelId: number, from: number, to: number) =>
      db().$executeRawUnsafe(`INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content)
        SELECT ${env.realmId}, ${uid('iago')}, ${channelId}, 'topic ' || (g % ${TOPICS}), '{}', 'message ' || g, '<p>message ' || g || '</p>'
        FROM generate_series(${from}, ${to}) g ORDER BY g`);
    await insert(big.id, 1, BIG);
    await insert(priv.id, 1, PRIV);
    await db().$executeRawUnsafe(`INSERT INTO user_message (user_id, message_id, flags) SELECT ${uid('othello')}, id, 1 FROM message WHERE channel_id = ${priv.id}`);
    await db().$executeRawUnsafe('ANALYZE');
  }, 300_000);

  /** The page statement of one GET /messages, the statement count, and the page statement's plan. */
  async function measure(as: Person, params: Record<string, unknown>) {
    // Credentials cached and plans warmed, once every invalidation committed before has reached this
    // process (one arriving after the warm-up would empty the cache again).
    await env.running.deps.listener.barrier();
    await messages(as, params);
    statements = [];
    const res = await messages(as, params);
    const seen = statements;
    statements = null;
    const page = seen.find((s) => s.query.includes('WITH page'))!;
    const client = new pg.Client({ connectionString: env.databaseUrl });
    await client.connect();
    try {
      const plan = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${page.query}`, JSON.parse(page.params));
      return { res, count: seen.length, plan: plan.rows[0]['QUERY PLAN'][0] };
    } finally {
      await client.end();
    }
  }
  const nodes = (plan: any): any[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];

  for (const [label, channel, as] of [
    ['history of a public channel', () => big, 'cordelia'],
    ['rows of a private channel', () => priv, 'othello'],
  ] as const) {
    it(`${label}: walks the (channel_id, lower(topic), id) index from the anchor, a few statements`, async () => {
      const c = channel();
      const first = (await db().message.findFirstOrThrow({ where: { channelId: c.id }, orderBy: { id: 'asc' } })).id;
      const topicIds = (count: number, from: number) => Array.from({ length: count }, (_, i) => first - 1 + from + i * TOPICS);
      const messagesInChannel = c === big ? BIG : PRIV;
      const lastOfTopic = 7 + (messagesInChannel / TOPICS - 1) * TOPICS;
      for (const [anchor, expected] of [
        ['newest', topicIds(50, lastOfTopic - 49 * TOPICS)],
        [String(first - 1 + 7 + 40 * TOPICS), topicIds(50, 7 + 15 * TOPICS)],
      ] as const) {
        const before = anchor === 'newest' ? 50 : 25;
        const params = { anchor, num_before: before, num_after: anchor === 'newest' ? 0 : 24, narrow: [channelTerm(c), { operator: 'topic', operand: 'Topic 7' }] };
        const { res, count, plan } = await measure(as, params);
        expect(res.status).toBe(200);
        expect(res.body.messages.map((m: any) => m.id)).toEqual(expected);
        // The reader's deferred rows, the narrow's columns, then people (the caller's groups, when
        // private channels are involved).
        expect(count).toBeLessThanOrEqual(5);
        const all = nodes(plan.Plan);
        const topicScans = all.filter((n) => n['Index Name'] === 'message_channel_topic_id_idx');
        expect(topicScans.length).toBeGreaterThan(0);
        // Each side starts at the anchor and stops at its limit: no entry of the topic is read in vain.
        for (const scan of topicScans) expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(51);
        expect(all.some((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'message')).toBe(false);
        expect(all.some((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'user_message')).toBe(false);
        // A few hundred pages for 50 messages, whatever the size of the channel.
        expect(plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks']).toBeLessThan(1500);
      }
    });
  }

  it("the reader's own rows, without a channel: each read state's range of the per-user index, from the anchor, no further than the page", async () => {
    const othello = uid('othello');
    const newestOwn = async (where: string) =>
      (await db().$queryRawUnsafe<{ id: number }[]>(`SELECT message_id AS id FROM user_message WHERE user_id = ${othello} ${where} ORDER BY message_id DESC LIMIT 50`)).map((r) => r.id).reverse();
    // 40 of othello's 100,000 rows unread, spread over the newest 4,000.
    const newestId = (await db().message.findFirstOrThrow({ where: { channelId: priv.id }, orderBy: { id: 'desc' } })).id;
    const unread = `message_id > ${newestId - 4000} AND message_id % 100 = 0`;
    // Only those: his other unread rows (earlier tests' messages, deferred rows written now) are read meanwhile.
    await writeDeferredRows(db(), env.realmId, othello);
    const earlier = await db().$queryRawUnsafe<{ id: number }[]>(`UPDATE user_message SET flags = flags | 1 WHERE user_id = ${othello} AND (flags & 1) = 0 RETURNING message_id AS id`);
    await db().$executeRawUnsafe(`UPDATE user_message SET flags = 0 WHERE user_id = ${othello} AND ${unread}`);
    try {
      expect(await newestOwn('AND (flags & 1) = 0')).toHaveLength(40);
      for (const [narrow, expected] of [
        [[], await newestOwn('')],
        [[{ operator: 'is', operand: 'unread' }], await newestOwn('AND (flags & 1) = 0')],
        [[{ operator: 'is', operand: 'unread', negated: true }], await newestOwn('AND (flags & 1) = 1')],
      ] as const) {
        const { res, plan } = await measure('othello', { anchor: 'newest', num_before: 50, num_after: 0, narrow });
        expect(res.status).toBe(200);
        expect(res.body.messages.map((m: any) => m.id)).toEqual(expected);
        const all = nodes(plan.Plan);
        const rowScans = all.filter((n) => n['Relation Name'] === 'user_message');
        expect(rowScans.length).toBeGreaterThan(0);
        for (const scan of rowScans) expect(scan['Actual Rows'] * scan['Actual Loops']).toBeLessThanOrEqual(51);
        // is:unread: the unread range of the per-user index, never a walk of all the reader's rows.
        if (narrow.length > 0 && !narrow[0]!.negated) expect(rowScans.map((n) => n['Index Name'])).toEqual(['user_message_user_read_idx']);
        expect(all.some((n) => n['Node Type'] === 'Seq Scan' && ['message', 'user_message'].includes(n['Relation Name']))).toBe(false);
        expect(plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks']).toBeLessThan(1500);
      }
    } finally {
      await db().$executeRawUnsafe(`UPDATE user_message SET flags = 1 WHERE user_id = ${othello} AND ${unread}`);
      await db().$executeRawUnsafe(`UPDATE user_message SET flags = flags & ~1::bigint WHERE user_id = ${othello} AND message_id = ANY($1::int[])`, earlier.map((r) => r.id));
    }
  });

  it('topics of the big channel: one probe per topic', async () => {
    const first = (await db().message.findFirstOrThrow({ where: { channelId: big.id }, orderBy: { id: 'asc' } })).id;
    const res = await get('cordelia', `/users/me/${big.id}/topics`);
    expect(res.body.topics).toHaveLength(TOPICS);
    // Message g (from 1) has id first - 1 + g and topic g % 1000: the newest is g = 300,000 (topic 0).
    expect(res.body.topics.slice(0, 3)).toEqual([0, 999, 998].map((t, i) => ({ name: `topic ${t}`, max_id: first - 1 + BIG - i })));
    expect(res.body.topics.at(-1)).toEqual({ name: 'topic 1', max_id: first - 1 + BIG - 999 });
  });
});
