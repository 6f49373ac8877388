// The prefilter of linkifiers (lib/linkifiers.ts requiredPrefix): the JavaScript expression it derives
// from a pattern must match every text the pattern (RE2) matches, or a linkifier would silently stop
// linking. Checked on Zulip's and common patterns against texts built from their own pieces.
import { describe, expect, it } from 'vitest';
import { RE2JS } from 're2js';
import { CompiledLinkifiers, requiredPrefix } from '../../src/lib/linkifiers.ts';

const PATTERNS = [
  '#(?P<id>[0-9]+)', '#(?P<id>[0-9]{2,8})', 'ZUL-(?P<id>\\d+)', '(?P<id>ABC-[0-9]+)', '(?P<id>[A-Z][A-Z0-9]*-[0-9]+)', '(?P<id>[A-Z][A-Z0-9]+)',
  '(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)', '(?P<sha>[0-9a-f]{40})', '(?P<h>[0-9a-f]{7,40})', 'RFC ?(?P<n>[0-9]{3,4})',
  '(?i)jira:(?P<key>[a-z]+-[0-9]+)', 'T(?P<id>[0-9]{3,})', '!(?P<id>[0-9]+)', 'community guidelines', 'hello#(?P<id>[0-9]+)', 'url-(?P<id>[0-9]+)',
  'a(?:bc)+d', '(?:ab)?cd', 'x[]a-]y', '[^a-c]z', '\\#\\-(?P<x>\\w{2})', '^#(?P<id>\\d)', 'é😀(?P<x>b)', 'p[0-9]{3}-(?P<x>[a-z])', '(?i)ÉX(?P<x>y)',
  'a(?P<x>b|c)d', 'ab{2}c', 'lp:(?P<id>[0-9]+)', 'FOO_(?P<id>[a-f]{5});(?P<zone>[a-f])',
  // A repetition after a flag group applies to what precedes the group.
  'ab(?i)?c', 'x(?:yz)(?s)(?i)*w',
];

/** Texts made of the characters the patterns use, and random noise. */
function texts(pattern: string): string[] {
  const alphabet = [...new Set([...pattern.replace(/\(\?P<\w+>/g, ''), ...'aAbBcdefxyzZ0123456789 #-_:!é😀ÉK\u212a'])];
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const out: string[] = [];
  for (let n = 0; n < 400; n++) {
    const length = 1 + Math.floor(random() * 60);
    out.push(Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]!).join(''));
  }
  return out;
}

/** Some texts that do match, built from a sample match of each pattern. */
const SAMPLES = ['#12 and #12345', 'ZUL-9', 'ABC-12', 'QWE-7 X1', 'org/repo-1#5', '0123456789abcdef0123456789abcdef01234567', 'abc1234', 'RFC6570 RFC 1234', 'JIRA:ops-1 Jira:a-1',
  'T1234', '!7', 'ac', 'xw', 'community guidelines', 'hello#1', 'url-1', 'abcbcd', 'cd abcd', 'x]y x-y xay', 'dz', '#-ab', '#1', 'é😀b', 'p123-a', 'éxy ÉXY', 'abd acd', 'abbc', 'lp:1', 'FOO_abcde;f'];

describe('linkifier prefilter', () => {
  it('derives, for each pattern it handles, an expression that matches wherever the pattern matches', () => {
    const misses: string[] = [];
    let handled = 0;
    for (const pattern of PATTERNS) {
      const prefix = requiredPrefix(pattern);
      if (prefix === null) continue;
      handled++;
      const js = new RegExp(prefix.source, prefix.ignoreCase ? 'iu' : '');
      const re2 = RE2JS.compile(pattern);
      for (const text of [...texts(pattern), ...SAMPLES]) if (re2.test(text) && !js.test(text)) misses.push(`${pattern} / ${prefix.source}: ${JSON.stringify(text)}`);
    }
    expect(misses).toEqual([]);
    expect(handled).toBeGreaterThan(PATTERNS.length * 0.7);
  });

  it('lets through, for every text, each linkifier whose pattern matches it (gate, per-character prefixes and the RE2 set together)', () => {
    const rows = PATTERNS.map((pattern, i) => ({ id: i + 1, pattern, url_template: `https://example.com/${[...pattern.matchAll(/\(\?P<(\w+)>/g)].map((m) => `{${m[1]}}`).join('/')}` }));
    const linkifiers = new CompiledLinkifiers(rows);
    expect(linkifiers.list).toHaveLength(PATTERNS.length);
    const all = [...new Set(PATTERNS.flatMap((p) => texts(p).slice(0, 100)))].concat(SAMPLES, [SAMPLES.join(' ')]);
    const compiled = PATTERNS.map((pattern) => RE2JS.compile(pattern));
    const missed: string[] = [];
    let matched = 0;
    for (const text of all) {
      const candidates = new Set(linkifiers.candidates(text));
      PATTERNS.forEach((pattern, i) => {
        if (!compiled[i]!.test(text)) return;
        matched++;
        if (!candidates.has(i)) missed.push(`${pattern}: ${JSON.stringify(text)}`);
      });
    }
    expect(missed).toEqual([]);
    expect(matched).toBeGreaterThan(100);
  });

  it('is specific enough to skip everyday text', () => {
    expect(requiredPrefix('T(?P<id>[0-9]{3,})')).toEqual({ source: 'T[0-9]{3}', ignoreCase: false });
    expect(requiredPrefix('(?P<sha>[0-9a-f]{40})')).toEqual({ source: '[0-9a-f]{16}', ignoreCase: false });
    expect(requiredPrefix('(?i)jira:(?P<key>[a-z]+-[0-9]+)')).toEqual({ source: 'jira:[a-z]', ignoreCase: true });
    expect(requiredPrefix('(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)')).toEqual({ source: '[a-zA-Z0-9_\\-]', ignoreCase: false });
    for (const none of ['a|b', '(?:ab)?cd', '\\pL+x', '[[:alpha:]]x', '\\Qa\\E']) expect(requiredPrefix(none)).toBeNull();
  });
});
