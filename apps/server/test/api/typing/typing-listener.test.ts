// The listener connection (events/listener.ts) carries the process's notifications and, pipelined with
// them, the statements that publish typing notifications. Neither a long write holding the event-order
// lock nor the loss of that connection may cost a typing notification or hold up notifications.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { waitFor } from '../../helpers/wait.ts';
import { pollEvents, pollUntil, registerQueue, type Queue } from '../../helpers/queues.ts';
import { EVENT_ORDER_LOCK } from '../../../src/data/events.repo.ts';
import { LISTENER_APPLICATION_NAME } from '../../../src/events/listener.ts';

const env = useTestServer();
let admin: pg.Client;
/** How often the listener connection was lost or made again (its reset handlers run on both). */
let resets = 0;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: env.databaseUrl });
  await admin.connect();
  env.running.deps.listener.onReset(() => resets++);
});

/** Waits until the listener connection has been lost and made again since `before` (a count of resets). */
async function replaced(before: number): Promise<void> {
  await waitFor(async () => resets >= before + 2 && env.running.deps.listener.listening, { what: 'a new listener connection', timeoutMs: 15_000 });
}
afterAll(async () => {
  await admin.end();
});

const register = (as: Person) => registerQueue(env.client(as), { event_types: ['typing'] });

/** The typing events of one long poll from the queue's start. */
async function typingEvents(as: Person, queue: Queue): Promise<any[]> {
  return (await pollEvents(env.client(as), queue, { dontBlock: false })).filter((e) => e.type === 'typing');
}

/** The application names of the sessions waiting for an advisory lock of this database. */
async function lockWaiters(): Promise<string[]> {
  const { rows } = await admin.query(
    `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()`,
  );
  return rows.map((r: { application_name: string }) => r.application_name);
}

/** Holds the event-order lock of the test organization in a transaction of its own until `release`. */
async function holdEventOrderLock(): Promise<{ release(): Promise<void> }> {
  const realmId = ((await admin.query('SELECT realm_id FROM "user" WHERE id = $1', [env.users.othello.id])).rows[0] as { realm_id: number }).realm_id;
  const holder = new pg.Client({ connectionString: env.databaseUrl });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT pg_advisory_xact_lock($1::int, $2::int)', [EVENT_ORDER_LOCK, realmId]);
  return {
    async release() {
      await holder.query('COMMIT');
      await holder.end();
    },
  };
}

const startTyping = (to: number) => env.client('hamlet').POST('/typing', { body: { op: 'start', to: [to] } });

