// Topic visibility policies: POST /user_topics and the older PATCH /users/me/subscriptions/muted_topics,
// their `user_topic` and `muted_topics` events and /register state, and what the policies change in
// reading: the is:followed, is:muted and in:home narrows and the first-unread anchor. (Their effect on
// mobile pushes is tested in push.test.ts.)
import { describe, expect, it } from 'vitest';
import type { RequestParams } from '@parley/api-types';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { pollEvents, registerQueue, type Queue } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago', 'hamlet']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

const setPolicy = (as: Person, stream_id: number, topic: string, visibility_policy: number) =>
  env.client(as).POST('/user_topics', { body: { stream_id, topic, visibility_policy: visibility_policy as 0 | 1 | 2 | 3 } });
async function policySet(as: Person, streamId: number, topic: string, policy: number): Promise<void> {
  const { error } = await setPolicy(as, streamId, topic, policy);
  if (error) throw new Error(JSON.stringify(error));
}
const legacy = (as: Person, body: RequestParams<'mute-topic'>) => env.client(as).PATCH('/users/me/subscriptions/muted_topics', { body });

async function registered(as: Person, body: Record<string, unknown> = {}): Promise<any> {
  const res = await env.raw('/register', {
    method: 'POST',
    as,
    body: new URLSearchParams(Object.entries({ fetch_event_types: ['user_topic', 'muted_topics'], ...body }).map(([k, v]): [string, string] => [k, JSON.stringify(v)])),
  });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body;
}
const topicsOf = async (as: Person) => (await registered(as)).user_topics as { stream_id: number; topic_name: string; visibility_policy: number; last_updated: number }[];
const policyOf = async (as: Person, streamId: number, topic: string) =>
  (await topicsOf(as)).find((t) => t.stream_id === streamId && t.topic_name.toLowerCase() === topic.toLowerCase())?.visibility_policy ?? 0;

async function send(as: Person, to: string, topic: string, content = 'hello'): Promise<number> {
  const res = await env.raw('/messages', { method: 'POST', as, body: new URLSearchParams({ type: 'stream', to, topic, content }) });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}
async function narrowed(as: Person, narrow: unknown[], anchor = 'newest'): Promise<number[]> {
  const query = new URLSearchParams({ anchor, num_before: anchor === 'newest' ? '1000' : '0', num_after: anchor === 'newest' ? '0' : '1', narrow: JSON.stringify(narrow) });
  const res = await env.raw(`/messages?${query}`, { as });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
  return res.body.messages.map((m: { id: number }) => m.id);
}
const only = (all: number[], within: number[]) => all.filter((id) => within.includes(id));

