// GET /events delivery beyond a process's in-memory tail: a queue polled on another process (or after
// the tail moved on) reads the database, and a run of stored events it does not take never holds it in
// place; a public channel's message reaches all_public_streams queues even with no subscriber.
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { inTransaction } from '../../../src/data/transactions.ts';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { createChannel } from '../../helpers/channels.ts';
import { realmIdOf } from '../../helpers/realm.ts';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer();
const secondProcess = useSecondProcess(env);

const on = (server: { url: string }, person: 'hamlet' | 'iago'): ParleyClient =>
  createParleyClient({ site: server.url, email: env.users[person].email, apiKey: env.users[person].apiKey });

describe('a queue read from the database', () => {
  it('is not held in place by a full batch of events it does not take', async () => {
    const hamlet = on(env, 'hamlet');
    const queue = await registerQueue(hamlet, { event_types: ['message'] });
    // More realm-wide events the queue does not take than one database batch holds (1,000).
    const deps = env.running.deps;
    const realmId = await realmIdOf(env);
    await inTransaction(deps.db, async (tx, afterCommit) => {
      const payloads = Array.from({ length: 1_200 }, (_, i) => ({ type: 'realm_user', op: 'update', person: { user_id: env.users.othello.id, full_name: `Othello ${i}` } }));
      await deps.events.publish(tx, afterCommit, realmId, payloads.map((payload) => ({ realmWide: true as const, payload })));
    });
    const id = await sendMessage(on(env, 'iago'), { type: 'direct', to: JSON.stringify([env.users.hamlet.id]), content: 'behind a crowd' });
    // The secondProcess.running process started its tail after all this: the queue's mark lies below it.
    const viaSecond = on(secondProcess.running, 'hamlet');
    await registerQueue(on(secondProcess.running, 'iago'), { event_types: ['heartbeat'] });
    const events = await pollEvents(viaSecond, queue);
    expect(events.filter((e) => e.type === 'message').map((e) => e.message.id)).toEqual([id]);
  });
});

describe('all_public_streams', () => {
  it("delivers a public channel's message even when nobody is subscribed to the channel", async () => {
    const channel = await createChannel(env, 'iago');
    const { error } = await env.client('iago').DELETE('/users/me/subscriptions', { body: { subscriptions: [channel.name] } });
    expect(error).toBeUndefined();
    const hamlet = on(env, 'hamlet');
    const everything = await registerQueue(hamlet, { all_public_streams: true, event_types: ['message'] });
    const id = await sendMessage(on(env, 'iago'), { type: 'stream', to: String(channel.id), topic: 'empty room', content: 'anyone?' });
    const events = await pollEvents(hamlet, everything);
    expect(events.filter((e) => e.type === 'message').map((e) => e.message.id)).toEqual([id]);
  });
});

describe('a parked poll woken by its recipients only', () => {
  it("ends a queue whose owner a realm_user event deactivates, even when the event is addressed to others only", async () => {
    // A wake-up visits the parked polls of its events' recipients, and everyone's for a realm_user event:
    // such an event can end a queue that does not receive it (access/event-queues.ts eventEndsQueue).
    const hamlet = on(env, 'hamlet');
    const queue = await registerQueue(hamlet, { event_types: ['message'] });
    const deps = env.running.deps;
    const before = deps.delivery.parked;
    const poll = pollEvents(hamlet, queue, { dontBlock: false });
    poll.catch(() => {});
    await waitFor(async () => deps.delivery.parked > before, { what: "hamlet's parked poll" });
    const realmId = await realmIdOf(env);
    await inTransaction(deps.db, async (tx, afterCommit) => {
      await deps.events.publish(tx, afterCommit, realmId, [
        { userIds: [env.users.othello.id], payload: { type: 'realm_user', op: 'update', person: { user_id: env.users.hamlet.id, is_active: false } } },
      ]);
    });
    await expect(poll).rejects.toThrow('BAD_EVENT_QUEUE_ID');
  });
});
