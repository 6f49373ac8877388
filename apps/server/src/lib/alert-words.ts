// Alert words (Zulip's AlertWord): which words a user may keep, how they compare, and which users'
// words a message contains. Pure; the words come from data/alert-words.repo.ts.
//
// Zulip's matching rules (zerver/lib/markdown AlertWordNotificationProcessor), implemented here with
// one scan of the message for all the candidate words at once (a trie of the words, walked from every
// position where a word may start):
// - case-insensitive: the message and the words are lower-cased (JavaScript's toLowerCase, the same
//   Unicode mapping as Python's str.lower);
// - a word matches only as a whole: it starts at the start of the message or after a space, a line
//   break or one of ( " . , ' ; [ * ` > and ends at the end of the message or before a space, a line
//   break or one of ) ? : . , ' ; ] ! * ` (no double quote after a word: Zulip's set lists `",` as
//   one two-character entry, which never equals a character); tabs count as spaces and \r as a line
//   break (Zulip's renderer normalizes them before looking);
// - text inside fenced code blocks is not looked at (Zulip looks after its fenced-code step has set
//   the blocks aside); inline code, indented code, links, quotes and spoilers are.
// One difference, on purpose: Zulip's check of the character before a word reads one position too
// far back, so a word starting at the message's second character matches whatever the first one is
// ("ne" in "one …"); here the character right before the word decides, as everywhere else.
import { fencedCodeLines } from './markdown.ts';

/** Zulip's limit of an alert word's length (characters, before trimming). */
export const MAX_ALERT_WORD_LENGTH = 100;

/** How alert words compare: case-insensitively (the key is stored beside the word as typed). */
export const alertWordKey = (word: string): string => word.toLowerCase();

/** Python's str.isspace characters: what Zulip's strip() removes around an alert word. */
const PYTHON_SPACE: ReadonlySet<string> = new Set([
  ...'\t\n\v\f\r\u001c\u001d\u001e\u001f \u0085\u00a0\u1680\u2028\u2029\u202f\u205f\u3000',
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
]);

function strip(text: string): string {
  let from = 0;
  let to = text.length;
  while (from < to && PYTHON_SPACE.has(text[from]!)) from++;
  while (to > from && PYTHON_SPACE.has(text[to - 1]!)) to--;
  return text.slice(from, to);
}

/**
 * The words of an add request as Zulip keeps them: each trimmed, empty ones dropped, one per key (the
 * last spelling of a key wins, at the place of its first appearance).
 */
export function wordsToAdd(words: readonly string[]): Array<{ word: string; key: string }> {
  const byKey = new Map<string, string>();
  for (const raw of words) {
    const word = strip(raw);
    if (word !== '') byKey.set(alertWordKey(word), word);
  }
  return [...byKey].map(([key, word]) => ({ word, key }));
}

const BEFORE: ReadonlySet<string> = new Set([' ', '\t', '\n', '\r', '(', '"', '.', ',', "'", ';', '[', '*', '`', '>']);
const AFTER: ReadonlySet<string> = new Set([' ', '\t', '\n', '\r', ')', '?', ':', '.', ',', "'", ';', ']', '!', '*', '`']);

/**
 * The text alert words are looked for in: the content lower-cased, with the lines of its fenced code
 * blocks blanked (a block Zulip's fenced-code step takes: its opening fence at the start of a line,
 * after blanks only). Line breaks are kept, so what is around a block still reads as a line break.
 */
export function alertWordText(content: string): string {
  const normalized = content.replace(/\r\n?/g, '\n');
  if (!normalized.includes('```') && !normalized.includes('~~~')) return normalized.toLowerCase();
  const lines = normalized.split('\n');
  for (const [start, end] of fencedCodeLines(normalized)) {
    if (!/^\s*(?:`{3,}|~{3,})/.test(lines[start] ?? '')) continue;
    for (let i = start; i < end && i < lines.length; i++) lines[i] = '';
  }
  return lines.join('\n').toLowerCase();
}

interface TrieNode {
  next: Map<string, TrieNode>;
  /** Users whose word ends here. */
  users: number[] | null;
}

/** Alert words of several users, compiled once into a trie of their keys. */
export class AlertWordMatcher {
  private readonly root: TrieNode = { next: new Map(), users: null };
  private readonly userCount: number;

  constructor(words: Iterable<{ userId: number; key: string }>) {
    const users = new Set<number>();
    for (const { userId, key } of words) {
      if (key === '') continue;
      let node = this.root;
      for (const ch of key.split('')) {
        let child = node.next.get(ch);
        if (!child) node.next.set(ch, (child = { next: new Map(), users: null }));
        node = child;
      }
      (node.users ??= []).push(userId);
      users.add(userId);
    }
    this.userCount = users.size;
  }

  /** The users with at least one word in `text` (an alertWordText). */
  usersIn(text: string): Set<number> {
    const found = new Set<number>();
    if (this.userCount === 0) return found;
    const n = text.length;
    for (let start = 0; start < n; start++) {
      if (start > 0 && !BEFORE.has(text[start - 1]!)) continue;
      let node: TrieNode | undefined = this.root;
      for (let i = start; i < n; i++) {
        node = node.next.get(text[i]!);
        if (!node) break;
        if (node.users && (i + 1 === n || AFTER.has(text[i + 1]!))) {
          for (const id of node.users) found.add(id);
          if (found.size === this.userCount) return found;
        }
      }
    }
    return found;
  }
}

/** The users among `words`' owners with an alert word in the message `content`. */
export function usersWithAlertWords(content: string, words: ReadonlyArray<{ userId: number; key: string }>): Set<number> {
  if (words.length === 0) return new Set();
  return new AlertWordMatcher(words).usersIn(alertWordText(content));
}