describe('POST /user_topics', () => {
  it('follows, mutes and clears a topic: state, events for the user only, nothing when unchanged', async () => {
    const mark = await markEvents(env);
    const before = Math.floor(Date.now() / 1000);
    await policySet('hamlet', channel.id, 'Dinner Plans', 3);
    const [followed] = (await topicsOf('hamlet')).filter((t) => t.stream_id === channel.id);
    expect(followed).toMatchObject({ stream_id: channel.id, topic_name: 'Dinner Plans', visibility_policy: 3 });
    expect(followed!.last_updated).toBeGreaterThanOrEqual(before);
    expect(followed!.last_updated).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(await topicsOf('othello')).toEqual([]);

    // Same policy again, in another letter case: the same topic, unchanged, no event.
    await policySet('hamlet', channel.id, 'dinner plans', 3);
    // Another policy in another case: the same row, renamed as last given.
    await policySet('hamlet', channel.id, 'DINNER PLANS', 1);
    expect((await topicsOf('hamlet')).filter((t) => t.stream_id === channel.id)).toEqual([expect.objectContaining({ topic_name: 'DINNER PLANS', visibility_policy: 1 })]);
    expect((await registered('hamlet')).muted_topics).toEqual([[channel.name, 'DINNER PLANS', expect.any(Number)]]);
    await policySet('hamlet', channel.id, 'dinner plans', 0);
    await policySet('hamlet', channel.id, 'dinner plans', 0);
    expect(await topicsOf('hamlet')).toEqual([]);

    const events = (await eventPayloadsSince(env, mark)).filter((e) => e.type === 'user_topic' || e.type === 'muted_topics');
    expect(events).toEqual([
      { type: 'muted_topics', muted_topics: [] },
      { type: 'user_topic', stream_id: channel.id, topic_name: 'Dinner Plans', last_updated: followed!.last_updated, visibility_policy: 3 },
      { type: 'muted_topics', muted_topics: [[channel.name, 'DINNER PLANS', expect.any(Number)]] },
      { type: 'user_topic', stream_id: channel.id, topic_name: 'DINNER PLANS', last_updated: expect.any(Number), visibility_policy: 1 },
      { type: 'muted_topics', muted_topics: [] },
      { type: 'user_topic', stream_id: channel.id, topic_name: 'dinner plans', last_updated: expect.any(Number), visibility_policy: 0 },
    ]);
    const rows = await db().event.findMany({ where: { id: { gt: mark } } });
    for (const row of rows.filter((r) => ['user_topic', 'muted_topics'].includes((r.payload as { type: string }).type))) expect(row.userIds).toEqual([uid('hamlet')]);
  });

  it("answers Zulip's errors and changes nothing on them", async () => {
    expectJsonError(await setPolicy('hamlet', 987654, 'x', 3), 400, 'Invalid channel ID');
    expectJsonError(await setPolicy('othello', secret.id, 'x', 3), 400, 'Invalid channel ID');
    expectJsonError(await setPolicy('hamlet', channel.id, 'x'.repeat(61), 3), 400, 'topic is too long (limit: 60 characters)');
    expectJsonError(await setPolicy('hamlet', channel.id, 'x', 4), 400, 'Invalid visibility_policy');
    expectJsonError(await setPolicy('hamlet', channel.id, 'x', -1), 400, 'Invalid visibility_policy');
    const res = await env.raw('/user_topics', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ stream_id: String(channel.id), topic: 'x' }) });
    expect(res.body).toMatchObject({ result: 'error', msg: "Missing 'visibility_policy' argument", code: 'REQUEST_VARIABLE_MISSING' });
    await policySet('hamlet', channel.id, 'x'.repeat(60), 2);
    expect(await policyOf('hamlet', channel.id, 'x'.repeat(60))).toBe(2);
    await policySet('hamlet', channel.id, 'x'.repeat(60), 0);
    expect(await topicsOf('othello')).toEqual([]);
  });

  it('keeps the policy of a channel the user loses, lists it no more once archived, and lets it be removed', async () => {
    const lost = await createChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);
    await policySet('othello', lost.id, 'secret plans', 3);
    const unsubscribed = await env.client('iago').DELETE('/users/me/subscriptions', { body: { subscriptions: [lost.name], principals: [uid('othello')] } });
    expect(unsubscribed.error).toBeUndefined();
    // Setting a policy needs access; removing one does not.
    expectJsonError(await setPolicy('othello', lost.id, 'secret plans', 1), 400, 'Invalid channel ID');
    expect(await policyOf('othello', lost.id, 'secret plans')).toBe(3);
    await policySet('othello', lost.id, 'secret plans', 0);
    expect(await policyOf('othello', lost.id, 'secret plans')).toBe(0);

    const archived = await createChannel(env, 'iago', {}, ['iago', 'othello']);
    await policySet('othello', archived.id, 'old', 1);
    expect(await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } })).toMatchObject({ data: { result: 'success' } });
    expect((await topicsOf('othello')).map((t) => t.stream_id)).not.toContain(archived.id);
    expect((await registered('othello')).muted_topics).toEqual([]);
    expectJsonError(await setPolicy('othello', archived.id, 'old', 3), 400, 'Invalid channel ID');
  });

  it('names the empty topic "" for clients that know it, and by its display name for the others', async () => {
    const modern = await registered('hamlet', { event_types: ['user_topic'], client_capabilities: { empty_topic_name: true } });
    const older = await registered('hamlet', { event_types: ['user_topic'] });
    await policySet('hamlet', channel.id, 'general chat', 3);
    const poll = async (queue: Queue) => (await pollEvents(env.client('hamlet'), queue)).filter((e) => e.type === 'user_topic').map((e) => e.topic_name);
    expect(await poll(modern)).toEqual(['']);
    expect(await poll(older)).toEqual(['general chat']);
    expect((await registered('hamlet', { client_capabilities: { empty_topic_name: true } })).user_topics).toContainEqual(expect.objectContaining({ stream_id: channel.id, topic_name: '' }));
    expect((await registered('hamlet')).user_topics).toContainEqual(expect.objectContaining({ stream_id: channel.id, topic_name: 'general chat' }));
    // "(no topic)" is the empty topic too.
    await policySet('hamlet', channel.id, '(no topic)', 0);
    expect(await policyOf('hamlet', channel.id, 'general chat')).toBe(0);
  });
});

