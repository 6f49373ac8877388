// PATCH /messages/{message_id} (editing, moving, resolving) and GET /messages/{message_id}/history:
// Zulip's permissions, limits and errors, what the message looks like afterwards, the update_message
// and delete_message events and who receives them, rows and unread state after a move between
// channels, the notification bot's notices, and visibility policies following a moved topic.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, fresh, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { pollUntil, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { realmIdOf, withRealm } from '../../helpers/realm.ts';
import { createAccount, setRole } from '../../helpers/people.ts';

const env = useTestServer();
const general = useChannel(env, 'iago', {}, ['iago', 'shiva', 'hamlet', 'othello', 'cordelia', 'polonius']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago', 'hamlet']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const form = (body: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));

const patch = (as: Person, id: number, body: Record<string, unknown>) => env.raw(`/messages/${id}`, { method: 'PATCH', as, body: form(body) });
const history = (as: Person, id: number) => env.raw(`/messages/${id}/history`, { method: 'GET', as });
const getMessage = async (as: Person, id: number) => (await env.raw(`/messages/${id}`, { as })).body;

async function post(as: Person, channel: { name: string }, topic: string, content: string): Promise<number> {
  return sendMessage(env.client(as), { type: 'stream', to: channel.name, topic, content });
}

/** Makes the message look sent `seconds` ago. */
const age = (id: number, seconds: number) => db().message.update({ where: { id }, data: { dateSent: new Date(Date.now() - seconds * 1000) } });

/** The messages of a topic, the notification bot's notices left out. */
async function topicIds(channelId: number, topic: string): Promise<number[]> {
  const bot = await db().user.findFirst({ where: { fullName: 'Notification Bot' } });
  return (await db().message.findMany({ where: { channelId, topic, senderId: { not: bot?.id ?? -1 } }, orderBy: { id: 'asc' } })).map((m) => m.id);
}

async function notices(channelId: number, topic: string): Promise<string[]> {
  const bot = await db().user.findFirst({ where: { fullName: 'Notification Bot' } });
  if (!bot) return [];
  return (await db().message.findMany({ where: { channelId, topic, senderId: bot.id }, orderBy: { id: 'asc' } })).map((m) => m.content);
}

describe('PATCH /messages/{message_id}', () => {
  describe('editing content', () => {
    it('changes the content, records the history, and tells every recipient with their own flags', async () => {
      const topic = fresh('edit');
      const id = await post('hamlet', general, topic, 'Helo, world!');
      const queue = await registerQueue(env.client('othello'), { event_types: ['update_message'] });
      const mark = await markEvents(env);
      const res = await patch('hamlet', id, { content: 'Hello, @**Othello, the Moor of Venice**!' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ result: 'success', detached_uploads: [] });

      const message = (await getMessage('hamlet', id)).message;
      expect(message.content).toContain('user-mention');
      expect(message.last_edit_timestamp).toEqual(expect.any(Number));
      expect(message.last_moved_timestamp).toBeUndefined();
      expect(message.edit_history).toEqual([{ user_id: uid('hamlet'), timestamp: message.last_edit_timestamp, prev_content: 'Helo, world!', prev_rendered_content: '<p>Helo, world!</p>' }]);

      // Othello's deferred row is written now, mentioned, as it would have been at sending.
      const row = await db().userMessage.findUnique({ where: { messageId_userId: { messageId: id, userId: uid('othello') } } });
      expect(Number(row!.flags) & 8).toBe(8);

      const [event] = await pollUntil(env.client('othello'), queue, (e) => e.length >= 1);
      expect(event).toMatchObject({
        type: 'update_message',
        user_id: uid('hamlet'),
        message_id: id,
        message_ids: [id],
        rendering_only: false,
        stream_id: general.id,
        stream_name: general.name,
        orig_content: 'Helo, world!',
        content: 'Hello, @**Othello, the Moor of Venice**!',
        is_me_message: false,
        flags: ['mentioned'],
      });
      expect(event.subject).toBeUndefined();
      const stored = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'update_message');
      expect(stored).toHaveLength(1);
      // Every subscriber of the public channel, none else.
      expect(stored[0]!.userIds).toEqual(['iago', 'shiva', 'hamlet', 'othello', 'cordelia', 'polonius'].map((p) => uid(p as Person)).sort((a, b) => a - b));
    });

    it('notifies those it mentions for the first time, as sending would (push)', async () => {
      const { error } = await env.client('shiva').POST('/users/me/apns_device_token', { body: { token: 'ab'.repeat(32), appid: 'org.zulip.Zulip' } });
      expect(error).toBeUndefined();
      const id = await post('hamlet', general, fresh('edit'), 'no mention yet');
      const pushes = () => db().pushOutbox.findMany({ where: { userId: uid('shiva'), messageId: id } });
      expect(await pushes()).toEqual([]);
      expect((await patch('hamlet', id, { content: 'now @**Shiva**' })).status).toBe(200);
      expect(await pushes()).toHaveLength(1);
      // A second edit keeping the mention does not notify again.
      expect((await patch('hamlet', id, { content: 'still @**Shiva**!' })).status).toBe(200);
      expect(await pushes()).toHaveLength(1);
    });

    it('clears a mention the new content no longer makes', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'Ping @**Cordelia, Lear\'s daughter**');
      expect((await patch('hamlet', id, { content: 'Ping nobody' })).status).toBe(200);
      const row = await db().userMessage.findUnique({ where: { messageId_userId: { messageId: id, userId: uid('cordelia') } } });
      expect(Number(row!.flags) & 8).toBe(0);
    });

    it('only the sender may edit content, not even an administrator', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'mine');
      for (const as of ['othello', 'iago', 'desdemona'] as Person[]) {
        const res = await patch(as, id, { content: 'theirs' });
        expect(res.body.msg).toBe("You don't have permission to edit this message");
      }
      expect((await db().message.findUniqueOrThrow({ where: { id } })).content).toBe('mine');
    });

    it('refuses when the organization turned editing off, and after the time limit (plus grace)', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'old');
      await withRealm(env, await realmIdOf(env), { allowMessageEditing: false }, async () => {
        expect((await patch('hamlet', id, { content: 'new' })).body.msg).toBe('Your organization has turned off message editing');
      });
      await age(id, 600 + 15);
      expect((await patch('hamlet', id, { content: 'within grace' })).status).toBe(200);
      await age(id, 600 + 25);
      expect((await patch('hamlet', id, { content: 'too late' })).body.msg).toBe('The time limit for editing this message has passed');
      await withRealm(env, await realmIdOf(env), { messageContentEditLimitSeconds: null }, async () => {
        expect((await patch('hamlet', id, { content: 'no limit' })).status).toBe(200);
      });
    });

    it('empty content becomes "(deleted)"', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'soon gone');
      expect((await patch('hamlet', id, { content: '   ' })).status).toBe(200);
      expect((await db().message.findUniqueOrThrow({ where: { id } })).content).toBe('(deleted)');
    });

    it('refuses a stale edit (prev_content_sha256), and of two concurrent edits of one version exactly one lands', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'version 1');
      const sha = createHash('sha256').update('version 1').digest('hex');
      const results = await Promise.all([patch('hamlet', id, { content: 'edit A', prev_content_sha256: sha }), patch('hamlet', id, { content: 'edit B', prev_content_sha256: sha })]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
      const refused = results.find((r) => r.status === 400)!;
      expect(refused.body).toMatchObject({ code: 'EXPECTATION_MISMATCH', msg: "'prev_content_sha256' value does not match the expected value.", field_name: 'prev_content_sha256' });
      const stored = await db().message.findUniqueOrThrow({ where: { id } });
      expect(['edit A', 'edit B']).toContain(stored.content);
      expect(stored.editHistory).toHaveLength(1);
    });

    it('without prev_content_sha256, concurrent edits both land and both are in the history', async () => {
      const id = await post('hamlet', general, fresh('edit'), 'v1');
      const results = await Promise.all([patch('hamlet', id, { content: 'v2a' }), patch('hamlet', id, { content: 'v2b' })]);
      expect(results.map((r) => r.status)).toEqual([200, 200]);
      const stored = await db().message.findUniqueOrThrow({ where: { id } });
      const entries = stored.editHistory as Array<{ prev_content: string }>;
      expect(entries).toHaveLength(2);
      // The older edit's new content is the newer edit's previous content: nothing was lost silently.
      expect(entries.map((e) => e.prev_content)).toContain('v1');
    });
  });

  describe('bad requests', () => {
    it("answers Zulip's errors and changes nothing", async () => {
      const id = await post('hamlet', general, fresh('bad'), 'text');
      const dm = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([uid('othello')]), content: 'hi' });
      const cases: Array<[Person, number, Record<string, unknown>, string]> = [
        ['hamlet', id, {}, 'Nothing to change'],
        ['hamlet', id, { topic: (await db().message.findUniqueOrThrow({ where: { id } })).topic }, 'Nothing to change'],
        ['hamlet', id, { content: 'x', propagate_mode: 'change_all' }, 'Invalid propagate_mode without topic edit'],
        ['hamlet', id, { topic: 'x', propagate_mode: 'change_some' }, 'Invalid propagate_mode'],
        ['hamlet', id, { stream_id: secret.id, content: 'x' }, 'Cannot change message content while changing channel'],
        ['hamlet', id, { stream_id: 999_999 }, 'Invalid channel ID'],
        ['othello', id, { stream_id: secret.id }, 'Invalid channel ID'],
        ['hamlet', id, { topic: '✔ general chat' }, 'General chat cannot be marked as resolved'],
        ['hamlet', id, { topic: 'bad\u0007topic' }, 'Invalid character in topic, at position 4!'],
        ['hamlet', dm, { topic: 'x' }, 'Direct messages cannot have topics.'],
        ['hamlet', dm, { stream_id: general.id }, 'Direct messages cannot be moved to channels.'],
        ['cordelia', dm, { content: 'x' }, 'Invalid message(s)'],
        ['hamlet', 999_999_999, { content: 'x' }, 'Invalid message(s)'],
      ];
      for (const [as, target, body, msg] of cases) {
        const res = await patch(as, target, body);
        expect({ body, status: res.status, msg: res.body.msg }).toEqual({ body, status: 400, msg });
      }
      expect(await db().message.findUniqueOrThrow({ where: { id } })).toMatchObject({ content: 'text', editHistory: null, channelId: general.id });
    });

    it('a message of a private channel the user cannot read is invalid for them', async () => {
      const id = await post('hamlet', secret, fresh('secret'), 'hidden');
      expect((await patch('othello', id, { topic: 'peek' })).body.msg).toBe('Invalid message(s)');
    });
  });

  describe('moving within a channel', () => {
    it('change_one, change_later and change_all move the right messages; the notification bot says so', async () => {
      const topic = fresh('move');
      const ids: number[] = [];
      for (const n of [1, 2, 3, 4]) ids.push(await post('hamlet', general, topic, `m${n}`));
      const one = fresh('one');
      expect((await patch('othello', ids[1]!, { topic: one, propagate_mode: 'change_one' })).status).toBe(200);
      expect(await topicIds(general.id, one)).toEqual([ids[1]]);
      const later = fresh('later');
      expect((await patch('othello', ids[2]!, { topic: later, propagate_mode: 'change_later', send_notification_to_old_thread: true })).status).toBe(200);
      expect((await topicIds(general.id, later)).filter((id) => ids.includes(id))).toEqual([ids[2], ids[3]]);
      const who = `@_**Othello, the Moor of Venice|${uid('othello')}**`;
      expect(await notices(general.id, topic)).toEqual([`2 messages were moved from this topic to #**${general.name}>${later}** by ${who}.`]);
      const all = fresh('all');
      expect((await patch('othello', ids[0]!, { topic: all, propagate_mode: 'change_all' })).status).toBe(200);
      expect((await topicIds(general.id, all)).filter((id) => ids.includes(id))).toEqual([ids[0]]);

      expect(await notices(general.id, one)).toEqual([expect.stringMatching(new RegExp(`^\\[A message\\]\\(.*/near/${ids[1]}\\) was moved here from #\\*\\*${general.name}>${topic}\\*\\* by ${who.replace(/[|*]/g, '\\$&')}\\.$`))]);
      expect(await notices(general.id, later)).toEqual([`2 messages were moved here from #**${general.name}>${topic}** by ${who}.`]);
      // The whole topic moved, the old-thread notice with it.
      expect(await notices(general.id, all)).toEqual([`2 messages were moved from this topic to #**${general.name}>${later}** by ${who}.`, `This topic was moved here from #**${general.name}>${topic}** by ${who}.`]);

      const moved = (await getMessage('hamlet', ids[2]!)).message;
      expect(moved.subject).toBe(later);
      expect(moved.last_moved_timestamp).toEqual(expect.any(Number));
      expect(moved.last_edit_timestamp).toBeUndefined();
      expect(moved.edit_history).toEqual([{ user_id: uid('othello'), timestamp: moved.last_moved_timestamp, prev_topic: topic, topic: later }]);
    });

    it('sends update_message with the topic fields to everyone who sees the messages', async () => {
      const topic = fresh('ev');
      const a = await post('hamlet', general, topic, 'a');
      const b = await post('othello', general, topic, 'b');
      const mark = await markEvents(env);
      const to = fresh('ev-to');
      expect((await patch('hamlet', a, { topic: to, propagate_mode: 'change_all', send_notification_to_new_thread: false })).status).toBe(200);
      const [event] = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'update_message');
      expect(event!.payload).toMatchObject({ message_id: a, message_ids: [a, b], orig_subject: topic, subject: to, propagate_mode: 'change_all', topic_links: [], stream_id: general.id });
      expect(event!.payload).not.toHaveProperty('orig_content');
      expect(await notices(general.id, to)).toEqual([]);
    });

    it("reaches a queue narrowed to the old topic, whose narrow stays as registered (Zulip's: only message events are matched against it)", async () => {
      const topic = fresh('narrowed');
      const a = await post('hamlet', general, topic, 'a');
      const narrowed = await registerQueue(env.client('othello'), { event_types: ['message', 'update_message'], narrow: [['stream', general.name], ['topic', topic]] });
      const to = fresh('narrowed-to');
      expect((await patch('hamlet', a, { topic: to, propagate_mode: 'change_all', send_notification_to_new_thread: false })).status).toBe(200);
      const later = await post('hamlet', general, to, 'after the move');
      const back = await post('hamlet', general, topic, 'to the old name again');
      const events = await pollUntil(env.client('othello'), narrowed, (e) => e.some((x) => x.type === 'message'));
      expect(events.filter((e) => e.type === 'update_message').map((e) => [e.message_ids, e.orig_subject, e.subject])).toEqual([[[a], topic, to]]);
      expect(events.filter((e) => e.type === 'message').map((e) => e.message.id)).toEqual([back]);
      expect(later).toBeGreaterThan(a);
    });

    it('members may move within the organization limit; moderators are exempt; the limit counts from sending', async () => {
      const id = await post('hamlet', general, fresh('old'), 'old news');
      await age(id, 7 * 86400 + 60);
      expect((await patch('othello', id, { topic: fresh('late') })).body.msg).toBe("The time limit for editing this message's topic has passed.");
      expect((await patch('shiva', id, { topic: fresh('mod') })).status).toBe(200);
    });

    it('change_all refuses, saying how many could move, when older messages are beyond the limit', async () => {
      const topic = fresh('mixed');
      const oldId = await post('hamlet', general, topic, 'old');
      const newId = await post('hamlet', general, topic, 'new');
      await age(oldId, 7 * 86400 + 60);
      const res = await patch('othello', newId, { topic: fresh('x'), propagate_mode: 'change_all' });
      expect(res.body).toMatchObject({
        code: 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
        msg: 'You only have permission to move the 1/2 most recent messages in this topic.',
        first_message_id_allowed_to_move: newId,
        total_messages_in_topic: 2,
        total_messages_allowed_to_move: 1,
      });
      expect(await topicIds(general.id, topic)).toEqual([oldId, newId]);
    });

    it('follows the organization and channel group settings', async () => {
      const id = await post('hamlet', general, fresh('perm'), 'x');
      const realmId = await realmIdOf(env);
      const nobody = (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:nobody' } })).id;
      const moderators = (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:moderators' } })).id;
      await withRealm(env, realmId, { canMoveMessagesBetweenTopicsGroupId: moderators }, async () => {
        expect((await patch('othello', id, { topic: fresh('no') })).body.msg).toBe("You don't have permission to edit this message");
        expect((await patch('shiva', id, { topic: fresh('yes') })).status).toBe(200);
        // The channel's own setting also grants it.
        await db().channel.update({ where: { id: general.id }, data: { canMoveMessagesWithinChannelGroupId: (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:members' } })).id } });
        await env.running.deps.listener.barrier();
        expect((await patch('othello', id, { topic: fresh('chan') })).status).toBe(200);
        await db().channel.update({ where: { id: general.id }, data: { canMoveMessagesWithinChannelGroupId: nobody } });
        await env.running.deps.listener.barrier();
      });
    });
  });

  describe('resolving topics', () => {
    it('resolves and unresolves with a notice, without counting as a move', async () => {
      const topic = fresh('bug');
      const id = await post('hamlet', general, topic, 'it broke');
      await post('othello', general, topic, 'me too');
      const who = `@_**King Hamlet|${uid('hamlet')}**`;
      expect((await patch('hamlet', id, { topic: `✔ ${topic}`, propagate_mode: 'change_all' })).status).toBe(200);
      expect(await topicIds(general.id, topic)).toEqual([]);
      expect(await notices(general.id, `✔ ${topic}`)).toEqual([`${who} has marked this topic as resolved.`]);
      const m = (await getMessage('hamlet', id)).message;
      expect(m.last_moved_timestamp).toBeUndefined();
      expect(m.edit_history[0]).toMatchObject({ prev_topic: topic, topic: `✔ ${topic}` });
      // Unresolving within a minute takes the notice back instead of adding another (Zulip's undo grace).
      expect((await patch('hamlet', id, { topic, propagate_mode: 'change_all' })).status).toBe(200);
      expect(await notices(general.id, topic)).toEqual([]);
      expect(await notices(general.id, `✔ ${topic}`)).toEqual([]);
      // Later, it is a notice of its own.
      expect((await patch('hamlet', id, { topic: `✔ ${topic}`, propagate_mode: 'change_all' })).status).toBe(200);
      const notice = (await db().message.findMany({ where: { channelId: general.id, topic: `✔ ${topic}` }, orderBy: { id: 'desc' }, take: 1 }))[0]!;
      await age(notice.id, 61);
      expect((await patch('hamlet', id, { topic, propagate_mode: 'change_all' })).status).toBe(200);
      expect(await notices(general.id, topic)).toEqual([`${who} has marked this topic as resolved.`, `${who} has marked this topic as unresolved.`]);
    });

    it("leaves the resolve notice unread only where the reader's setting says so (default: those who follow the topic)", async () => {
      const topic = fresh('followed-bug');
      const id = await post('hamlet', general, topic, 'broken');
      expect((await env.raw('/user_topics', { method: 'POST', as: 'cordelia', body: form({ stream_id: general.id, topic, visibility_policy: 3 }) })).status).toBe(200);
      expect((await patch('hamlet', id, { topic: `✔ ${topic}` })).status).toBe(200);
      const notice = (await db().message.findMany({ where: { channelId: general.id, topic: `✔ ${topic}` }, orderBy: { id: 'desc' }, take: 1 }))[0]!;
      const flagsFor = async (as: Person) => (await getMessage(as, notice.id)).message.flags as string[];
      expect(await flagsFor('cordelia')).not.toContain('read');
      expect(await flagsFor('othello')).toContain('read');
      expect(await flagsFor('hamlet')).toContain('read');
    });

    it('needs can_resolve_topics_group, but no time limit', async () => {
      const topic = fresh('res');
      const id = await post('hamlet', general, topic, 'x');
      await age(id, 30 * 86400);
      expect((await patch('othello', id, { topic: `✔ ${topic}` })).status).toBe(200);
      const realmId = await realmIdOf(env);
      const admins = (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:administrators' } })).id;
      await withRealm(env, realmId, { canResolveTopicsGroupId: admins }, async () => {
        expect((await patch('othello', id, { topic })).body.msg).toBe("You don't have permission to resolve topics in this channel.");
        expect((await patch('iago', id, { topic })).status).toBe(200);
      });
    });
  });

  describe('moving to another channel', () => {
    it('those who cannot read the destination lose the messages (rows, unread, delete_message); the others see the move', async () => {
      const topic = fresh('leak');
      const a = await post('hamlet', general, topic, 'first');
      const b = await post('othello', general, topic, 'second @**Cordelia, Lear\'s daughter**');
      const queue = await registerQueue(env.client('cordelia'), { event_types: ['delete_message', 'update_message'], client_capabilities: { bulk_message_deletion: true } });
      const mark = await markEvents(env);
      const res = await patch('iago', a, { stream_id: secret.id, topic: 'moved', propagate_mode: 'change_all', send_notification_to_old_thread: true });
      expect(res.status).toBe(200);
      expect(await topicIds(secret.id, 'moved')).toEqual([a, b]);

      const events = await eventsSince(env, mark);
      const deletion = events.find((e) => e.payload.type === 'delete_message')!;
      const update = events.find((e) => e.payload.type === 'update_message')!;
      const sees = [uid('iago'), uid('hamlet')].sort((x, y) => x - y);
      expect(update.userIds).toEqual(sees);
      expect(update.payload).toMatchObject({ new_stream_id: secret.id, stream_id: general.id, orig_subject: topic, subject: 'moved', message_ids: [a, b] });
      expect(deletion.userIds).toEqual(['shiva', 'othello', 'cordelia', 'polonius'].map((p) => uid(p as Person)).sort((x, y) => x - y));
      expect(deletion.payload).toMatchObject({ message_ids: [a, b], message_type: 'stream', stream_id: general.id, topic });
      const received = await pollUntil(env.client('cordelia'), queue, (e) => e.length >= 1);
      expect(received.map((e) => e.type)).toEqual(['delete_message']);

      // Cordelia's mention row is gone, and the messages are gone from her reads.
      expect(await db().userMessage.findUnique({ where: { messageId_userId: { messageId: b, userId: uid('cordelia') } } })).toBeNull();
      expect((await env.raw(`/messages/${b}`, { as: 'cordelia' })).body.msg).toBe('Invalid message(s)');
      // The old topic is told where they went.
      expect(await notices(general.id, topic)).toEqual([`This topic was moved to #**${secret.name}>moved** by @_**Iago|${uid('iago')}**.`]);
    });

    it("into a channel with protected history: its subscribers get the messages (read), those who were waiting keep theirs unread", async () => {
      const vault = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['iago', 'hamlet']);
      const newcomer = await createAccount(env, { label: 'vault', fullName: 'Vault Keeper' });
      await subscribeDirectly(env, newcomer.id, vault.id);
      const id = await post('othello', general, fresh('to-vault'), 'into the vault');
      // Hamlet's row is deferred (he has not read since); the newcomer never received the message.
      expect(await db().userMessage.findUnique({ where: { messageId_userId: { messageId: id, userId: uid('hamlet') } } })).toBeNull();
      expect((await patch('iago', id, { stream_id: vault.id, send_notification_to_new_thread: false })).status).toBe(200);
      const rowOf = (userId: number) => db().userMessage.findUnique({ where: { messageId_userId: { messageId: id, userId } } });
      expect(Number((await rowOf(uid('hamlet')))!.flags) & 1).toBe(0);
      expect(Number((await rowOf(newcomer.id))!.flags) & 1).toBe(1);
      expect((await db().message.findUniqueOrThrow({ where: { id } })).deferredRecipientIds).toEqual([]);
      // The newcomer reads it now; Cordelia, not subscribed, cannot, and a later subscription does not give it to her.
      expect((await newcomer.client.GET('/messages/{message_id}', { params: { path: { message_id: id } } })).data?.message.content).toContain('into the vault');
      await subscribeDirectly(env, uid('cordelia'), vault.id);
      expect((await env.raw(`/messages/${id}`, { as: 'cordelia' })).body.msg).toBe('Invalid message(s)');
    });

    it('needs can_move_messages_between_channels_group (members by default, not guests) and permission to post there', async () => {
      const id = await post('polonius', general, fresh('g'), 'guest words');
      const other = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'polonius']);
      expect((await patch('polonius', id, { stream_id: other.id })).body.msg).toBe("You don't have permission to move this message");
      expect((await patch('hamlet', id, { stream_id: other.id })).status).toBe(200);
      const realmId = await realmIdOf(env);
      const admins = (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:administrators' } })).id;
      await db().channel.update({ where: { id: general.id }, data: { canSendMessageGroupId: admins } });
      await env.running.deps.listener.barrier();
      try {
        expect((await patch('hamlet', id, { stream_id: general.id })).body.msg).toBe('You do not have permission to post in this channel.');
      } finally {
        const everyone = (await db().userGroup.findFirstOrThrow({ where: { realmId, name: 'role:everyone' } })).id;
        await db().channel.update({ where: { id: general.id }, data: { canSendMessageGroupId: everyone } });
        await env.running.deps.listener.barrier();
      }
    });
  });

  describe('visibility policies', () => {
    it('move with a whole topic', async () => {
      const topic = fresh('followed');
      const id = await post('hamlet', general, topic, 'x');
      expect((await env.raw('/user_topics', { method: 'POST', as: 'othello', body: form({ stream_id: general.id, topic, visibility_policy: 3 }) })).status).toBe(200);
      const to = fresh('followed-to');
      expect((await patch('hamlet', id, { topic: to, propagate_mode: 'change_all' })).status).toBe(200);
      const policies = await db().userTopic.findMany({ where: { userId: uid('othello'), channelId: general.id } });
      expect(policies.map((p) => [p.topicName, p.visibilityPolicy])).toEqual([[to, 3]]);
    });
  });
});

describe('GET /messages/{message_id}/history', () => {
  it('lists the original and every change, oldest first, with what changed', async () => {
    const topic = fresh('hist');
    const id = await post('hamlet', general, topic, 'Helo world');
    expect((await patch('hamlet', id, { content: 'Hello world' })).status).toBe(200);
    const to = fresh('hist-to');
    expect((await patch('othello', id, { topic: to })).status).toBe(200);
    const res = await history('cordelia', id);
    expect(res.status).toBe(200);
    const [original, edit, move] = res.body.message_history;
    expect(original).toMatchObject({ topic, content: 'Helo world', user_id: uid('hamlet') });
    expect(original).not.toHaveProperty('prev_content');
    expect(edit).toMatchObject({ topic, content: 'Hello world', prev_content: 'Helo world', user_id: uid('hamlet') });
    expect(edit.content_html_diff).toContain('highlight_text_inserted');
    expect(move).toMatchObject({ topic: to, prev_topic: topic, content: 'Hello world', user_id: uid('othello') });
    expect(res.body.message_history).toHaveLength(3);
  });

  it("follows the organization's edit-history visibility", async () => {
    const id = await post('hamlet', general, fresh('vis'), 'one');
    expect((await patch('hamlet', id, { content: 'two' })).status).toBe(200);
    const realmId = await realmIdOf(env);
    await withRealm(env, realmId, { messageEditHistoryVisibilityPolicy: 'none' }, async () => {
      expect((await history('hamlet', id)).body.msg).toBe('Message edit history is disabled in this organization');
      expect((await getMessage('hamlet', id)).message.edit_history).toBeUndefined();
    });
    await withRealm(env, realmId, { messageEditHistoryVisibilityPolicy: 'moves' }, async () => {
      expect((await history('hamlet', id)).body.message_history).toHaveLength(1);
      expect((await getMessage('hamlet', id)).message.edit_history).toBeUndefined();
    });
  });

  it('is refused for a message the user cannot read', async () => {
    const id = await post('hamlet', secret, fresh('h'), 'x');
    expect((await history('othello', id)).body.msg).toBe('Invalid message(s)');
  });
});

describe('roles', () => {
  it('a guest may not move messages between channels even when an administrator set them up', async () => {
    const account = await post('hamlet', general, fresh('r'), 'x');
    await setRole(env, uid('cordelia'), 600);
    try {
      expect((await patch('cordelia', account, { stream_id: secret.id })).body.msg).toBe('Invalid channel ID');
    } finally {
      await setRole(env, uid('cordelia'), 400);
    }
  });
});
