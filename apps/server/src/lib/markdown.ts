// Parley's message renderer: Markdown in Zulip's dialect to the HTML Zulip stores as a message's
// rendered_content. Pure and synchronous: everything the content refers to (users, groups, channels)
// is loaded by the caller first, with the names extractReferences() finds, and passed in.
//
// Built on markdown-it (CommonMark) with Zulip's differences:
// - a single newline inside a paragraph is a line break (`<br>`); raw HTML is never passed through;
// - no `_`/`__` emphasis, no setext headings (`===` underlines), no reference links (`[x]: url`), no
//   images (`![x](url)` is "!" and a link), no `<url>` autolinks; strikethrough is `<del>`;
// - links only to http:, https: and mailto: URLs and to uploaded files (`/user_uploads/…`; anything
//   else stays text); bare URLs, www. names,
//   domain names with a known top-level domain and e-mail addresses are linked; a link with empty text
//   shows its URL;
// - code blocks (fenced with ``` or ~~~, or indented) render as Zulip's
//   `<div class="codehilite" data-code-language="Python"><pre><span></span><code>…</code></pre></div>`,
//   without highlighting; trailing blanks of each line and blank lines at either end are dropped;
// - fences ```quote (or ```quoted) and ```spoiler <header> hold Markdown: a blockquote and Zulip's
//   spoiler block; a fence line closes the innermost open fence (Zulip's nesting rule);
// - Zulip's inline syntax: @**user**, @**user|id**, @_**silent**, @**all** (and everyone, channel,
//   stream, topic), @*group*, @_*group*, #**channel**, #**channel>topic** and :emoji_name:, none of
//   them inside code. A mention or link that does not resolve stays as its literal text.
//
// Not implemented (Zulip features with no equivalent here yet): syntax highlighting, ```math and
// $$TeX$$ (a ```math block renders as a code block), <time:…> timestamps, inline image previews,
// Unicode emoji characters to emoji spans, emoticon translation, message links
// (#**channel>topic@id**), and Zulip's list quirks (two-space-indented ordered sub-lists).
import MarkdownIt from 'markdown-it';
import type { Env, MarkdownIt as MarkdownItInstance, Renderer, StateBlock, StateCore, StateInline, Token } from 'markdown-it';
import { emojiCodeForName } from './emoji.ts';
import { applyLinkifiers, type LinkifierRendering } from './markdown/linkifiers.ts';
import { REALM_EMOJI_TOKEN, realmEmojiNamed, renderRealmEmoji } from './markdown/realm-emoji.ts';
import type { EmojiInfo, RealmEmojiIndex } from './realm-emoji.ts';

// ---------------------------------------------------------------------------------------------------
// Public API

/** Names and ids the content refers to, found without rendering, so the caller can load them in one query. */
export interface MarkdownReferences {
  /** From @**Name**, @_**Name** (not ids; not wildcards). Unique, in order of first appearance. */
  userNames: string[];
  /** From @**Name|12**, @_**Name|12**. */
  userIds: number[];
  /** From @*group*, @_*group*. */
  groupNames: string[];
  /** From #**channel** and #**channel>topic**. */
  channelNames: string[];
}

export interface MarkdownUser {
  id: number;
  full_name: string;
}

export interface MarkdownContext {
  /**
   * Active users of the organization whose full name equals (case-insensitively) one of
   * references.userNames, plus the users of references.userIds. All users sharing a name must be
   * here: @**Name** resolves only when exactly one of them has it.
   */
  users: MarkdownUser[];
  groups: { id: number; name: string }[];
  channels: { id: number; name: string }[];
  /** Builds the URL of a channel/topic link (the caller knows the realm URL). Default: {@link defaultNarrowUrl}. */
  narrowUrl?: (channel: { id: number; name: string }, topic?: string) => string;
  /** The organization's linkifiers (lib/markdown/linkifiers.ts), applied to the text; none when absent. */
  linkifiers?: LinkifierRendering;
  /** Mail of the e-mail gateway: indented lines are not code blocks (Zulip's email_gateway rendering). */
  emailGateway?: boolean;
  /** The organization's custom emoji (lib/realm-emoji.ts); none when absent. */
  realmEmoji?: RealmEmojiIndex;
}

export interface RenderedMessage {
  /** '' for empty content. */
  html: string;
  /** Non-silent user mentions that resolved (sorted, unique). */
  mentionedUserIds: number[];
  /** Non-silent group mentions that resolved (sorted, unique). */
  mentionedGroupIds: number[];
  /** @**all**, @**everyone**, @**channel**, @**stream** (non-silent). */
  streamWildcardMentioned: boolean;
  /** @**topic** (non-silent). */
  topicWildcardMentioned: boolean;
}

