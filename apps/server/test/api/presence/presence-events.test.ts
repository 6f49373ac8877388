// `presence` events: sent when Zulip sends them (a user's first report, and an `active` report after
// more than 130 s without being active) and not for the reports in between, to every active user of
// an organization of at most 100 active users (none above), in the shape each queue registered for:
// legacy (with `email`), `slim_presence` (without), `simplified_presence_events` (modern `presences`).
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { createAccount } from '../../helpers/people.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { pollUntil, registerQueue } from '../../helpers/queues.ts';
import { agePresence, nowSeconds, report, writeReports } from '../../helpers/presence.ts';

const env = useTestServer({ heartbeatMs: 1_500 });

const presenceEventsOf = (events: { payload: any; userIds: number[] }[], userId: number) => events.filter((e) => e.payload.type === 'presence' && e.payload.user_id === userId);

describe('POST /users/me/presence: presence events', () => {
  it('announces a first report and a return after 130 s away, not the reports in between, to every active user', async () => {
    const u = await createAccount(env, { label: 'events', fullName: 'Event Person' });
    let mark = await markEvents(env);
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    const first = presenceEventsOf(await eventsSince(env, mark), u.id);
    expect(first).toHaveLength(1);
    const everyone = (await env.running.deps.db.user.findMany({ where: { realmId: env.realmId, isActive: true }, select: { id: true }, orderBy: { id: 'asc' } })).map((x) => x.id);
    expect(first[0]!.userIds).toEqual(everyone);
    // Never active: Zulip shows the time the user joined as their last active time, which for someone
    // who just joined is within 70 s of their report, so the legacy status reads `active` at that time.
    const joined = Math.floor((await env.running.deps.db.user.findUniqueOrThrow({ where: { id: u.id } })).dateJoined.getTime() / 1000);
    expect(first[0]!.payload).toMatchObject({
      type: 'presence',
      user_id: u.id,
      email: u.email,
      presence: { website: { client: 'website', status: 'active', timestamp: joined, pushable: false } },
    });
    // Their first active report brings them online (never active before): announced.
    mark = await markEvents(env);
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    expect(presenceEventsOf(await eventsSince(env, mark), u.id).map((e) => e.payload.presence.website.status)).toEqual(['active']);
    // Reports that do not bring them back online are not: active again within 130 s, idle.
    mark = await markEvents(env);
    await agePresence(env, u.id, 100);
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    await agePresence(env, u.id, 300);
    await report(u.client, { status: 'idle' });
    await writeReports(env.running);
    expect(presenceEventsOf(await eventsSince(env, mark), u.id)).toEqual([]);
    // Active again after more than 130 s without being active: announced, as active now.
    await agePresence(env, u.id, 10);
    mark = await markEvents(env);
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    const back = presenceEventsOf(await eventsSince(env, mark), u.id);
    expect(back).toHaveLength(1);
    expect(back[0]!.payload.presence.website.status).toBe('active');
    expect(Math.abs(back[0]!.payload.presence.website.timestamp - nowSeconds())).toBeLessThanOrEqual(5);
  });

  it('delivers each queue its shape: legacy with email, slim_presence without, simplified_presence_events modern', async () => {
    const legacy = await registerQueue(env.client('othello'), { event_types: ['presence'] });
    const slim = await registerQueue(env.client('cordelia'), { event_types: ['presence'], slim_presence: true });
    const modern = await registerQueue(env.client('polonius'), { event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
    const u = await createAccount(env, { label: 'shapes', fullName: 'Shape Person' });
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    const mine = (events: any[]) => events.filter((e) => e.user_id === u.id || e.presences?.[String(u.id)]);
    const [l] = mine(await pollUntil(env.client('othello'), legacy, (got) => mine(got).length > 0, { maxPolls: 10 }));
    const [s] = mine(await pollUntil(env.client('cordelia'), slim, (got) => mine(got).length > 0, { maxPolls: 10 }));
    const [m] = mine(await pollUntil(env.client('polonius'), modern, (got) => mine(got).length > 0, { maxPolls: 10 }));
    const website = { client: 'website', status: 'active', timestamp: expect.any(Number), pushable: false };
    expect(l).toEqual({ id: expect.any(Number), type: 'presence', user_id: u.id, email: u.email, server_timestamp: expect.any(Number), presence: { website } });
    expect(s).toEqual({ id: expect.any(Number), type: 'presence', user_id: u.id, server_timestamp: expect.any(Number), presence: { website } });
    expect(m).toEqual({ id: expect.any(Number), type: 'presence', presences: { [String(u.id)]: { active_timestamp: l.presence.website.timestamp, idle_timestamp: expect.any(Number) } } });
    expect(m.presences[String(u.id)].idle_timestamp).toBeGreaterThanOrEqual(m.presences[String(u.id)].active_timestamp);
  });

  it('sends none in an organization of more than 100 active users', async () => {
    // 100 more members, made directly in the database (as insertUser would: user and settings rows).
    const db = env.running.deps.db;
    await db.$executeRawUnsafe(
      `WITH made AS (
         INSERT INTO "user" (realm_id, email, delivery_email, full_name, role)
         SELECT $1, e, e, 'Crowd ' || n, 400 FROM (SELECT n, 'crowd-' || n || '@parley.test' AS e FROM generate_series(1, 100) n) c
         RETURNING id)
       INSERT INTO user_settings (user_id) SELECT id FROM made`,
      env.realmId,
    );
    expect(await db.user.count({ where: { realmId: env.realmId, isActive: true, systemBot: null } })).toBeGreaterThan(100);
    const u = await createAccount(env, { label: 'crowd', fullName: 'In A Crowd' });
    const mark = await markEvents(env);
    await report(u.client, { status: 'active' });
    await writeReports(env.running);
    expect(presenceEventsOf(await eventsSince(env, mark), u.id)).toEqual([]);
    // The report itself was written (and is read).
    expect((await report(env.client('hamlet'), { slim_presence: true })).presences[String(u.id)]).toBeDefined();
  });
});
