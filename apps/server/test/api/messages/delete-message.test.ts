// DELETE /messages/{message_id}: who may delete what (per role, bot owners, the organization's and the
// channel's group settings, the time limit), the `delete_message` event in its two forms and who gets
// it, and what a deleted message leaves behind: nothing in reads, searches, unread counts, topic lists
// and deferred rows; its pushes withdrawn, its reminders cancelled, drafts untouched.
import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { systemGroupIds, type SystemGroupIds } from '../../helpers/groups.ts';
import { activeUsers, adminIds, createAccount, type Account } from '../../helpers/people.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { pollEvents, registerQueue, sendMessage, type Queue, type RegisterBody } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';
import { inTransaction } from '../../../src/data/transactions.ts';
import { writeDeferredRows } from '../../../src/data/deferred-rows.repo.ts';
import { lockMessageForDeletion } from '../../../src/data/message-deletion.repo.ts';
import { deleteMessages } from '../../../src/actions/message-deletion.ts';
import { deliverPush } from '../../../src/actions/push.ts';

const env = useTestServer();
// Everyone but cordelia; polonius is a guest.
const channel = useChannel(env, 'iago', {}, ['desdemona', 'iago', 'shiva', 'hamlet', 'othello', 'polonius']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
let sys: SystemGroupIds;
let realmDefaults: { canDeleteAnyMessageGroupId: number | null; canDeleteOwnMessageGroupId: number | null; messageContentDeleteLimitSeconds: number | null };
beforeAll(async () => {
  sys = await systemGroupIds(env);
  const realm = await db().realm.findUniqueOrThrow({ where: { id: env.realmId } });
  realmDefaults = {
    canDeleteAnyMessageGroupId: realm.canDeleteAnyMessageGroupId,
    canDeleteOwnMessageGroupId: realm.canDeleteOwnMessageGroupId,
    messageContentDeleteLimitSeconds: realm.messageContentDeleteLimitSeconds,
  };
});

/** Organization settings written directly (setup), once every process heard of the change. */
async function setRealm(data: Partial<typeof realmDefaults>): Promise<void> {
  await db().realm.update({ where: { id: env.realmId }, data });
  await env.running.deps.listener.barrier();
}
afterEach(async () => {
  await setRealm(realmDefaults);
});

const clientOf = (who: Person | Account): ParleyClient => (typeof who === 'string' ? env.client(who) : who.client);
const del = (who: Person | Account, id: number) => clientOf(who).DELETE('/messages/{message_id}', { params: { path: { message_id: id } } });
async function deleted(who: Person | Account, id: number): Promise<void> {
  const res = await del(who, id);
  expect(res.error).toBeUndefined();
  expect(res.data).toEqual({ result: 'success', msg: '' });
}
const refused = "You don't have permission to delete this message";
const tooLate = 'The time limit for deleting this message has passed';

const toChannel = (who: Person | Account, to: string, topic: string, content = 'hello') => sendMessage(clientOf(who), { type: 'stream', to, topic, content });
const toUsers = (who: Person | Account, ids: number[], content = 'hi') => sendMessage(clientOf(who), { type: 'direct', to: JSON.stringify(ids), content });
/** Makes the message look `seconds` old. */
const age = (id: number, seconds: number) => db().message.update({ where: { id }, data: { dateSent: new Date(Date.now() - seconds * 1000) } });
const exists = async (id: number) => (await db().message.findUnique({ where: { id } })) !== null;

/** GET /messages with Zulip's encoding (strings raw, everything else JSON); the message ids and flags. */
async function readMessages(who: Person | Account, params: Record<string, unknown>): Promise<Array<{ id: number; flags: string[] }>> {
  const query = new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  const res = await env.raw(`/messages?${query}`, typeof who === 'string' ? { as: who } : { headers: { Authorization: who.auth } });
  if (res.status !== 200) throw new Error(`GET /messages: ${JSON.stringify(res.body)}`);
  return (res.body.messages as Array<{ id: number; flags: string[] }>).map((m) => ({ id: m.id, flags: m.flags }));
}

const queueOf = (who: Person | Account, body: RegisterBody = {}) => registerQueue(clientOf(who), { event_types: ['delete_message', 'reminders', 'stream', 'user_topic'], ...body });
const poll = (who: Person | Account, q: Queue) => pollEvents(clientOf(who), q);

/** A bot owned by `owner` (setup only: written directly). */
async function botOf(owner: Person): Promise<number> {
  const email = `bot-${randomBytes(4).toString('hex')}@parley.test`;
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Deleting Bot', isBot: true, botType: 1, botOwnerId: uid(owner), settings: { create: {} } },
  });
  return bot.id;
}

