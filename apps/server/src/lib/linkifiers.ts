// Linkifiers (Zulip's RealmFilter): a regular expression whose matches in messages and topics become
// links to a URL template expanded with the match's named groups. This module validates them as Zulip
// does, compiles an organization's list once, finds matches with Zulip's boundary rules, and computes
// topic links; lib/markdown/linkifiers.ts applies them while Markdown renders.
//
// Patterns are matched by re2js (a JavaScript port of RE2, the engine Zulip uses): time linear in the
// text whatever the pattern, so no pattern can stall rendering. RE2 reads Python's named groups
// `(?P<name>…)` as they are; its syntax is the linear-time subset of Python's (no backreferences, no
// lookaround). Errors are worded as RE2 words them (Zulip shows RE2's message). On top of RE2's own
// limits (repetitions up to 1000), a pattern whose program exceeds MAX_PATTERN_PROGRAM_SIZE
// instructions is refused as too large: matching costs up to the text's length times the program's
// size, and such a pattern (`\pL{1000}`) would make every message cost hundreds of milliseconds.
import { RE2JS, RE2JSSyntaxException, RE2Set, type Matcher } from 're2js';
import MarkdownIt from 'markdown-it';
import { compileUrlTemplate, isValidUrlTemplate, urlTemplateVariables, type UrlTemplate } from './url-templates.ts';
import { BLANK_FIELD, ValidationFailures } from './validation-failure.ts';

/** A linkifier as stored and as the API shows it. */
export interface LinkifierRow {
  id: number;
  pattern: string;
  url_template: string;
}

/** A link found in a topic (Zulip's topic_links). */
export interface TopicLink {
  text: string;
  url: string;
}

/** The largest pattern program accepted (instructions; a 40-hex-digit commit hash pattern is ~80). */
export const MAX_PATTERN_PROGRAM_SIZE = 250;

// ---------------------------------------------------------------------------------------------------
// Validation (Zulip's RealmFilter.full_clean)

/** Python's str.isspace characters, which Zulip's strip() removes around pattern and template. */
const PYTHON_SPACE: ReadonlySet<number> = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
  ...Array.from({ length: 11 }, (_, i) => 0x2000 + i),
]);

/** Python's str.strip(). */
export function pythonStrip(text: string): string {
  return trimWhere(text, (code) => PYTHON_SPACE.has(code));
}

function trimWhere(text: string, strip: (code: number) => boolean): string {
  let from = 0;
  let to = text.length;
  while (from < to && strip(text.charCodeAt(from))) from++;
  while (to > from && strip(text.charCodeAt(to - 1))) to--;
  return text.slice(from, to);
}

/** re2js's errors (Go's wording) in RE2's words, which Zulip shows. */
const RE2_WORDING: Readonly<Record<string, string>> = {
  'missing closing )': 'missing )',
  'missing closing ]': 'missing ]',
  'unexpected )': 'unexpected )',
  'trailing backslash at end of expression': 'trailing \\',
  'invalid nested repetition operator': 'bad repetition operator',
  'missing argument to repetition operator': 'no argument for repetition operator',
  'invalid repeat count': 'invalid repetition size',
  'invalid or unsupported Perl syntax': 'invalid perl operator',
  'invalid named capture': 'invalid named capture group',
  'invalid escape sequence': 'invalid escape sequence',
  'invalid character class': 'invalid character class',
  'invalid character class range': 'invalid character class range',
  'expression too large': 'pattern too large - compile failed',
};

const TOO_LARGE = 'pattern too large - compile failed';

/** RE2's message for a pattern that does not compile (`missing ): (foo`), or null when it compiles. */
function compileError(pattern: string): { message: string } | { regex: RE2JS } {
  try {
    const regex = RE2JS.compile(pattern);
    if (regex.programSize() > MAX_PATTERN_PROGRAM_SIZE) return { message: TOO_LARGE };
    return { regex };
  } catch (error) {
    if (!(error instanceof RE2JSSyntaxException)) return { message: 'Unknown regular expression error' };
    const text = RE2_WORDING[error.error] ?? error.error;
    return { message: error.input && text !== 'trailing \\' && text !== TOO_LARGE ? `${text}: ${error.input}` : text };
  }
}

/** The named groups of a compiled pattern, in the order they appear. */
function namedGroupsOf(regex: RE2JS): string[] {
  return Object.entries(regex.namedGroups())
    .sort(([, a], [, b]) => a - b)
    .map(([name]) => name);
}

/**
 * Zulip's checks of a linkifier (already trimmed), but for uniqueness, which needs the database: the
 * caller adds it (`__all__`, unless `pattern` has a problem) and throws.
 */
