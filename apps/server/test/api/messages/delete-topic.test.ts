// POST /streams/{stream_id}/delete_topic: administrators only, the topic matched whatever its case,
// only the messages the administrator can access, newest first in batches of 100 (one delete_message
// event each), complete: false when the time budget runs out, and the topic's visibility policies
// cleared once it is complete.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { sendMessage } from '../../helpers/queues.ts';
import { DELETE_TOPIC_BATCH } from '../../../src/actions/message-deletion.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello', 'shiva']);

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

const deleteTopic = (who: Person, streamId: number, topicName: string) =>
  env.client(who).POST('/streams/{stream_id}/delete_topic', { params: { path: { stream_id: streamId } }, body: { topic_name: topicName } });
const post = (who: Person, to: string, topic: string, content = 'hello') => sendMessage(env.client(who), { type: 'stream', to, topic, content });
const idsOfTopic = async (channelId: number, topic: string) =>
  (await db().$queryRaw<{ id: number }[]>`SELECT id FROM message WHERE channel_id = ${channelId}::int AND lower(topic) = lower(${topic}) ORDER BY id`).map((r) => r.id);

/** `count` messages of the topic written directly (setup), oldest first; answers their ids. */
async function bulkTopic(channelId: number, topic: string, count: number): Promise<number[]> {
  const rows = await db().$queryRaw<{ id: number }[]>`
    INSERT INTO message (realm_id, sender_id, channel_id, topic, content, rendered_content, direct_user_ids)
    SELECT ${env.realmId}::int, ${uid('hamlet')}::int, ${channelId}::int, ${topic}, 'bulk ' || i, '<p>bulk ' || i || '</p>', '{}'
    FROM generate_series(1, ${count}::int) AS i ORDER BY i
    RETURNING id`;
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

const follow = (who: Person, streamId: number, topic: string) => env.client(who).POST('/user_topics', { body: { stream_id: streamId, topic, visibility_policy: 3 } });
const policiesOf = (channelId: number, topic: string) =>
  db().$queryRaw<{ user_id: number }[]>`SELECT user_id FROM user_topic WHERE channel_id = ${channelId}::int AND topic_key = lower(${topic}) ORDER BY user_id`.then((rows) => rows.map((r) => r.user_id));

describe('POST /streams/{stream_id}/delete_topic', () => {
  it('organization administrators only, whatever the group settings', async () => {
    const id = await post('hamlet', channel.name, 'not yours');
    // The channel's can_delete_any_message_group does not grant it.
    const sys = await db().userGroup.findFirstOrThrow({ where: { realmId: env.realmId, name: 'role:everyone' } });
    await db().channel.update({ where: { id: channel.id }, data: { canDeleteAnyMessageGroupId: sys.id } });
    try {
      for (const who of ['shiva', 'hamlet', 'othello'] as const) {
        expectJsonError(await deleteTopic(who, channel.id, 'not yours'), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
      }
    } finally {
      const nobody = await db().userGroup.findFirstOrThrow({ where: { realmId: env.realmId, name: 'role:nobody' } });
      await db().channel.update({ where: { id: channel.id }, data: { canDeleteAnyMessageGroupId: nobody.id } });
    }
    expect(await idsOfTopic(channel.id, 'not yours')).toEqual([id]);
    const owner = await deleteTopic('desdemona', channel.id, 'not yours');
    expect(owner.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await idsOfTopic(channel.id, 'not yours')).toEqual([]);
  });

  it('an unknown, archived or unreadable channel: Invalid channel ID; a missing topic_name', async () => {
    expectJsonError(await deleteTopic('iago', 999_999, 'x'), 400, 'Invalid channel ID');
    const secret = await createChannel(env, 'othello', { invite_only: true }, []);
    const hidden = await post('othello', secret.name, 'secret');
    expectJsonError(await deleteTopic('iago', secret.id, 'secret'), 400, 'Invalid channel ID');
    expect(await idsOfTopic(secret.id, 'secret')).toEqual([hidden]);
    const archived = await createChannel(env, 'iago', {}, []);
    await post('iago', archived.name, 'old');
    expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } })).response.status).toBe(200);
    expectJsonError(await deleteTopic('iago', archived.id, 'old'), 400, 'Invalid channel ID');
    const missing = await env.raw(`/streams/${channel.id}/delete_topic`, { method: 'POST', as: 'iago', body: new URLSearchParams({}), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expectJsonError(missing, 400, "Missing 'topic_name' argument", 'REQUEST_VARIABLE_MISSING');
  });

  it('matches the topic whatever its case, leaves other topics alone, tells who could see it; "general chat" is the empty topic', async () => {
    const kept = await post('hamlet', channel.name, 'Moat and more');
    const a = await post('hamlet', channel.name, 'Moat');
    const b = await post('othello', channel.name, 'moat');
    const c = await post('iago', channel.name, 'MOAT');
    const mark = await markEvents(env);
    const res = await deleteTopic('iago', channel.id, 'mOaT');
    expect(res.data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await idsOfTopic(channel.id, 'moat')).toEqual([]);
    expect(await idsOfTopic(channel.id, 'Moat and more')).toEqual([kept]);
    const deletions = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
    expect(deletions).toEqual([
      {
        userIds: [uid('iago'), uid('hamlet'), uid('othello'), uid('shiva')].sort((x, y) => x - y),
        payload: { type: 'delete_message', message_type: 'stream', message_ids: [a, b, c], stream_id: channel.id, topic: 'moat' },
      },
    ]);

    const empty = await post('hamlet', channel.name, '');
    expect((await deleteTopic('iago', channel.id, 'general chat')).data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await db().message.findUnique({ where: { id: empty } })).toBeNull();
    // A topic without messages: nothing to do, complete.
    expect((await deleteTopic('iago', channel.id, 'never written')).data).toEqual({ result: 'success', msg: '', complete: true });
  });

  it('deletes newest first, 100 per transaction; answers complete: false when its time runs out, and clears the policies once complete', async () => {
    const c = await createChannel(env, 'iago', {}, ['hamlet', 'othello']);
    const ids = await bulkTopic(c.id, 'Big topic', 2 * DELETE_TOPIC_BATCH + 50);
    expect((await follow('hamlet', c.id, 'big topic')).response.status).toBe(200);
    expect((await follow('othello', c.id, 'Big Topic')).response.status).toBe(200);
    const other = await post('hamlet', c.name, 'small topic');
    expect((await follow('hamlet', c.id, 'small topic')).response.status).toBe(200);

    const mark = await markEvents(env);
    env.running.deps.config.deleteTopicBudgetMs = 1;
    try {
      // Each call deletes one batch before it looks at the time.
      const first = await deleteTopic('iago', c.id, 'BIG TOPIC');
      expect(first.data).toEqual({ result: 'success', msg: '', complete: false });
      expect(await idsOfTopic(c.id, 'big topic')).toEqual(ids.slice(0, DELETE_TOPIC_BATCH + 50));
      // Not complete: the policies are still there.
      expect(await policiesOf(c.id, 'big topic')).toEqual([uid('hamlet'), uid('othello')].sort((x, y) => x - y));
      expect((await deleteTopic('iago', c.id, 'big topic')).data).toEqual({ result: 'success', msg: '', complete: false });
      expect(await idsOfTopic(c.id, 'big topic')).toEqual(ids.slice(0, 50));
      expect((await deleteTopic('iago', c.id, 'big topic')).data).toEqual({ result: 'success', msg: '', complete: true });
    } finally {
      env.running.deps.config.deleteTopicBudgetMs = 50_000;
    }
    expect(await idsOfTopic(c.id, 'big topic')).toEqual([]);
    expect(await idsOfTopic(c.id, 'small topic')).toEqual([other]);

    const events = await eventsSince(env, mark);
    // One event per batch (per transaction), newest batch first.
    const deletions = events.filter((e) => e.payload.type === 'delete_message').map((e) => e.payload.message_ids as number[]);
    expect(deletions).toEqual([ids.slice(DELETE_TOPIC_BATCH + 50), ids.slice(50, DELETE_TOPIC_BATCH + 50), ids.slice(0, 50)]);
    // Complete: the topic's policies are gone (each user told), the other topic's kept.
    expect(await policiesOf(c.id, 'big topic')).toEqual([]);
    expect(await policiesOf(c.id, 'small topic')).toEqual([uid('hamlet')]);
    const cleared = events.filter((e) => e.payload.type === 'user_topic');
    expect(cleared.map((e) => [e.userIds, e.payload.topic_name, e.payload.visibility_policy]).sort((x, y) => x[0]![0]! - y[0]![0]!)).toEqual(
      [
        [[uid('hamlet')], 'big topic', 0],
        [[uid('othello')], 'Big Topic', 0],
      ].sort((x, y) => (x[0] as number[])[0]! - (y[0] as number[])[0]!),
    );
  });

  it('protected history: only the messages the administrator received; policies kept by those who still have messages there', async () => {
    const c = await createChannel(env, 'othello', { invite_only: true, history_public_to_subscribers: false }, ['hamlet']);
    const before = await post('othello', c.name, 'history');
    // iago joins after the first message: he never received it.
    await subscribeDirectly(env, uid('iago'), c.id);
    await subscribeDirectly(env, uid('cordelia'), c.id);
    const after = await post('othello', c.name, 'history');
    expect((await follow('hamlet', c.id, 'history')).response.status).toBe(200);
    expect((await follow('cordelia', c.id, 'history')).response.status).toBe(200);

    const mark = await markEvents(env);
    expect((await deleteTopic('iago', c.id, 'history')).data).toEqual({ result: 'success', msg: '', complete: true });
    expect(await idsOfTopic(c.id, 'history')).toEqual([before]);
    const [deletion, ...more] = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'delete_message');
    expect(more).toEqual([]);
    expect(deletion!.payload.message_ids).toEqual([after]);
    expect(deletion!.userIds).toEqual([uid('othello'), uid('hamlet'), uid('iago'), uid('cordelia')].sort((x, y) => x - y));
    // hamlet (who follows it) and othello (who started it, and follows it since) still have the first
    // message of the topic; cordelia, who joined later, has none left.
    expect(await policiesOf(c.id, 'history')).toEqual([uid('hamlet'), uid('othello')].sort((x, y) => x - y));
  });
});
