// GET /users/{user_id_or_email}/presence: one user's presence by ID or by the address everyone sees,
// in the legacy format (with `offline` once the report is too old) or the modern one, for callers of
// every role (bots included); Zulip's errors for unknown and deactivated users, bots, users who never
// reported, and an address hidden from others.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { createAccount, deactivateUser } from '../../helpers/people.ts';
import { agePresence, createBot, nowSeconds, report, writeReports } from '../../helpers/presence.ts';
import type { ParleyClient } from '@parley/client';

const env = useTestServer();

const get = (client: ParleyClient, who: string | number, slim?: boolean) =>
  client.GET('/users/{user_id_or_email}/presence', { params: { path: { user_id_or_email: String(who) }, query: slim === undefined ? {} : { slim_presence: slim } } });

describe('GET /users/{user_id_or_email}/presence', () => {
  it('answers by ID or address, legacy (without client and pushable) or modern, to every role', async () => {
    await report(env.client('hamlet'));
    await writeReports(env.running);
    const bot = await createBot(env, env.users.iago.id, 'asker');
    for (const client of [env.client('iago'), env.client('othello'), env.client('polonius'), bot.client]) {
      for (const who of [env.users.hamlet.id, env.users.hamlet.email, env.users.hamlet.email.toUpperCase(), ` ${env.users.hamlet.id} `]) {
        const { data, error } = await get(client, who);
        expect(error).toBeUndefined();
        expect(data!.presence).toEqual({ aggregated: { status: 'active', timestamp: expect.any(Number) }, website: { status: 'active', timestamp: expect.any(Number) } });
      }
      const { data } = await get(client, env.users.hamlet.id, true);
      expect(data!.presence).toEqual({ active_timestamp: expect.any(Number), idle_timestamp: expect.any(Number) });
      expect(Math.abs((data!.presence as { active_timestamp: number }).active_timestamp - nowSeconds())).toBeLessThanOrEqual(5);
    }
  });

  it('says offline in aggregated once the report is older than the offline threshold (200 s)', async () => {
    const u = await createAccount(env, { label: 'stale', fullName: 'Stale' });
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    await agePresence(env, u.id, 150);
    expect((await get(env.client('othello'), u.id)).data!.presence).toMatchObject({ aggregated: { status: 'active' }, website: { status: 'active' } });
    await agePresence(env, u.id, 100);
    expect((await get(env.client('othello'), u.id)).data!.presence).toMatchObject({ aggregated: { status: 'offline' }, website: { status: 'active' } });
  });

  it("answers Zulip's errors: unknown, deactivated, bot, never reported, hidden address", async () => {
    const other = env.client('othello');
    expectJsonError(await get(other, 999_999), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await get(other, -3), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await get(other, 'nobody@parley.test'), 400, 'No such user', 'BAD_REQUEST');
    const gone = await createAccount(env, { label: 'gone-presence', fullName: 'Gone' });
    await report(gone.client);
    await writeReports(env.running);
    await deactivateUser(env, gone.id);
    expectJsonError(await get(other, gone.id), 400, 'No such user', 'BAD_REQUEST');
    const bot = await createBot(env, env.users.hamlet.id, 'target');
    expectJsonError(await get(other, bot.id), 400, 'Presence is not supported for bot users.', 'BAD_REQUEST');
    expectJsonError(await get(other, bot.email), 400, 'Presence is not supported for bot users.', 'BAD_REQUEST');
    const quiet = await createAccount(env, { label: 'quiet', fullName: 'Never Reported' });
    expectJsonError(await get(other, quiet.id), 400, `No presence data for ${quiet.id}`, 'BAD_REQUEST');
    expectJsonError(await get(other, quiet.email), 400, `No presence data for ${quiet.email}`, 'BAD_REQUEST');
    // An address hidden from others names nobody, even for administrators who see it; its public form does.
    expect((await quiet.client.PATCH('/settings', { body: { email_address_visibility: 3 } })).error).toBeUndefined();
    await report(quiet.client);
    await writeReports(env.running);
    expectJsonError(await get(env.client('iago'), quiet.email), 400, 'No such user', 'BAD_REQUEST');
    const host = new URL((await env.running.deps.db.realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
    expect((await get(env.client('iago'), `user${quiet.id}@${host}`)).data!.presence).toMatchObject({ aggregated: { status: 'active' } });
  });

  it('is refused to GET /users/me/presence (only POST is served there)', async () => {
    const res = await env.raw('/users/me/presence', { as: 'hamlet' });
    expect(res.status).toBe(405);
    expect(res.body.allowed_methods).toEqual(['POST']);
  });
});
