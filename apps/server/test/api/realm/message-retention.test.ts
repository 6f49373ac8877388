// The retention policy (PATCH /realm message_retention_days, and channels' own message_retention_days):
// the hourly job deletes messages older than their conversation's period, through the PostgreSQL job
// queue, in batches, sending no event (as Zulip's retention), keeping what a channel keeps for ever,
// and reads no longer find the deleted messages. Messages are made old by moving their date back in
// the database (setup only).
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { createChannel } from '../../helpers/channels.ts';
import { sendMessage } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';
import { runMessageRetention } from '../../../src/actions/message-retention.ts';

const env = useTestServer();
const db = () => env.running.deps.db;
const DAY_MS = 86_400_000;

const setRealmRetention = async (days: number | 'unlimited') => {
  const { error } = await env.client('desdemona').PATCH('/realm', { body: { message_retention_days: days } });
  if (error) throw new Error(JSON.stringify(error));
};
const setChannelRetention = async (channelId: number, days: number | 'unlimited' | 'realm_default') => {
  const { error } = await env.client('desdemona').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channelId } }, body: { message_retention_days: days } });
  if (error) throw new Error(JSON.stringify(error));
};

/** Sends `count` channel messages as hamlet and dates them `ageDays` back. */
async function channelMessages(channelName: string, count: number, ageDays: number, topic = 'retention'): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(await sendMessage(env.client('hamlet'), { type: 'stream', to: channelName, topic, content: `message ${i}` }));
  await age(ids, ageDays);
  return ids;
}

async function directMessages(to: Person, count: number, ageDays: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([env.users[to].id]), content: `dm ${i}` }));
  await age(ids, ageDays);
  return ids;
}

async function age(ids: number[], days: number): Promise<void> {
  if (days > 0) await db().message.updateMany({ where: { id: { in: ids } }, data: { dateSent: new Date(Date.now() - days * DAY_MS) } });
}

const existing = async (ids: number[]) => (await db().message.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((m) => m.id).sort((a, b) => a - b);

/** Runs the waiting retention job now, through the job queue, and waits until it has completed. */
async function runRetentionJob(): Promise<void> {
  const completed = async () => (await db().$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'message-retention' AND state = 'completed'`)[0]!.n;
  const before = await completed();
  const moved = await db().$executeRaw`UPDATE pgboss.job SET start_after = now() WHERE name = 'message-retention' AND state = 'created'`;
  expect(moved, 'one retention job waits, as every process schedules it').toBe(1);
  await waitFor(async () => (await completed()) > before, { what: 'the retention job' });
}

describe('message retention (message_retention_days)', () => {
  it('the job deletes channel and direct messages older than the organization\'s period, with no event', async () => {
    const channel = await createChannel(env, 'hamlet', {}, ['othello']);
    const old = await channelMessages(channel.name, 3, 40);
    const oldDirect = await directMessages('othello', 2, 40);
    const recent = await channelMessages(channel.name, 2, 10);
    const recentDirect = await directMessages('othello', 1, 0);
    await env.client('othello').POST('/messages/{message_id}/reactions', { params: { path: { message_id: old[0]! } }, body: { emoji_name: 'octopus' } });

    // Unlimited (the default): nothing goes.
    await runRetentionJob();
    expect(await existing([...old, ...oldDirect])).toEqual([...old, ...oldDirect].sort((a, b) => a - b));

    await setRealmRetention(30);
    const mark = await markEvents(env);
    await runRetentionJob();
    expect(await existing([...old, ...oldDirect, ...recent, ...recentDirect])).toEqual([...recent, ...recentDirect].sort((a, b) => a - b));
    // Their rows go with them: read state, reactions.
    expect(await db().userMessage.count({ where: { messageId: { in: [...old, ...oldDirect] } } })).toBe(0);
    expect(await db().reaction.count({ where: { messageId: { in: old } } })).toBe(0);
    // As Zulip's retention: no event (clients learn of it when they fetch again).
    expect(await eventPayloadsSince(env, mark)).toEqual([]);
    // Reads no longer find them.
    const query = new URLSearchParams({ anchor: 'oldest', num_before: '0', num_after: '100', narrow: JSON.stringify([{ operator: 'channel', operand: channel.id }]) });
    const read = await env.raw(`/messages?${query}`, { as: 'othello' });
    expect(read.body.messages.map((m: { id: number }) => m.id)).toEqual(recent);
    await setRealmRetention('unlimited');
  });

  it("a channel's own period wins: kept for ever, or shorter than the organization's", async () => {
    const forever = await createChannel(env, 'hamlet');
    const short = await createChannel(env, 'hamlet');
    const inherits = await createChannel(env, 'hamlet');
    await setChannelRetention(forever.id, 'unlimited');
    await setChannelRetention(short.id, 5);
    const keptForever = await channelMessages(forever.name, 2, 400);
    const shortOld = await channelMessages(short.name, 2, 6);
    const shortNew = await channelMessages(short.name, 1, 4);
    const inheritOld = await channelMessages(inherits.name, 2, 6);
    const direct = await directMessages('cordelia', 1, 6);

    // The organization keeps everything: only the short channel's old messages go.
    await runRetentionJob();
    expect(await existing([...keptForever, ...shortOld, ...shortNew, ...inheritOld, ...direct])).toEqual([...keptForever, ...shortNew, ...inheritOld, ...direct].sort((a, b) => a - b));

    // A year's retention for the organization: still nothing of the channel kept for ever.
    await setRealmRetention(365);
    await runRetentionJob();
    expect(await existing(keptForever)).toEqual(keptForever);
    await setRealmRetention('unlimited');
  });

  it('deletes in batches, oldest first, a transaction each, until none is left', async () => {
    const channel = await createChannel(env, 'hamlet');
    const old = await channelMessages(channel.name, 7, 50);
    const oldDirect = await directMessages('shiva', 5, 50);
    const kept = await channelMessages(channel.name, 1, 1);
    await setRealmRetention(20);
    // Batches of 2 and 3 (Zulip's are 100 and 1,000): the pass runs several of each.
    const deleted = await runMessageRetention(env.running.deps, new Date(), { channel: 2, direct: 3 });
    expect(deleted).toBe(old.length + oldDirect.length);
    expect(await existing([...old, ...oldDirect, ...kept])).toEqual(kept);
    // A second pass finds nothing left to delete.
    expect(await runMessageRetention(env.running.deps, new Date(), { channel: 2, direct: 3 })).toBe(0);
    expect(await existing(kept)).toEqual(kept);
    await setRealmRetention('unlimited');
  });
});
