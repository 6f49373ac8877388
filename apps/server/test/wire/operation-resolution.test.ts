// How a request path finds its operation (src/http/operations.ts): id parameters are digits only,
// text parameters any one segment, tried last, so that literal segments (`/users/me`) are never taken
// for a parameter; an id-or-text parameter (`/users/{user_id}`, which names a user by id or address,
// as Zulip's `users/<int:user_id>` and `users/<email>` routes do) is an id when digits only, and its
// text form reaches only the methods that take text.
import { describe, expect, it } from 'vitest';
import { wirePlan } from '@parley/wire';
import { resolveOperation } from '../../src/http/operations.ts';

const operationOf = (method: string, path: string) => {
  const r = resolveOperation(method, path);
  return r.kind === 'operation' ? { id: r.operation.operationId, path: r.pathParams } : r;
};

describe('operation resolution', () => {
  it("every operation's own template, filled in, resolves to that operation", () => {
    for (const op of Object.values(wirePlan)) {
      const text = new Set<string>([...('textPathParams' in op ? op.textPathParams : []), ...('idOrTextPathParams' in op ? op.idOrTextPathParams : [])]);
      const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => (text.has(name) ? 'someone%40parley.test' : '7'));
      const found = resolveOperation(op.method, path);
      expect(found.kind === 'operation' && found.operation.operationId, `${op.method} ${path}`).toBe(op.operationId);
    }
  });

  it('tells /users/me, /users/{id} and /users/{address} apart', () => {
    expect(operationOf('GET', '/users/me')).toEqual({ id: 'get-own-user', path: {} });
    expect(operationOf('GET', '/users/10')).toEqual({ id: 'get-user', path: { user_id: 10 } });
    expect(operationOf('GET', '/users/hamlet@parley.test')).toEqual({ id: 'get-user', path: { user_id: 'hamlet@parley.test' } });
    expect(operationOf('GET', '/users/hamlet%40parley.test')).toEqual({ id: 'get-user', path: { user_id: 'hamlet@parley.test' } });
    expect(operationOf('GET', '/users/user10%40parley.test/')).toEqual({ id: 'get-user', path: { user_id: 'user10@parley.test' } });
    expect(operationOf('PATCH', '/users/hamlet@parley.test')).toEqual({ id: 'update-user', path: { user_id: 'hamlet@parley.test' } });
    expect(operationOf('PATCH', '/users/10')).toEqual({ id: 'update-user', path: { user_id: 10 } });
    // Methods that take no address are not there for one (Zulip's `users/<email>` route has GET and PATCH).
    expect(operationOf('DELETE', '/users/hamlet@parley.test')).toEqual({ kind: 'method-not-allowed', allowed: ['GET', 'PATCH'] });
    expect(operationOf('POST', '/users/10')).toEqual({ kind: 'method-not-allowed', allowed: ['DELETE', 'GET', 'PATCH'] });
    expect(operationOf('DELETE', '/users/10')).toMatchObject({ id: 'deactivate-user' });
    expect(operationOf('PATCH', '/users/me')).toMatchObject({ kind: 'method-not-allowed' });
    // One segment only, and escapes must be well-formed.
    expect(operationOf('GET', '/users/a/b')).toEqual({ kind: 'not-found' });
    expect(operationOf('GET', '/users/%E0%A4%A')).toEqual({ kind: 'not-found' });
    expect(operationOf('GET', '/users/1%00')).toEqual({ kind: 'not-found' });
    expect(operationOf('GET', '/users/hamlet@parley.test/status')).toEqual({ kind: 'not-found' });
    expect(operationOf('GET', '/users/10/status')).toEqual({ id: 'get-user-status', path: { user_id: 10 } });
    expect(operationOf('POST', '/users/me/status')).toEqual({ id: 'update-status', path: {} });
  });
});