/** The users, groups and channels `content` mentions or links, without rendering it. */
export function extractReferences(content: string): MarkdownReferences {
  const userNames = new UniqueList<string>((name) => fold(name));
  const userIds = new UniqueList<number>((id) => id);
  const groupNames = new UniqueList<string>((name) => fold(name));
  const channelNames = new UniqueList<string>((name) => name);
  forEachToken(md.parse(content, {}), (token) => {
    if (token.type !== REFERENCE_TOKEN) return;
    const reference = referenceOf(token);
    switch (reference.kind) {
      case 'user':
        if (reference.id === null) userNames.add(reference.name);
        else userIds.add(reference.id);
        break;
      case 'group':
        groupNames.add(reference.name);
        break;
      case 'channel':
        channelNames.add(reference.name);
        break;
      case 'wildcard':
        break;
    }
  });
  return { userNames: userNames.items, userIds: userIds.items, groupNames: groupNames.items, channelNames: channelNames.items };
}

/**
 * The lines [start, end) of the content's fenced code blocks (```quote and ```spoiler blocks are not
 * code), fences included, as this renderer reads them: for alert words (lib/alert-words.ts), which
 * Zulip does not look for in code blocks. Lines are counted after \r\n and \r became \n.
 */
export function fencedCodeLines(content: string): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  forEachToken(md.parse(content, {}), (token) => {
    if (token.type === 'fence' && token.map) ranges.push([token.map[0], token.map[1]]);
  });
  return ranges;
}

/** Renders a message and reports whom it mentions. */
export function renderMessage(content: string, ctx: MarkdownContext): RenderedMessage {
  const state = newRenderState(ctx);
  const html = render(content, state);
  const { mentions } = state;
  return {
    html,
    mentionedUserIds: [...mentions.users].sort((a, b) => a - b),
    mentionedGroupIds: [...mentions.groups].sort((a, b) => a - b),
    streamWildcardMentioned: mentions.channelWildcard,
    topicWildcardMentioned: mentions.topicWildcard,
  };
}

/** For channel descriptions etc.: the same dialect, no mention flags. */
export function renderMarkdown(content: string, ctx?: Partial<MarkdownContext>): string {
  return render(content, newRenderState(ctx ?? {}));
}

/** Zulip's narrow URL of a channel (`/#narrow/channel/7-general`) or of a topic in it (`…/topic/lunch.20plans`). */
export function defaultNarrowUrl(channel: { id: number; name: string }, topic?: string): string {
  const base = `/#narrow/channel/${channel.id}-${encodeHashComponent(channel.name.replace(/ /g, '-'))}`;
  return topic === undefined ? base : `${base}/topic/${encodeHashComponent(topic)}`;
}

// ---------------------------------------------------------------------------------------------------
// What the parser records

/** One @-mention or #-link, as written (resolved only when rendering). */
type Reference =
  | { kind: 'user'; name: string; id: number | null; silent: boolean }
  | { kind: 'wildcard'; word: string; scope: 'channel' | 'topic'; silent: boolean }
  | { kind: 'group'; name: string; silent: boolean }
  | { kind: 'channel'; name: string; topic: string | null };

/** Inline token of a Reference: meta.reference holds it, markup the source text. */
const REFERENCE_TOKEN = 'zulip_reference';
/** Inline token of a known :emoji:: meta.emoji holds name and code. */
const EMOJI_TOKEN = 'zulip_emoji';

function referenceOf(token: Token): Reference {
  return (token.meta as { reference: Reference }).reference;
}

function emojiOf(token: Token): { name: string; code: string } {
  return (token.meta as { emoji: { name: string; code: string } }).emoji;
}

const WILDCARDS: ReadonlyMap<string, 'channel' | 'topic'> = new Map([
  ['all', 'channel'],
  ['everyone', 'channel'],
  ['channel', 'channel'],
  ['stream', 'channel'],
  ['topic', 'topic'],
]);

// ---------------------------------------------------------------------------------------------------
// Rendering state: what the references resolve to, and the mentions found

interface Named {
  id: number;
  name: string;
}

interface RenderState {
  userById: ReadonlyMap<number, MarkdownUser>;
  /** Case-folded full name → the one user with it, or null when several share it. */
  userByName: ReadonlyMap<string, MarkdownUser | null>;
  groupByName: ReadonlyMap<string, Named | null>;
  channelByExactName: ReadonlyMap<string, Named>;
  channelByName: ReadonlyMap<string, Named | null>;
  narrowUrl: (channel: Named, topic?: string) => string;
  mentions: { users: Set<number>; groups: Set<number>; channelWildcard: boolean; topicWildcard: boolean };
  linkifiers: LinkifierRendering | null;
  emailGateway: boolean;
  realmEmoji: RealmEmojiIndex | null;
}

const RENDER_STATE = Symbol('parley.markdown.renderState');