describe('PATCH /users/me/subscriptions/muted_topics (older form)', () => {
  it('mutes by channel name or id and removes, as POST /user_topics does', async () => {
    const mark = await markEvents(env);
    expect((await legacy('othello', { stream: channel.name, topic: 'noise', op: 'add' })).error).toBeUndefined();
    expect(await policyOf('othello', channel.id, 'noise')).toBe(1);
    expect((await registered('othello')).muted_topics).toEqual([[channel.name, 'noise', expect.any(Number)]]);
    expect((await legacy('othello', { stream_id: channel.id, topic: 'NOISE', op: 'remove' })).error).toBeUndefined();
    expect(await policyOf('othello', channel.id, 'noise')).toBe(0);
    // Removing mutes from a followed topic too: `remove` clears whatever policy the topic has.
    await policySet('othello', channel.id, 'kept', 3);
    expect((await legacy('othello', { stream_id: channel.id, topic: 'kept', op: 'remove' })).error).toBeUndefined();
    expect(await policyOf('othello', channel.id, 'kept')).toBe(0);
    const types = (await eventPayloadsSince(env, mark)).filter((e) => e.type === 'user_topic').map((e) => e.visibility_policy);
    expect(types).toEqual([1, 0, 3, 0]);
  });

  it("answers Zulip's errors", async () => {
    expectJsonError(await legacy('othello', { topic: 't', op: 'add' }), 400, "Missing 'stream_id' argument");
    const both = await legacy('othello', { stream_id: channel.id, stream: channel.name, topic: 't', op: 'add' });
    expectJsonError(both, 400, 'Unsupported parameter combination: stream_id, stream');
    expect(both.error!.code).toBe('INCOMPATIBLE_PARAMETERS');
    expectJsonError(await legacy('othello', { stream: 'Atlantis', topic: 't', op: 'add' }), 400, "Invalid channel name 'Atlantis'");
    expectJsonError(await legacy('othello', { stream: 'Atlantis', topic: 't', op: 'remove' }), 400, 'Topic is not muted');
    expectJsonError(await legacy('othello', { stream: secret.name, topic: 't', op: 'add' }), 400, `Invalid channel name '${secret.name}'`);
    expectJsonError(await unchecked(env.client('othello')).PATCH('/users/me/subscriptions/muted_topics', { body: { stream_id: channel.id, topic: 't', op: 'toggle' } }), 400, 'Invalid op');
    expect(await policyOf('othello', channel.id, 't')).toBe(0);
  });
});

