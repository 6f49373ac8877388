// The wire plan against the spec it is generated from, and the client-side encoder that reads it.
import { fileURLToPath } from 'node:url';
import $RefParser from '@apidevtools/json-schema-ref-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import { encodeParams, findOperation, wirePlan, type WireOperation } from '../src/index.ts';

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
let spec: Json;
beforeAll(async () => {
  spec = (await $RefParser.dereference(fileURLToPath(new URL('../../../spec/dist/openapi.json', import.meta.url)))) as Json;
});

/** The types a schema admits (through oneOf/anyOf/allOf). */
function typesOf(schema: Json | undefined): Set<string> {
  const out = new Set<string>();
  if (!schema) return out;
  for (const t of [schema.type].flat()) if (typeof t === 'string') out.add(t);
  if (schema.const !== undefined) out.add(typeof schema.const === 'string' ? 'string' : 'other');
  if (Array.isArray(schema.enum) && !schema.type) for (const v of schema.enum) out.add(typeof v === 'string' ? 'string' : 'other');
  for (const key of ['oneOf', 'anyOf', 'allOf']) for (const sub of schema[key] ?? []) for (const t of typesOf(sub)) out.add(t);
  return out;
}

function specOperations(): Array<{ method: string; path: string; op: Json; item: Json }> {
  return Object.entries<Json>(spec.paths).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((method) => ({ method, path, op: item[method], item })));
}

describe('wire plan', () => {
  it('has exactly the operations of the spec, at their methods and paths', () => {
    const fromSpec = specOperations().map(({ method, path, op }) => `${op.operationId} ${method} ${path}`).sort();
    const fromPlan = Object.values<WireOperation>(wirePlan).map((op) => `${op.operationId} ${op.method} ${op.path}`).sort();
    expect(fromPlan).toEqual(fromSpec);
  });

  it('lists every query and form parameter, and only those', () => {
    for (const { op, item } of specOperations()) {
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const names = [
        ...params.filter((p: Json) => p.in === 'query').map((p: Json) => p.name),
        ...Object.keys(op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema?.properties ?? {}),
      ].sort();
      expect(Object.keys(wirePlan[op.operationId as keyof typeof wirePlan].params).sort(), op.operationId).toEqual(names);
    }
  });

  it('marks a parameter JSON-encoded exactly when its schema admits a value that is not a string', () => {
    const problems: string[] = [];
    for (const { op, item } of specOperations()) {
      const plan = wirePlan[op.operationId as keyof typeof wirePlan] as WireOperation;
      const schemas: Record<string, Json> = {};
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
        if (p.in === 'query') schemas[p.name] = p.schema ?? p.content?.['application/json']?.schema;
      }
      Object.assign(schemas, op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema?.properties ?? {});
      for (const [name, schema] of Object.entries(schemas)) {
        const types = typesOf(schema);
        const needsJson = [...types].some((t) => t !== 'string');
        // A JSON-declared string-only parameter is allowed (Zulip's Json[str]); the reverse is not.
        if (needsJson && !plan.params[name]!.json) problems.push(`${op.operationId}.${name} (${[...types].join('|')}) travels raw`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('knows how each operation authenticates', () => {
    expect(wirePlan['get-server-settings'].auth).toBe('none');
    expect(wirePlan['fetch-api-key'].auth).toBe('none');
    expect(wirePlan['get-users'].auth).toBe('optional');
    expect(wirePlan['update-user'].auth).toBe('required');
  });
});

describe('findOperation', () => {
  it('finds by method (any case) and path template, and nothing else', () => {
    expect(findOperation('PATCH', '/users/{user_id}')?.operationId).toBe('update-user');
    expect(findOperation('get', '/users/{user_id}')?.operationId).toBe('get-user');
    expect(findOperation('PUT', '/users/{user_id}')).toBeUndefined();
    expect(findOperation('GET', '/users/12')).toBeUndefined();
  });
});

describe('encodeParams', () => {
  const updateUser = findOperation('PATCH', '/users/{user_id}');

  it('sends strings raw, other values as JSON, and drops undefined', () => {
    const out = encodeParams(updateUser, { full_name: 'Ann [1]', role: 200, profile_data: [{ id: 1, value: 'x' }], new_email: undefined });
    expect([...out]).toEqual([
      ['full_name', 'Ann [1]'],
      ['role', '200'],
      ['profile_data', '[{"id":1,"value":"x"}]'],
    ]);
  });

  it('JSON-encodes a string where the operation declares JSON (e.g. "unlimited")', () => {
    const op = Object.values<WireOperation>(wirePlan).find((o) => Object.entries(o.params).some(([, p]) => p.json));
    const [name] = Object.entries(op!.params).find(([, p]) => p.json)!;
    expect(encodeParams(op, { [name]: 'unlimited' }).get(name)).toBe('"unlimited"');
  });

  it('treats names of Object.prototype as unknown parameters, encoded by their value', () => {
    const out = encodeParams(updateUser, { constructor: 'x', toString: 5, __proto__: 'y' } as Record<string, unknown>);
    expect(out.get('constructor')).toBe('x');
    expect(out.get('toString')).toBe('5');
  });
});