function newRenderState(ctx: Partial<MarkdownContext>): RenderState {
  const users = ctx.users ?? [];
  const channels = ctx.channels ?? [];
  return {
    userById: new Map(users.map((user) => [user.id, user])),
    userByName: indexByFoldedName(users, (user) => user.full_name),
    groupByName: indexByFoldedName(ctx.groups ?? [], (group) => group.name),
    channelByExactName: new Map(channels.map((channel) => [channel.name, channel])),
    channelByName: indexByFoldedName(channels, (channel) => channel.name),
    narrowUrl: ctx.narrowUrl ?? defaultNarrowUrl,
    mentions: { users: new Set(), groups: new Set(), channelWildcard: false, topicWildcard: false },
    linkifiers: ctx.linkifiers ?? null,
    emailGateway: ctx.emailGateway ?? false,
    realmEmoji: ctx.realmEmoji ?? null,
  };
}

function renderStateOf(env: Env | undefined): RenderState {
  const state = env?.[RENDER_STATE];
  if (state === undefined) throw new Error('markdown: rendering without a render state');
  return state as RenderState;
}

function render(content: string, state: RenderState): string {
  const env: Env = { [RENDER_STATE]: state };
  // markdown-it ends every block with a newline; Zulip's stored HTML has none at the end.
  return (state.emailGateway ? mdEmailGateway : md).render(content, env).replace(/\n+$/, '');
}

/** Case-folded name → item; null for a name that several items (different ids) share. */
function indexByFoldedName<T extends { id: number }>(items: readonly T[], nameOf: (item: T) => string): Map<string, T | null> {
  const index = new Map<string, T | null>();
  for (const item of items) {
    const key = fold(nameOf(item));
    const existing = index.get(key);
    if (existing === undefined) index.set(key, item);
    else if (existing !== null && existing.id !== item.id) index.set(key, null);
  }
  return index;
}

function fold(name: string): string {
  return name.toLowerCase();
}

function resolveUser(reference: Extract<Reference, { kind: 'user' }>, state: RenderState): MarkdownUser | undefined {
  if (reference.id === null) return state.userByName.get(fold(reference.name)) ?? undefined;
  const user = state.userById.get(reference.id);
  // @**Name|id** names the user twice: both must agree (Zulip's rule), @**|id** only by id.
  if (user !== undefined && reference.name !== '' && fold(reference.name) !== fold(user.full_name)) return undefined;
  return user;
}

function resolveChannel(name: string, state: RenderState): Named | undefined {
  return state.channelByExactName.get(name) ?? state.channelByName.get(fold(name)) ?? undefined;
}

/** The HTML of a reference, recording the mention; its source text (escaped) when it does not resolve. */
function renderReference(reference: Reference, source: string, state: RenderState): string {
  const at = (silent: boolean) => (silent ? '' : '@');
  const silentClass = (silent: boolean) => (silent ? ' silent' : '');
  switch (reference.kind) {
    case 'wildcard': {
      const { silent, scope, word } = reference;
      if (scope === 'topic') {
        if (!silent) state.mentions.topicWildcard = true;
        return `<span class="topic-mention${silentClass(silent)}">${at(silent)}${escapeText(word)}</span>`;
      }
      if (!silent) state.mentions.channelWildcard = true;
      return `<span class="user-mention channel-wildcard-mention${silentClass(silent)}" data-user-id="*">${at(silent)}${escapeText(word)}</span>`;
    }
    case 'user': {
      const user = resolveUser(reference, state);
      if (user === undefined) break;
      if (!reference.silent) state.mentions.users.add(user.id);
      return `<span class="user-mention${silentClass(reference.silent)}" data-user-id="${user.id}">${at(reference.silent)}${escapeText(user.full_name)}</span>`;
    }
    case 'group': {
      const group = state.groupByName.get(fold(reference.name));
      if (!group) break;
      if (!reference.silent) state.mentions.groups.add(group.id);
      return `<span class="user-group-mention${silentClass(reference.silent)}" data-user-group-id="${group.id}">${at(reference.silent)}${escapeText(group.name)}</span>`;
    }
    case 'channel': {
      const channel = resolveChannel(reference.name, state);
      if (channel === undefined) break;
      const channelRef = { id: channel.id, name: channel.name };
      if (reference.topic === null) {
        const href = state.narrowUrl(channelRef);
        return `<a class="stream" data-stream-id="${channel.id}" href="${escapeAttribute(href)}">#${escapeText(channel.name)}</a>`;
      }
      const href = state.narrowUrl(channelRef, reference.topic);
      return `<a class="stream-topic" data-stream-id="${channel.id}" href="${escapeAttribute(href)}">#${escapeText(channel.name)} &gt; ${escapeText(reference.topic)}</a>`;
    }
  }
  return escapeText(source);
}

