// Emoji reactions: POST and DELETE /messages/{message_id}/reactions, Zulip's lookups, checks and
// errors, who may react (per role and channel kind), the `reaction` event and who receives it (only
// those who can see the message), `reactions` on message objects, votes, historical rows, concurrent
// identical requests, and the Python client's wire shape.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { sendMessage } from '../../helpers/queues.ts';
import { unchecked } from '../../helpers/unchecked.ts';
import { createAccount, createUser, deactivateUser } from '../../helpers/people.ts';
import { MESSAGE_FLAG_BITS } from '../../../src/lib/message-flags.ts';

const env = useTestServer();
// A public channel of iago, hamlet, othello and the guest polonius (cordelia, shiva, desdemona not subscribed).
const lobby = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'polonius']);
// A private channel (shared history) of iago and othello.
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);

const uid = (p: Person) => env.users[p].id;
const db = () => env.running.deps.db;

const toChannel = (as: Person, channel: { name: string }, topic = 'reactions', content = 'react to me') =>
  sendMessage(env.client(as), { type: 'stream', to: channel.name, topic, content });
const toPeople = (as: Person, people: Person[], content = 'direct') => sendMessage(env.client(as), { type: 'private', to: JSON.stringify(people.map(uid)), content });

type Emoji = { emoji_name: string; emoji_code?: string; reaction_type?: string };
const add = (as: Person, messageId: number, emoji: Emoji) =>
  env.client(as).POST('/messages/{message_id}/reactions', { params: { path: { message_id: messageId } }, body: emoji });
const remove = (as: Person, messageId: number, emoji: Partial<Emoji>) =>
  env.client(as).DELETE('/messages/{message_id}/reactions', { params: { path: { message_id: messageId } }, body: emoji });

async function added(as: Person, messageId: number, emoji: Emoji): Promise<void> {
  const res = await add(as, messageId, emoji);
  expect(res.error, JSON.stringify(res.error)).toBeUndefined();
  expect(res.data).toEqual({ result: 'success', msg: '' });
}

/** The message's reactions as `as` reads them with GET /messages/{message_id}. */
async function reactionsOf(as: Person, messageId: number) {
  const { data, error } = await env.client(as).GET('/messages/{message_id}', { params: { path: { message_id: messageId } } });
  if (!data) throw new Error(JSON.stringify(error));
  return data.message.reactions;
}

/** The reaction events stored since `mark`, with their recipients. */
async function reactionEventsSince(mark: bigint) {
  return (await eventsSince(env, mark)).filter((e) => e.payload.type === 'reaction');
}

const ids = (...people: Person[]) => people.map(uid).sort((a, b) => a - b);

/** The user's row of the message: its flags, or null without one. */
async function rowFlags(person: Person, messageId: number): Promise<number | null> {
  const row = await db().userMessage.findUnique({ where: { messageId_userId: { messageId, userId: uid(person) } } });
  return row === null ? null : Number(row.flags);
}

