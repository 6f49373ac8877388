// POST /register and GET /users as production writes them. Outside production every answer is parsed
// back and validated before it is written; in production the kept user lists (queries/realm-users-state.ts,
// queries/user-directory.ts) go out as the bytes they are kept as, the viewer's own object spliced in
// by byte offsets, the rest of the envelope encoded around them (http/respond.ts). A process that does
// not validate answers must give the same answers, byte offsets right when names are not ASCII.
import { describe, expect, it } from 'vitest';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';

const env = useTestServer();
const production = useSecondProcess(env, { config: { validateResponses: false } });

/** The answer's bytes as written, checked against its Content-Length, and parsed. */
async function answer(site: string, person: Person, method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<Record<string, unknown>> {
  const { email, apiKey } = env.users[person];
  const res = await fetch(`${site}/api/v1/${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`, ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
  return JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
}

/** A registration as the mobile app makes it (all state, the user lists among it). */
const MOBILE = { apply_markdown: 'true', client_gravatar: 'true', slim_presence: 'true', include_subscribers: 'false' };

const byId = (users: unknown) => new Map((users as Array<{ user_id: number }>).map((u) => [u.user_id, u]));

describe('POST /register and GET /users, written as production writes them', () => {
  it('answer what a validating process answers, with names outside ASCII before and after the viewer', async () => {
    // Names of several bytes per character on both sides of hamlet in the list (ids ascending), and his own.
    const ids = Object.values(env.users).map((u) => u.id);
    const lower = (Object.keys(env.users) as Person[]).find((p) => env.users[p].id === Math.min(...ids))!;
    const higher = (Object.keys(env.users) as Person[]).find((p) => env.users[p].id === Math.max(...ids))!;
    const renames: Array<[Person, string]> = [
      [lower, 'Ōthello 🎭 Zoë'],
      [higher, 'Ünïcødé ✓ 名前'],
      ['hamlet', 'Hámlet, Prince of Dënmark 👑'],
    ];
    for (const [person, name] of renames) {
      const { response } = await env.client('iago').PATCH('/users/{user_id}', { params: { path: { user_id: env.users[person].id } }, body: { full_name: name } });
      expect(response.status).toBe(200);
    }
    const expected = await answer(env.running.url, 'hamlet', 'POST', 'register', MOBILE);
    // The first registration of a kind of viewer makes the kept lists; the next ones splice the viewer in.
    expect((expected['realm_users'] as unknown[]).length).toBeGreaterThan(5);
    for (let i = 0; i < 3; i++) {
      const written = await answer(production.running.url, 'hamlet', 'POST', 'register', MOBILE);
      expect(written['realm_users']).toEqual(expected['realm_users']);
      expect(written['realm_non_active_users']).toEqual(expected['realm_non_active_users']);
      expect(written['streams']).toEqual(expected['streams']);
      expect(written['full_name']).toBe('Hámlet, Prince of Dënmark 👑');
      const users = byId(written['realm_users']);
      for (const [person, name] of renames) expect(users.get(env.users[person].id)).toMatchObject({ full_name: name });
      // His own object is his (his real address), not the one every member sees.
      expect(users.get(env.users.hamlet.id)).toMatchObject({ delivery_email: env.users.hamlet.email });
    }
    // Another member's registration answers her own object, from the same kept lists.
    const cordelia = await answer(production.running.url, 'cordelia', 'POST', 'register', MOBILE);
    expect(cordelia['realm_users']).toEqual((await answer(env.running.url, 'cordelia', 'POST', 'register', MOBILE))['realm_users']);

    const directory = await answer(env.running.url, 'hamlet', 'GET', 'users');
    for (let i = 0; i < 2; i++) expect((await answer(production.running.url, 'hamlet', 'GET', 'users'))['members']).toEqual(directory['members']);
  });
});
