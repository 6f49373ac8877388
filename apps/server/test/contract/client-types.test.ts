// The typed client's types (generated from the spec) refuse at compile time what the server refuses at
// run time: each request below carries a `@ts-expect-error`, so the type check (`tsc -p .`) fails the
// day the types accept it (an unused `@ts-expect-error` is an error), and the test fails the day the
// server does. Tests that send wrong requests on purpose use helpers/unchecked.ts or raw HTTP instead.
import { describe, it } from 'vitest';
import { expectJsonError, useTestServer } from '../helpers/test-server.ts';

const env = useTestServer();

describe('the typed client refuses what the server refuses', () => {
  it('a parameter of the wrong name', async () => {
    // @ts-expect-error `recipients` is no parameter of POST /typing (the recipients are `to`).
    const res = await env.client('hamlet').POST('/typing', { body: { op: 'start', recipients: [env.users.othello.id] } });
    expectJsonError(res, 400, "Missing 'to' argument");
  });

  it('a value of the wrong type', async () => {
    // @ts-expect-error `enter_sends` is a boolean, not a string.
    const res = await env.client('hamlet').PATCH('/settings', { body: { enter_sends: 'sometimes' } });
    expectJsonError(res, 400, 'enter_sends is not a boolean');
  });

  it('a required parameter left out', async () => {
    // @ts-expect-error POST /messages needs `content`.
    const res = await env.client('hamlet').POST('/messages', { body: { type: 'direct', to: JSON.stringify([env.users.othello.id]) } });
    expectJsonError(res, 400, "Missing 'content' argument");
  });

  it('a path parameter of the wrong type', async () => {
    // @ts-expect-error `message_id` is a number. (Not `/users/{user_id}`: there, text is an address.)
    const res = await env.client('hamlet').GET('/messages/{message_id}', { params: { path: { message_id: 'latest' } } });
    expectJsonError(res, 404, 'Not Found');
  });
});
