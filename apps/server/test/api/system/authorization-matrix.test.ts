// Authorization matrix of the implemented operations: every role (owner, administrator, moderator,
// member, guest) and a deactivated user, each either allowed — and the state changed — or refused
// with Zulip's exact message and code — and the state unchanged. Mutating operations act on fresh
// targets, so that every cell is independent of the others.
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { TEST_PASSWORD, type Person } from '../../helpers/fixtures.ts';
import { apiKeyOf, basicAuth } from '../../helpers/auth.ts';
import { createUser, deactivateUser, uniqueEmail, type Role } from '../../helpers/people.ts';

type RoleName = 'owner' | 'admin' | 'moderator' | 'member' | 'guest';
type Actor = RoleName | 'deactivated';

const ROLE_NAMES: readonly RoleName[] = ['owner', 'admin', 'moderator', 'member', 'guest'];
const ACTORS: readonly Actor[] = [...ROLE_NAMES, 'deactivated'];
const PERSON: Record<RoleName, Person> = { owner: 'desdemona', admin: 'iago', moderator: 'shiva', member: 'hamlet', guest: 'polonius' };
const ROLE_VALUE: Record<RoleName, Role> = { owner: 100, admin: 200, moderator: 300, member: 400, guest: 600 };

interface Refusal {
  status: number;
  msg: string;
  code: string;
}
type Outcome = 'allowed' | Refusal;

const NOT_ADMIN: Refusal = { status: 400, msg: 'Must be an organization administrator', code: 'UNAUTHORIZED_PRINCIPAL' };
const NOT_OWNER: Refusal = { status: 400, msg: 'Must be an organization owner', code: 'UNAUTHORIZED_PRINCIPAL' };
const INSUFFICIENT: Refusal = { status: 400, msg: 'Insufficient permission', code: 'BAD_REQUEST' };

interface Caller {
  id: number;
  auth: string;
}

interface Operation {
  name: string;
  expect: Record<RoleName, Outcome>;
  /**
   * Performs the operation as `caller` (built by `callerFor`, unless the operation acts on the caller
   * itself and needs a fresh one) and returns the response and a check of the state afterwards.
   */
  run(actor: Actor): Promise<{ res: { status: number; headers: Headers; body: any }; verify(allowed: boolean): Promise<void> }>;
}

const env = useTestServer();
let deactivatedCaller: Caller;
let existingFieldId: number;

/** A new user ("Matrix Target"), with the given role. */
const newUser = (role: Role = 400) => createUser(env, { label: 'matrix', fullName: 'Matrix Target', role });

async function readUser(userId: number) {
  const { data, error } = await env.client('desdemona').GET('/users/{user_id}', { params: { path: { user_id: userId } } });
  if (!data) throw new Error(`read-back failed: ${JSON.stringify(error)}`);
  return data.user;
}

function callerFor(actor: Actor): Caller {
  if (actor === 'deactivated') return deactivatedCaller;
  const person = env.users[PERSON[actor]];
  return { id: person.id, auth: basicAuth(person.email, person.apiKey) };
}

/** A fresh active account with the actor's role (for operations on the caller's own account). */
async function freshCallerFor(actor: Actor): Promise<Caller> {
  if (actor === 'deactivated') return deactivatedCaller;
  const user = await newUser(ROLE_VALUE[actor]);
  return { id: user.id, auth: basicAuth(user.email, await apiKeyOf(env, user.id)) };
}

function send(caller: Caller, path: string, init: { method?: string; form?: Record<string, string> } = {}) {
  return env.raw(path, {
    method: init.method ?? 'GET',
    headers: { Authorization: caller.auth },
    ...(init.form ? { body: new URLSearchParams(init.form) } : {}),
  });
}

const everyone = (): Record<RoleName, Outcome> => ({ owner: 'allowed', admin: 'allowed', moderator: 'allowed', member: 'allowed', guest: 'allowed' });
const adminsOnly = (refusal: Refusal): Record<RoleName, Outcome> => ({ owner: 'allowed', admin: 'allowed', moderator: refusal, member: refusal, guest: refusal });

