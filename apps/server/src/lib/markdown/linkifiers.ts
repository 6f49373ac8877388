// Linkifiers in rendered messages: a markdown-it core rule (lib/markdown.ts runs it after inline
// parsing and linkify, before escapes and entities join the text around them) that turns the
// linkifiers' matches in text into links, as Zulip's inline pattern does.
//
// Zulip applies linkifiers after code spans, mentions, channel links, Markdown links and raw URLs
// (which they therefore never enter) and before emphasis, strikethrough and emoji (whose markers they
// see as text), and it processes no escapes or entities. Here that means: only `text` tokens outside
// links are looked at, code and mentions being tokens of their own; the character before a text
// token is, for Zulip's boundary rule, the previous text's last character, a line break's newline, the
// last character of an emoji, escape or entity as written (`:`, `#` of `\#`, `;`), and otherwise
// something that is neither a boundary nor a letter (what Zulip sees there: a placeholder or a
// marker). The linkifiers apply one after another in their order: each links its matches in what the
// earlier ones left as text, which it sees split at their links.
import type { StateCore, Token } from 'markdown-it';
import { linkifierMatches, relativeToRealm, sanitizeLinkUrl, type CompiledLinkifiers } from '../linkifiers.ts';

/** What rendering needs to apply an organization's linkifiers. */
export interface LinkifierRendering {
  linkifiers: CompiledLinkifiers;
  /** The organization's URL: links into it become relative, as Zulip writes them. */
  realmUrl: string;
}

/** Stands for an earlier link (or a code span, a mention…) on the left: not a boundary. */
const BEFORE_OTHER = '\u0003';
/** Stands for one on the right: not a letter or digit, so a match may end before it. */
const AFTER_OTHER = '\u0002';

interface Claim {
  start: number;
  end: number;
  href: string;
}

function charBefore(children: readonly Token[], i: number): string | null {
  if (i === 0) return null;
  const token = children[i - 1]!;
  if (token.type === 'text') return token.content.slice(-1) || BEFORE_OTHER;
  if (token.type === 'softbreak' || token.type === 'hardbreak') return '\n';
  // Escapes and entities (`\#`, `&amp;`) are text to Zulip's linkifiers, as written.
  if (token.type === 'text_special' || token.type === 'zulip_emoji') return token.markup.slice(-1) || BEFORE_OTHER;
  return BEFORE_OTHER;
}

function charAfter(children: readonly Token[], i: number): string | null {
  if (i === children.length - 1) return null;
  const token = children[i + 1]!;
  if (token.type === 'text') return token.content.charAt(0) || AFTER_OTHER;
  if (token.type === 'softbreak' || token.type === 'hardbreak') return '\n';
  return AFTER_OTHER;
}

/**
 * The links to make in one text token: [start, end) of the text and the URL, in order. `candidates`:
 * the linkifiers that may match in the token's block at all (CompiledLinkifiers.candidates).
 */
function claimsIn(text: string, before: string | null, after: string | null, rendering: LinkifierRendering, candidates: readonly number[]): Claim[] {
  const { linkifiers } = rendering;
  const pre = before ?? '';
  const post = after ?? '';
  // Zulip's url_to_a: a URL sanitize_url refuses leaves the match as text.
  const linkTo = (url: string | null) => {
    const href = url === null ? null : sanitizeLinkUrl(url);
    return href === null ? null : relativeToRealm(href, rendering.realmUrl);
  };
  let claims: Claim[] = [];
  for (const index of candidates) {
    const linkifier = linkifiers.list[index]!;
    const found: Claim[] = [];
    // The stretches of text earlier linkifiers left, each with its neighbours as Zulip sees them.
    let from = 0;
    for (const claim of [...claims, { start: text.length, end: text.length, href: '' }]) {
      if (claim.start > from) {
        const left = from === 0 ? pre : BEFORE_OTHER;
        const right = claim.start === text.length ? post : AFTER_OTHER;
        const subject = left + text.slice(from, claim.start) + right;
        for (const m of linkifierMatches(linkifier, subject, left.length, subject.length - right.length, linkTo)) {
          found.push({ start: from + m.start - left.length, end: from + m.end - left.length, href: m.url });
        }
      }
      from = claim.end;
    }
    if (found.length > 0) claims = [...claims, ...found].sort((a, b) => a.start - b.start);
  }
  return claims;
}

/** Core rule: links the linkifiers' matches in every inline block's text. */
export function applyLinkifiers(state: StateCore, rendering: LinkifierRendering): void {
  if (rendering.linkifiers.empty) return;
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const children = block.children;
    // The texts a linkifier may link (outside links), and which linkifiers may match in them at all:
    // one prefilter pass per block (its texts joined by newlines, which no linked text spans).
    const eligible = new Set<number>();
    let linkDepth = 0;
    children.forEach((token, i) => {
      if (token.type === 'link_open') linkDepth++;
      else if (token.type === 'link_close') linkDepth--;
      else if (token.type === 'text' && linkDepth === 0 && token.content !== '') eligible.add(i);
    });
    if (eligible.size === 0) continue;
    const candidates = rendering.linkifiers.candidates([...eligible].map((i) => children[i]!.content).join('\n'));
    if (candidates.length === 0) continue;
    let out: Token[] | null = null;
    for (let i = 0; i < children.length; i++) {
      const token = children[i]!;
      const claims = eligible.has(i) ? claimsIn(token.content, charBefore(children, i), charAfter(children, i), rendering, candidates) : [];
      if (claims.length === 0) {
        out?.push(token);
        continue;
      }
      out ??= children.slice(0, i);
      let at = 0;
      for (const claim of claims) {
        if (claim.start > at) out.push(textToken(state, token, token.content.slice(at, claim.start)));
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = [['href', claim.href]];
        open.markup = 'linkifier';
        open.level = token.level;
        out.push(open);
        const label = textToken(state, token, token.content.slice(claim.start, claim.end));
        label.level = token.level + 1;
        out.push(label);
        const close = new state.Token('link_close', 'a', -1);
        close.markup = 'linkifier';
        close.level = token.level;
        out.push(close);
        at = claim.end;
      }
      if (at < token.content.length) out.push(textToken(state, token, token.content.slice(at)));
    }
    if (out) block.children = out;
  }
}

function textToken(state: StateCore, like: Token, content: string): Token {
  const token = new state.Token('text', '', 0);
  token.content = content;
  token.level = like.level;
  return token;
}