describe('reading with topic policies', () => {
  it('is:followed, is:muted and in:home follow the topics and channels the reader muted, unmuted or followed', async () => {
    const quiet = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
    const loud = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
    const muted = await env.client('hamlet').POST('/users/me/subscriptions/properties', { body: { subscription_data: [{ stream_id: quiet.id, property: 'is_muted', value: true }] } });
    expect(muted.error).toBeUndefined();
    const quietPlain = await send('iago', quiet.name, 'plain');
    const quietUnmuted = await send('iago', quiet.name, 'Unmuted');
    const quietFollowed = await send('iago', quiet.name, 'followed here');
    const loudPlain = await send('iago', loud.name, 'plain');
    const loudMuted = await send('iago', loud.name, 'Muted');
    const loudFollowed = await send('iago', loud.name, 'Followed');
    const all = [quietPlain, quietUnmuted, quietFollowed, loudPlain, loudMuted, loudFollowed];
    await policySet('hamlet', quiet.id, 'unmuted', 2);
    await policySet('hamlet', quiet.id, 'FOLLOWED HERE', 3);
    await policySet('hamlet', loud.id, 'muted', 1);
    await policySet('hamlet', loud.id, 'followed', 3);

    expect(only(await narrowed('hamlet', [{ operator: 'is', operand: 'followed' }]), all)).toEqual([quietFollowed, loudFollowed]);
    expect(only(await narrowed('hamlet', [{ operator: 'is', operand: 'followed', negated: true }]), all)).toEqual([quietPlain, quietUnmuted, loudPlain, loudMuted]);
    expect(only(await narrowed('hamlet', [{ operator: 'is', operand: 'muted' }]), all)).toEqual([quietPlain, loudMuted]);
    expect(only(await narrowed('hamlet', [{ operator: 'in', operand: 'home' }]), all)).toEqual([quietUnmuted, quietFollowed, loudPlain, loudFollowed]);
    // Policies are the reader's own (the sender follows the topics they started).
    expect(only(await narrowed('othello', [{ operator: 'is', operand: 'followed' }]), all)).toEqual([]);
    expect(only(await narrowed('othello', [{ operator: 'in', operand: 'home' }]), all)).toEqual(all);
    expect(only(await narrowed('iago', [{ operator: 'is', operand: 'followed' }]), all)).toEqual(all);
  });

  it('the first unread message skips muted topics, and muted channels unless the narrow names one', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'cordelia']);
    await env.client('cordelia').POST('/mark_all_as_read', {});
    const muted = await send('iago', ch.name, 'muted topic');
    const next = await send('iago', ch.name, 'open topic');
    await policySet('cordelia', ch.id, 'muted topic', 1);
    expect(await narrowed('cordelia', [], 'first_unread')).toEqual([next]);
    expect(await narrowed('cordelia', [{ operator: 'channel', operand: ch.id }], 'first_unread')).toEqual([next]);
    await policySet('cordelia', ch.id, 'muted topic', 0);
    expect(await narrowed('cordelia', [{ operator: 'channel', operand: ch.id }], 'first_unread')).toEqual([muted, next]);
  });
});

