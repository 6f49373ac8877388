// Organization-wide rules that must hold under concurrency, and what a new account starts with.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { basicAuth, fetchApiKey } from '../../helpers/auth.ts';

const env = useTestServer();

/** The headers of a form-encoded request authenticated as `email:key`. */
function basic(email: string, key: string) {
  return { Authorization: basicAuth(email, key), 'Content-Type': 'application/x-www-form-urlencoded' };
}

describe('the organization never loses its last owner', () => {
  it('a demotion racing a deactivation between the only two owners leaves one owner', async () => {
    const a = { id: env.users.desdemona.id, email: env.users.desdemona.email, key: env.users.desdemona.apiKey };
    const ownerEmail = 'owner@parley.test';
    const b = { id: 0, email: ownerEmail, key: await fetchApiKey(env, ownerEmail) };
    const members = (await env.client('iago').GET('/users')).data!.members;
    b.id = members.find((u) => u.delivery_email === ownerEmail)!.user_id;
    expect(members.filter((u) => u.role === 100 && u.is_active).map((u) => u.user_id).sort()).toEqual([a.id, b.id].sort());

    for (let round = 0; round < 8; round++) {
      const [demote, deactivate] = await Promise.all([
        env.raw(`/users/${a.id}`, { method: 'PATCH', headers: basic(b.email, b.key), body: 'role=400' }),
        env.raw(`/users/${b.id}`, { method: 'DELETE', headers: basic(a.email, a.key) }),
      ]);
      for (const res of [demote, deactivate]) expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
      const users = (await env.client('iago').GET('/users')).data!.members;
      const owners = users.filter((u) => u.role === 100 && u.is_active && !u.is_bot);
      expect(owners.length, `round ${round}: ${JSON.stringify({ demote: demote.body, deactivate: deactivate.body })}`).toBeGreaterThanOrEqual(1);
      // Exactly one of the two changes can win.
      expect([demote.status, deactivate.status].filter((s) => s === 200)).toHaveLength(1);
      // Restore both as active owners for the next round, through the remaining owner.
      const survivor = owners[0]!.user_id === a.id ? a : b;
      const other = survivor === a ? b : a;
      await env.raw(`/users/${other.id}/reactivate`, { method: 'POST', headers: basic(survivor.email, survivor.key) });
      const restored = await env.raw(`/users/${other.id}`, { method: 'PATCH', headers: basic(survivor.email, survivor.key), body: 'role=100' });
      expect(restored.status).toBe(200);
    }
  });
});

describe('a new account', () => {
  it('is subscribed to the default channels of the organization', async () => {
    const created = await env.client('iago').POST('/users/me/subscriptions', {
      body: { subscriptions: [{ name: 'welcome-default' }], is_default_stream: true },
    });
    expect(created.response.status).toBe(200);
    const user = await env.client('iago').POST('/users', { body: { email: 'newbie@parley.test', password: 'newbie password', full_name: 'New Bie' } });
    expect(user.response.status).toBe(200);
    const key = await fetchApiKey(env, 'newbie@parley.test', 'newbie password');
    const subs = await env.raw('/users/me/subscriptions', { headers: basic('newbie@parley.test', key) });
    expect(subs.status).toBe(200);
    // 'general' is the organization's first channel, a default channel since it was created.
    expect(subs.body.subscriptions.map((s: { name: string }) => s.name)).toEqual(['general', 'welcome-default']);
    const events = await env.running.deps.db.event.findMany({ where: { userIds: { has: user.data!.user_id } } });
    expect(events.map((e) => (e.payload as { type: string; op: string }).type + ':' + (e.payload as { op: string }).op)).toContain('subscription:add');
  });
});
