// Alert-word matching (lib/alert-words.ts): Zulip's rules, case by case — case, whole words, the
// punctuation allowed around a word, Unicode, phrases, several users at once, code blocks — and how the
// words of an add request are cleaned.
import { describe, expect, it } from 'vitest';
import { AlertWordMatcher, alertWordText, usersWithAlertWords, wordsToAdd } from '../../src/lib/alert-words.ts';

/** Whether `word` (one user's) matches in `content`. */
const matches = (word: string, content: string) => usersWithAlertWords(content, [{ userId: 1, key: word.toLowerCase() }]).has(1);

describe('alert word matching', () => {
  it('is case-insensitive, at the start, in the middle and at the end of a message', () => {
    for (const content of ['alert at the start', 'in the ALERT middle', 'at the end: Alert', 'ALERT']) expect(matches('alert', content)).toBe(true);
    expect(matches('ALERT', 'quiet alert')).toBe(true);
    expect(matches('alert', 'nothing here')).toBe(false);
  });

  it('matches whole words only: never inside a longer word, a URL or a hyphenated word', () => {
    expect(matches('one', "Don't alert on clone, twofold or seventytwofold")).toBe(false);
    expect(matches('two', "Don't alert on clone, twofold or seventytwofold")).toBe(false);
    expect(matches('one', 'Don\'t alert on http://t.co/one/ URLs')).toBe(false);
    expect(matches('one', "Don't alert on http://t.co/one URLs")).toBe(false);
    expect(matches('one', 'one-two')).toBe(false);
    expect(matches('one', 'some@one')).toBe(false);
    expect(matches('one', 'the one_two')).toBe(false);
    // The character right before the word decides, at the message's second character too.
    expect(matches('ne', 'one two')).toBe(false);
    expect(matches('ne', 'a ne')).toBe(true);
  });

  it("accepts Zulip's punctuation before and after a word", () => {
    for (const before of [' ', '\n', '(', '"', '.', ',', "'", ';', '[', '*', '`', '>', '\t']) {
      expect(matches('alert', `x${before}alert`), `before ${JSON.stringify(before)}`).toBe(true);
    }
    for (const after of [' ', '\n', ')', '?', ':', '.', ',', "'", ';', ']', '!', '*', '`', '\t']) {
      expect(matches('alert', `alert${after}x`), `after ${JSON.stringify(after)}`).toBe(true);
    }
    for (const before of ['-', '/', '_', '@', '#', '!', ')', ':', '\u00a0', 'é']) {
      expect(matches('alert', `x${before}alert`), `before ${JSON.stringify(before)}`).toBe(false);
    }
    for (const after of ['-', '/', '_', '(', '[', '>', '\u00a0', 's', '"']) {
      expect(matches('alert', `alert${after}x`), `after ${JSON.stringify(after)}`).toBe(false);
    }
    // Zulip's own cases.
    expect(matches('one', 'This one? should alert')).toBe(true);
    expect(matches('three', 'Definitely time for three.')).toBe(true);
    expect(matches('one', "Case of ONE, won't stop me")).toBe(true);
    expect(matches('one', "One o'clock")).toBe(true);
    expect(matches('alert', '**alert**')).toBe(true);
    expect(matches('alert', '(alert)')).toBe(true);
    expect(matches('alert', '[alert](https://example.com)')).toBe(true);
    expect(matches('alert', '> alert')).toBe(true);
    // No double quote after a word: the set Zulip checks has `",` as one two-character entry.
    expect(matches('alert', '"alert"')).toBe(false);
  });

  it('handles phrases, Unicode and words with punctuation of their own', () => {
    expect(matches('multi-word word', 'a multi-word word here')).toBe(true);
    expect(matches('how are you', 'hello, how are you doing')).toBe(true);
    expect(matches('how are you', 'how are your plans')).toBe(false);
    expect(matches('☃', 'I like ☃ a lot')).toBe(true);
    expect(matches('☃', 'I like☃ a lot')).toBe(false);
    expect(matches('🐙', 'look: 🐙!')).toBe(true);
    expect(matches('réglementaire', "et j'espère qu'il n'y n' réglementaire a pas")).toBe(true);
    expect(matches('énormément', 'bonjour est (énormément) ce a quoi')).toBe(true);
    expect(matches('ÉNORMÉMENT', 'énormément')).toBe(true);
    expect(matches('straße', 'die STRASSE')).toBe(false);
    expect(matches('@mobile-core', 'ping @mobile-core please')).toBe(true);
    expect(matches('issue124', 'I was talking about the issue124 on github.')).toBe(true);
  });

  it('does not look inside fenced code blocks, but does in inline code, indented code, quotes and spoilers', () => {
    expect(matches('alert', '```\nalert\n```')).toBe(false);
    expect(matches('alert', '~~~python\nprint("alert")\nalert\n~~~\n')).toBe(false);
    expect(matches('alert', 'before\n```\ncode\n```\nalert after')).toBe(true);
    expect(matches('alert', '```\nnever closed\nalert')).toBe(false);
    expect(matches('alert', '```\nalert\n```\n```\nx\n```')).toBe(false);
    expect(matches('alert', 'use `alert` here')).toBe(true);
    expect(matches('alert', 'text\n\n    alert in indented code')).toBe(true);
    expect(matches('alert', '```quote\nalert in a quote\n```')).toBe(true);
    expect(matches('alert', '```spoiler Header\nalert inside\n```')).toBe(true);
    expect(matches('alert', '```quote\n```python\nalert in nested code\n```\n```')).toBe(false);
    // A fence Zulip does not take for one (after a quote marker) does not hide its text.
    expect(matches('alert', '> ```\n> alert\n> ```')).toBe(true);
    expect(matches('alert', 'line one\r\nalert\r\n')).toBe(true);
  });

  it('finds every user whose word occurs, overlapping words included (one scan for all)', () => {
    const words = [
      { userId: 1, key: 'how' },
      { userId: 2, key: 'this possible' },
      { userId: 3, key: 'hello' },
      { userId: 4, key: 'hello' },
      { userId: 5, key: 'how are you' },
      { userId: 6, key: 'hey' },
    ];
    const matcher = new AlertWordMatcher(words);
    expect([...matcher.usersIn(alertWordText('hello how is this possible how are you doing today'))].sort()).toEqual([1, 2, 3, 4, 5]);
    expect([...matcher.usersIn(alertWordText('nothing'))]).toEqual([]);
    expect([...new AlertWordMatcher([]).usersIn('anything')]).toEqual([]);
    // Many copies of one long word, and a long message: still one scan.
    const many = Array.from({ length: 2000 }, (_, i) => ({ userId: 100 + i, key: 'x'.repeat(10) }));
    expect(new AlertWordMatcher([...many, { userId: 7, key: 'issue124' }]).usersIn(alertWordText(`${'range(x) '.repeat(500)} issue124 `)).size).toBe(1);
  });
});

describe('words to add', () => {
  it('are trimmed (Python whitespace), empty ones dropped, one per case-insensitive key, the last spelling kept', () => {
    expect(wordsToAdd(['one ', '\n two', 'three', '   ', '', '\u00a0four\u2003'])).toEqual([
      { word: 'one', key: 'one' },
      { word: 'two', key: 'two' },
      { word: 'three', key: 'three' },
      { word: 'four', key: 'four' },
    ]);
    expect(wordsToAdd(['Alert', 'other', 'ALERT'])).toEqual([
      { word: 'ALERT', key: 'alert' },
      { word: 'other', key: 'other' },
    ]);
    // Inner spaces stay.
    expect(wordsToAdd([' two  words '])).toEqual([{ word: 'two  words', key: 'two  words' }]);
  });
});