describe('automatic policies when sending (Zulip\'s automatically_follow_topics_* settings)', () => {
  const sendRaw = (as: Person, to: string, topic: string, content = 'hello') =>
    env.raw('/messages', { method: 'POST', as, body: new URLSearchParams({ type: 'stream', to, topic, content }) });
  const settings = async (as: Person, body: RequestParams<'update-settings'>) => {
    const { error } = await env.client(as).PATCH('/settings', { body });
    if (error) throw new Error(JSON.stringify(error));
  };

  it('follows a topic its sender starts (the default), says so once, and not for replies of others', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
    const mark = await markEvents(env);
    const queue = await registerQueue(env.client('hamlet'), { event_types: ['message', 'muted_topics', 'user_topic'] });
    const first = await sendRaw('hamlet', ch.name, 'Fresh Topic');
    expect(first.body).toMatchObject({ result: 'success', automatic_new_visibility_policy: 3 });
    // The sender's clients hear of the message first, then of the topic it made them follow (the policy's
    // row is written before the message's, its events stored after it: actions/messages.ts storeWithPlan).
    const heard = (await pollEvents(env.client('hamlet'), queue)).map((e) => (e.type === 'message' ? `message ${e.message.id}` : e.type));
    expect(heard).toEqual([`message ${first.body.id}`, 'muted_topics', 'user_topic']);
    expect(await policyOf('hamlet', ch.id, 'fresh topic')).toBe(3);
    const again = await sendRaw('hamlet', ch.name, 'fresh topic');
    expect(again.body.automatic_new_visibility_policy).toBeUndefined();
    const reply = await sendRaw('othello', ch.name, 'FRESH TOPIC');
    expect(reply.body.automatic_new_visibility_policy).toBeUndefined();
    expect(await policyOf('othello', ch.id, 'fresh topic')).toBe(0);
    const told = (await eventPayloadsSince(env, mark)).filter((e) => e.type === 'user_topic');
    expect(told).toEqual([{ type: 'user_topic', stream_id: ch.id, topic_name: 'Fresh Topic', last_updated: expect.any(Number), visibility_policy: 3 }]);
    // Direct messages have no topic to follow.
    const direct = await env.raw('/messages', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ type: 'private', to: JSON.stringify([uid('othello')]), content: 'hi' }) });
    expect(direct.body.automatic_new_visibility_policy).toBeUndefined();
  });

  it('follows on every send or on none as the sender chose, and unmutes topics of muted channels', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'desdemona', 'shiva']);
    await send('iago', ch.name, 'existing');
    await settings('desdemona', { automatically_follow_topics_policy: 2 });
    expect((await sendRaw('desdemona', ch.name, 'existing')).body.automatic_new_visibility_policy).toBe(3);
    await settings('shiva', { automatically_follow_topics_policy: 4, automatically_unmute_topics_in_muted_streams_policy: 4 });
    expect((await sendRaw('shiva', ch.name, 'brand new')).body.automatic_new_visibility_policy).toBeUndefined();
    expect(await policyOf('shiva', ch.id, 'brand new')).toBe(0);
    // In a muted channel, sending unmutes the topic (unmute on send, the default), even a muted one.
    await settings('shiva', { automatically_unmute_topics_in_muted_streams_policy: 2 });
    expect((await env.client('shiva').POST('/users/me/subscriptions/properties', { body: { subscription_data: [{ stream_id: ch.id, property: 'is_muted', value: true }] } })).error).toBeUndefined();
    await policySet('shiva', ch.id, 'existing', 1);
    expect((await sendRaw('shiva', ch.name, 'existing')).body.automatic_new_visibility_policy).toBe(2);
    expect(await policyOf('shiva', ch.id, 'existing')).toBe(2);
    // A followed topic is never made merely unmuted.
    await policySet('shiva', ch.id, 'existing', 3);
    expect((await sendRaw('shiva', ch.name, 'existing')).body.automatic_new_visibility_policy).toBeUndefined();
    expect(await policyOf('shiva', ch.id, 'existing')).toBe(3);
    await settings('desdemona', { automatically_follow_topics_policy: 3 });
    await settings('shiva', { automatically_follow_topics_policy: 3 });
  });

  it('counts a topic as started by its sender when the earlier messages are in a history the sender cannot read', async () => {
    const ch = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago']);
    await send('iago', ch.name, 'before you came');
    const joined = await env.client('iago').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: ch.name }], principals: [uid('cordelia')] } });
    expect(joined.error).toBeUndefined();
    // Cordelia cannot read iago's earlier message: for her, her first message starts the topic.
    expect((await sendRaw('cordelia', ch.name, 'before you came')).body.automatic_new_visibility_policy).toBe(3);
    // In a channel whose history subscribers read, the same reply starts nothing.
    const open = await createChannel(env, 'iago', {}, ['iago', 'cordelia']);
    await send('iago', open.name, 'before you came');
    expect((await sendRaw('cordelia', open.name, 'before you came')).body.automatic_new_visibility_policy).toBeUndefined();
  });

  it('makes recipients it mentions by name follow the topic, unless muted, silent, or not wanted', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'cordelia']);
    await send('iago', ch.name, 'talk');
    await policySet('cordelia', ch.id, 'talk', 1);
    await send('iago', ch.name, 'talk', `@**King Hamlet** @**Cordelia, Lear's daughter** @_**Othello, the Moor of Venice** look`);
    expect(await policyOf('hamlet', ch.id, 'talk')).toBe(3);
    expect(await policyOf('cordelia', ch.id, 'talk')).toBe(1);
    expect(await policyOf('othello', ch.id, 'talk')).toBe(0);
    await settings('othello', { automatically_follow_topics_where_mentioned: false });
    await send('iago', ch.name, 'talk', '@**Othello, the Moor of Venice** now');
    expect(await policyOf('othello', ch.id, 'talk')).toBe(0);
    await settings('othello', { automatically_follow_topics_where_mentioned: true });
    // A user who cannot read the channel is not made to follow it.
    await send('iago', ch.name, 'talk', '@**Desdemona** here?');
    expect(await policyOf('desdemona', ch.id, 'talk')).toBe(0);
  });
});