export function checkLinkifier(pattern: string, urlTemplate: string): ValidationFailures {
  const failures = new ValidationFailures();
  if (pattern === '') failures.add('pattern', BLANK_FIELD);
  const templateValid = isValidUrlTemplate(urlTemplate);
  if (urlTemplate === '') failures.add('url_template', BLANK_FIELD);
  else if (!templateValid) failures.add('url_template', 'Invalid URL template.');
  const compiled = compileError(pattern);
  if ('message' in compiled) {
    failures.add('__all__', `Bad regular expression: ${compiled.message}`);
    return failures;
  }
  // The pattern must also compile inside the boundary groups rendering wraps it in (a group of one of
  // their names would clash): Zulip accepts such a pattern and then fails to render.
  const prepared = compileError(preparePattern(pattern));
  if ('message' in prepared && prepared.message !== TOO_LARGE) {
    failures.add('__all__', `Bad regular expression: ${prepared.message}`);
    return failures;
  }
  if (!templateValid) return failures;
  const groups = new Set(namedGroupsOf(compiled.regex));
  const variables = new Set(urlTemplateVariables(urlTemplate));
  const missingInPattern = [...variables].filter((name) => !groups.has(name)).sort();
  if (missingInPattern.length > 0) {
    failures.add('__all__', `Group '${missingInPattern[0]}' in URL template is not present in linkifier pattern.`);
    return failures;
  }
  const missingInTemplate = [...groups].filter((name) => !variables.has(name)).sort();
  if (missingInTemplate.length > 0) failures.add('__all__', `Group '${missingInTemplate[0]}' in linkifier pattern is not present in URL template.`);
  return failures;
}

/** Django's unique_together message for (realm, pattern). */
export const DUPLICATE_LINKIFIER = 'Realm filter with this Realm and Pattern already exists.';

// ---------------------------------------------------------------------------------------------------
// Matching

/**
 * Zulip's prepare_linkifier_pattern: a match starts at the beginning of the text, after whitespace
 * (Unicode's too) or after one of `' " ( , : <`, and ends at the end of the text or before a character
 * that is not a letter or digit. Group 1 is that start, group 2 the text that becomes a link.
 */
function preparePattern(pattern: string): string {
  return `(?P<linkifier_before_match>^|\\s|\u0085|\\pZ|['"\\(,:<])(?P<linkifier_actual_match>${pattern})(?P<linkifier_after_match>$|[^\\pL\\pN])`;
}

/** A character that is neither a boundary before a match nor a letter or digit. */
const NOT_A_BOUNDARY = '\u0003';

/** The number of the linked text's group, and the names rendering gives its own groups. */
const OUTER = 2;
const BOUNDARY_GROUPS: ReadonlySet<string> = new Set(['linkifier_before_match', 'linkifier_actual_match', 'linkifier_after_match']);

export interface CompiledLinkifier {
  id: number;
  regex: RE2JS;
  /**
   * What every linked text of it begins with (requiredPrefix), as a JavaScript expression searching
   * from `lastIndex`: a match can only start where it occurs, so searches start there.
   */
  prefix: RegExp | null;
  /** The pattern's own named groups and their numbers in `regex`. */
  groups: Array<[string, number]>;
  template: UrlTemplate;
  /** Expanded URLs by the groups' values (the most recent ones). */
  urls: Memo<string | null>;
}

/** One match of a linkifier: [start, end) of the linked text in the subject, the whole match's start, and the URL. */
export interface LinkifierMatch {
  start: number;
  end: number;
  matchStart: number;
  url: string;
}

/** The URL of the matcher's current match: the template expanded with the pattern's named groups (null when one cannot be encoded). */
function expandMatch(linkifier: CompiledLinkifier, matcher: Matcher): string | null {
  const values: Record<string, string | null> = {};
  let key = '';
  for (const [name, group] of linkifier.groups) {
    const value = matcher.group(group);
    values[name] = value;
    key += value === null ? '\u0001' : `${value}\u0000`;
  }
  // The same references come back often (a ticket discussed all week): their URLs are remembered.
  const known = linkifier.urls.get(key);
  if (known !== undefined) return known;
  const url = linkifier.template.expand(values);
  linkifier.urls.set(key, url);
  return url;
}

/**
 * The matches of one linkifier in `subject` whose linked text lies within [lo, hi) and is not empty,
 * left to right, each searched for after the previous one's linked text (so the character after a
 * match may start the next, as in Zulip). `linkTo` turns a match's expanded URL (null when it could
 * not be expanded) into the link's URL, or refuses it (null): a refused match's whole text is skipped,
 * as Zulip's inline processor does.
 */