const OPERATIONS: Operation[] = [
  {
    name: 'get-users',
    expect: everyone(),
    async run(actor) {
      const res = await send(callerFor(actor), '/users');
      return {
        res,
        async verify(allowed) {
          if (allowed) expect(res.body.members.map((m: any) => m.user_id)).toContain(env.users.othello.id);
        },
      };
    },
  },
  {
    name: 'get-user',
    expect: everyone(),
    async run(actor) {
      const res = await send(callerFor(actor), `/users/${env.users.othello.id}`);
      return {
        res,
        async verify(allowed) {
          if (allowed) expect(res.body.user).toMatchObject({ user_id: env.users.othello.id, email: env.users.othello.email });
        },
      };
    },
  },
  {
    name: 'get-own-user',
    expect: everyone(),
    async run(actor) {
      const caller = callerFor(actor);
      const res = await send(caller, '/users/me');
      return {
        res,
        async verify(allowed) {
          if (allowed) expect(res.body).toMatchObject({ user_id: caller.id, role: actor === 'deactivated' ? expect.any(Number) : ROLE_VALUE[actor] });
        },
      };
    },
  },
  {
    name: 'create-user',
    expect: adminsOnly(NOT_ADMIN),
    async run(actor) {
      const email = uniqueEmail('created');
      const res = await send(callerFor(actor), '/users', { method: 'POST', form: { email, password: TEST_PASSWORD, full_name: 'Created In Matrix' } });
      return {
        res,
        async verify(allowed) {
          const { data } = await env.client('desdemona').GET('/users');
          const created = data!.members.find((m) => m.delivery_email === email);
          if (allowed) expect(created).toMatchObject({ user_id: res.body.user_id, full_name: 'Created In Matrix', role: 400 });
          else expect(created).toBeUndefined();
        },
      };
    },
  },
  {
    name: 'update-user',
    expect: adminsOnly(INSUFFICIENT),
    async run(actor) {
      const target = await newUser();
      const res = await send(callerFor(actor), `/users/${target.id}`, { method: 'PATCH', form: { full_name: 'Renamed In Matrix' } });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).full_name).toBe(allowed ? 'Renamed In Matrix' : 'Matrix Target');
        },
      };
    },
  },
  {
    name: "update-user: an owner's name",
    // Zulip: any administrator may administer any user; only owner-role changes need an owner.
    expect: adminsOnly(INSUFFICIENT),
    async run(actor) {
      const target = await newUser(100);
      const res = await send(callerFor(actor), `/users/${target.id}`, { method: 'PATCH', form: { full_name: 'Owner Renamed' } });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).full_name).toBe(allowed ? 'Owner Renamed' : 'Matrix Target');
        },
      };
    },
  },
  {
    name: 'update-user: grant the owner role',
    expect: { owner: 'allowed', admin: NOT_OWNER, moderator: INSUFFICIENT, member: INSUFFICIENT, guest: INSUFFICIENT },
    async run(actor) {
      const target = await newUser();
      const res = await send(callerFor(actor), `/users/${target.id}`, { method: 'PATCH', form: { role: '100' } });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).role).toBe(allowed ? 100 : 400);
        },
      };
    },
  },
  {
    name: 'deactivate-user',
    expect: adminsOnly(INSUFFICIENT),
    async run(actor) {
      const target = await newUser();
      const res = await send(callerFor(actor), `/users/${target.id}`, { method: 'DELETE' });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).is_active).toBe(!allowed);
        },
      };
    },
  },
  {
    name: 'deactivate-user: an owner',
    expect: { owner: 'allowed', admin: NOT_OWNER, moderator: INSUFFICIENT, member: INSUFFICIENT, guest: INSUFFICIENT },
    async run(actor) {
      const target = await newUser(100);
      const res = await send(callerFor(actor), `/users/${target.id}`, { method: 'DELETE' });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).is_active).toBe(!allowed);
        },
      };
    },
  },
  {
    name: 'reactivate-user',
    expect: adminsOnly(INSUFFICIENT),
    async run(actor) {
      const target = await newUser();
      await deactivateUser(env, target.id, 'desdemona');
      const res = await send(callerFor(actor), `/users/${target.id}/reactivate`, { method: 'POST' });
      return {
        res,
        async verify(allowed) {
          expect((await readUser(target.id)).is_active).toBe(allowed);
        },
      };
    },
  },
  {
    name: 'deactivate-own-user',
    expect: everyone(),
    async run(actor) {
      const caller = await freshCallerFor(actor);
      const res = await send(caller, '/users/me', { method: 'DELETE' });
      return {
        res,
        async verify() {
          // Allowed: now deactivated. The deactivated caller: still deactivated.
          expect((await readUser(caller.id)).is_active).toBe(false);
        },
      };
    },
  },
  {
    name: 'get-custom-profile-fields',
    expect: everyone(),
    async run(actor) {
      const res = await send(callerFor(actor), '/realm/profile_fields');
      return {
        res,
        async verify(allowed) {
          if (allowed) expect(res.body.custom_fields.map((f: any) => f.id)).toContain(existingFieldId);
        },
      };
    },
  },
  {
    name: 'create-custom-profile-field',
    expect: adminsOnly(NOT_ADMIN),
    async run(actor) {
      const name = `Field ${randomBytes(4).toString('hex')}`;
      const res = await send(callerFor(actor), '/realm/profile_fields', { method: 'POST', form: { name, field_type: '1' } });
      return {
        res,
        async verify(allowed) {
          const { data } = await env.client('desdemona').GET('/realm/profile_fields');
          const created = data!.custom_fields.find((f) => f.name === name);
          if (allowed) expect(created).toMatchObject({ id: res.body.id, type: 1 });
          else expect(created).toBeUndefined();
        },
      };
    },
  },
];