describe('typing on the listener connection', () => {
  it('waits for a long write holding the event-order lock without holding up the notifications of the process', async () => {
    const othello = env.users.othello.id;
    const queue = await register('othello');
    // A notification the process listens for, sent while the typing statement waits for the lock.
    const heard: string[] = [];
    env.running.deps.listener.on('parley_test_probe', (payload) => heard.push(payload));
    await env.running.deps.listener.listened('parley_test_probe');

    const lock = await holdEventOrderLock();
    let typing: ReturnType<typeof startTyping> | undefined;
    try {
      let answered = false;
      typing = startTyping(othello);
      void typing.then(() => (answered = true));
      // The listener connection gives up on the lock at once, and a pooled connection waits for it.
      await waitFor(async () => (await lockWaiters()).some((name) => name !== LISTENER_APPLICATION_NAME), { what: 'a pooled connection waiting for the event-order lock' });
      // Were the listener connection still waiting for the lock, it would hear nothing until the commit below.
      await admin.query("SELECT pg_notify('parley_test_probe', 'while the lock is held')");
      await waitFor(async () => heard.length > 0, { what: 'the notification sent while the event-order lock is held', timeoutMs: 10_000 });
      expect(heard).toEqual(['while the lock is held']);
      expect(await lockWaiters()).not.toContain(LISTENER_APPLICATION_NAME);
      expect(answered).toBe(false); // the typing notification waits for the lock
    } finally {
      await lock.release();
    }
    const { error, response } = await typing!;
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    const events = await typingEvents('othello', queue);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ op: 'start', sender: { user_id: env.users.hamlet.id } });
  });

  it('is published through the pool when the listener connection is lost under its statement', async () => {
    const othello = env.users.othello.id;
    const before = resets;
    const lock = await holdEventOrderLock();
    let typing: ReturnType<typeof startTyping> | undefined;
    try {
      // Ends the listener connection's session the moment it waits for the lock (inside its 50 ms).
      const ending = admin.query(
        `DO $$
         DECLARE waiting int;
         BEGIN
           FOR attempt IN 1..20000 LOOP
             SELECT a.pid INTO waiting FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database() AND a.application_name = '${LISTENER_APPLICATION_NAME}';
             IF waiting IS NOT NULL THEN PERFORM pg_terminate_backend(waiting); RETURN; END IF;
             PERFORM pg_sleep(0.0005);
           END LOOP;
           RAISE EXCEPTION 'the listener connection never waited for the lock';
         END $$`,
      );
      typing = startTyping(othello);
      await ending;
    } finally {
      await lock.release();
    }
    const { error, response } = await typing;
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    await replaced(before);
  });

  it('goes through the pool while the listener connection is down, and back on it once reconnected', async () => {
    const othello = env.users.othello.id;
    const queue = await register('othello');
    const before = resets;
    const ended = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [LISTENER_APPLICATION_NAME]);
    expect(ended.rowCount).toBe(1);
    // At once: whether the process has noticed the loss yet or not, the notification is published.
    const during = await Promise.all([startTyping(othello), startTyping(othello)]);
    for (const { response } of during) expect(response.status).toBe(200);

    await replaced(before);
    const reconnected = await admin.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [LISTENER_APPLICATION_NAME]);
    expect(reconnected.rows[0]).toEqual({ n: 1 });
    const after = await register('othello');
    expect((await startTyping(othello)).response.status).toBe(200);
    const delivered = await typingEvents('othello', after);
    expect(delivered).toHaveLength(1);
    // The queue registered before the loss still receives (what was published while the process could
    // not hear notifications is lost to it: typing is ephemeral, nothing stored it).
    expect((await typingEvents('othello', queue)).map((e) => e.id)).toContain(delivered[0].id);
  });

  it('goes through the pool when the listener connection does not answer in time, and a stuck connection is replaced', async () => {
    const notifier = env.running.deps.notifier;
    const listenerPids = async () =>
      (await admin.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [LISTENER_APPLICATION_NAME])).rows.map((r: { pid: number }) => r.pid);
    const pidsBefore = await listenerPids();
    expect(pidsBefore).toHaveLength(1);
    const before = resets;
    // Occupies the connection longer than anything it runs may take.
    const occupied = notifier.run({ text: 'SELECT pg_sleep(12)', values: [] }).then(
      () => 'answered',
      (error: unknown) => (error as Error).message,
    );
    const { response } = await startTyping(env.users.othello.id);
    expect(response.status).toBe(200);
    expect(resets).toBe(before); // answered through the pool, not once the connection was replaced
    expect(await occupied).toBe('the listener connection did not answer in time');
    // Replaced (before the 12 s are over), and working again.
    await replaced(before);
    // (the old session sleeps on until PostgreSQL finds its client gone)
    expect((await listenerPids()).filter((pid) => pid !== pidsBefore[0])).toHaveLength(1);
    const queue = await register('othello');
    expect(await startTyping(env.users.othello.id).then(({ response }) => response.status)).toBe(200);
    expect(await typingEvents('othello', queue)).toHaveLength(1);
  }, 30_000);

  it('does not send late what it gave up on: a typing notification queued behind a slow statement is published once', async () => {
    const { listener, notifier } = env.running.deps;
    const queue = await registerQueue(env.client('othello'), { event_types: ['typing', 'user_settings'] });
    // Slow (7 s), but not stuck (10 s): the connection is kept, and the round behind it goes out afterwards.
    const occupied = notifier.run({ text: 'SELECT pg_sleep(7)', values: [] }).catch(() => undefined);
    const { response } = await startTyping(env.users.othello.id);
    // Through the pool: the typing-settings barrier gives up after 2 s, the statement 2 s later.
    expect(response.status).toBe(200);
    await occupied;
    await listener.barrier(15_000); // a round after the slow one has been answered
    // A stored event after everything else: once it is delivered, whatever was published before it is too.
    expect((await env.client('othello').PATCH('/settings', { body: { enter_sends: true } })).response.status).toBe(200);
    const events = await pollUntil(env.client('othello'), queue, (got) => got.some((e) => e.type === 'user_settings'));
    expect(events.filter((e) => e.type === 'typing')).toHaveLength(1);
  }, 30_000);
});
