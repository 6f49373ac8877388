// The spec, the route table, the tests and the README agree. The route table's type already makes it
// list every operation of the spec; here each claim is checked against something independent of it:
// the served operations against the test suite's own calls, the not-served ones against the running
// server (with requests built from the spec's examples) and against the README.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wirePlan, type WireOperation } from '@parley/wire';
import { NOT_YET_SERVED, routes } from '../../src/routes.ts';
import { expectJsonError, startTestServer, type TestServer } from '../helpers/test-server.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(path.join(here, '../../../../README.md'), 'utf8');
const spec = JSON.parse(readFileSync(path.join(here, '../../../../spec/dist/openapi.json'), 'utf8'));
const operations = Object.values<WireOperation>(wirePlan);
const served = operations.filter((op) => !NOT_YET_SERVED.includes(op.operationId as never));

function testSources(dir: string): Array<{ file: string; text: string }> {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'contract' || name === 'fuzz' || name === 'helpers' ? [] : testSources(full);
    return name.endsWith('.test.ts') ? [{ file: name, text: readFileSync(full, 'utf8') }] : [];
  });
}

describe('operation coverage', () => {
  it('the route table names exactly the operations of the spec', () => {
    expect(Object.keys(routes).sort()).toEqual(operations.map((op) => op.operationId).sort());
  });

  it('every served operation is called, with its method, by some test outside the fuzz and contract tests', () => {
    const sources = testSources(path.join(here, '..'));
    const uncalled = served.filter((op) => {
      // `/users/{user_id}` as the typed client writes it, or as a raw path with an id or an interpolation.
      const pathPattern = op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}|\{\w+\}/g, '(\\{\\w+\\}|\\$\\{[^}]+\\}|\\d+)');
      const pathRe = new RegExp(`['"\`](/api/v1)?${pathPattern}(['"\`?]|$)`, 'm');
      const method = op.method.toUpperCase();
      const methodRe = new RegExp(`\\.${method}\\(|method: '${method}'|'${method}'`);
      return !sources.some(({ text }) => pathRe.test(text) && methodRe.test(text));
    });
    expect(uncalled.map((op) => `${op.operationId} (${op.method.toUpperCase()} ${op.path})`)).toEqual([]);
  });

  it('the README lists exactly the operations not yet served', () => {
    const section = readme.split('<!-- not-yet-served:start -->')[1]?.split('<!-- not-yet-served:end -->')[0];
    expect(section, 'README needs the not-yet-served section markers').toBeDefined();
    const listed = [...section!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort();
    expect(listed).toEqual([...NOT_YET_SERVED].sort());
  });
});

// Skipped when every operation of the spec is served (the route table then lists no NOT_SERVED entry).
describe.skipIf(NOT_YET_SERVED.length === 0)('not-served operations, over HTTP', () => {
  let env: TestServer;
  beforeAll(async () => {
    env = await startTestServer();
  });
  afterAll(() => env.close());

  /** Required parameters filled from the spec's examples. */
  function exampleRequest(op: WireOperation): { url: string; init: RequestInit } {
    const item = spec.paths[op.path];
    const specOp = item[op.method];
    const fields = new URLSearchParams();
    const resolve = (node: any): any => (node?.$ref ? node.$ref.slice(2).split('/').reduce((acc: any, key: string) => acc[key], spec) : node);
    for (const p of [...(item.parameters ?? []), ...(specOp.parameters ?? [])].map(resolve)) {
      if (p.in !== 'query' || !p.required) continue;
      const schema = resolve(p.schema ?? p.content?.['application/json']?.schema);
      const example = p.example ?? schema?.example;
      fields.set(p.name, typeof example === 'string' && !op.params[p.name]!.json ? example : JSON.stringify(example));
    }
    const form = resolve(specOp.requestBody)?.content?.['application/x-www-form-urlencoded'];
    const formSchema = resolve(form?.schema);
    for (const name of formSchema?.required ?? []) {
      const schema = resolve(formSchema.properties[name]);
      const example = schema?.example ?? schema?.items?.example;
      fields.set(name, typeof example === 'string' && !op.params[name]!.json ? example : JSON.stringify(example));
    }
    const url = op.path.replace(/\{\w+\}/g, '1');
    return op.method === 'get'
      ? { url: `${url}?${fields}`, init: { method: 'GET' } }
      : { url, init: { method: op.method.toUpperCase(), body: fields.toString(), headers: { 'Content-Type': 'application/x-www-form-urlencoded' } } };
  }

  it.each(NOT_YET_SERVED.map((id) => [id]))('%s answers 404 NOT_IMPLEMENTED to a valid request', async (id) => {
    const op = wirePlan[id];
    const { url, init } = exampleRequest(op);
    const res = await env.raw(url, { ...init, as: 'hamlet' });
    expectJsonError(res, 404, `Parley does not serve ${id} yet`, 'NOT_IMPLEMENTED');
  });
});