beforeAll(async () => {
  const gone = await newUser();
  deactivatedCaller = { id: gone.id, auth: basicAuth(gone.email, await apiKeyOf(env, gone.id)) };
  await deactivateUser(env, gone.id, 'desdemona');
  const field = await env.client('iago').POST('/realm/profile_fields', { body: { name: 'Existing field', field_type: 1 } });
  if (!field.data) throw new Error(`setup: create field failed: ${JSON.stringify(field.error)}`);
  existingFieldId = field.data.id;
});

const CELLS = OPERATIONS.flatMap((operation) =>
  ACTORS.map((actor) => {
    const outcome: Outcome | 'deactivated' = actor === 'deactivated' ? 'deactivated' : operation.expect[actor];
    const label = outcome === 'allowed' ? 'allowed' : outcome === 'deactivated' ? '401 Account is deactivated' : `${outcome.msg} (${outcome.code})`;
    return { operation, actor, outcome, label };
  }),
);

describe('authorization matrix', () => {
  it('covers every implemented operation for every actor', () => {
    const names = new Set(OPERATIONS.map((o) => o.name.split(':')[0]));
    expect([...names].sort()).toEqual(
      [
        'create-custom-profile-field',
        'create-user',
        'deactivate-own-user',
        'deactivate-user',
        'get-custom-profile-fields',
        'get-own-user',
        'get-user',
        'get-users',
        'reactivate-user',
        'update-user',
      ].sort(),
    );
    expect(CELLS.length).toBe(OPERATIONS.length * ACTORS.length);
  });

  it.each(CELLS.map((c) => [c.operation.name, c.actor, c.label, c] as const))('%s as %s: %s', async (_name, actor, _label, cell) => {
    const { res, verify } = await cell.operation.run(actor);
    if (cell.outcome === 'allowed') {
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ result: 'success', msg: '' });
      await verify(true);
    } else if (cell.outcome === 'deactivated') {
      expect(res.status, JSON.stringify(res.body)).toBe(401);
      expect(res.body).toMatchObject({ result: 'error', msg: 'Account is deactivated' });
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
      await verify(false);
    } else {
      expect({ status: res.status, body: res.body }).toEqual({
        status: cell.outcome.status,
        body: { result: 'error', msg: cell.outcome.msg, code: cell.outcome.code },
      });
      await verify(false);
    }
  });
});
