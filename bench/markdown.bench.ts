// The message renderer (apps/server/src/lib/markdown.ts) on large and hostile inputs: how long one
// render takes. Not a test: it prints figures (the tests in apps/server/test/unit/markdown.test.ts
// check what these inputs render to). From the repository root:
//
//   npx tsx bench/markdown.bench.ts
//
// Environment:
//   BENCH_RUNS   timed renders per input, after 5 untimed ones that warm up the JIT (10)
//
// Inputs: a 10,000-character message repeating mentions, a group mention, a topic link, an emoji,
// emphasis, code and a link (the largest message Zulip accepts); and inputs that defeat naive
// scanners (unclosed mention and link openers, emoji-like and strikethrough runs, 1,100 nested quote
// fences, 10,000 underscores), which a renderer with quadratic or exponential backtracking takes
// seconds or more to render.
import os from 'node:os';
import { renderMessage, type MarkdownContext } from '../apps/server/src/lib/markdown.ts';
import { fmt, markdownTable, median } from './lib/stats.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 10);

const ctx: MarkdownContext = {
  users: [{ id: 12, full_name: 'Alice Smith' }, { id: 20, full_name: 'Bob' }],
  groups: [{ id: 5, name: 'support' }],
  channels: [{ id: 7, name: 'general' }],
};

const unit = 'Hi @**Alice Smith** and @*support*, see #**general>lunch** :smile: **bold** *em* ~~old~~ `code` https://example.com/x_y\n';
const inputs: Array<[string, string]> = [
  ['10,000 characters of mentions, links, emoji and emphasis', unit.repeat(Math.ceil(10_000 / unit.length)).slice(0, 10_000)],
  ["'@**' × 3,400", '@**'.repeat(3400)],
  ["'#**' × 3,400", '#**'.repeat(3400)],
  ["':a' × 5,000", ':a'.repeat(5000)],
  ["'~~' × 5,000", '~~'.repeat(5000)],
  ["'```quote\\n' × 1,100", '```quote\n'.repeat(1100)],
  ["'_' × 10,000", '_'.repeat(10_000)],
];

const rows: string[][] = [];
for (const [label, text] of inputs) {
  for (let i = 0; i < 5; i++) renderMessage(text, ctx);
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    renderMessage(text, ctx);
    times.push(performance.now() - start);
  }
  rows.push([label, fmt(Math.min(...times)), fmt(median(times)), fmt(Math.max(...times))]);
}

console.log(`node ${process.version}, ${os.cpus().length} CPUs, load average (1 min) ${os.loadavg()[0]!.toFixed(1)}; ${RUNS} renders per input\n`);
console.log(markdownTable(['input', 'min ms', 'median ms', 'max ms'], rows));
