// Summarises a V8 .cpuprofile (node --cpu-prof): where the samples fall, by package or repository file
// (self time) and by function (self and inclusive time). Usage:
//
//   BENCH_CPU_PROF=/tmp/prof BENCH_ROWS=me npx tsx bench/perf.bench.ts
//   npx tsx bench/lib/profile-summary.ts /tmp/prof/CPU.*.cpuprofile [top, default 25]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** node_modules/<package>, a repository-relative path, or a Node internal. */
function origin(url: string): string {
  if (!url) return '(native / V8)';
  const file = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = file.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = file.slice(nm + 'node_modules/'.length).split('/');
    return `npm:${rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (file.startsWith('node:')) return 'node internals';
  return path.relative(ROOT, file);
}

function summarise(file: string, top: number) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const totalHits = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const msPerHit = (profile.endTime - profile.startTime) / 1000 / Math.max(1, totalHits);
  const idle = profile.nodes.filter((n) => ['(idle)', '(program)'].includes(n.callFrame.functionName)).reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const busy = totalHits - idle;

  const selfByOrigin = new Map<string, number>();
  const selfByFn = new Map<string, number>();
  const inclusiveByFn = new Map<string, number>();
  const key = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'}  ${origin(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
  const rootNode = profile.nodes[0]!;
  const walk = (node: ProfileNode, onPath: string[]) => {
    const k = key(node);
    const hits = node.hitCount ?? 0;
    const fn = node.callFrame.functionName;
    const counted = !['(idle)', '(program)', '(root)'].includes(fn);
    const pathKeys = onPath.includes(k) ? onPath : [...onPath, k];
    if (counted && hits) {
      selfByOrigin.set(origin(node.callFrame.url) + (fn === '(garbage collector)' ? ' (GC)' : ''), (selfByOrigin.get(origin(node.callFrame.url) + (fn === '(garbage collector)' ? ' (GC)' : '')) ?? 0) + hits);
      selfByFn.set(k, (selfByFn.get(k) ?? 0) + hits);
      for (const p of pathKeys) inclusiveByFn.set(p, (inclusiveByFn.get(p) ?? 0) + hits);
    }
    for (const child of node.children ?? []) walk(byId.get(child)!, pathKeys);
  };
  walk(rootNode, []);

  const pct = (hits: number) => `${((100 * hits) / Math.max(1, busy)).toFixed(1).padStart(5)}%`;
  const ms = (hits: number) => `${(hits * msPerHit).toFixed(0).padStart(7)} ms`;
  const list = (title: string, m: Map<string, number>) => {
    console.log(`\n${title}`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)} ${ms(v)}  ${k}`);
  };
  console.log(`${file}: ${(busy * msPerHit / 1000).toFixed(1)} s busy of ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s (percentages are of busy time)`);
  list('self time by package / file', selfByOrigin);
  list('self time by function', selfByFn);
  list('inclusive time by function', inclusiveByFn);
  list('inclusive time of the repository\'s own functions', new Map([...inclusiveByFn].filter(([k]) => !k.includes(' npm:') && /(apps|packages)\/[^ ]*\.ts:/.test(k))));
}

const args = process.argv.slice(2);
const files = args.filter((a) => !/^\d+$/.test(a));
const top = Number(args.find((a) => /^\d+$/.test(a)) ?? 25);
if (files.length === 0) {
  console.error('usage: npx tsx bench/lib/profile-summary.ts <file.cpuprofile>… [top]');
  process.exit(2);
}
for (const file of files) summarise(file, top);
