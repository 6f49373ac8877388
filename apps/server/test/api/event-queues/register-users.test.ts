// The user objects of POST /register (realm_users, realm_non_active_users), which the server keeps as
// JSON between registrations (queries/realm-users-state.ts): each registration must show every change
// committed before it, whatever was kept, and each viewer their own real address only.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();
const uid = (p: Person) => env.users[p].id;

interface UserObject {
  user_id: number;
  full_name: string;
  delivery_email: string | null;
  is_active: boolean;
  profile_data?: Record<string, { value: string }>;
}

async function usersSeenBy(as: Person): Promise<{ active: Map<number, UserObject>; inactive: Map<number, UserObject> }> {
  const state = await registerQueue(env.client(as), { fetch_event_types: ['realm_user'], event_types: ['realm_user'], client_gravatar: false });
  const byId = (list: unknown) => new Map((list as UserObject[]).map((u) => [u.user_id, u]));
  return { active: byId(state.realm_users), inactive: byId(state.realm_non_active_users) };
}

async function ok(response: Promise<{ error?: unknown; response: Response }>) {
  const { error, response: res } = await response;
  if (error !== undefined || res.status !== 200) throw new Error(`${res.status}: ${JSON.stringify(error)}`);
}

describe('POST /register: user objects kept between registrations', () => {
  it('shows each change made since the last registration: name, e-mail visibility, profile values, deactivation', async () => {
    // Two viewers of the same role fill what is kept for members; an administrator fills another kind.
    const first = await usersSeenBy('hamlet');
    await usersSeenBy('cordelia');
    await usersSeenBy('iago');
    expect(first.active.get(uid('othello'))!.full_name).toBe('Othello, the Moor of Venice');

    await ok(env.client('iago').PATCH('/users/{user_id}', { params: { path: { user_id: uid('othello') } }, body: { full_name: 'Othello the General' } }));
    expect((await usersSeenBy('hamlet')).active.get(uid('othello'))!.full_name).toBe('Othello the General');

    // Visible to administrators only: members no longer see it, administrators still do.
    await ok(env.client('othello').PATCH('/settings', { body: { email_address_visibility: 3 } }));
    expect((await usersSeenBy('cordelia')).active.get(uid('othello'))!.delivery_email).toBeNull();
    expect((await usersSeenBy('iago')).active.get(uid('othello'))!.delivery_email).toBe(env.users.othello.email);

    const field = await env.client('iago').POST('/realm/profile_fields', { body: { name: 'Desk', field_type: 1 } as never });
    const fieldId = (field.data as { id: number }).id;
    const set = await env.raw('/users/me/profile_data', { method: 'PATCH', as: 'othello', body: new URLSearchParams({ data: JSON.stringify([{ id: fieldId, value: 'B-12' }]) }) });
    expect(set.status).toBe(200);
    expect((await usersSeenBy('hamlet')).active.get(uid('othello'))!.profile_data).toEqual({ [String(fieldId)]: { value: 'B-12', rendered_value: '<p>B-12</p>' } });

    await ok(env.client('iago').DELETE('/users/{user_id}', { params: { path: { user_id: uid('polonius') } } }));
    const after = await usersSeenBy('hamlet');
    expect(after.active.has(uid('polonius'))).toBe(false);
    expect(after.inactive.get(uid('polonius'))!.is_active).toBe(false);
  });

  it('gives each viewer their own real address, and others of the same role only what the owner lets them see', async () => {
    await ok(env.client('cordelia').PATCH('/settings', { body: { email_address_visibility: 4 } }));
    const own = await usersSeenBy('cordelia');
    const other = await usersSeenBy('hamlet');
    expect(own.active.get(uid('cordelia'))!.delivery_email).toBe(env.users.cordelia.email);
    expect(other.active.get(uid('cordelia'))!.delivery_email).toBeNull();
    // The next registration of the same role does not show it either (the viewer's own object is never kept for others).
    expect((await usersSeenBy('othello')).active.get(uid('cordelia'))!.delivery_email).toBeNull();
  });
});
