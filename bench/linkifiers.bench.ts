// What linkifiers cost when a message is rendered: renders per second of a mix of everyday messages
// with 100 linkifiers configured against none, as sending renders them (lib/markdown.ts with the
// organization's compiled linkifiers, lib/linkifiers.ts; topic_links of the message included), and
// what the one-pass prefilter (an RE2 set of all the patterns) saves over trying each linkifier on
// each text. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/linkifiers.bench.ts
//
// Environment: BENCH_DURATION seconds per configuration and run (2), BENCH_RUNS runs (7). Within a run
// the configurations take turns pass by pass (60 renders each), so that each meets the same JIT state,
// garbage collector and neighbours; throughput is renders per second of the process's CPU time, which
// other work on a shared machine disturbs far less than wall time.
//
// The 100 linkifiers are of the kinds organizations configure (issue trackers by project prefix,
// repository references, commit hashes, RFCs, ticket systems), with 100 different prefixes. The 60
// messages are 40–600 characters: prose, mentions, a code block, links, emphasis; a fifth of them
// reference a ticket or a commit that one linkifier links. Topics (for topic_links) are all different,
// so the per-topic memo of topic links never answers; a fifth of them name a ticket.
//
// Goal: renders per (CPU) second with 100 linkifiers ≥ 0.7× those with none.
import os from 'node:os';
import { renderMessage, type MarkdownContext } from '../apps/server/src/lib/markdown.ts';
import { CompiledLinkifiers, type LinkifierRow } from '../apps/server/src/lib/linkifiers.ts';
import { fmt, markdownTable, median } from './lib/stats.ts';

const DURATION_MS = Number(process.env.BENCH_DURATION ?? 2) * 1000;
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const GOAL = 0.7;

// ---------------------------------------------------------------------------------------------------
// 100 linkifiers