describe('POST /messages/{message_id}/reactions', () => {
  it('adds a reaction by name, shown on the message and announced to those who can see it', async () => {
    const id = await toChannel('iago', lobby);
    const mark = await markEvents(env);
    await added('hamlet', id, { emoji_name: 'octopus' });

    expect(await reactionsOf('othello', id)).toEqual([{ emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', user_id: uid('hamlet') }]);
    const [event, ...more] = await reactionEventsSince(mark);
    expect(more).toEqual([]);
    expect(event!.payload).toEqual({
      type: 'reaction',
      op: 'add',
      user_id: uid('hamlet'),
      user: { user_id: uid('hamlet'), email: env.users.hamlet.email, full_name: 'King Hamlet' },
      message_id: id,
      emoji_name: 'octopus',
      emoji_code: '1f419',
      reaction_type: 'unicode_emoji',
    });
    // The channel's subscribers (the subscribed guest too); not those who never had the message.
    expect(event!.userIds).toEqual(ids('iago', 'hamlet', 'othello', 'polonius'));
  });

  it('shows reactions in GET /messages, in the order they were added, and `has:reaction` finds them', async () => {
    const topic = `listing ${Date.now()}`;
    const plain = await toChannel('iago', lobby, topic, 'no reactions');
    const reacted = await toChannel('iago', lobby, topic, 'two reactions');
    await added('othello', reacted, { emoji_name: 'heart' });
    await added('hamlet', reacted, { emoji_name: 'zulip' });
    await added('hamlet', reacted, { emoji_name: 'joy', emoji_code: '1f602', reaction_type: 'unicode_emoji' });
    const narrow = [
      { operator: 'channel', operand: lobby.id },
      { operator: 'topic', operand: topic },
    ];
    const page = async (terms: unknown[]) => {
      const query = new URLSearchParams({ anchor: 'newest', num_before: '10', num_after: '0', narrow: JSON.stringify(terms) });
      const res = await env.raw(`/messages?${query}`, { as: 'iago' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.messages as Array<{ id: number; reactions: unknown[] }>;
    };
    const byId = new Map((await page(narrow)).map((m) => [m.id, m.reactions]));
    expect(byId.get(plain)).toEqual([]);
    expect(byId.get(reacted)).toEqual([
      { emoji_name: 'heart', emoji_code: '2764', reaction_type: 'unicode_emoji', user_id: uid('othello') },
      { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji', user_id: uid('hamlet') },
      { emoji_name: 'joy', emoji_code: '1f602', reaction_type: 'unicode_emoji', user_id: uid('hamlet') },
    ]);
    const withReaction = await page([...narrow, { operator: 'has', operand: 'reaction' }]);
    expect(withReaction.map((m) => m.id)).toEqual([reacted]);
  });

  it('a second user with the same emoji votes for the existing reaction: its name is kept', async () => {
    const id = await toChannel('iago', lobby);
    await added('hamlet', id, { emoji_name: '+1' });
    // `thumbs_up` is another name of 1f44d: the vote takes the first reaction's name.
    await added('othello', id, { emoji_name: 'thumbs_up' });
    // A vote is not checked against the name sent: any name with the existing code and type joins it.
    await added('iago', id, { emoji_name: 'octopus', emoji_code: '1f44d', reaction_type: 'unicode_emoji' });
    expect((await reactionsOf('hamlet', id)).map((r) => [r.emoji_name, r.emoji_code, r.user_id])).toEqual([
      ['+1', '1f44d', uid('hamlet')],
      ['+1', '1f44d', uid('othello')],
      ['+1', '1f44d', uid('iago')],
    ]);
  });

  it("knows Zulip's emoji names and codes (not iamcal's): by name, and with the code as Zulip's clients send it", async () => {
    // By name alone: the code is Zulip's.
    const byName = await toChannel('iago', lobby);
    for (const name of ['thumbs_up', 'smile', 'ok', 'working_on_it']) await added('hamlet', byName, { emoji_name: name });
    expect((await reactionsOf('hamlet', byName)).map((r) => [r.emoji_name, r.emoji_code, r.reaction_type])).toEqual([
      ['thumbs_up', '1f44d', 'unicode_emoji'],
      ['smile', '1f642', 'unicode_emoji'],
      ['ok', '1f44c', 'unicode_emoji'],
      ['working_on_it', '1f6e0', 'unicode_emoji'],
    ]);

    // Name, code and type together (zulip-terminal's and the web app's requests), each a new reaction, so
    // each is checked: a canonical name or an alias with its emoji's code is accepted.
    const withCode = await toChannel('iago', lobby);
    const sent: [string, string][] = [
      ['+1', '1f44d'],
      ['smile', '1f642'],
      ['got_it', '1f44c'],
      ['tools', '1f6e0'],
    ];
    for (const [name, code] of sent) await added('othello', withCode, { emoji_name: name, emoji_code: code, reaction_type: 'unicode_emoji' });
    expect((await reactionsOf('othello', withCode)).map((r) => [r.emoji_name, r.emoji_code])).toEqual(sent);
    const alias = await toChannel('iago', lobby);
    await added('hamlet', alias, { emoji_name: 'thumbs_up', emoji_code: '1f44d', reaction_type: 'unicode_emoji' });
    expect((await reactionsOf('hamlet', alias)).map((r) => [r.emoji_name, r.emoji_code])).toEqual([['thumbs_up', '1f44d']]);

    // A name with another emoji's code is refused, iamcal's codes for these names included.
    expectJsonError(await add('hamlet', alias, { emoji_name: 'smile', emoji_code: '1f604', reaction_type: 'unicode_emoji' }), 400, 'Invalid emoji name.');
    expectJsonError(await add('hamlet', alias, { emoji_name: 'ok', emoji_code: '1f197', reaction_type: 'unicode_emoji' }), 400, 'Invalid emoji name.');
    expectJsonError(await add('hamlet', alias, { emoji_name: 'thumbs_up', emoji_code: '1f44e', reaction_type: 'unicode_emoji' }), 400, 'Invalid emoji name.');
    // iamcal's names that Zulip does not have.
    expectJsonError(await add('hamlet', alias, { emoji_name: 'thumbsup' }), 400, "Emoji 'thumbsup' does not exist");
    expectJsonError(await add('hamlet', alias, { emoji_name: 'slightly_smiling_face' }), 400, "Emoji 'slightly_smiling_face' does not exist");
    expect((await reactionsOf('hamlet', alias)).map((r) => r.emoji_name)).toEqual(['thumbs_up']);
  });

  it("answers Zulip's errors for the emoji, in Zulip's order", async () => {
    const id = await toChannel('iago', lobby);
    const missing = await unchecked(env.client('hamlet')).POST('/messages/{message_id}/reactions', { params: { path: { message_id: id } }, body: {} });
    expectJsonError(missing, 400, "Missing 'emoji_name' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await add('hamlet', id, { emoji_name: 'not_an_emoji' }), 400, "Emoji 'not_an_emoji' does not exist");
    // With a code but no type, the type comes from the name, which must exist.
    expectJsonError(await add('hamlet', id, { emoji_name: 'not_an_emoji', emoji_code: '1f419' }), 400, "Emoji 'not_an_emoji' does not exist");
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus', emoji_code: '1f4190', reaction_type: 'unicode_emoji' }), 400, 'Invalid emoji code.');
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus', emoji_code: '1f44d' }), 400, 'Invalid emoji name.');
    expectJsonError(await add('hamlet', id, { emoji_name: 'zulip', emoji_code: 'zulip2', reaction_type: 'zulip_extra_emoji' }), 400, 'Invalid emoji code.');
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus', emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' }), 400, 'Invalid emoji name.');
    expectJsonError(await add('hamlet', id, { emoji_name: 'parrot', emoji_code: '1', reaction_type: 'realm_emoji' }), 400, 'Invalid custom emoji.');
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'animated' }), 400, 'Invalid emoji type.');
    // Nothing was stored by the refused requests.
    expect(await reactionsOf('hamlet', id)).toEqual([]);

    await added('hamlet', id, { emoji_name: 'octopus' });
    // The duplicate check comes before the emoji's checks (and is by code and type, not name).
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus' }), 400, 'Reaction already exists.', 'REACTION_ALREADY_EXISTS');
    expectJsonError(await add('hamlet', id, { emoji_name: 'squid', emoji_code: '1f419', reaction_type: 'unicode_emoji' }), 400, 'Reaction already exists.', 'REACTION_ALREADY_EXISTS');
    // The message is checked first.
    expectJsonError(await add('hamlet', 999_999_999, { emoji_name: 'not_an_emoji' }), 400, 'Invalid message(s)');
  });

  it('a non-subscriber may react in a public channel, and gets a historical row and the event', async () => {
    const id = await toChannel('iago', lobby);
    expect(await rowFlags('cordelia', id)).toBeNull();
    const mark = await markEvents(env);
    await added('cordelia', id, { emoji_name: 'tada' });
    expect(await rowFlags('cordelia', id)).toBe(MESSAGE_FLAG_BITS.read | MESSAGE_FLAG_BITS.historical);
    const [event] = await reactionEventsSince(mark);
    expect(event!.userIds).toEqual(ids('iago', 'hamlet', 'othello', 'polonius', 'cordelia'));
    // Her row stays: taking the reaction back keeps her in the audience.
    const before = await markEvents(env);
    expect((await remove('cordelia', id, { emoji_name: 'tada' })).data).toEqual({ result: 'success', msg: '' });
    expect((await reactionEventsSince(before))[0]!.userIds).toContain(uid('cordelia'));
  });

  it('refuses a guest without access, a private channel without access and an archived channel', async () => {
    const open = await createChannel(env, 'iago', { name: 'no guests' }, ['hamlet']);
    const inOpen = await toChannel('hamlet', open);
    expectJsonError(await add('polonius', inOpen, { emoji_name: 'octopus' }), 400, 'Invalid message(s)');
    // Subscribed, the guest may.
    await added('polonius', await toChannel('iago', lobby), { emoji_name: 'octopus' });

    const inSecret = await toChannel('iago', secret);
    for (const person of ['hamlet', 'polonius', 'desdemona'] as Person[]) {
      // Not even the organization's owner reads a private channel without subscribing.
      expectJsonError(await add(person, inSecret, { emoji_name: 'octopus' }), 400, 'Invalid message(s)');
    }
    await added('othello', inSecret, { emoji_name: 'octopus' });

    // A direct message is for its participants only.
    const dm = await toPeople('iago', ['hamlet']);
    expectJsonError(await add('othello', dm, { emoji_name: 'octopus' }), 400, 'Invalid message(s)');
    await added('hamlet', dm, { emoji_name: 'octopus' });

    const archived = await createChannel(env, 'iago', { name: 'archived' }, ['hamlet']);
    const inArchived = await toChannel('hamlet', archived);
    expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } })).response.status).toBe(200);
    expectJsonError(await add('hamlet', inArchived, { emoji_name: 'octopus' }), 400, 'Invalid message(s)');
  });

  it('protected history: only subscribers who received the message may react, and only they are told', async () => {
    const vault = await createChannel(env, 'iago', { name: 'vault', invite_only: true, history_public_to_subscribers: false }, ['iago', 'othello']);
    const id = await toChannel('iago', vault);
    // Hamlet joins after the message: he never received it.
    await subscribeDirectly(env, uid('hamlet'), vault.id);
    expectJsonError(await add('hamlet', id, { emoji_name: 'octopus' }), 400, 'Invalid message(s)');
    const mark = await markEvents(env);
    // Othello's row was deferred (no flag of his own): still his, caught up when he reacts.
    await added('othello', id, { emoji_name: 'octopus' });
    expect(await rowFlags('othello', id)).toBe(0);
    const [event] = await reactionEventsSince(mark);
    expect(event!.userIds).toEqual(ids('iago', 'othello'));
  });

  it('tells a recipient whose row is still deferred, and no one who cannot see the message', async () => {
    const c = await createChannel(env, 'iago', { name: 'audience' }, ['iago', 'hamlet', 'cordelia', 'polonius']);
    const id = await toChannel('iago', c);
    // Cordelia and polonius leave before reading: their rows were never written.
    await subscribeDirectly(env, uid('cordelia'), c.id, false);
    await subscribeDirectly(env, uid('polonius'), c.id, false);
    expect(await rowFlags('cordelia', id)).toBeNull();
    const mark = await markEvents(env);
    await added('hamlet', id, { emoji_name: 'octopus' });
    const [event] = await reactionEventsSince(mark);
    // Cordelia still has the message (a member reads any public channel); the guest polonius no longer may.
    expect(event!.userIds).toEqual(ids('iago', 'hamlet', 'cordelia'));
    expectJsonError(await env.client('polonius').GET('/messages/{message_id}', { params: { path: { message_id: id } } }), 400, 'Invalid message(s)');

    // Direct messages: the participants only.
    const dm = await toPeople('hamlet', ['othello']);
    const before = await markEvents(env);
    await added('othello', dm, { emoji_name: 'octopus' });
    expect((await reactionEventsSince(before))[0]!.userIds).toEqual(ids('hamlet', 'othello'));

    // A private channel: its subscribers only.
    const inSecret = await toChannel('othello', secret);
    const third = await markEvents(env);
    await added('othello', inSecret, { emoji_name: 'tada' });
    expect((await reactionEventsSince(third))[0]!.userIds).toEqual(ids('iago', 'othello'));
  });

  it('names the reactor by the address everyone sees, and leaves deactivated users out', async () => {
    const c = await createChannel(env, 'iago', { name: 'addresses' }, ['iago', 'hamlet']);
    const reactor = await createAccount(env, { label: 'hidden-address', fullName: 'Hidden Address' });
    const leaving = await createUser(env, { label: 'leaving', fullName: 'Leaving Soon' });
    await subscribeDirectly(env, reactor.id, c.id);
    await subscribeDirectly(env, leaving.id, c.id);
    const id = await toChannel('iago', c);
    await deactivateUser(env, leaving.id);
    // Only administrators may see the real address: every other user sees user<id>@<host>.
    expect((await reactor.client.PATCH('/settings', { body: { email_address_visibility: 3 } })).response.status).toBe(200);
    const mark = await markEvents(env);
    const res = await reactor.client.POST('/messages/{message_id}/reactions', { params: { path: { message_id: id } }, body: { emoji_name: 'octopus' } });
    expect(res.error).toBeUndefined();
    const [event] = await reactionEventsSince(mark);
    expect(event!.payload.user).toEqual({ user_id: reactor.id, email: `user${reactor.id}@${new URL((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname}`, full_name: 'Hidden Address' });
    expect(event!.userIds).toEqual([uid('iago'), uid('hamlet'), reactor.id].sort((a, b) => a - b));
  });

  it('reacting counts as participating: the automatic follow policy applies', async () => {
    const c = await createChannel(env, 'iago', { name: 'participation' }, ['iago', 'shiva']);
    const id = await toChannel('iago', c, 'follow me');
    const settings = await env.client('shiva').PATCH('/settings', { body: { automatically_follow_topics_policy: 1 } });
    expect(settings.response.status).toBe(200);
    const mark = await markEvents(env);
    await added('shiva', id, { emoji_name: 'octopus' });
    const events = await eventsSince(env, mark);
    expect(events.map((e) => e.payload.type)).toEqual(['muted_topics', 'user_topic', 'reaction']);
    expect(events[1]!.payload).toMatchObject({ stream_id: c.id, topic_name: 'follow me', visibility_policy: 3 });
    expect(events[1]!.userIds).toEqual([uid('shiva')]);
    // Already followed: a second reaction changes nothing.
    const again = await markEvents(env);
    await added('shiva', id, { emoji_name: 'tada' });
    expect((await eventsSince(env, again)).map((e) => e.payload.type)).toEqual(['reaction']);
  });

  it('two identical requests at once: one adds the reaction, the others are told it exists', async () => {
    const id = await toChannel('iago', lobby);
    const answers = await Promise.all(Array.from({ length: 8 }, () => add('othello', id, { emoji_name: 'rocket' })));
    expect(answers.map((a) => a.response.status).sort()).toEqual([200, 400, 400, 400, 400, 400, 400, 400]);
    for (const a of answers.filter((x) => x.error)) expect(a.error).toMatchObject({ msg: 'Reaction already exists.', code: 'REACTION_ALREADY_EXISTS' });
    expect(await reactionsOf('othello', id)).toEqual([{ emoji_name: 'rocket', emoji_code: '1f680', reaction_type: 'unicode_emoji', user_id: uid('othello') }]);

    // Several users voting at once all count, under the first one's name.
    const people: Person[] = ['iago', 'hamlet', 'polonius', 'shiva', 'cordelia'];
    const votes = await Promise.all(people.map((p) => add(p, id, { emoji_name: 'rocket' })));
    expect(votes.map((v) => v.response.status)).toEqual([200, 200, 200, 200, 200]);
    expect((await reactionsOf('othello', id)).length).toBe(6);
  });

  it('accepts the Python client\'s form bodies (add_reaction, remove_reaction: message_id repeated in them)', async () => {
    const id = await toChannel('iago', lobby);
    const body = new URLSearchParams({ message_id: String(id), emoji_name: 'joy', emoji_code: '1f602', reaction_type: 'unicode_emoji' });
    const res = await env.raw(`/messages/${id}/reactions`, { method: 'POST', as: 'hamlet', body, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // The path's message_id, repeated in the body, is no parameter of the operation: reported, as Zulip does.
    expect(res.body).toEqual({ result: 'success', msg: '', ignored_parameters_unsupported: ['message_id'] });
    const removed = await env.raw(`/messages/${id}/reactions`, { method: 'DELETE', as: 'hamlet', body: new URLSearchParams({ message_id: String(id), emoji_name: 'joy', emoji_code: '1f602', reaction_type: 'unicode_emoji' }), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(await reactionsOf('hamlet', id)).toEqual([]);
  });
});

describe('DELETE /messages/{message_id}/reactions', () => {
  it('removes the user\'s own reaction by code, or by name, and announces it with the stored name', async () => {
    const id = await toChannel('iago', lobby);
    await added('hamlet', id, { emoji_name: '+1' });
    await added('othello', id, { emoji_name: 'thumbs_up' });
    const mark = await markEvents(env);
    const res = await remove('othello', id, { emoji_code: '1f44d', reaction_type: 'unicode_emoji' });
    expect(res.data).toEqual({ result: 'success', msg: '' });
    const [event] = await reactionEventsSince(mark);
    expect(event!.payload).toEqual({
      type: 'reaction',
      op: 'remove',
      user_id: uid('othello'),
      user: { user_id: uid('othello'), email: env.users.othello.email, full_name: 'Othello, the Moor of Venice' },
      message_id: id,
      emoji_name: '+1',
      emoji_code: '1f44d',
      reaction_type: 'unicode_emoji',
    });
    expect(event!.userIds).toEqual(ids('iago', 'hamlet', 'othello', 'polonius'));
    // By a name of the same emoji (the code is looked up; the type defaults to unicode_emoji).
    expect((await remove('hamlet', id, { emoji_name: 'like' })).data).toEqual({ result: 'success', msg: '' });
    expect(await reactionsOf('hamlet', id)).toEqual([]);
  });

  it("answers Zulip's errors", async () => {
    const id = await toChannel('iago', lobby);
    await added('hamlet', id, { emoji_name: 'zulip' });
    expectJsonError(await remove('hamlet', id, {}), 400, 'At least one of the following arguments must be present: emoji_name, emoji_code');
    expectJsonError(await remove('hamlet', id, { emoji_name: 'not_an_emoji' }), 400, "Emoji 'not_an_emoji' does not exist");
    expectJsonError(await remove('hamlet', id, { emoji_name: 'octopus' }), 400, "Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
    // Someone else's reaction is not the user's to remove.
    expectJsonError(await remove('othello', id, { emoji_name: 'zulip', reaction_type: 'zulip_extra_emoji' }), 400, "Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
    // As in Zulip, the type is not looked up from the name: `zulip` alone means a unicode_emoji `zulip`.
    expectJsonError(await remove('hamlet', id, { emoji_name: 'zulip' }), 400, "Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
    // The message is checked first.
    expectJsonError(await remove('cordelia', (await toChannel('iago', secret)), {}), 400, 'Invalid message(s)');
    expect((await remove('hamlet', id, { emoji_name: 'zulip', reaction_type: 'zulip_extra_emoji' })).data).toEqual({ result: 'success', msg: '' });
    // Removed: a second removal finds nothing.
    expectJsonError(await remove('hamlet', id, { emoji_code: 'zulip', reaction_type: 'zulip_extra_emoji' }), 400, "Reaction doesn't exist.", 'REACTION_DOES_NOT_EXIST');
  });

  it('removes a reaction whatever its emoji has become (no check of the emoji), and concurrent removals remove once', async () => {
    const id = await toChannel('iago', lobby);
    // A reaction stored with a code Parley would refuse today (as a deactivated custom emoji would be).
    await db().reaction.create({ data: { messageId: id, userId: uid('hamlet'), emojiName: 'old_parrot', emojiCode: '42', reactionType: 'realm_emoji' } });
    const answers = await Promise.all(Array.from({ length: 4 }, () => remove('hamlet', id, { emoji_code: '42', reaction_type: 'realm_emoji' })));
    expect(answers.map((a) => a.response.status).sort()).toEqual([200, 400, 400, 400]);
    for (const a of answers.filter((x) => x.error)) expect(a.error).toMatchObject({ code: 'REACTION_DOES_NOT_EXIST' });
    expect(await reactionsOf('hamlet', id)).toEqual([]);
  });
});