/** A channel message written directly (setup: a sender without a key, such as a bot). */
async function insertChannelMessage(senderId: number, channelId: number, topic: string): Promise<number> {
  const [row] = await db().$queryRaw<{ id: number }[]>`
    INSERT INTO message (realm_id, sender_id, channel_id, topic, content, rendered_content, direct_user_ids)
    VALUES (${env.realmId}::int, ${senderId}::int, ${channelId}::int, ${topic}, 'from a bot', '<p>from a bot</p>', '{}') RETURNING id`;
  return row!.id;
}

describe('DELETE /messages/{message_id}', () => {
  describe('who may delete, by role (organization defaults: any message for administrators, their own for everyone within 10 minutes)', () => {
    const ROLES: Array<[Person, string, { own: boolean; others: boolean; ownOld: boolean }]> = [
      ['desdemona', 'owner', { own: true, others: true, ownOld: true }],
      ['iago', 'administrator', { own: true, others: true, ownOld: true }],
      ['shiva', 'moderator', { own: true, others: false, ownOld: false }],
      ['hamlet', 'member', { own: true, others: false, ownOld: false }],
      ['polonius', 'guest', { own: true, others: false, ownOld: false }],
    ];

    it.each(ROLES)('%s (%s): their own recent message, someone else\'s, their own after the time limit', async (who, _role, may) => {
      const own = await toChannel(who, channel.name, 'by role');
      if (may.own) await deleted(who, own);
      expect(await exists(own)).toBe(!may.own);

      const others = await toChannel('othello', channel.name, 'by role');
      if (may.others) await deleted(who, others);
      else expectJsonError(await del(who, others), 400, refused);
      expect(await exists(others)).toBe(!may.others);

      const old = await toChannel(who, channel.name, 'by role');
      await age(old, 601);
      if (may.ownOld) await deleted(who, old);
      else expectJsonError(await del(who, old), 400, tooLate);
      expect(await exists(old)).toBe(!may.ownOld);
    });

    it('the limit has no grace period, follows the organization setting, and null means none', async () => {
      const recent = await toChannel('hamlet', channel.name, 'limits');
      await age(recent, 590);
      await deleted('hamlet', recent);

      await setRealm({ messageContentDeleteLimitSeconds: 60 });
      const minute = await toChannel('hamlet', channel.name, 'limits');
      await age(minute, 61);
      expectJsonError(await del('hamlet', minute), 400, tooLate);

      await setRealm({ messageContentDeleteLimitSeconds: null });
      const ancient = await toChannel('hamlet', channel.name, 'limits');
      await age(ancient, 10 * 365 * 86400);
      await deleted('hamlet', ancient);
      expect(await exists(minute)).toBe(true);
    });

    it("a bot's owner may delete the bot's messages; nobody else may (but administrators)", async () => {
      const bot = await botOf('hamlet');
      const first = await insertChannelMessage(bot, channel.id, 'bots');
      const second = await insertChannelMessage(bot, channel.id, 'bots');
      expectJsonError(await del('othello', first), 400, refused);
      await deleted('hamlet', first);
      await age(second, 601);
      expectJsonError(await del('hamlet', second), 400, tooLate);
      await deleted('iago', second);
    });

    it('a message the requester cannot access, an unknown one, or one in an archived channel: Invalid message(s)', async () => {
      const hidden = await toChannel('othello', secret.name, 'hidden');
      expectJsonError(await del('hamlet', hidden), 400, 'Invalid message(s)');
      expectJsonError(await del('desdemona', hidden), 400, 'Invalid message(s)'); // an administrator not subscribed
      const direct = await toUsers('othello', [uid('shiva')]);
      expectJsonError(await del('hamlet', direct), 400, 'Invalid message(s)');
      expectJsonError(await del('iago', direct), 400, 'Invalid message(s)');
      expectJsonError(await del('hamlet', 999_999_999), 400, 'Invalid message(s)');
      const archived = await createChannel(env, 'iago', {}, ['hamlet']);
      const inArchive = await toChannel('hamlet', archived.name, 'gone');
      expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } })).response.status).toBe(200);
      expectJsonError(await del('hamlet', inArchive), 400, 'Invalid message(s)');
      expectJsonError(await del('iago', inArchive), 400, 'Invalid message(s)');
      expect(await exists(hidden) && (await exists(direct)) && (await exists(inArchive))).toBe(true);
      // The participants of a direct message: the sender within the limit; the other participant never.
      expectJsonError(await del('shiva', direct), 400, refused);
      await deleted('othello', direct);
    });

    it('two requests deleting one message at once: one deletes it, the other is refused', async () => {
      const id = await toChannel('hamlet', channel.name, 'race');
      const answers = await Promise.all([del('hamlet', id), del('iago', id)]);
      expect(answers.filter((a) => a.response.status === 200)).toHaveLength(1);
      const failure = answers.find((a) => a.response.status !== 200)!;
      expect(failure.response.status).toBe(400);
      expect(['Message already deleted', 'Invalid message(s)']).toContain(failure.error?.msg);
      expect(await exists(id)).toBe(false);
    });
  });

  describe('the organization\'s and the channel\'s group settings', () => {
    it('can_delete_own_message_group: the organization\'s, or the channel\'s for messages of that channel', async () => {
      await setRealm({ canDeleteOwnMessageGroupId: sys['role:administrators'] });
      const own = await toChannel('hamlet', channel.name, 'own setting');
      expectJsonError(await del('hamlet', own), 400, refused);
      const direct = await toUsers('hamlet', [uid('othello')]);
      expectJsonError(await del('hamlet', direct), 400, refused);
      await deleted('iago', await toChannel('iago', channel.name, 'own setting'));

      // New channels default to nobody (Zulip's default); members of the channel's group may.
      const open = await createChannel(env, 'iago', {}, ['hamlet']);
      const row = await db().channel.findUniqueOrThrow({ where: { id: open.id } });
      expect(row.canDeleteOwnMessageGroupId).toBe(sys['role:nobody']);
      const inOpen = await toChannel('hamlet', open.name, 'own setting');
      expectJsonError(await del('hamlet', inOpen), 400, refused);
      await db().channel.update({ where: { id: open.id }, data: { canDeleteOwnMessageGroupId: sys['role:members'] } });
      await deleted('hamlet', inOpen);
      // Still only one's own messages, and within the time limit.
      const theirs = await toChannel('iago', open.name, 'own setting');
      expectJsonError(await del('hamlet', theirs), 400, refused);
      const old = await toChannel('hamlet', open.name, 'own setting');
      await age(old, 601);
      expectJsonError(await del('hamlet', old), 400, tooLate);
      // Elsewhere the organization's setting still refuses.
      expectJsonError(await del('hamlet', own), 400, refused);
    });

    it('can_delete_any_message_group: the organization\'s, or the channel\'s for its messages, at any age', async () => {
      const moderated = await createChannel(env, 'iago', {}, ['hamlet', 'shiva']);
      await db().channel.update({ where: { id: moderated.id }, data: { canDeleteAnyMessageGroupId: sys['role:moderators'] } });
      const inModerated = await toChannel('hamlet', moderated.name, 'any setting');
      await age(inModerated, 86400);
      const elsewhere = await toChannel('hamlet', channel.name, 'any setting');
      expectJsonError(await del('shiva', elsewhere), 400, refused);
      await deleted('shiva', inModerated);

      await setRealm({ canDeleteAnyMessageGroupId: sys['role:moderators'] });
      await age(elsewhere, 86400);
      await deleted('shiva', elsewhere);
      const direct = await toUsers('hamlet', [uid('shiva')]);
      await deleted('shiva', direct);

      // Nobody, not even administrators, once the organization says so (but for their own messages).
      await setRealm({ canDeleteAnyMessageGroupId: sys['role:nobody'] });
      const others = await toChannel('hamlet', channel.name, 'any setting');
      expectJsonError(await del('iago', others), 400, refused);
      await deleted('iago', await toChannel('iago', channel.name, 'any setting'));
    });
  });

  describe('delete_message events', () => {
    it('bulk form with bulk_message_deletion, one event per message with message_id without it; the topic in lower case', async () => {
      const bulk = await queueOf('hamlet', { client_capabilities: { bulk_message_deletion: true } });
      const legacy = await queueOf('othello');
      const id = await toChannel('iago', channel.name, 'Castle Gate');
      await deleted('iago', id);
      expect(await poll('hamlet', bulk)).toEqual([
        { id: expect.any(Number), type: 'delete_message', message_type: 'stream', message_ids: [id], stream_id: channel.id, topic: 'castle gate' },
      ]);
      expect(await poll('othello', legacy)).toEqual([
        { id: expect.any(Number), type: 'delete_message', message_type: 'stream', message_id: id, stream_id: channel.id, topic: 'castle gate' },
      ]);
    });

    it('direct messages: the participants only, without channel or topic', async () => {
      const mark = await markEvents(env);
      const q = await queueOf('shiva');
      const id = await toUsers('hamlet', [uid('shiva'), uid('othello')]);
      await deleted('hamlet', id);
      const stored = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
      expect(stored).toEqual([{ userIds: [uid('shiva'), uid('hamlet'), uid('othello')].sort((a, b) => a - b), payload: { type: 'delete_message', message_type: 'private', message_ids: [id] } }]);
      expect(await poll('shiva', q)).toEqual([{ id: expect.any(Number), type: 'delete_message', message_type: 'private', message_id: id }]);
    });

    it('the empty topic is "general chat" for clients that do not know it', async () => {
      const old = await queueOf('hamlet', { client_capabilities: { bulk_message_deletion: true } });
      const aware = await queueOf('hamlet', { client_capabilities: { bulk_message_deletion: true, empty_topic_name: true } });
      const id = await toChannel('hamlet', channel.name, '');
      await deleted('hamlet', id);
      const deletions = async (q: Queue) => (await poll('hamlet', q)).filter((e) => e.type === 'delete_message');
      expect((await deletions(old)).map((e) => e.topic)).toEqual(['general chat']);
      expect((await deletions(aware)).map((e) => e.topic)).toEqual(['']);
    });

    it('public channel: its subscribers and the non-guests who received the message; the deleting user always', async () => {
      const pub = await createChannel(env, 'iago', {}, ['hamlet', 'cordelia', 'polonius']);
      // cordelia and polonius are mentioned (rows of their own), then leave the channel.
      const id = await toChannel('hamlet', pub.name, 'audience', '@**Cordelia, Lear\'s daughter** @**Polonius**');
      await subscribeDirectly(env, uid('cordelia'), pub.id, false);
      await subscribeDirectly(env, uid('polonius'), pub.id, false);
      const mark = await markEvents(env);
      await deleted('desdemona', id); // an owner who is not subscribed
      const [event, ...more] = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
      expect(more).toEqual([]);
      expect(event!.userIds).toEqual([uid('desdemona'), uid('hamlet'), uid('cordelia'), uid('iago')].sort((a, b) => a - b));
      expect(event!.userIds).not.toContain(uid('polonius')); // a guest who left cannot read it any more
    });

    it('private channel with shared history: its subscribers; with protected history, those who received the messages', async () => {
      const shared = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: true }, ['hamlet']);
      const a = await toChannel('iago', shared.name, 'audience');
      await subscribeDirectly(env, uid('othello'), shared.id); // joins later, may read the history
      let mark = await markEvents(env);
      await deleted('iago', a);
      let events = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
      expect(events.map((e) => e.userIds)).toEqual([[uid('iago'), uid('hamlet'), uid('othello')].sort((x, y) => x - y)]);

      const protectedChannel = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['hamlet']);
      const b = await toChannel('iago', protectedChannel.name, 'audience');
      await subscribeDirectly(env, uid('othello'), protectedChannel.id); // joins later: never received b
      mark = await markEvents(env);
      await deleted('iago', b);
      events = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
      expect(events.map((e) => e.userIds)).toEqual([[uid('iago'), uid('hamlet')].sort((x, y) => x - y)]);
      // Cordelia, outside both channels, got nothing.
      expect(events.flatMap((e) => e.userIds)).not.toContain(uid('cordelia'));
    });

    it('a channel whose first message is deleted announces its new first_message_id to those who can see it', async () => {
      const c = await createChannel(env, 'iago', { invite_only: true }, ['hamlet']);
      const first = await toChannel('hamlet', c.name, 'first');
      const second = await toChannel('hamlet', c.name, 'first');
      const mark = await markEvents(env);
      await deleted('hamlet', second);
      expect((await eventsSince(env, mark)).filter((e) => e.payload.type === 'stream')).toEqual([]);
      await deleted('hamlet', first);
      const updates = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'stream');
      expect(updates).toEqual([
        { userIds: [...adminIds(await activeUsers(env, env.realmId)), uid('hamlet')].sort((x, y) => x - y), payload: { type: 'stream', op: 'update', property: 'first_message_id', value: null, stream_id: c.id, name: c.name } },
      ]);
    });
  });

  describe('what a deleted message leaves behind', () => {
    it('nothing in GET /messages, GET /messages/{id}, searches, unread_msgs or the topic list; rows and reactions go too', async () => {
      const topic = `gone ${randomBytes(3).toString('hex')}`;
      const kept = await toChannel('iago', channel.name, 'kept topic', 'still here');
      const id = await toChannel('iago', channel.name, topic, 'unmistakablewordforsearch and @**Othello, the Moor of Venice**');
      await db().reaction.create({ data: { messageId: id, userId: uid('othello'), emojiName: 'smile', emojiCode: '1f642', reactionType: 'unicode_emoji' } });
      const unreadOf = async (who: Person) => {
        const state = await registerQueue(env.client(who), { fetch_event_types: ['message'] });
        const ids = [...state.unread_msgs!.streams.flatMap((s) => s.unread_message_ids), ...state.unread_msgs!.mentions];
        return ids;
      };
      expect(await unreadOf('othello')).toContain(id);
      await deleted('iago', id);

      const client = env.client('othello');
      const page = await readMessages('othello', { anchor: 'newest', num_before: 100, num_after: 0, narrow: [{ operator: 'channel', operand: channel.id }] });
      expect(page.map((m) => m.id)).not.toContain(id);
      expect(page.map((m) => m.id)).toContain(kept);
      expect(await readMessages('othello', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'search', operand: 'unmistakablewordforsearch' }] })).toEqual([]);
      expectJsonError(await client.GET('/messages/{message_id}', { params: { path: { message_id: id }, query: {} } }), 400, 'Invalid message(s)');
      expect((await readMessages('othello', { message_ids: [id, kept] })).map((m) => m.id)).toEqual([kept]);
      expect(await unreadOf('othello')).not.toContain(id);
      const topics = await client.GET('/users/me/{stream_id}/topics', { params: { path: { stream_id: channel.id }, query: {} } });
      expect(topics.data!.topics.map((t) => t.name)).not.toContain(topic);
      expect(await db().userMessage.count({ where: { messageId: id } })).toBe(0);
      expect(await db().reaction.count({ where: { messageId: id } })).toBe(0);
    });

    it("deferred recipients get no row for it, and their later reads are exact", async () => {
      const reader = await createAccount(env, { label: 'deferred', fullName: 'Deferred Reader' });
      const c = await createChannel(env, 'iago', {}, ['iago']);
      await subscribeDirectly(env, reader.id, c.id);
      const before = await toChannel('iago', c.name, 'deferred', 'before');
      const id = await toChannel('iago', c.name, 'deferred', 'deleted');
      expect((await db().message.findUniqueOrThrow({ where: { id } })).deferredRecipientIds).toContain(reader.id);
      await deleted('iago', id);
      const after = await toChannel('iago', c.name, 'deferred', 'after');
      const page = await readMessages(reader, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: c.id }] });
      expect(page.map((m) => [m.id, m.flags])).toEqual([
        [before, []],
        [after, []],
      ]);
      const rows = await db().userMessage.findMany({ where: { userId: reader.id }, orderBy: { messageId: 'asc' } });
      expect(rows.map((r) => r.messageId)).toEqual([before, after]);
      const state = await registerQueue(reader.client, { fetch_event_types: ['message'] });
      expect(state.unread_msgs!.count).toBe(2);
    });

    it('deferred rows stay exact when the reader catches up at the very moment of the deletion', async () => {
      const reader = await createAccount(env, { label: 'racing', fullName: 'Racing Reader' });
      const c = await createChannel(env, 'iago', {}, ['iago']);
      await subscribeDirectly(env, reader.id, c.id);
      const realm = await db().realm.findUniqueOrThrow({ where: { id: env.realmId } });
      const iago = await db().user.findUniqueOrThrow({ where: { id: uid('iago') } });
      const channelRow = await db().channel.findUniqueOrThrow({ where: { id: c.id } });
      const rowsOf = (id: number) => db().userMessage.count({ where: { messageId: id } });
      /** Waits until some backend waits for a lock in a statement that names `table`. */
      const someoneWaitsOn = (table: string) =>
        waitFor(async () => {
          const [row] = await db().$queryRaw<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${`%${table}%`}`;
          return row!.n > 0;
        }, { what: `a statement waiting on ${table}` });

      // 1. The deletion first: the reader's catch-up waits for it, then drops the row it would write.
      const first = await toChannel('iago', c.name, 'race', 'first');
      let reached!: () => void;
      let release!: () => void;
      const inside = new Promise<void>((r) => (reached = r));
      const gate = new Promise<void>((r) => (release = r));
      const deletion = inTransaction(db(), async (tx, afterCommit) => {
        const message = await lockMessageForDeletion(tx, env.realmId, first);
        await deleteMessages({ tx, afterCommit, deps: env.running.deps, realm }, iago, channelRow, [message!]);
        reached();
        await gate;
      });
      await inside;
      const catchUp = writeDeferredRows(db(), env.realmId, reader.id);
      await someoneWaitsOn('user_message_caught_up');
      release();
      await deletion;
      await catchUp;
      expect(await rowsOf(first)).toBe(0);

      // 2. The catch-up first: the deletion waits for its commit, then deletes what it wrote.
      const second = await toChannel('iago', c.name, 'race', 'second');
      let caught!: () => void;
      let releaseReader!: () => void;
      const written = new Promise<void>((r) => (caught = r));
      const readerGate = new Promise<void>((r) => (releaseReader = r));
      const reading = inTransaction(db(), async (tx) => {
        await writeDeferredRows(tx, env.realmId, reader.id);
        caught();
        await readerGate;
      });
      await written;
      const request = del('iago', second);
      await someoneWaitsOn('user_message_caught_up');
      releaseReader();
      await reading;
      const res = await request;
      expect(res.data).toEqual({ result: 'success', msg: '' });
      expect(await rowsOf(second)).toBe(0);

      // 3. A snapshot taken before the deletion committed (POST /register's catch-up runs in one): the
      // catch-up conflicts (a serialization failure, which inTransaction runs again) instead of writing
      // a row of a message that is gone.
      const fourth = await toChannel('iago', c.name, 'race', 'fourth');
      let snapshotTaken!: () => void;
      let releaseSnapshot!: () => void;
      const taken = new Promise<void>((r) => (snapshotTaken = r));
      const snapshotGate = new Promise<void>((r) => (releaseSnapshot = r));
      const snapshotReader = db().$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT 1`;
          snapshotTaken();
          await snapshotGate;
          await writeDeferredRows(tx, env.realmId, reader.id);
        },
        { isolationLevel: 'RepeatableRead' },
      );
      const failed = snapshotReader.then(() => null, (error: unknown) => String(error));
      await taken;
      await deleted('iago', fourth);
      releaseSnapshot();
      expect(await failed).toMatch(/40001|could not serialize/);
      expect(await rowsOf(fourth)).toBe(0);

      // The reader's next read is exact.
      const third = await toChannel('iago', c.name, 'race', 'third');
      const page = await readMessages(reader, { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'channel', operand: c.id }] });
      expect(page.map((m) => m.id)).toEqual([third]);
      expect((await db().userMessage.findMany({ where: { userId: reader.id } })).map((r) => r.messageId)).toEqual([third]);
    });

    it('withdraws the notifications still showing; a push not sent yet is skipped', async () => {
      const r = await createAccount(env, { label: 'pushed', fullName: `Pushed ${randomBytes(3).toString('hex')}` });
      expect((await r.client.POST('/users/me/apns_device_token', { body: { token: randomBytes(32).toString('hex'), appid: 'org.zulip.Zulip' } })).response.status).toBe(200);
      const pushesOf = () => db().pushOutbox.findMany({ where: { userId: r.id }, orderBy: { id: 'asc' } });
      const settled = (count: number) =>
        waitFor(async () => {
          const rows = await pushesOf();
          return rows.length === count && rows.every((p) => p.status !== 'pending') && rows;
        }, { what: `${count} settled pushes` });

      const shown = await toUsers('hamlet', [r.id], 'pushed and deleted');
      await settled(1);
      await deleted('hamlet', shown);
      const [, removal] = await settled(2);
      expect(removal!.event).toBe('remove');
      expect((removal!.payload as { zulip: { zulip_message_ids: string } }).zulip.zulip_message_ids).toBe(String(shown));

      // A message whose push waits in the queue: deleted first, its push is never sent.
      const waiting = await toUsers('hamlet', [r.id], 'deleted before its push');
      const [, , push] = await settled(3);
      await deleted('hamlet', waiting);
      await settled(4); // its removal (the push had been recorded as shown)
      await db().pushOutbox.update({ where: { id: push!.id }, data: { status: 'pending' } });
      expect(await deliverPush(env.running.deps, push!.id, null)).toBe('skipped');
    });

    it("cancels the reminders about it, telling their owners; leaves drafts alone", async () => {
      const id = await toChannel('othello', channel.name, 'remind me');
      const inAnHour = Math.floor(Date.now() / 1000) + 3600;
      const reminder = await env.client('hamlet').POST('/reminders', { body: { message_id: id, scheduled_delivery_timestamp: inAnHour } });
      const reminderId = reminder.data!.reminder_id;
      const other = await toChannel('othello', channel.name, 'remind me');
      const kept = (await env.client('hamlet').POST('/reminders', { body: { message_id: other, scheduled_delivery_timestamp: inAnHour } })).data!.reminder_id;
      const drafts = await env.client('hamlet').POST('/drafts', { body: { drafts: [{ type: 'stream', to: [channel.id], topic: 'remind me', content: 'a draft', timestamp: 1700000000 }] } });
      const q = await queueOf('hamlet', { client_capabilities: { bulk_message_deletion: true } });
      const mark = await markEvents(env);
      await deleted('othello', id);

      const listed = (await env.client('hamlet').GET('/reminders')).data!.reminders.map((r) => r.reminder_id);
      expect(listed).not.toContain(reminderId);
      expect(listed).toContain(kept);
      expect(await db().scheduledMessage.findUnique({ where: { id: reminderId } })).toBeNull();
      const reminderEvents = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'reminders');
      expect(reminderEvents).toEqual([{ userIds: [uid('hamlet')], payload: { type: 'reminders', op: 'remove', reminder_id: reminderId } }]);
      expect((await poll('hamlet', q)).map((e) => e.type).sort()).toEqual(['delete_message', 'reminders']);
      const draftIds = (await env.client('hamlet').GET('/drafts')).data!.drafts.map((d) => d.id);
      expect(draftIds).toContain(drafts.data!.ids[0]);
    });
  });
});