// ---------------------------------------------------------------------------------------------------
// Inline rules

const AT = 0x40;
const HASH = 0x23;
const COLON = 0x3a;
const STAR = 0x2a;
const UNDERSCORE = 0x5f;
const NEWLINE = 0x0a;
const BACKTICK = 0x60;
const TILDE = 0x7e;

/** Characters after which @-mentions may start (besides whitespace and the start of the text), as in Zulip. */
const MENTION_MAY_FOLLOW = `'"({[/<`;
/** Likewise for #-links. */
const CHANNEL_LINK_MAY_FOLLOW = `'"(,:<`;

function startsAfter(src: string, pos: number, allowed: string): boolean {
  if (pos === 0) return true;
  const previous = src.charAt(pos - 1);
  return /\s/.test(previous) || allowed.includes(previous);
}

/**
 * Reads `*text*` (stars = 1) or `**text**` (stars = 2) at pos: text is not empty and holds no `*` or
 * newline. Linear in the length of text, so a message full of unclosed `@**` stays linear.
 */
function readStarred(src: string, pos: number, max: number, stars: 1 | 2): { text: string; end: number } | null {
  for (let k = 0; k < stars; k++) if (src.charCodeAt(pos + k) !== STAR) return null;
  const start = pos + stars;
  let i = start;
  while (i < max && src.charCodeAt(i) !== STAR && src.charCodeAt(i) !== NEWLINE) i++;
  if (i === start || i + stars > max) return null;
  for (let k = 0; k < stars; k++) if (src.charCodeAt(i + k) !== STAR) return null;
  return { text: src.slice(start, i), end: i + stars };
}

function pushReference(state: StateInline, reference: Reference, source: string): void {
  const token = state.push(REFERENCE_TOKEN, '', 0);
  token.markup = source;
  token.meta = { reference };
}

/** @**Full Name**, @**Full Name|12**, @**|12**, @**all** …, @*group*; each with `_` after `@` for silent. */
function mentionRule(state: StateInline, silent: boolean): boolean {
  const { src, pos, posMax: max } = state;
  if (src.charCodeAt(pos) !== AT || !startsAfter(src, pos, MENTION_MAY_FOLLOW)) return false;
  const isSilent = src.charCodeAt(pos + 1) === UNDERSCORE;
  const start = pos + (isSilent ? 2 : 1);
  let reference: Reference;
  let end: number;
  const user = readStarred(src, start, max, 2);
  if (user !== null) {
    reference = userReference(user.text, isSilent);
    end = user.end;
  } else {
    const group = readStarred(src, start, max, 1);
    if (group === null) return false;
    reference = { kind: 'group', name: group.text, silent: isSilent };
    end = group.end;
  }
  if (!silent) pushReference(state, reference, src.slice(pos, end));
  state.pos = end;
  return true;
}

function userReference(text: string, silent: boolean): Reference {
  const scope = WILDCARDS.get(text);
  if (scope !== undefined) return { kind: 'wildcard', word: text, scope, silent };
  const idSyntax = /^(.*)\|(\d+)$/.exec(text);
  if (idSyntax !== null) {
    const id = Number(idSyntax[2]);
    if (Number.isSafeInteger(id)) return { kind: 'user', name: idSyntax[1] ?? '', id, silent };
  }
  return { kind: 'user', name: text, id: null, silent };
}

/** #**channel** and #**channel>topic**. */
function channelLinkRule(state: StateInline, silent: boolean): boolean {
  const { src, pos, posMax: max } = state;
  if (src.charCodeAt(pos) !== HASH || !startsAfter(src, pos, CHANNEL_LINK_MAY_FOLLOW)) return false;
  const link = readStarred(src, pos + 1, max, 2);
  if (link === null) return false;
  const separator = link.text.indexOf('>');
  let reference: Reference;
  if (separator === -1) {
    reference = { kind: 'channel', name: link.text, topic: null };
  } else {
    const name = link.text.slice(0, separator);
    const topic = link.text.slice(separator + 1);
    if (name === '' || topic === '') return false;
    reference = { kind: 'channel', name, topic };
  }
  if (!silent) pushReference(state, reference, src.slice(pos, link.end));
  state.pos = link.end;
  return true;
}

/** Letters and digits of any script (Python's Unicode \w, which Zulip's emoji syntax uses). */
const UNICODE_WORD_CHAR = /^[\p{L}\p{N}]$/u;

/**
 * UTF-16 length of the emoji-name character at `pos` (a letter or digit of any script, `_`, `+`, `-`:
 * Zulip's names include `piñata` and `ココ`), or 0 when there is none.
 */
