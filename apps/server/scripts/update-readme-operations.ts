// Rewrites the "not yet served" list of README.md from the route table (the coverage test checks it).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { wirePlan } from '@parley/wire';
import { NOT_YET_SERVED } from '../src/routes.ts';

const readmePath = fileURLToPath(new URL('../../../README.md', import.meta.url));
const readme = readFileSync(readmePath, 'utf8');
const list = NOT_YET_SERVED.map((op) => `- \`${op}\` — \`${wirePlan[op].method.toUpperCase()} ${wirePlan[op].path}\``).join('\n') || '- (none)';
const start = '<!-- not-yet-served:start -->';
const end = '<!-- not-yet-served:end -->';
const [before, rest] = readme.split(start);
const after = rest!.split(end)[1];
writeFileSync(readmePath, `${before}${start}\n${list}\n${end}${after}`);
console.log(`README lists ${NOT_YET_SERVED.length} operations not yet served`);