export function linkifierMatches(linkifier: CompiledLinkifier, subject: string, lo: number, hi: number, linkTo: (url: string | null) => string | null): LinkifierMatch[] {
  const out: LinkifierMatch[] = [];
  const { regex } = linkifier;
  let matcher: Matcher | null = null;
  let pos = 0;
  while (pos <= subject.length) {
    const from = searchFrom(linkifier, subject, pos);
    if (from < 0) break;
    matcher ??= regex.matcher(subject);
    if (!matcher.find(from)) break;
    const start = matcher.start(OUTER);
    const end = matcher.end(OUTER);
    const matchStart = matcher.start(0);
    const matchEnd = matcher.end(0);
    if (start < lo || end > hi || start === end) {
      pos = matchStart + 1;
      continue;
    }
    const url = linkTo(expandMatch(linkifier, matcher));
    if (url === null) {
      pos = Math.max(matchEnd, pos + 1);
      continue;
    }
    out.push({ start, end, matchStart, url });
    pos = end;
  }
  return out;
}

/**
 * Where a search for the linkifier's next match from `pos` should start, or -1 when there is none: the
 * search that reports groups scans the text much more slowly than the searches below, so it starts
 * just before the first place the linked text can begin (the character before it may be the
 * boundary), or only once a search that reports no groups (RE2's automaton) found that something
 * matches from `pos` on. From `pos` > 0 that text begins with a character that is no boundary, so `^`
 * cannot match there, as in the whole text.
 */
function searchFrom(linkifier: CompiledLinkifier, subject: string, pos: number): number {
  const { prefix } = linkifier;
  if (prefix === null) return linkifier.regex.test(pos === 0 ? subject : NOT_A_BOUNDARY + subject.slice(pos)) ? pos : -1;
  prefix.lastIndex = pos;
  const found = prefix.exec(subject);
  return found === null ? -1 : Math.max(pos, found.index - 1);
}

/** A bounded memo: up to twice `size` entries, the older half dropped at once (no per-entry bookkeeping). */
class Memo<V> {
  private young = new Map<string, V>();
  private old = new Map<string, V>();
  constructor(private readonly size: number) {}
  get(key: string): V | undefined {
    return this.young.get(key) ?? this.old.get(key);
  }
  set(key: string, value: V): void {
    if (this.young.size >= this.size) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}

/** An organization's linkifiers, compiled once (per version of the list: queries/linkifiers.ts). */
export class CompiledLinkifiers {
  readonly rows: readonly LinkifierRow[];
  readonly list: readonly CompiledLinkifier[];
  private readonly prefilter: Prefilter | null;
  private readonly topicCache = new Memo<TopicLink[]>(1_000);