function linkifierRows(): LinkifierRow[] {
  const rows: LinkifierRow[] = [];
  const prefix = (i: number) => `${String.fromCharCode(65 + (i % 26))}${String.fromCharCode(65 + Math.floor(i / 26))}X`;
  for (let i = 0; i < 60; i++) rows.push({ id: rows.length + 1, pattern: `${prefix(i)}-(?P<id>[0-9]+)`, url_template: `https://tracker.example.com/${prefix(i)}/issues/{id}` });
  for (let i = 0; i < 20; i++) rows.push({ id: rows.length + 1, pattern: `repo${i}#(?P<id>[0-9]+)`, url_template: `https://github.com/example/repo${i}/pull/{id}` });
  for (let i = 0; i < 10; i++) rows.push({ id: rows.length + 1, pattern: `(?P<org>org${i})/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)`, url_template: 'https://github.com/{org}/{repo}/issues/{id}' });
  rows.push({ id: rows.length + 1, pattern: '#(?P<id>[0-9]{2,8})', url_template: 'https://trac.example.com/ticket/{id}' });
  rows.push({ id: rows.length + 1, pattern: '(?P<sha>[0-9a-f]{40})', url_template: 'https://github.com/example/app/commit/{sha}' });
  rows.push({ id: rows.length + 1, pattern: 'RFC ?(?P<n>[0-9]{3,4})', url_template: 'https://www.rfc-editor.org/rfc/rfc{n}' });
  rows.push({ id: rows.length + 1, pattern: 'CVE-(?P<year>[0-9]{4})-(?P<n>[0-9]{4,7})', url_template: 'https://www.cve.org/CVERecord?id=CVE-{year}-{n}' });
  rows.push({ id: rows.length + 1, pattern: '(?i)jira:(?P<key>[a-z]+-[0-9]+)', url_template: 'https://jira.example.com/browse/{key}' });
  rows.push({ id: rows.length + 1, pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/pr/{id}' });
  rows.push({ id: rows.length + 1, pattern: '!(?P<id>[0-9]+)', url_template: 'https://gitlab.example.com/merge_requests/{id}' });
  rows.push({ id: rows.length + 1, pattern: 'T(?P<id>[0-9]{3,})', url_template: 'https://phabricator.example.com/T{id}' });
  rows.push({ id: rows.length + 1, pattern: 'ticket (?P<id>[0-9]+)', url_template: 'https://helpdesk.example.com/tickets/{id}' });
  rows.push({ id: rows.length + 1, pattern: 'case:(?P<id>[0-9]+)', url_template: 'https://crm.example.com/cases/{id}' });
  return rows;
}

// ---------------------------------------------------------------------------------------------------
// 60 messages

const PROSE = [
  'Thanks for the update, I will look at it after lunch.',
  'Can we move the standup to 10:30 tomorrow? I have a dentist appointment first thing in the morning.',
  'The deploy went out at 14:02 and the error rate is back to normal; I am keeping an eye on the dashboards for the next hour or so.',
  'I think the simplest fix is to cache the result per request, but we should measure before deciding; the last time we cached something there it made the invalidation story much harder to reason about.',
  'Here is the summary of the discussion: we agreed to ship the first version behind a flag, collect feedback from the support team for two weeks, and then decide whether the new onboarding flow replaces the old one entirely.',
];
const EXTRAS = [
  '@**Alice Smith** could you have a look?',
  '**Important:** the office is closed on Friday.',
  'See https://docs.example.com/guide/setup for the details.',
  '```python\ndef handler(event):\n    return process(event)\n```',
  '- first item\n- second item\n- third item',
  '> quoted from the previous thread: it works on my machine',
  'Use `git rebase -i` and *then* push.',
];
const REFERENCES = ['BAX-1234', 'repo7#88', 'org3/widgets#12', '#4521', '0123456789abcdef0123456789abcdef01234567', 'RFC 6570', 'jira:OPS-77', 'ticket 9911'];

function messages(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 60; i++) {
    let text = PROSE[i % PROSE.length]!;
    if (i % 2 === 0) text += `\n\n${EXTRAS[i % EXTRAS.length]!}`;
    if (i % 3 === 0) text += ` ${PROSE[(i + 2) % PROSE.length]!}`;
    if (i % 5 === 0) text += ` This is about ${REFERENCES[(i / 5) % REFERENCES.length]!}, please check.`;
    out.push(text);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

const baseContext: MarkdownContext = { users: [{ id: 12, full_name: 'Alice Smith' }], groups: [], channels: [] };
const corpus = messages();
const realmUrl = 'https://chat.example.com';

interface Configuration {
  label: string;
  linkifiers: CompiledLinkifiers | null;
}

let topicCounter = 0;

/** One pass over the corpus (60 renders, each with its topic's links): this process's CPU time in µs. */
function pass(config: Configuration): number {
  const ctx: MarkdownContext = config.linkifiers ? { ...baseContext, linkifiers: { linkifiers: config.linkifiers, realmUrl } } : baseContext;
  let sink = 0;
  const start = process.cpuUsage();
  for (const content of corpus) {
    sink += renderMessage(content, ctx).html.length;
    // topic_links of the message as sending formats it (a new topic each time: no memo; a fifth name a ticket).
    if (config.linkifiers) sink += config.linkifiers.topicLinks(++topicCounter % 5 === 0 ? `BAX-${topicCounter} follow-up` : `release planning ${topicCounter}`).length;
  }
  const cpu = process.cpuUsage(start);
  if (sink === 0) throw new Error('nothing rendered');
  return cpu.user + cpu.system;
}

/**
 * Passes of every configuration in turn (so that each meets the same JIT, garbage collector and
 * neighbours), for DURATION_MS per run; a run's figure is renders per CPU-second of its passes.
 */
function runs(configurations: Configuration[]): Map<string, number[]> {
  const rates = new Map<string, number[]>(configurations.map((c) => [c.label, []]));
  for (let r = 0; r < RUNS; r++) {
    const cpu = new Map<string, number>(configurations.map((c) => [c.label, 0]));
    const passes = new Map<string, number>(configurations.map((c) => [c.label, 0]));
    const deadline = performance.now() + DURATION_MS * configurations.length;
    while (performance.now() < deadline) {
      for (const config of configurations) {
        cpu.set(config.label, cpu.get(config.label)! + pass(config));
        passes.set(config.label, passes.get(config.label)! + 1);
      }
    }
    for (const c of configurations) rates.get(c.label)!.push((passes.get(c.label)! * corpus.length) / (cpu.get(c.label)! / 1e6));
  }
  return rates;
}

const rows = linkifierRows();
const configurations: Configuration[] = [
  { label: 'no linkifiers', linkifiers: null },
  { label: '100 linkifiers', linkifiers: new CompiledLinkifiers(rows) },
  { label: '100 linkifiers, no prefilter (each searched for in each text)', linkifiers: new CompiledLinkifiers(rows, { prefilter: false }) },
];

// Every reference of the corpus is linked by exactly one linkifier (the bench renders what it claims to).
const sample = renderMessage(REFERENCES.join(' '), { ...baseContext, linkifiers: { linkifiers: configurations[1]!.linkifiers!, realmUrl } }).html;
const links = sample.match(/<a /g)?.length ?? 0;
if (links !== REFERENCES.length) throw new Error(`expected ${REFERENCES.length} links, got ${links}: ${sample}`);

console.log(`node ${process.version}, ${os.cpus().length} CPUs, load average (1 min) ${os.loadavg()[0]!.toFixed(1)} at the start`);
console.log(`${corpus.length} messages of ${Math.min(...corpus.map((c) => c.length))}–${Math.max(...corpus.map((c) => c.length))} characters; ${rows.length} linkifiers; ${RUNS} runs of ${DURATION_MS / 1000} s per configuration, passes in turns\n`);
for (let i = 0; i < 20; i++) for (const config of configurations) pass(config); // warm-up
const rates = runs(configurations);

const none = median(rates.get('no linkifiers')!);
const table = configurations.map((c) => {
  const rate = median(rates.get(c.label)!);
  const ratio = rate / none;
  const goal = c.label === '100 linkifiers' ? `≥ ${GOAL}×` : '';
  const pass = c.label === '100 linkifiers' ? (ratio >= GOAL ? '✓' : '✗') : '';
  return [c.label, fmt(rate, 0), `${fmt(Math.min(...rates.get(c.label)!), 0)}–${fmt(Math.max(...rates.get(c.label)!), 0)}`, fmt(1000 / rate, 3), `${ratio.toFixed(2)}×`, goal, pass];
});
console.log(markdownTable(['configuration', 'renders per CPU-second (median)', 'range', 'CPU ms per render', 'vs none', 'goal', 'pass'], table));
console.log(`\nload average (1 min) ${os.loadavg()[0]!.toFixed(1)} at the end`);
