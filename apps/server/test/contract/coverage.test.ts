// The spec, the route table and the tests agree. The route table's type already makes it hold a
// handler for every operation of the spec; here that is checked against something independent of it:
// the operations against the spec, and each against the test suite's own calls.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { wirePlan, type WireOperation } from '@parley/wire';
import { routes } from '../../src/routes.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const operations = Object.values<WireOperation>(wirePlan);

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
    const uncalled = operations.filter((op) => {
      // `/users/{user_id}` as the typed client writes it, or as a raw path with an id or an interpolation.
      const pathPattern = op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}|\{\w+\}/g, '(\\{\\w+\\}|\\$\\{[^}]+\\}|\\d+)');
      const pathRe = new RegExp(`['"\`](/api/v1)?${pathPattern}(['"\`?]|$)`, 'm');
      const method = op.method.toUpperCase();
      const methodRe = new RegExp(`\\.${method}\\(|method: '${method}'|'${method}'`);
      return !sources.some(({ text }) => pathRe.test(text) && methodRe.test(text));
    });
    expect(uncalled.map((op) => `${op.operationId} (${op.method.toUpperCase()} ${op.path})`)).toEqual([]);
  });

});