  /** `prefilter: false` tries every linkifier on every text (bench/linkifiers.bench.ts measures what the prefilter saves). */
  constructor(rows: readonly LinkifierRow[], options: { prefilter?: boolean } = {}) {
    this.rows = rows;
    const list: CompiledLinkifier[] = [];
    const raw: string[] = [];
    for (const row of rows) {
      // A stored pattern that no longer compiles (written around the API) is skipped, as Zulip does.
      try {
        const regex = RE2JS.compile(preparePattern(row.pattern));
        const groups = Object.entries(regex.namedGroups()).filter(([name]) => !BOUNDARY_GROUPS.has(name));
        list.push({ id: row.id, regex, prefix: prefixExpression(row.pattern, 'g'), groups, template: compileUrlTemplate(row.url_template), urls: new Memo(500) });
        raw.push(row.pattern);
      } catch {
        continue;
      }
    }
    this.list = list;
    this.prefilter = list.length > 0 && options.prefilter !== false ? buildPrefilter(raw) : null;
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  /**
   * The positions (in `list`) of the linkifiers that may match somewhere in `subject`, ascending. A
   * linkifier's linked text is a match of its bare pattern, so one that matches nowhere cannot link.
   */
  candidates(subject: string): number[] {
    const prefilter = this.prefilter;
    if (prefilter === null) return this.list.map((_, i) => i);
    const out: number[] = [];
    for (const group of prefilter.prefixes) {
      // Each place where some prefix occurs (one search through the text), then the prefixes that
      // can begin with the character there, tested at that place only.
      const { gate } = group;
      gate.lastIndex = 0;
      let hit = gate.exec(subject);
      if (hit === null) continue;
      const found = new Set<number>();
      for (; hit !== null; hit = gate.exec(subject)) {
        const at = hit.index;
        const first = group.byFirst.size > 0 ? group.byFirst.get(String.fromCodePoint(subject.codePointAt(at)!)) : undefined;
        for (const tries of [first, group.anyFirst]) {
          for (const [index, prefix] of tries ?? []) {
            if (found.has(index)) continue;
            prefix.lastIndex = at;
            if (prefix.test(subject)) found.add(index);
          }
        }
        gate.lastIndex = at + 1;
      }
      out.push(...found);
    }
    if (prefilter.set) for (const id of prefilter.set.match(subject)) out.push(prefilter.setIndices[id]!);
    return out.length > 1 ? out.sort((a, b) => a - b) : out;
  }

  /**
   * Zulip's topic_links: every linkifier's matches in the topic (each linkifier searched on its own),
   * then the raw URLs of the topic; where two overlap, the earlier linkifier wins, then the earlier
   * match, and linkifiers win over raw URLs. In order of position. Remembered per topic.
   */
  topicLinks(topic: string): TopicLink[] {
    const known = this.topicCache.get(topic);
    if (known) return known;
    const links = computeTopicLinks(this, topic);
    this.topicCache.set(topic, links);
    return links;
  }
}

/**
 * Which linkifiers can match a text at all, told cheaply. Most patterns begin with something every
 * match contains: literal text (`BUG-`, `#`, `repo#`), maybe followed by a character class (`T[0-9]`,
 * `[0-9a-f]{16}`), which makes a JavaScript regular expression of fixed length (characters and
 * classes, no alternation or open repetition: linear in the text). All of them joined by `|` tell in
 * one search whether any can occur (for most messages: none), then each is tested. The other patterns
 * go into one RE2 set, an automaton that tells in one pass which of them match.
 */
interface Prefilter {
  /**
   * Case-sensitive prefixes, then case-insensitive ones: a gate that finds where any of them occurs,
   * and each (with its linkifier's position, matching only where it is tried) by the character it
   * begins with, or among those that may begin with several.
   */
  prefixes: Array<{ gate: RegExp; byFirst: Map<string, Array<[number, RegExp]>>; anyFirst: Array<[number, RegExp]> }>;
  set: RE2Set | null;
  /** The position in `list` of each pattern of the set. */
  setIndices: number[];
}

function buildPrefilter(patterns: string[]): Prefilter | null {
  const bySensitivity = new Map<boolean, Array<[number, string]>>([[false, []], [true, []]]);
  const inSet: string[] = [];
  const setIndices: number[] = [];
  patterns.forEach((pattern, index) => {
    const prefix = prefixExpression(pattern, '') && requiredPrefix(pattern);
    if (prefix) {
      bySensitivity.get(prefix.ignoreCase)!.push([index, prefix.source]);
    } else {
      inSet.push(pattern);
      setIndices.push(index);
    }
  });
  let set: RE2Set | null = null;
  if (inSet.length > 0) {
    try {
      set = new RE2Set();
      for (const pattern of inSet) set.add(pattern);
      set.compile();
    } catch {
      return null; // no prefilter: every linkifier is tried
    }
  }
  const prefixes: Prefilter['prefixes'] = [];
  for (const [ignoreCase, list] of bySensitivity) {
    if (list.length === 0) continue;
    const flags = ignoreCase ? 'iu' : '';
    const byFirst = new Map<string, Array<[number, RegExp]>>();
    const anyFirst: Array<[number, RegExp]> = [];
    for (const [index, source] of list) {
      const sticky: [number, RegExp] = [index, new RegExp(source, `${flags}y`)];
      // The literal character a prefix begins with (escaped if it is a syntax character), or none (a class).
      const first = ignoreCase || source.startsWith('[') ? null : source.startsWith('\\') ? source.charAt(1) : String.fromCodePoint(source.codePointAt(0)!);
      if (first === null) anyFirst.push(sticky);
      else byFirst.set(first, [...(byFirst.get(first) ?? []), sticky]);
    }
    try {
      prefixes.push({ gate: new RegExp(gateSource(list.map(([, source]) => source)), `${flags}g`), byFirst, anyFirst });
    } catch {
      return null; // not expected (each prefix compiled alone): then every linkifier is tried
    }
  }
  return { prefixes, set, setIndices };
}

/**
 * One expression matching where any of the prefixes does, their leading literal characters shared as a
 * trie (`AB(?:C|D)` rather than `ABC|ABD`), which JavaScript's engine tries far faster than a long flat
 * alternation. A prefix that is all literal ends its branch: for the gate, matching it is enough.
 */
function gateSource(sources: string[]): string {
  interface Node {
    children: Map<string, Node>;
    tails: Set<string>;
    complete: boolean;
  }
  const root: Node = { children: new Map(), tails: new Set(), complete: false };
  for (const source of sources) {
    let node = root;
    let i = 0;
    while (i < source.length && source.charAt(i) !== '[') {
      const length = source.charAt(i) === '\\' ? 2 : String.fromCodePoint(source.codePointAt(i)!).length;
      const unit = source.slice(i, i + length);
      if (source.charAt(i + length) === '{') break; // a repeated character stays with its count, in the tail
      let child = node.children.get(unit);
      if (!child) node.children.set(unit, (child = { children: new Map(), tails: new Set(), complete: false }));
      node = child;
      i += length;
    }
    if (i === source.length) node.complete = true;
    else node.tails.add(source.slice(i));
  }
  const emit = (node: Node): string => {
    if (node.complete) return '';
    // Literal branches first: each fails on its first character, where a class may go further.
    const branches = [...[...node.children].map(([unit, child]) => unit + emit(child)), ...node.tails];
    return branches.length === 1 ? branches[0]! : `(?:${branches.join('|')})`;
  };
  return emit(root);
}

/** The pattern's required prefix as a JavaScript regular expression with these flags (and `iu` for a case-insensitive one), or null. */
function prefixExpression(pattern: string, flags: string): RegExp | null {
  const prefix = requiredPrefix(pattern);
  if (prefix === null) return null;
  try {
    return new RegExp(prefix.source, prefix.ignoreCase ? `${flags}iu` : flags);
  } catch {
    return null; // not expected: the pattern is then looked for without a prefix
  }
}

/** Characters that are literal when escaped with a backslash (ASCII punctuation). */
const ESCAPED_LITERAL = /^[!-/:-@[-`{-~]$/;
/** A character as JavaScript regular expression source (valid with the `u` flag too), outside and inside a class. */
const escapeForJs = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
const escapeInClass = (text: string) => text.replace(/[\\\]^[-]/g, '\\$&');
/** The longest repetition a prefix spells out. */
const MAX_PREFIX_REPEAT = 16;

/**
 * A JavaScript regular expression (source, and whether it ignores case) that matches somewhere in
 * every text `pattern` (a pattern RE2 compiled) matches in: the pattern's leading characters and
 * simple classes (ASCII ranges, `\d`, `\w`), looking into leading groups that are neither optional
 * nor alternatives, with a fixed repetition (`[0-9a-f]{40}`, up to 16 times) at most at the end.
 * Null when there is none, or when the pattern is anything but plain at its start (`\Q…\E`, an
 * alternation at its top level, flags other than a leading `(?i)`): those patterns are looked for with
 * the RE2 set instead. A leading `(?i)` gives a case-insensitive prefix (Unicode case folding, as RE2).
 */
export function requiredPrefix(pattern: string): { source: string; ignoreCase: boolean } | null {
  if (pattern.includes('\\Q')) return null;
  const structure = groupStructure(pattern);
  if (structure === null || structure.topAlternation) return null;
  const flags = /^\(\?([imsU]+)\)/.exec(pattern);
  const ignoreCase = flags?.[1]!.includes('i') ?? false;
  let i = flags?.[0].length ?? 0;
  /** The prefix's pieces, and where the last element read (a character, a class or a group) begins among them. */
  const parts: string[] = [];
  let lastElement = 0;
  const ends: number[] = [];
  const groupStarts: number[] = [];
  scan: while (i < pattern.length) {
    if (ends.length > 0 && i === ends[ends.length - 1]) {
      ends.pop();
      lastElement = groupStarts.pop()!;
      i++;
      if (isQuantifier(pattern.charAt(i))) break; // a repeated group: what follows is not next to it
      continue;
    }
    const c = pattern.charAt(i);
    if (c === '(') {
      const group = structure.groups.get(i);
      const opener = /^\((?:\?:|\?P?<[A-Za-z0-9_]+>)?/.exec(pattern.slice(i))![0];
      if (!group || group.alternation || (opener === '(' && pattern.charAt(i + 1) === '?') || isOptional(pattern, group.close + 1)) {
        // A flag group (`(?i)`) is no element: a repetition after it applies to the element before it.
        let after = i;
        for (let flagGroup = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(after)); flagGroup; flagGroup = /^\(\?[a-zA-Z-]*\)/.exec(pattern.slice(after))) after += flagGroup[0].length;
        if (after > i && isQuantifier(pattern.charAt(after))) parts.length = lastElement;
        break;
      }
      ends.push(group.close);
      groupStarts.push(parts.length);
      i += opener.length;
      continue;
    }
    if (c === '^' && parts.length === 0) {
      i++;
      continue;
    }
    const atom = readAtom(pattern, i);
    // Outside ASCII, case-insensitive matching is left to the RE2 set (RE2 and JavaScript fold a few characters differently).
    if (atom === null || (ignoreCase && [...atom.source].some((ch) => ch.charCodeAt(0) > 0x7f))) break;
    const next = atom.end;
    if (isOptional(pattern, next)) break;
    const repeat = /^\{([0-9]+)(,[0-9]*)?\}/.exec(pattern.slice(next, next + 12));
    if (repeat) {
      const times = Math.min(Number(repeat[1]), MAX_PREFIX_REPEAT);
      if (times === 0) break;
      lastElement = parts.length;
      parts.push(times === 1 ? atom.source : `${atom.source}{${times}}`);
      // An exact count short enough to spell out keeps what follows next to it.
      if (repeat[2] !== undefined || Number(repeat[1]) > MAX_PREFIX_REPEAT) break scan;
      i = next + repeat[0].length;
      continue;
    }
    if (pattern.charAt(next) === '{') break; // `{` read as a literal by RE2 in some places: not worth telling apart
    lastElement = parts.length;
    parts.push(atom.source);
    if (isQuantifier(pattern.charAt(next))) break; // `x+`: once at least, but what follows need not be next to it
    i = next;
  }
  const source = parts.join('');
  return source === '' ? null : { source, ignoreCase };
}

/** The character or class at `at` as JavaScript regular expression source, or null when it is anything else. */
function readAtom(pattern: string, at: number): { source: string; end: number } | null {
  const c = pattern.charAt(at);
  if (c === '\\') {
    const escaped = pattern.charAt(at + 1);
    if (ESCAPED_LITERAL.test(escaped)) return { source: escapeForJs(escaped), end: at + 2 };
    if (escaped === 'd') return { source: '[0-9]', end: at + 2 };
    if (escaped === 'w') return { source: '[0-9A-Za-z_]', end: at + 2 };
    return null;
  }
  if (c === '[') return readClass(pattern, at);
  if ('.^$*+?]{}|)'.includes(c)) return null;
  const char = String.fromCodePoint(pattern.codePointAt(at)!);
  return { source: escapeForJs(char), end: at + char.length };
}

/** A bracket class of ASCII characters, ranges, escaped punctuation, `\d` and `\w` (negated or not), or null. */
function readClass(pattern: string, at: number): { source: string; end: number } | null {
  let i = at + 1;
  let out = '[';
  if (pattern.charAt(i) === '^') {
    out += '^';
    i++;
  }
  let first = true;
  while (i < pattern.length) {
    let c = pattern.charAt(i);
    if (c === ']' && !first) return { source: `${out}]`, end: i + 1 };
    first = false;
    if (c === '[') return null; // [:alpha:] and the like
    if (c === '\\') {
      const escaped = pattern.charAt(i + 1);
      if (escaped === 'd') out += '0-9';
      else if (escaped === 'w') out += '0-9A-Za-z_';
      else if (ESCAPED_LITERAL.test(escaped)) out += escapeInClass(escaped);
      else return null;
      i += 2;
      continue;
    }
    if (c.charCodeAt(0) > 0x7e || c.charCodeAt(0) < 0x20) return null;
    if (pattern.charAt(i + 1) === '-' && pattern.charAt(i + 2) !== ']' && pattern.charAt(i + 2) !== '') {
      const to = pattern.charAt(i + 2);
      if (to === '\\' || to === '[' || to.charCodeAt(0) > 0x7e || to.charCodeAt(0) < 0x20) return null;
      out += `${escapeInClass(c)}-${escapeInClass(to)}`;
      i += 3;
      continue;
    }
    c = escapeInClass(c);
    out += c;
    i++;
  }
  return null;
}

const isQuantifier = (c: string) => c === '*' || c === '+' || c === '?' || c === '{';
const isOptional = (pattern: string, at: number) => pattern.charAt(at) === '?' || pattern.charAt(at) === '*' || /^\{0*[,}]/.test(pattern.slice(at, at + 3)) || pattern.startsWith('{0', at);

/** Each group's closing parenthesis and whether it holds an alternation of its own; whether the pattern does at its top level. */
function groupStructure(pattern: string): { groups: Map<number, { close: number; alternation: boolean }>; topAlternation: boolean } | null {
  const groups = new Map<number, { close: number; alternation: boolean }>();
  const open: Array<{ at: number; alternation: boolean }> = [];
  let topAlternation = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern.charAt(i);
    if (c === '\\') {
      i++;
    } else if (c === '[') {
      i = classEnd(pattern, i);
      if (i < 0) return null;
    } else if (c === '(') {
      open.push({ at: i, alternation: false });
    } else if (c === ')') {
      const group = open.pop();
      if (!group) return null;
      groups.set(group.at, { close: i, alternation: group.alternation });
    } else if (c === '|') {
      if (open.length > 0) open[open.length - 1]!.alternation = true;
      else topAlternation = true;
    }
  }
  return open.length === 0 ? { groups, topAlternation } : null;
}

/** The index of the `]` closing the character class opened at `at`, or -1. */
function classEnd(pattern: string, at: number): number {
  let i = at + 1;
  if (pattern.charAt(i) === '^') i++;
  if (pattern.charAt(i) === ']') i++;
  while (i < pattern.length) {
    const c = pattern.charAt(i);
    if (c === '\\') {
      i += 2;
    } else if (pattern.startsWith('[:', i)) {
      const end = pattern.indexOf(':]', i + 2);
      if (end < 0) return -1;
      i = end + 2;
    } else if (c === ']') {
      return i;
    } else {
      i++;
    }
  }
  return -1;
}

// ---------------------------------------------------------------------------------------------------
// Topic links

interface TopicMatch extends TopicLink {
  index: number;
}

/** What splits a topic into the pieces a raw URL is looked for at the start of (Zulip's basic_link_splitter). */
const TOPIC_SPLITTER = /[ !;),'"]/g;
/** What may follow a raw URL in its piece (Zulip's link regex: punctuation, then the end). */
const TRAILING_PUNCTUATION = /^[!:;?),.'">]*$/;

const bareLinks = createBareLinkFinder();

function createBareLinkFinder() {
  const linkify = new MarkdownIt('default', { linkify: true }).linkify;
  linkify.set({ fuzzyLink: true, fuzzyEmail: true, fuzzyIP: false });
  linkify.add('ftp:', null).add('//', null);
  return linkify;
}

/** Top-level domains Zulip does not link bare (file extensions far more often). */
const FILE_EXTENSION_TLDS = new Set(['java', 'md', 'mov', 'py', 'zip']);

/** The raw URL at the start of a piece of a topic: its text and the URL Zulip gives it (https:// when it has no scheme). */
function rawUrlAtStart(piece: string): TopicLink | null {
  const match = bareLinks.match(piece)?.[0];
  if (!match || match.index !== 0 || !TRAILING_PUNCTUATION.test(piece.slice(match.lastIndex))) return null;
  const raw = match.raw;
  if (/^https?:/i.test(raw)) return { text: raw, url: raw };
  if (match.schema !== '' && !(match.schema === 'mailto:' && !/^mailto:/i.test(raw))) return null;
  const host = /^[^/?#:]*/.exec(raw)?.[0] ?? '';
  if (match.schema === '' && FILE_EXTENSION_TLDS.has(host.slice(host.lastIndexOf('.') + 1).toLowerCase())) return null;
  return { text: raw, url: `https://${raw}` };
}

function computeTopicLinks(linkifiers: CompiledLinkifiers, topic: string): TopicLink[] {
  const matches: TopicMatch[] = [];
  // Linkifier matches, by precedence (the linkifier's place), then position. Topic links are not
  // sanitized (Zulip leaves that to clients, which escape them).
  for (const i of topic === '' ? [] : linkifiers.candidates(topic)) {
    for (const m of linkifierMatches(linkifiers.list[i]!, topic, 0, topic.length, (url) => url)) {
      matches.push({ text: topic.slice(m.start, m.end), url: m.url, index: m.matchStart });
    }
  }
  // Raw URLs, after every linkifier match. Each is one of the topic's own links too (a URL has a dot or
  // a colon), so a topic without any skips the piece-by-piece search.
  const mayHaveUrls = /[.:]/.test(topic) && bareLinks.test(topic);
  for (let pos = 0; mayHaveUrls && pos < topic.length; ) {
    TOPIC_SPLITTER.lastIndex = pos;
    const split = TOPIC_SPLITTER.exec(topic);
    const end = split ? split.index : topic.length;
    const link = end > pos ? rawUrlAtStart(topic.slice(pos, end)) : null;
    if (link) matches.push({ ...link, index: pos });
    pos = end + 1;
  }
  // Overlapping matches: the first in this order wins (Zulip's overlap test, on the whole match's start
  // and the linked text's length).
  const overlaps = (a: TopicMatch, b: TopicMatch) => (b.index <= a.index && a.index < b.index + b.text.length) || (a.index <= b.index && b.index < a.index + a.text.length);
  const applied: TopicMatch[] = [];
  for (const match of matches) if (applied.every((kept) => !overlaps(kept, match))) applied.push(match);
  applied.sort((a, b) => a.index - b.index);
  return applied.map(({ text, url }) => ({ text, url }));
}

// ---------------------------------------------------------------------------------------------------
// Links in messages

/** Schemes a linkifier may link to (Zulip's allowed_schemes). */
const ALLOWED_SCHEMES = new Set([
  'http', 'https', 'ftp', 'file', 'bitcoin', 'geo', 'im', 'irc', 'ircs', 'magnet', 'mailto', 'matrix', 'mms', 'news', 'nntp',
  'openpgp4fpr', 'sip', 'sms', 'smsto', 'ssh', 'tel', 'urn', 'webcal', 'wtai', 'xmpp',
]);
const USES_NETLOC = new Set(['', 'ftp', 'http', 'gopher', 'nntp', 'telnet', 'imap', 'wais', 'file', 'mms', 'https', 'shttp', 'snews', 'prospero', 'rtsp', 'rtspu', 'rsync', 'svn', 'svn+ssh', 'sftp', 'nfs', 'git', 'git+ssh', 'ws', 'wss']);

interface SplitUrl {
  scheme: string;
  netloc: string;
  path: string;
  query: string;
  fragment: string;
}

/** Python's urllib.parse.urlsplit (what Zulip's sanitize_url reads a URL with); null where it raises. */
function urlsplit(input: string): SplitUrl | null {
  // Leading and trailing C0 controls and spaces are dropped, tabs and newlines removed (as Python does).
  let url = trimWhere(input, (code) => code <= 0x20).replace(/[\t\r\n]/g, '');
  let scheme = '';
  const colon = url.indexOf(':');
  if (colon > 0 && /^[A-Za-z][A-Za-z0-9+\-.]*$/.test(url.slice(0, colon))) {
    scheme = url.slice(0, colon).toLowerCase();
    url = url.slice(colon + 1);
  }
  let netloc = '';
  if (url.startsWith('//')) {
    const rest = url.slice(2);
    const stop = rest.search(/[/?#]/);
    netloc = stop === -1 ? rest : rest.slice(0, stop);
    url = stop === -1 ? '' : rest.slice(stop);
    if (netloc.includes('[') !== netloc.includes(']')) return null;
  }
  let fragment = '';
  const hash = url.indexOf('#');
  if (hash !== -1) {
    fragment = url.slice(hash + 1);
    url = url.slice(0, hash);
  }
  let query = '';
  const question = url.indexOf('?');
  if (question !== -1) {
    query = url.slice(question + 1);
    url = url.slice(0, question);
  }
  return { scheme, netloc, path: url, query, fragment };
}

function urlunsplit({ scheme, netloc, path, query, fragment }: SplitUrl): string {
  let url = path;
  if (netloc || (scheme && USES_NETLOC.has(scheme) && !url.startsWith('//'))) {
    if (url && !url.startsWith('/')) url = `/${url}`;
    url = `//${netloc}${url}`;
  }
  if (scheme) url = `${scheme}:${url}`;
  if (query) url = `${url}?${query}`;
  if (fragment) url = `${url}#${fragment}`;
  return url;
}

/**
 * Zulip's sanitize_url for a linkifier's URL: relative paths and fragments stay, an address without a
 * scheme becomes mailto:, anything else without one gets http://, and only the allowed schemes pass
 * (null: the match stays text).
 */
export function sanitizeLinkUrl(url: string): string | null {
  const parts = urlsplit(url.replace(/ /g, '%20'));
  if (parts === null) return '';
  if (parts.scheme === '' && parts.netloc === '' && parts.path.includes('@')) {
    parts.scheme = 'mailto';
  } else if (parts.scheme === '' && parts.netloc === '' && parts.path.startsWith('/')) {
    return urlunsplit({ ...parts, scheme: '', netloc: '' });
  } else if (parts.scheme === '' && parts.netloc === '' && parts.path === '' && parts.query === '' && parts.fragment !== '') {
    return urlunsplit({ scheme: '', netloc: '', path: '', query: '', fragment: parts.fragment });
  }
  if (parts.scheme === '') return sanitizeLinkUrl(`http://${url}`);
  if (!ALLOWED_SCHEMES.has(parts.scheme)) return null;
  return urlunsplit(parts);
}

/** Zulip's rewrite_local_links_to_relative: links into the organization's own app become relative. */
export function relativeToRealm(href: string, realmUrl: string): string {
  const prefix = `${realmUrl}/`;
  return href.startsWith(`${prefix}#`) || href.startsWith(`${prefix}user_uploads/`) ? href.slice(prefix.length) : href;
}
