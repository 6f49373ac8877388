// GET /realm/presence: everyone's presence in the legacy format, read by every role (bots included),
// without bots, deactivated users, users who never reported or not in 14 days; users who turned
// presence_enabled off are offline to everyone (and announced so), and stay so while they report; a
// report taken by one server process is read on another once written (at most one flush interval).
import { describe, expect, it } from 'vitest';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { createAccount, deactivateUser } from '../../helpers/people.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { agePresence, createBot, nowSeconds, report, writeReports } from '../../helpers/presence.ts';
import { createParleyClient } from '@parley/client';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer();
const second = useSecondProcess(env);

const realmPresence = async (client = env.client('othello')) => {
  const { data, error } = await client.GET('/realm/presence');
  if (!data) throw new Error(JSON.stringify(error));
  return data as { presences: Record<string, any>; server_timestamp: number };
};

describe('GET /realm/presence', () => {
  it('answers every active human who reported in the last 14 days, to every role, bots included', async () => {
    const gone = await createAccount(env, { label: 'gone', fullName: 'Gone' });
    const old = await createAccount(env, { label: 'old', fullName: 'Old' });
    const bot = await createBot(env, env.users.hamlet.id, 'reader');
    await report(env.client('hamlet'));
    await report(gone.client);
    await report(old.client, { status: 'idle' });
    await writeReports(env.running);
    await agePresence(env, old.id, 15 * 86_400);
    await deactivateUser(env, gone.id);
    for (const client of [env.client('desdemona'), env.client('shiva'), env.client('cordelia'), env.client('polonius'), bot.client]) {
      const { presences, server_timestamp } = await realmPresence(client);
      expect(presences[env.users.hamlet.email]).toEqual({
        aggregated: { client: 'website', status: 'active', timestamp: expect.any(Number) },
        website: { client: 'website', status: 'active', timestamp: expect.any(Number), pushable: false },
      });
      expect(Math.abs(presences[env.users.hamlet.email].website.timestamp - nowSeconds())).toBeLessThanOrEqual(5);
      expect(presences[gone.email]).toBeUndefined();
      expect(presences[old.email]).toBeUndefined();
      expect(presences[bot.email]).toBeUndefined();
      expect(Math.abs(server_timestamp - Date.now() / 1000)).toBeLessThan(30);
    }
  });

  it('keys users by the address everyone sees', async () => {
    const hidden = await createAccount(env, { label: 'hidden', fullName: 'Hidden Address' });
    expect((await hidden.client.PATCH('/settings', { body: { email_address_visibility: 4 } })).error).toBeUndefined();
    await report(hidden.client);
    await writeReports(env.running);
    const host = new URL((await env.running.deps.db.realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
    const { presences } = await realmPresence(env.client('desdemona'));
    expect(presences[hidden.email]).toBeUndefined();
    expect(presences[`user${hidden.id}@${host}`]).toBeDefined();
  });

  it('shows a user who turned presence_enabled off as offline to everyone, announced to everyone, until they turn it on', async () => {
    const shy = await createAccount(env, { label: 'shy', fullName: 'Shy Person' });
    // Joined long ago (a user who just joined shows their join time as last active: recent).
    await env.running.deps.db.user.update({ where: { id: shy.id }, data: { dateJoined: new Date(Date.now() - 2 * 86_400_000) } });
    await report(shy.client);
    await writeReports(env.running);
    let mark = await markEvents(env);
    expect((await shy.client.PATCH('/settings', { body: { presence_enabled: false } })).error).toBeUndefined();
    // Last connected 320 s ago (offline for every client), never active (the join time shown).
    const joined = Math.floor((await env.running.deps.db.user.findUniqueOrThrow({ where: { id: shy.id } })).dateJoined.getTime() / 1000);
    const offline = (await report(env.client('othello'), { slim_presence: true })).presences[String(shy.id)];
    expect(offline.active_timestamp).toBe(joined);
    expect(Math.abs(offline.idle_timestamp - (nowSeconds() - 320))).toBeLessThanOrEqual(5);
    const events = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'presence');
    expect(events.map((e) => e.payload.user_id)).toEqual([shy.id]);
    // Their own reports no longer change anything.
    await report(shy.client, { status: 'active' });
    await writeReports(env.running);
    expect((await report(env.client('othello'), { slim_presence: true })).presences[String(shy.id)]).toEqual(offline);
    expect((await realmPresence()).presences[shy.email].aggregated.timestamp).toBeLessThan(nowSeconds() - 300);
    // Turned on again: active now, announced.
    mark = await markEvents(env);
    expect((await shy.client.PATCH('/settings', { body: { presence_enabled: true } })).error).toBeUndefined();
    const back = (await report(env.client('othello'), { slim_presence: true })).presences[String(shy.id)];
    expect(Math.abs(back.active_timestamp - nowSeconds())).toBeLessThanOrEqual(5);
    expect((await eventsSince(env, mark)).filter((e) => e.payload.type === 'presence').map((e) => e.payload.presence.website.status)).toEqual(['active']);
  });

  it('reads on one process what a report on another wrote, within the flush interval', async () => {
    const u = await createAccount(env, { label: 'two-proc', fullName: 'Two Processes' });
    const onSecond = createParleyClient({ site: second.running.url, email: u.email, apiKey: u.key });
    const reader = createParleyClient({ site: second.running.url, email: env.users.othello.email, apiKey: env.users.othello.apiKey });
    // Read once on the second process first, so that it holds a copy that must follow.
    expect((await realmPresence(reader)).presences[u.email]).toBeUndefined();
    // Taken by the first process and written by its own flush (no help from the test).
    await report(u.client, { new_user_input: true });
    await waitFor(async () => (await realmPresence(reader)).presences[u.email]?.aggregated.status === 'active', { what: 'the report on the second process' });
    // And the other way round: reported on the second process, read on the first.
    await agePresence(env, u.id, 300);
    expect((await realmPresence()).presences[u.email].aggregated.timestamp).toBeLessThan(nowSeconds() - 250);
    await report(onSecond, { status: 'active' });
    await writeReports(second.running);
    expect(Math.abs((await realmPresence()).presences[u.email].aggregated.timestamp - nowSeconds())).toBeLessThanOrEqual(5);
  });
});
