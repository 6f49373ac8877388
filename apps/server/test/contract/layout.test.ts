// One word per area, from spec tag to test folder (README, "Areas"). Each operation's tag names its
// area; the area's word names the handler file that serves the operation (src/handlers/<tag>.ts) and
// the folder of its tests (test/api/<tag>/), where one top-level `describe` is the operation's own
// ("METHOD /path", as the spec writes the path). Tests of what no single operation owns (hardening,
// rate limits, logging, several processes, the security invariant) live in test/api/system/.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../../..');
const server = path.join(here, '../..');
const spec = JSON.parse(readFileSync(path.join(root, 'spec/dist/openapi.json'), 'utf8')) as {
  tags: Array<{ name: string }>;
  paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
};
const routesSource = readFileSync(path.join(server, 'src/routes.ts'), 'utf8');

interface Operation { operationId: string; method: string; path: string; tag: string }
const operations: Operation[] = Object.entries(spec.paths).flatMap(([p, item]) =>
  Object.entries(item)
    .filter(([method, op]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method) && op.operationId)
    .map(([method, op]) => ({ operationId: op.operationId!, method: method.toUpperCase(), path: p, tag: op.tags?.[0] ?? '' })),
);
const areas = spec.tags.map((t) => t.name);
const SYSTEM = 'system';

/** The handler file each route's function is imported from (`import { a, b } from './handlers/x.ts'`). */
function handlerFiles(): Map<string, string> {
  const fileOf = new Map<string, string>();
  for (const m of routesSource.matchAll(/import \{([^}]*)\} from '\.\/handlers\/([a-z-]+)\.ts'/g)) {
    for (const name of m[1]!.split(',').map((s) => s.trim()).filter(Boolean)) fileOf.set(name, m[2]!);
  }
  const byOperation = new Map<string, string>();
  for (const m of routesSource.matchAll(/^\s+'?([a-z-]+)'?(?::\s*(\w+))?,\s*$/gm)) {
    const file = fileOf.get(m[2] ?? m[1]!);
    if (file) byOperation.set(m[1]!, file);
  }
  return byOperation;
}

/** Top-level describe titles of each test file of a folder. */
function describesIn(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder)
    .filter((f) => f.endsWith('.test.ts'))
    .flatMap((f) => [...readFileSync(path.join(folder, f), 'utf8').matchAll(/^describe\((['"`])(.*?)\1/gm)].map((m) => m[2]!));
}

describe('areas', () => {
  it('every operation has exactly one tag, and it is an area of the spec', () => {
    expect(operations.filter((op) => !areas.includes(op.tag)).map((op) => op.operationId)).toEqual([]);
  });

  it("each operation's handler lives in the file named after its area", () => {
    const files = handlerFiles();
    expect(operations.filter((op) => files.get(op.operationId) !== op.tag).map((op) => `${op.operationId}: tag ${op.tag}, handlers/${files.get(op.operationId)}.ts`)).toEqual([]);
  });

  it('every handler file and every test folder is an area (test/api/system/ aside)', () => {
    const handlerFilesOnDisk = readdirSync(path.join(server, 'src/handlers')).map((f) => f.replace(/\.ts$/, ''));
    expect(handlerFilesOnDisk.filter((f) => !areas.includes(f))).toEqual([]);
    const testEntries = readdirSync(path.join(server, 'test/api'));
    expect(testEntries.filter((f) => f !== SYSTEM && !areas.includes(f))).toEqual([]);
  });

  it("every operation has its own top-level describe ('METHOD /path') in its area's test folder", () => {
    const missing = operations.filter((op) => {
      const titles = describesIn(path.join(server, 'test/api', op.tag));
      const own = `${op.method} ${op.path}`;
      return !titles.some((t) => t === own || t.startsWith(`${own} `) || t.startsWith(`${own}:`) || t.startsWith(`${own},`));
    });
    expect(missing.map((op) => `${op.tag}: ${op.method} ${op.path} (${op.operationId})`)).toEqual([]);
  });
});