function emojiNameCharLength(src: string, pos: number): number {
  const code = src.codePointAt(pos)!;
  if (
    (code >= 0x30 && code <= 0x39) || // 0-9
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    code === UNDERSCORE ||
    code === 0x2b || // +
    code === 0x2d // -
  ) {
    return 1;
  }
  if (code < 0x80 || !UNICODE_WORD_CHAR.test(String.fromCodePoint(code))) return 0;
  return code > 0xffff ? 2 : 1;
}

/** :name: of a known emoji. An unknown name is left as text, its closing colon free to open the next one. */
function emojiRule(state: StateInline, silent: boolean): boolean {
  const { src, pos, posMax: max } = state;
  if (src.charCodeAt(pos) !== COLON) return false;
  let end = pos + 1;
  let length: number;
  while (end < max && (length = emojiNameCharLength(src, end)) > 0) end += length;
  if (end === pos + 1 || end >= max || src.charCodeAt(end) !== COLON) return false;
  const name = src.slice(pos + 1, end);
  const custom = realmEmojiNamed((state.env?.[RENDER_STATE] as RenderState | undefined)?.realmEmoji ?? null, name);
  if (custom) {
    if (!silent) state.push(REALM_EMOJI_TOKEN, '', 0).meta = { realmEmoji: custom };
    state.pos = end + 1;
    return true;
  }
  const code = emojiCodeForName(name);
  if (code === undefined) return false;
  if (!silent) {
    const token = state.push(EMOJI_TOKEN, '', 0);
    token.markup = src.slice(pos, end + 1);
    token.meta = { emoji: { name, code } };
  }
  state.pos = end + 1;
  return true;
}

/**
 * `~~text~~` as Zulip reads it: exactly two tildes on each side (a longer run is text), no tilde or
 * newline between, spaces inside allowed (`~~ a ~~`). The text between is parsed as inline Markdown.
 */
function strikethroughRule(state: StateInline, silent: boolean): boolean {
  const { src, pos, posMax: max } = state;
  if (src.charCodeAt(pos) !== TILDE) return false;
  let run = pos;
  while (run < max && src.charCodeAt(run) === TILDE) run++;
  let close = run;
  while (close < max && src.charCodeAt(close) !== TILDE && src.charCodeAt(close) !== NEWLINE) close++;
  const closes = run - pos === 2 && close > run && close + 2 <= max && src.charCodeAt(close + 1) === TILDE && src.charCodeAt(close + 2) !== TILDE;
  if (!closes || (pos > 0 && src.charCodeAt(pos - 1) === TILDE)) {
    if (!silent) state.pending += src.slice(pos, run);
    state.pos = run;
    return true;
  }
  if (!silent) {
    state.push('s_open', 'del', 1).markup = '~~';
    state.pos = run;
    state.posMax = close;
    state.md.inline.tokenize(state);
    state.posMax = max;
    state.push('s_close', 'del', -1).markup = '~~';
  }
  state.pos = close + 2;
  return true;
}

