// Mobile push follows presence as Zulip's idle rule does: a recipient is active (and, with
// enable_online_push_notifications off, not pushed) only while a client of theirs polls for messages
// (within 10 minutes) and their presence says active (an `active` report within 200 s). A client
// polling without active presence does not make a user active (what Parley counted before). With
// presence turned off on the server (PARLEY_PRESENCE_DISABLED, a second process here) only the
// client counts, presence is answered empty and realm_presence_disabled is true, and nobody is
// announced.
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient } from '@parley/client';
import { useTestServer } from '../../helpers/test-server.ts';
import { TEST_SECRET } from '../../helpers/fixtures.ts';
import { createAccount, type Account } from '../../helpers/people.ts';
import { registerQueue, sendMessage } from '../../helpers/queues.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { agePresence, report, writeReports } from '../../helpers/presence.ts';
import { loadConfig } from '../../../src/config.ts';
import { createDeps, listen, type RunningServer } from '../../../src/server.ts';

const env = useTestServer();
const db = () => env.running.deps.db;

/** A new member with an iPhone, pushed only while away (enable_online_push_notifications off). */
async function awayOnly(label: string): Promise<Account> {
  const a = await createAccount(env, { label, fullName: `Push ${label}` });
  expect((await a.client.POST('/users/me/apns_device_token', { body: { token: randomBytes(32).toString('hex'), appid: 'org.zulip.Zulip' } })).error).toBeUndefined();
  expect((await a.client.PATCH('/settings', { body: { enable_online_push_notifications: false } })).error).toBeUndefined();
  return a;
}

/** Whether a direct message from hamlet now makes a push for `a`. */
async function pushed(a: Account, sender = env.client('hamlet')): Promise<boolean> {
  const before = await db().pushOutbox.count({ where: { userId: a.id } });
  await sendMessage(sender, { type: 'direct', to: JSON.stringify([a.id]), content: `ping ${randomBytes(3).toString('hex')}` });
  return (await db().pushOutbox.count({ where: { userId: a.id } })) > before;
}

describe('push notifications: active or idle by presence', () => {
  it('pushes a user whose client polls but whose presence is not active', async () => {
    const a = await awayOnly('no-presence');
    await registerQueue(a.client, { event_types: ['message'] });
    // A client polls, but no presence was ever reported: idle, pushed.
    expect(await pushed(a)).toBe(true);
    // Only idle reports: still idle.
    await report(a.client, { status: 'idle' });
    await writeReports(env.running);
    expect(await pushed(a)).toBe(true);
  });

  it('does not push while the user is active, and pushes once their presence is 200 s old or their client stops polling', async () => {
    const a = await awayOnly('active');
    await registerQueue(a.client, { event_types: ['message'] });
    await report(a.client, { status: 'active' });
    await writeReports(env.running);
    expect(await pushed(a)).toBe(false);
    await agePresence(env, a.id, 150);
    expect(await pushed(a)).toBe(false);
    await agePresence(env, a.id, 60);
    expect(await pushed(a)).toBe(true);
    // Active again, but no client polled for 10 minutes: idle.
    await report(a.client, { status: 'active' });
    await writeReports(env.running);
    expect(await pushed(a)).toBe(false);
    await db().eventQueue.updateMany({ where: { userId: a.id }, data: { lastAccessedAt: new Date(Date.now() - 630_000) } });
    expect(await pushed(a)).toBe(true);
  });

  it('pushes a user with active presence but no client polling for messages', async () => {
    const a = await awayOnly('no-client');
    await report(a.client, { status: 'active' });
    await writeReports(env.running);
    expect(await pushed(a)).toBe(true);
  });
});

describe('presence turned off on the server (PARLEY_PRESENCE_DISABLED)', () => {
  let off: RunningServer;
  beforeAll(async () => {
    const config = { ...loadConfig({ PARLEY_PRESENCE_DISABLED: '1' }), secretKey: TEST_SECRET, dataDir: os.tmpdir(), publicUrl: 'http://parley.test', validateResponses: true, rateLimit: null, logLevel: 'error' };
    off = await listen(await createDeps(config, env.databaseUrl, { poolSize: 4 }), '127.0.0.1', 0);
  });
  afterAll(async () => {
    await off?.close();
  });
  const on = (a: { email: string; key: string }) => createParleyClient({ site: off.url, email: a.email, apiKey: a.key });

  it('answers no presence, says realm_presence_disabled, announces nobody and decides pushes by polling clients alone', async () => {
    const a = await awayOnly('disabled');
    const client = on(a);
    const state = await registerQueue(client, { event_types: ['message'], fetch_event_types: ['realm', 'presence'] });
    expect(state).toMatchObject({ realm_presence_disabled: true, presences: {}, presence_last_update_id: -1 });
    const mark = await markEvents(env);
    const answer = await report(client, { status: 'idle', last_update_id: 3 });
    expect(answer.presences).toEqual({});
    expect(answer.presence_last_update_id).toBe(-1);
    expect((await report(client, { status: 'idle' })).presences).toEqual({});
    expect((await client.GET('/realm/presence')).data!.presences).toEqual({});
    await writeReports(off);
    expect((await eventsSince(env, mark)).filter((e) => e.payload.type === 'presence')).toEqual([]);
    // The report was written all the same (as in Zulip), and a user's own presence is still served.
    expect((await client.GET('/users/{user_id_or_email}/presence', { params: { path: { user_id_or_email: String(a.id) } } })).data!.presence).toBeDefined();
    // A polling client makes the user active, whatever their presence says: a message sent through
    // this process is not pushed (with presence on it would be: the presence is idle).
    expect(await pushed(a, on({ email: env.users.hamlet.email, key: env.users.hamlet.apiKey }))).toBe(false);
    expect(await pushed(a)).toBe(true);
  });
});
