// The spec, the route table and the README agree: every operation of spec/openapi.yaml is either
// served or listed as not yet served, and the README names each one not yet served.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { wirePlan } from '@parley/wire';
import { handlers, NOT_YET_SERVED } from '../../src/routes.ts';

const readme = readFileSync(fileURLToPath(new URL('../../../../README.md', import.meta.url)), 'utf8');
const specOperations = Object.keys(wirePlan).sort();

describe('operation coverage', () => {
  it('has a handler only for operations the spec defines', () => {
    for (const op of Object.keys(handlers)) expect(specOperations).toContain(op);
  });

  it('serves or lists every operation of the spec', () => {
    const served = Object.keys(handlers);
    expect([...served, ...NOT_YET_SERVED].sort()).toEqual(specOperations);
    expect(served.filter((op) => NOT_YET_SERVED.includes(op as never))).toEqual([]);
  });

  it('README lists exactly the operations not yet served', () => {
    const section = readme.split('<!-- not-yet-served:start -->')[1]?.split('<!-- not-yet-served:end -->')[0];
    expect(section, 'README needs the not-yet-served section markers').toBeDefined();
    const listed = [...section!.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]).sort();
    expect(listed).toEqual([...NOT_YET_SERVED].sort());
  });
});