/** Zulip has no `_em_`/`__strong__`: underscores are plain text (placed before the emphasis rule). */
function underscoreRule(state: StateInline, silent: boolean): boolean {
  const { src, pos, posMax: max } = state;
  if (src.charCodeAt(pos) !== UNDERSCORE) return false;
  let end = pos;
  while (end < max && src.charCodeAt(end) === UNDERSCORE) end++;
  if (!silent) state.pending += src.slice(pos, end);
  state.pos = end;
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Fenced blocks

interface FenceLine {
  marker: number;
  length: number;
  /** The rest of the line after the fence characters. */
  info: string;
}

type FenceKind = 'code' | 'quote' | 'spoiler';

/** A line of ``` or ~~~ (at least three), or null. */
function readFenceLine(state: StateBlock, line: number): FenceLine | null {
  const start = state.bMarks[line]! + state.tShift[line]!;
  const max = state.eMarks[line]!;
  const marker = state.src.charCodeAt(start);
  if (marker !== BACKTICK && marker !== TILDE) return null;
  const after = state.skipChars(start, marker);
  if (after - start < 3) return null;
  const info = state.src.slice(after, max);
  if (marker === BACKTICK && info.includes('`')) return null; // ```inline code``` is a code span
  return { marker, length: after - start, info };
}

/**
 * The language and header of a fence's info string (`python`, `.py`, `{js}`, `spoiler Header text`),
 * or null where Zulip does not take the line for a fence at all (a language with other characters,
 * or backticks or tildes after it).
 */
function parseFenceInfo(info: string): { lang: string; header: string } | null {
  let text = info.trim();
  if (text === '') return { lang: '', header: '' };
  if (text.startsWith('{') && text.endsWith('}')) text = text.slice(1, -1).trim();
  const match = /^\.?([A-Za-z0-9_+\-./#]+)(.*)$/.exec(text);
  if (match === null || /[`~]/.test(match[2] ?? '')) return null;
  return { lang: match[1] ?? '', header: (match[2] ?? '').trim() };
}

function fenceKind(lang: string): FenceKind {
  const name = lang.toLowerCase();
  if (name === 'quote' || name === 'quoted') return 'quote';
  if (name === 'spoiler') return 'spoiler';
  return 'code';
}

/**
 * The line that closes the fence opened at startLine (closed) or the first line past it (not closed).
 * Zulip's rule: a bare fence line closes the innermost open fence when it uses the same character and
 * is at least as long; inside a quote or spoiler any other fence line opens a nested block; inside
 * code, lines are only content.
 */
function findFenceEnd(state: StateBlock, startLine: number, endLine: number, opener: FenceLine, kind: FenceKind): { end: number; closed: boolean } {
  const open: { marker: number; length: number; holdsMarkdown: boolean }[] = [{ marker: opener.marker, length: opener.length, holdsMarkdown: kind !== 'code' }];
  for (let line = startLine + 1; line < endLine; line++) {
    const start = state.bMarks[line]! + state.tShift[line]!;
    if (start < state.eMarks[line]! && state.sCount[line]! < state.blkIndent) return { end: line, closed: false };
    if (state.sCount[line]! - state.blkIndent >= 4) continue;
    const fence = readFenceLine(state, line);
    if (fence === null) continue;
    const innermost = open[open.length - 1]!;
    if (fence.info.trim() === '' && fence.marker === innermost.marker && fence.length >= innermost.length) {
      open.pop();
      if (open.length === 0) return { end: line, closed: true };
      continue;
    }
    if (!innermost.holdsMarkdown) continue;
    const info = parseFenceInfo(fence.info);
    if (info !== null) open.push({ marker: fence.marker, length: fence.length, holdsMarkdown: fenceKind(info.lang) !== 'code' });
  }
  return { end: endLine, closed: false };
}

/** Replaces markdown-it's fence rule: code fences with Zulip's info syntax, ```quote and ```spoiler. */
function fenceRule(state: StateBlock, startLine: number, endLine: number, silent: boolean): boolean {
  if (state.sCount[startLine]! - state.blkIndent >= 4) return false;
  const opener = readFenceLine(state, startLine);
  if (opener === null) return false;
  const info = parseFenceInfo(opener.info);
  if (info === null) return false;
  if (silent) return true;

  const kind = fenceKind(info.lang);
  const { end, closed } = findFenceEnd(state, startLine, endLine, opener, kind);
  const nextLine = closed ? end + 1 : end;
  const markup = String.fromCharCode(opener.marker).repeat(opener.length);
  if (kind === 'code') {
    const token = state.push('fence', 'code', 0);
    token.info = info.lang;
    token.markup = markup;
    token.content = state.getLines(startLine + 1, end, state.sCount[startLine]!, true);
    token.map = [startLine, nextLine];
  } else {
    const open = state.push(kind === 'quote' ? 'blockquote_open' : 'zulip_spoiler_open', kind === 'quote' ? 'blockquote' : 'div', 1);
    open.markup = markup;
    open.map = [startLine, nextLine];
    if (kind === 'spoiler') {
      if (info.header !== '') pushParagraph(state, info.header, startLine);
      state.push('zulip_spoiler_content', 'div', 0);
    }
    tokenizeLines(state, startLine + 1, end);
    const close = state.push(kind === 'quote' ? 'blockquote_close' : 'zulip_spoiler_close', kind === 'quote' ? 'blockquote' : 'div', -1);
    close.markup = markup;
  }
  state.line = nextLine;
  return true;
}

/** Block-parses lines [from, to) as the content of the container just opened. */
function tokenizeLines(state: StateBlock, from: number, to: number): void {
  const { parentType, lineMax } = state;
  state.parentType = 'blockquote';
  state.lineMax = to; // keeps lazy continuation lines from running past the closing fence
  state.md.block.tokenize(state, from, to);
  state.parentType = parentType;
  state.lineMax = lineMax;
}

function pushParagraph(state: StateBlock, text: string, line: number): void {
  state.push('paragraph_open', 'p', 1).map = [line, line + 1];
  const inline = state.push('inline', '', 0);
  inline.content = text;
  inline.map = [line, line + 1];
  inline.children = [];
  state.push('paragraph_close', 'p', -1);
}

// ---------------------------------------------------------------------------------------------------
// Links

/**
 * http:, https: and mailto:, and the relative links of uploaded files (`/user_uploads/…`, the URL
 * POST /user_uploads answers); everything else (javascript:, data:, other relative links …) stays text.
 */
const ALLOWED_LINK = /^(?:https?:|mailto:|\/user_uploads\/)/i;

/** Top-level domains that are far more often file extensions (readme.md, views.py): not linked bare. */
const FILE_EXTENSION_TLDS = new Set(['java', 'md', 'mov', 'py', 'zip']);

type LinkifyMatch = NonNullable<ReturnType<MarkdownItInstance['linkify']['match']>>[number];

function isWantedBareLink(match: LinkifyMatch): boolean {
  if (match.schema !== '') return true; // written with its scheme, or an e-mail address
  const host = /^[^/?#:]*/.exec(match.raw)?.[0] ?? '';
  return !FILE_EXTENSION_TLDS.has(host.slice(host.lastIndexOf('.') + 1).toLowerCase());
}

/** Core rule: `[](url)` and `[  ](url)` show their URL, as in Zulip. */
function fillEmptyLinks(state: StateCore): void {
  for (const block of state.tokens) {
    const children = block.type === 'inline' ? block.children : null;
    if (!children) continue;
    for (let i = 0; i < children.length; i++) {
      const open = children[i]!;
      if (open.type !== 'link_open') continue;
      let j = i + 1;
      while (j < children.length && children[j]!.type === 'text' && children[j]!.content.trim() === '') j++;
      if (children[j]?.type !== 'link_close') continue;
      const text = new state.Token('text', '', 0);
      text.content = state.md.normalizeLinkText(String(open.attrGet('href') ?? ''));
      text.level = open.level + 1;
      children.splice(i + 1, j - i - 1, text);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// HTML

/** Element text: `<`, `>`, `&` (Zulip leaves quotes as they are in text). */
function escapeText(text: string): string {
  return text.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

/** Attribute values and code blocks: also both quotes. */
function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * Zulip's (and Python's urllib) encoding of a narrow URL component: percent-encoding of everything but
 * letters, digits and `-_.~`, then `.` for `%` (and `.2E` for `.`), so `some topic` is `some.20topic`.
 */
function encodeHashComponent(text: string): string {
  return encodeURIComponent(text)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/\./g, '%2E')
    .replace(/%/g, '.');
}

/** Pygments' names for common languages, as Zulip shows them in data-code-language; others as written. */
const LANGUAGE_NAMES: ReadonlyMap<string, string> = new Map(
  Object.entries({
    Bash: ['bash', 'sh', 'shell', 'zsh', 'ksh'],
    'Bash Session': ['console', 'shell-session'],
    C: ['c'],
    'C#': ['csharp', 'c#', 'cs'],
    'C++': ['cpp', 'c++'],
    CSS: ['css'],
    Clojure: ['clojure', 'clj'],
    Dart: ['dart'],
    Diff: ['diff', 'udiff', 'patch'],
    Docker: ['docker', 'dockerfile'],
    Elixir: ['elixir', 'ex', 'exs'],
    Erlang: ['erlang'],
    Go: ['go', 'golang'],
    GraphQL: ['graphql'],
    HTML: ['html'],
    Haskell: ['haskell', 'hs'],
    INI: ['ini', 'cfg', 'dosini'],
    JSON: ['json'],
    Java: ['java'],
    JavaScript: ['javascript', 'js'],
    Kotlin: ['kotlin'],
    Lua: ['lua'],
    Makefile: ['make', 'makefile', 'mf', 'bsdmake'],
    Markdown: ['markdown', 'md'],
    'Objective-C': ['objective-c', 'objectivec', 'obj-c', 'objc'],
    PHP: ['php'],
    Perl: ['perl', 'pl'],
    PowerShell: ['powershell', 'pwsh', 'posh', 'ps1', 'psm1'],
    Python: ['python', 'py', 'python3', 'py3', 'sage', 'bazel', 'starlark'],
    'Python 2.x': ['python2', 'py2'],
    Ruby: ['ruby', 'rb', 'duby'],
    Rust: ['rust', 'rs'],
    SQL: ['sql'],
    Scala: ['scala'],
    Swift: ['swift'],
    TOML: ['toml'],
    TeX: ['tex', 'latex'],
    'Text only': ['text', 'plain', 'plaintext', 'txt'],
    TypeScript: ['typescript', 'ts'],
    XML: ['xml'],
    YAML: ['yaml', 'yml'],
  }).flatMap(([name, aliases]) => aliases.map((alias): [string, string] => [alias, name])),
);

function languageDisplayName(lang: string): string {
  return LANGUAGE_NAMES.get(lang.toLowerCase()) ?? lang;
}

/** Zulip's code text: no trailing blanks on a line, no blank lines at either end, a final newline. */
function normalizeCode(code: string): string {
  const lines = code.split('\n').map((line) => line.trimEnd());
  let first = 0;
  let last = lines.length;
  while (first < last && lines[first] === '') first++;
  while (last > first && lines[last - 1] === '') last--;
  return first === last ? '' : `${lines.slice(first, last).join('\n')}\n`;
}

function renderCodeBlock(code: string, lang: string): string {
  const language = lang === '' ? '' : ` data-code-language="${escapeAttribute(languageDisplayName(lang))}"`;
  return `<div class="codehilite"${language}><pre><span></span><code>${escapeAttribute(normalizeCode(code))}</code></pre></div>\n`;
}

/** Zulip puts a tight list item's sub-list right after its text, with no newline between. */
function listOpenRule(tokens: Token[], idx: number, options: Parameters<Renderer['renderToken']>[2], _env: Env | undefined, renderer: Renderer): string {
  const html = renderer.renderToken(tokens, idx, options);
  return idx > 0 && tokens[idx - 1]!.hidden && html.startsWith('\n') ? html.slice(1) : html;
}

// ---------------------------------------------------------------------------------------------------
// The parser

function createParser(): MarkdownItInstance {
  const parser = new MarkdownIt('default', { html: false, breaks: true, linkify: true, typographer: false });
  parser.disable(['lheading', 'reference', 'fence', 'html_block', 'html_inline', 'image', 'autolink', 'strikethrough']);

  parser.block.ruler.before('code', 'zulip_fence', fenceRule, { alt: ['paragraph', 'reference', 'blockquote', 'list'] });
  parser.inline.ruler.before('emphasis', 'zulip_underscore', underscoreRule);
  parser.inline.ruler.before('emphasis', 'zulip_strikethrough', strikethroughRule);
  parser.inline.ruler.after('linkify', 'zulip_emoji', emojiRule);
  parser.inline.ruler.after('zulip_emoji', 'zulip_mention', mentionRule);
  parser.inline.ruler.after('zulip_mention', 'zulip_channel_link', channelLinkRule);
  parser.core.ruler.after('linkify', 'zulip_empty_links', fillEmptyLinks);
  parser.core.ruler.before('text_join', 'zulip_linkifiers', (state) => {
    const linkifiers = (state.env?.[RENDER_STATE] as RenderState | undefined)?.linkifiers;
    if (linkifiers) applyLinkifiers(state, linkifiers);
  });

  parser.validateLink = (url) => ALLOWED_LINK.test(url.trim());
  parser.linkify.set({ fuzzyLink: true, fuzzyEmail: true, fuzzyIP: false, urlAuth: true });
  parser.linkify.add('ftp:', null).add('//', null);
  const match = parser.linkify.match.bind(parser.linkify);
  parser.linkify.match = (text) => match(text)?.filter(isWantedBareLink) ?? null;

  const rules = parser.renderer.rules;
  rules.text = (tokens, idx) => escapeText(tokens[idx]!.content);
  rules.code_inline = (tokens, idx) => `<code>${escapeText(tokens[idx]!.content)}</code>`;
  rules.code_block = (tokens, idx) => renderCodeBlock(tokens[idx]!.content, '');
  rules.fence = (tokens, idx) => renderCodeBlock(tokens[idx]!.content, tokens[idx]!.info);
  rules.bullet_list_open = listOpenRule;
  rules.ordered_list_open = listOpenRule;
  rules.zulip_spoiler_open = () => '<div class="spoiler-block"><div class="spoiler-header">\n';
  rules.zulip_spoiler_content = () => '</div><div class="spoiler-content" aria-hidden="true">\n';
  rules.zulip_spoiler_close = () => '</div></div>\n';
  rules[REFERENCE_TOKEN] = (tokens, idx, _options, env) => {
    const token = tokens[idx]!;
    return renderReference(referenceOf(token), token.markup, renderStateOf(env));
  };
  rules[REALM_EMOJI_TOKEN] = (tokens, idx) => renderRealmEmoji((tokens[idx]!.meta as { realmEmoji: EmojiInfo }).realmEmoji);
  rules[EMOJI_TOKEN] = (tokens, idx) => {
    const { name, code } = emojiOf(tokens[idx]!);
    const title = escapeAttribute(name.replace(/_/g, ' '));
    return `<span aria-label="${title}" class="emoji emoji-${escapeAttribute(code)}" role="img" title="${title}">:${escapeText(name)}:</span>`;
  };
  return parser;
}

const md = createParser();
/** Zulip renders mail of the e-mail gateway with its indented-code-block processor off. */
const mdEmailGateway = createParser().disable('code');

// ---------------------------------------------------------------------------------------------------
// Small helpers

function forEachToken(tokens: readonly Token[], visit: (token: Token) => void): void {
  for (const token of tokens) {
    visit(token);
    if (token.children) forEachToken(token.children, visit);
  }
}

/** Insertion-ordered list without duplicates (by key). */
class UniqueList<T> {
  readonly items: T[] = [];
  private readonly seen = new Set<unknown>();
  constructor(private readonly keyOf: (item: T) => unknown) {}
  add(item: T): void {
    const key = this.keyOf(item);
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.items.push(item);
  }
}
