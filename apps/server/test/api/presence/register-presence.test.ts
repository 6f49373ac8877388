// POST /register's presence: `presences` in the legacy format, or the modern one with slim_presence or
// the simplified_presence_events capability; presence_last_update_id (usable as last_update_id of the
// next report); a real server_timestamp; presence_history_limit_days; and the realm keys
// (realm_presence_disabled, the ping interval and Zulip's 200-second offline threshold).
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { createAccount } from '../../helpers/people.ts';
import { registerQueue } from '../../helpers/queues.ts';
import { agePresence, report, writeReports } from '../../helpers/presence.ts';

const env = useTestServer();

describe('POST /register: presence state', () => {
  it('answers presences in the format the client asked for, with presence_last_update_id and server_timestamp', async () => {
    const u = await createAccount(env, { label: 'state', fullName: 'State Person' });
    await report(u.client);
    await report(env.client('hamlet'), { status: 'idle' });
    await writeReports(env.running);
    const legacy = await registerQueue(env.client('othello'), { fetch_event_types: ['presence'] });
    expect(legacy.presences![u.email]).toEqual({
      aggregated: { client: 'website', status: 'active', timestamp: expect.any(Number) },
      website: { client: 'website', status: 'active', timestamp: expect.any(Number), pushable: false },
    });
    expect(Math.abs(legacy.server_timestamp! - Date.now() / 1000)).toBeLessThan(30);
    const slim = await registerQueue(env.client('othello'), { fetch_event_types: ['presence'], slim_presence: true });
    const modern = await registerQueue(env.client('othello'), { fetch_event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
    for (const state of [slim, modern]) {
      expect(state.presences![String(u.id)]).toEqual({ active_timestamp: expect.any(Number), idle_timestamp: expect.any(Number) });
      expect(state.presences![String(env.users.hamlet.id)]).toBeDefined();
      expect(state.presences![u.email]).toBeUndefined();
    }
    // The newest change included: a report with it as last_update_id answers nothing older.
    const since = modern.presence_last_update_id!;
    expect(since).toBeGreaterThan(0);
    expect(legacy.presence_last_update_id).toBe(since);
    const delta = await report(env.client('othello'), { last_update_id: since });
    expect(delta.presences[String(u.id)]).toBeUndefined();
    expect(delta.presences[String(env.users.hamlet.id)]).toBeUndefined();
  });

  it('leaves out presence older than presence_history_limit_days (14 by default)', async () => {
    const u = await createAccount(env, { label: 'state-old', fullName: 'Old State' });
    await report(u.client);
    await writeReports(env.running);
    await agePresence(env, u.id, 20 * 86_400);
    expect((await registerQueue(env.client('othello'), { fetch_event_types: ['presence'], slim_presence: true })).presences![String(u.id)]).toBeUndefined();
    expect((await registerQueue(env.client('othello'), { fetch_event_types: ['presence'], slim_presence: true, presence_history_limit_days: 30 })).presences![String(u.id)]).toBeDefined();
    const none = await registerQueue(env.client('othello'), { fetch_event_types: ['presence'], presence_history_limit_days: 0 });
    expect(none.presences).toEqual({});
    expect(none.presence_last_update_id).toBe(-1);
  });

  it('states how presence works on this server: enabled, reports every 60 s, offline after 200 s', async () => {
    const state = await registerQueue(env.client('polonius'), { fetch_event_types: ['realm'] });
    expect(state).toMatchObject({ realm_presence_disabled: false, server_presence_ping_interval_seconds: 60, server_presence_offline_threshold_seconds: 200 });
  });
});
