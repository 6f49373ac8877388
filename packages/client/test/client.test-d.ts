// Type-level tests of the generated client, checked by `tsc -p .` (and by `vitest --typecheck`).
// Every `@ts-expect-error` below must be a real compile error: tsc fails on an unused directive.
// Each wrong call sits on ONE line next to a correct call of the same shape, so the directive can
// only be satisfied by the mistake it documents. (Unknown extra fields are not tested: openapi-fetch's
// inferred init type does not reject them for operations whose body is all-optional.)
import { describe, expectTypeOf, test } from 'vitest';
import { createParleyClient } from '../src/index.ts';

const client = createParleyClient({ site: 'http://parley.invalid', email: 'a@b.c', apiKey: 'k'.repeat(32) });
const user_id = 10;

describe('paths and methods', () => {
  test('an unknown path does not compile', () => {
    void client.GET('/users', {});
    // @ts-expect-error: no such path in the spec
    void client.GET('/no_such_endpoint', {});
    // @ts-expect-error: Zulip's path is /users/me/subscriptions, not /subscriptions
    void client.GET('/subscriptions', {});
  });

  test('a method the path does not have does not compile', () => {
    void client.DELETE('/users/me', {});
    void client.GET('/server_settings', {});
    // @ts-expect-error: /server_settings has no DELETE
    void client.DELETE('/server_settings', {});
    // @ts-expect-error: /users has no PUT
    void client.PUT('/users', { body: {} });
    // @ts-expect-error: /typing is POST only
    void client.GET('/typing', {});
  });
});

describe('request bodies', () => {
  test('a missing required body field does not compile', () => {
    void client.POST('/users', { body: { email: 'x@parley.test', password: 'pw', full_name: 'X' } });
    // @ts-expect-error: full_name is required
    void client.POST('/users', { body: { email: 'x@parley.test', password: 'pw' } });
    void client.POST('/typing', { body: { op: 'start', to: [1] } });
    // @ts-expect-error: op is required
    void client.POST('/typing', { body: { to: [1] } });
  });

  test('a missing required body does not compile', () => {
    // @ts-expect-error: POST /users needs a body
    void client.POST('/users');
  });

  test('a wrong parameter type does not compile', () => {
    void client.PATCH('/users/{user_id}', { params: { path: { user_id } }, body: { role: 200 } });
    // @ts-expect-error: role is an integer code (200), not a name
    void client.PATCH('/users/{user_id}', { params: { path: { user_id } }, body: { role: 'admin' } });
    // @ts-expect-error: 250 is not one of the role codes
    void client.PATCH('/users/{user_id}', { params: { path: { user_id } }, body: { role: 250 } });
    // @ts-expect-error: op is 'start' | 'stop'
    void client.POST('/typing', { body: { op: 'begin', to: [1] } });
    // @ts-expect-error: to is a list of user IDs
    void client.POST('/typing', { body: { op: 'start', to: 'othello@parley.test' } });
    void client.GET('/users', { params: { query: { client_gravatar: true, user_ids: [1, 2] } } });
    // @ts-expect-error: client_gravatar is a boolean, not the string 'true'
    void client.GET('/users', { params: { query: { client_gravatar: 'true' } } });
    // @ts-expect-error: user_ids is a list
    void client.GET('/users', { params: { query: { user_ids: 5 } } });
  });
});

describe('path parameters', () => {
  test('a missing path parameter does not compile', () => {
    void client.GET('/users/{user_id}', { params: { path: { user_id } } });
    // @ts-expect-error: params.path.user_id is required
    void client.GET('/users/{user_id}', { params: { path: {} } });
    // @ts-expect-error: params (with the path) is required
    void client.GET('/users/{user_id}');
    // @ts-expect-error: params.path is required
    void client.PATCH('/users/{user_id}', { body: { full_name: 'X' } });
  });

  test('a path parameter of the wrong type does not compile', () => {
    // @ts-expect-error: message_id is a number (user_id is not a test of this: it takes an address too)
    void client.GET('/messages/{message_id}', { params: { path: { message_id: 'latest' } } });
  });
});

describe('responses are typed', () => {
  test('data carries the success shape', async () => {
    const { data } = await client.GET('/users/{user_id}', { params: { path: { user_id } } });
    if (data) {
      expectTypeOf(data.result).toEqualTypeOf<'success'>();
      expectTypeOf(data.user.user_id).toEqualTypeOf<number>();
      expectTypeOf(data.user.full_name).toEqualTypeOf<string>();
    }
    const created = await client.POST('/users', { body: { email: 'x@parley.test', password: 'pw', full_name: 'X' } });
    if (created.data) expectTypeOf(created.data.user_id).toEqualTypeOf<number>();
  });
});
