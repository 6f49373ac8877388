// POST /users/me/presence: reports taken by role (members, guests; bots refused), the answer in both
// formats (zulip-terminal's legacy one keyed by address, the modern one keyed by ID) with the caller's
// own report already in it, deltas by last_update_id, history_limit_days, ping_only, Zulip's
// 55-second rule for writes, and Zulip's errors for bad input. Reports are written in batches: the
// tests write them at once (writeReports) where they read the database.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { createAccount } from '../../helpers/people.ts';
import { agePresence, createBot, nowSeconds, report, storedPresence, writeReports } from '../../helpers/presence.ts';

const env = useTestServer();

describe('POST /users/me/presence', () => {
  it("takes zulip-terminal's report (status=active&new_user_input=true) and answers everyone in the legacy format, the caller included", async () => {
    const res = await env.raw('/users/me/presence', {
      method: 'POST',
      as: 'hamlet',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'status=active&new_user_input=true',
    });
    expect(res.status).toBe(200);
    const before = nowSeconds();
    // The caller's report is in the answer at once (written with the next batch).
    const mine = res.body.presences[env.users.hamlet.email];
    expect(mine).toEqual({
      aggregated: { client: 'website', status: 'active', timestamp: expect.any(Number) },
      website: { client: 'website', status: 'active', timestamp: expect.any(Number), pushable: false },
    });
    expect(Math.abs(mine.aggregated.timestamp - before)).toBeLessThanOrEqual(5);
    expect(typeof res.body.server_timestamp).toBe('number');
    expect(Math.abs(res.body.server_timestamp - Date.now() / 1000)).toBeLessThan(30);
    expect(res.body).toHaveProperty('presence_last_update_id');
    // Once written, othello (another client) reads hamlet as active too.
    await writeReports(env.running);
    const seen = await report(env.client('othello'), { new_user_input: true });
    expect(seen.presences[env.users.hamlet.email].aggregated.status).toBe('active');
    expect(seen.presences[env.users.othello.email].aggregated.status).toBe('active');
  });

  it('takes reports of members and guests; bots get "This endpoint does not accept bot requests."', async () => {
    for (const person of ['cordelia', 'polonius'] as const) {
      const answer = await report(env.client(person), { status: 'idle', slim_presence: true });
      expect(answer.presences[String(env.users[person].id)]).toEqual({ active_timestamp: expect.any(Number), idle_timestamp: expect.any(Number) });
    }
    await writeReports(env.running);
    expect(await storedPresence(env, env.users.polonius.id)).toMatchObject({ activeMs: null });
    const bot = await createBot(env, env.users.hamlet.id, 'presence');
    expectJsonError(await bot.client.POST('/users/me/presence', { body: { status: 'active' } }), 400, 'This endpoint does not accept bot requests.');
    await writeReports(env.running);
    expect(await storedPresence(env, bot.id)).toBeNull();
  });

  it('answers only ping_only reports with nothing but success', async () => {
    const res = await env.raw('/users/me/presence', {
      method: 'POST',
      as: 'shiva',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'status=idle&ping_only=true',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    await writeReports(env.running);
    expect(await storedPresence(env, env.users.shiva.id)).toMatchObject({ activeMs: null });
  });

  it('answers deltas by last_update_id in the modern format: -1 for everything, then only what changed', async () => {
    const a = await createAccount(env, { label: 'delta-a', fullName: 'Delta A' });
    const b = await createAccount(env, { label: 'delta-b', fullName: 'Delta B' });
    await report(b.client);
    await writeReports(env.running);
    const first = await report(a.client, { last_update_id: -1 });
    expect(first.presences[String(b.id)]).toEqual({ active_timestamp: expect.any(Number), idle_timestamp: expect.any(Number) });
    expect(first.presences[String(a.id)]).toBeDefined(); // the caller's own report, not written yet
    const since = first.presence_last_update_id;
    expect(since).toBeGreaterThan(0);
    await writeReports(env.running);
    // Nothing else changed: only the caller's own write (their report) comes back.
    const second = await report(a.client, { last_update_id: since });
    expect(Object.keys(second.presences)).toEqual([String(a.id)]);
    expect(second.presence_last_update_id).toBeGreaterThan(since);
    // Within 55 s of the stored report nothing changes: an empty delta, and the same id back.
    const third = await report(a.client, { last_update_id: second.presence_last_update_id });
    expect(third.presences).toEqual({});
    expect(third.presence_last_update_id).toBe(second.presence_last_update_id);
    // b reports again a minute later: b is in the next delta, with the new times.
    await agePresence(env, b.id, 70);
    await report(b.client, { status: 'idle' });
    await writeReports(env.running);
    const fourth = await report(a.client, { last_update_id: third.presence_last_update_id });
    expect(Object.keys(fourth.presences)).toEqual([String(b.id)]);
    expect(fourth.presences[String(b.id)].idle_timestamp).toBeGreaterThan(fourth.presences[String(b.id)].active_timestamp);
    expect(fourth.presence_last_update_id).toBeGreaterThan(third.presence_last_update_id);
  });

  it("applies Zulip's 55-second rule: a report changes the stored times only when they are more than 55 s older", async () => {
    const u = await createAccount(env, { label: 'minfreq', fullName: 'Min Freq' });
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    const created = (await storedPresence(env, u.id))!;
    expect(created.activeMs).toBeNull();
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    expect(await storedPresence(env, u.id)).toEqual(created);
    // An active report sets the active time (never set before), and the connected time moves with it.
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    const active = (await storedPresence(env, u.id))!;
    expect(active.activeMs).not.toBeNull();
    expect(active.updateId).toBeGreaterThan(created.updateId);
    expect(active.connectedMs).toBeGreaterThanOrEqual(active.activeMs!);
    // An idle report 30 s later changes nothing; 60 s later only the connected time.
    await agePresence(env, u.id, 30);
    const aged = (await storedPresence(env, u.id))!;
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    expect(await storedPresence(env, u.id)).toEqual(aged);
    await agePresence(env, u.id, 30);
    const older = (await storedPresence(env, u.id))!;
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    const after = (await storedPresence(env, u.id))!;
    expect(after.activeMs).toBe(older.activeMs);
    expect(after.connectedMs).toBeGreaterThan(older.connectedMs);
  });

  it('answers who reported in the last history_limit_days days (14 when absent; 0 answers nobody)', async () => {
    const old = await createAccount(env, { label: 'history', fullName: 'Long Gone' });
    await report(old.client);
    await writeReports(env.running);
    await agePresence(env, old.id, 20 * 86_400);
    const asker = env.client('othello');
    expect((await report(asker, { slim_presence: true })).presences[String(old.id)]).toBeUndefined();
    expect((await report(asker, { slim_presence: true, history_limit_days: 30 })).presences[String(old.id)]).toBeDefined();
    const none = await report(asker, { slim_presence: true, history_limit_days: 0 });
    expect(none.presences).toEqual({});
    expect(none.presence_last_update_id).toBe(-1);
    expect((await report(asker, { last_update_id: 5, history_limit_days: 0 })).presence_last_update_id).toBe(5);
    // A last_update_id above 0 asks for changes whatever their age.
    expect((await report(asker, { last_update_id: 1 })).presences[String(old.id)]).toBeDefined();
  });

  it("refuses an unknown status and malformed numbers with Zulip's errors, writing nothing", async () => {
    const u = await createAccount(env, { label: 'badinput', fullName: 'Bad Input' });
    const post = (body: string) => env.raw('/users/me/presence', { method: 'POST', headers: { Authorization: u.auth, 'Content-Type': 'application/x-www-form-urlencoded' }, body });
    expectJsonError(await post('status=away'), 400, 'Invalid status: away', 'BAD_REQUEST');
    expectJsonError(await post('status=offline'), 400, 'Invalid status: offline', 'BAD_REQUEST');
    expectJsonError(await post(''), 400, "Missing 'status' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await post('status=active&last_update_id=abc'), 400, 'last_update_id is not valid JSON', 'BAD_REQUEST');
    expectJsonError(await post('status=active&last_update_id=1.5'), 400, 'last_update_id is not an integer', 'BAD_REQUEST');
    expectJsonError(await post('status=active&last_update_id="7"'), 400, 'last_update_id is not an integer', 'BAD_REQUEST');
    expectJsonError(await post('status=active&history_limit_days=true'), 400, 'history_limit_days is not an integer', 'BAD_REQUEST');
    expectJsonError(await post('status=active&ping_only=1'), 400, 'ping_only is not a boolean', 'BAD_REQUEST');
    await writeReports(env.running);
    expect(await storedPresence(env, u.id)).toBeNull();
  });
});
