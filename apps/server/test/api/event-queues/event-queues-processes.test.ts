// GET /events across server processes, now that a poll writes nothing itself: each process keeps the
// queues it serves in memory and records acknowledgments and access times in batches
// (src/events/queue-cache.ts). A client moving between processes still gets every event once, in order;
// a queue deleted or expired anywhere is gone everywhere.
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { useChannel } from '../../helpers/channels.ts';
import { pollEvents, registerQueue, type Queue } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';
import { pruneEventsAndQueues } from '../../../src/data/event-queues.repo.ts';

const env = useTestServer();
const second = useSecondProcess(env);
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet']);

const on = (server: { url: string }): ParleyClient => createParleyClient({ site: server.url, email: env.users.hamlet.email, apiKey: env.users.hamlet.apiKey });
const first = () => on(env);
const other = () => on(second.running);

/** `n` stored events for hamlet's queue (channel description changes by iago); their descriptions. */
async function describeChannel(n: number, tag: string): Promise<string[]> {
  const texts: string[] = [];
  for (let i = 0; i < n; i++) {
    const description = `${tag} ${i}`;
    const { error } = await env.client('iago').PATCH('/streams/{stream_id}', { params: { path: { stream_id: channel.id } }, body: { description } });
    if (error) throw new Error(JSON.stringify(error));
    texts.push(description);
  }
  return texts;
}

const descriptions = (events: any[]) => events.filter((e) => e.type === 'stream' && e.property === 'description').map((e) => e.value as string);
const storedAck = async (queue: Queue) =>
  Number((await env.running.deps.db.$queryRaw<{ last_event_id: bigint }[]>`SELECT last_event_id FROM event_queue WHERE id = ${queue.queue_id}`)[0]?.last_event_id ?? -1);

describe('GET /events on two processes', () => {
  it('a queue acknowledged through one process, then polled through the other, gets each event once, in order', async () => {
    const q = await registerQueue(first(), { event_types: ['stream'] });
    const a = await describeChannel(3, 'first');
    // Read on the first process, acknowledged there up to the second event.
    const readOnFirst = await pollEvents(first(), q);
    expect(descriptions(readOnFirst)).toEqual(a);
    const afterSecond = await pollEvents(first(), q, { lastEventId: readOnFirst[1].id });
    expect(descriptions(afterSecond)).toEqual(a.slice(2));
    const b = await describeChannel(2, 'second');
    // The client goes on on the other process from what it has seen.
    const last = afterSecond.at(-1).id as number;
    const onOther = await pollEvents(other(), q, { lastEventId: last });
    expect(descriptions(onOther)).toEqual(b);
    expect(onOther.map((e) => e.id)).toEqual([...onOther.map((e) => e.id)].sort((x, y) => x - y));
    // Acknowledged there; back on the first process with the newest id: nothing again, nothing lost.
    const newest = onOther.at(-1).id as number;
    expect(await pollEvents(other(), q, { lastEventId: newest })).toEqual([]);
    const c = await describeChannel(1, 'third');
    expect(descriptions(await pollEvents(first(), q, { lastEventId: newest }))).toEqual(c);
  });

  it('records acknowledgments in the queue row in batches; a poll without last_event_id on the other process starts after them', async () => {
    const q = await registerQueue(first(), { event_types: ['stream'] });
    const a = await describeChannel(2, 'batched');
    const events = await pollEvents(first(), q);
    expect(descriptions(events)).toEqual(a);
    const acknowledged = events.at(-1).id as number;
    // Acknowledged in memory by this poll; at once, a poll without last_event_id on the other process
    // starts at the queue's own mark: the events just acknowledged never come again.
    expect(await pollEvents(first(), q, { lastEventId: acknowledged })).toEqual([]);
    const b = await describeChannel(1, 'batched more');
    const { data } = await other().GET('/events', { params: { query: { queue_id: q.queue_id, dont_block: true } } });
    expect(descriptions(data!.events)).toEqual(b);
    // Written to the row by the processes (not by the polls).
    await waitFor(async () => (await storedAck(q)) >= acknowledged, { what: 'the acknowledgment in the queue row' });
  });

  it('a queue deleted through one process is gone on the other, which had it in memory', async () => {
    const q = await registerQueue(first(), { event_types: ['stream'] });
    expect(await pollEvents(other(), q)).toEqual([]);
    const { error } = await first().DELETE('/events', { body: { queue_id: q.queue_id } });
    expect(error).toBeUndefined();
    await waitFor(async () => (await other().GET('/events', { params: { query: { queue_id: q.queue_id, dont_block: true } } })).error !== undefined, { what: 'the queue gone on the other process' });
    expectJsonError(await other().GET('/events', { params: { query: { queue_id: q.queue_id, dont_block: true } } }), 400, `Bad event queue ID: ${q.queue_id}`, 'BAD_EVENT_QUEUE_ID');
  });

  it('a queue in memory expires when the housekeeping finds it not polled within its lifespan', async () => {
    const q = await registerQueue(first(), { event_types: ['stream'] });
    expect(await pollEvents(first(), q)).toEqual([]);
    expect(await pollEvents(other(), q)).toEqual([]);
    // Every process wrote its last poll: the row is what the housekeeping reads.
    await env.running.deps.delivery.queues.flush();
    await second.running.deps.delivery.queues.flush();
    await env.running.deps.db.$executeRaw`UPDATE event_queue SET last_accessed_at = now() - interval '11 minutes' WHERE id = ${q.queue_id}`;
    await pruneEventsAndQueues(env.running.deps.db, { graceSecs: 3600, maxAgeSecs: 7 * 24 * 3600 });
    for (const server of [env, second.running]) {
      await waitFor(async () => (await on(server).GET('/events', { params: { query: { queue_id: q.queue_id, dont_block: true } } })).error !== undefined, { what: 'the expired queue gone' });
    }
  });
});
