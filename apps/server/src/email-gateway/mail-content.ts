// What a mail becomes (Zulip's email_mirror.py, process_stream_message and construct_zulip_body): the
// topic from the subject, the content from the plain-text or HTML body (HTML converted to Markdown),
// quoted replies and a `--` signature removed unless the address asks to keep them, the `From:` line
// first with show-sender, links to the stored attachments last, all within the message size limit.
import TurndownService from 'turndown';
import type { AddressOptions } from './address.ts';

/** A mail the gateway cannot post, with Zulip's reason (answered to the sending server). */
export class GatewayMailError extends Error {}

// ---------------------------------------------------------------------------------------------
// Subject → topic

// Zulip's strip_from_subject: Re:, Fwd:, AW: (with brackets and punctuation around them) and trailing
// closing brackets are removed wherever they are, case-insensitively.
const REPLY_PREFIXES = /([[(] *)?\b(RE|AW|FWD?) *([-:;)\]][ :;\])-]*|$)|\]+ *$/gim;
// Zulip's is_forwarded: the same forms of Fwd at the very start.
const FORWARDED = /^(?:([[(] *)?\b(FWD?) *([-:;)\]][ :;\])-]*|$)|\]+ *$)/i;

/** Zulip's is_character_printable: not a control character (Cc), surrogate (Cs) or noncharacter. */
function isPrintable(ch: string): boolean {
  const cp = ch.codePointAt(0)!;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return false;
  if (cp >= 0xd800 && cp <= 0xdfff) return false;
  if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe) return false;
  return true;
}

/** The topic a subject gives: reply and forward markers and unprintable characters removed; "Email with no subject" when nothing is left. */
export function topicFromSubject(subject: string): string {
  const stripped = subject.replace(REPLY_PREFIXES, '').trim();
  const printable = [...stripped].filter(isPrintable).join('');
  return printable || 'Email with no subject';
}

export const isForwarded = (subject: string): boolean => FORWARDED.test(subject);

// ---------------------------------------------------------------------------------------------
// Quoted replies (an approximation of the talon library Zulip uses)

const WROTE_LINE = /^\s*(?:>\s*)*(?:On|Am|Le|El|Il|Op|Em)\b.*\b(?:wrote|schrieb|a écrit|escribió|ha scritto|schreef|escreveu)\s*:\s*$/i;
const WROTE_START = /^\s*(?:>\s*)*(?:On|Am|Le|El|Il|Op|Em)\s/;
const WROTE_END = /\b(?:wrote|schrieb|a écrit|escribió|ha scritto|schreef|escreveu)\s*:\s*$/i;
const ORIGINAL_MESSAGE = /^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|Mensaje original)\s*-{2,}\s*$/i;
const OUTLOOK_RULE = /^\s*_{20,}\s*$/;
const HEADER_FROM = /^\s*\*{0,2}(?:From|Von|De)\s*:\*{0,2}\s+\S/;
const HEADER_NEXT = /^\s*\*{0,2}(?:Sent|Date|Gesendet|Envoyé|Enviado|To|An|À|Para|Subject|Betreff|Objet|Asunto)\s*:\*{0,2}\s/;
const QUOTED = /^\s*>/;

/**
 * Where the quoted part of a reply starts (a "… wrote:" line, possibly wrapped over two lines, an
 * original-message rule or an Outlook header block): its first line and the line after it.
 */
function splitterAt(lines: string[]): { index: number; next: number; quotedOnly: boolean } | null {
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (WROTE_LINE.test(line)) return { index: i, next: i + 1, quotedOnly: true };
    if (WROTE_START.test(line) && i + 1 < lines.length && WROTE_END.test(lines[i + 1]!) && !WROTE_START.test(lines[i + 1]!)) return { index: i, next: i + 2, quotedOnly: true };
    if (ORIGINAL_MESSAGE.test(line)) return { index: i, next: i + 1, quotedOnly: false };
    if (HEADER_FROM.test(line) && lines.slice(i + 1, i + 4).some((next) => HEADER_NEXT.test(next))) {
      const start = i > 0 && OUTLOOK_RULE.test(lines[i - 1]!) ? i - 1 : i;
      return { index: start, next: i + 1, quotedOnly: false };
    }
  }
  return null;
}

/**
 * The reply without the message it quotes: everything from a splitter line ("On … wrote:", an
 * "Original Message" rule, an Outlook header block) when only quoted text follows it, or else a trailing
 * block of `>` lines. Replies written between quoted lines are kept whole.
 */
export function stripQuotedReply(text: string): string {
  const lines = text.split('\n');
  const splitter = splitterAt(lines);
  if (splitter) {
    const after = lines.slice(splitter.next);
    if (!splitter.quotedOnly || after.every((line) => line.trim() === '' || QUOTED.test(line))) {
      return lines.slice(0, splitter.index).join('\n').replace(/\s+$/, '');
    }
  }
  let end = lines.length;
  while (end > 0 && lines[end - 1]!.trim() === '') end--;
  let start = end;
  while (start > 0 && (QUOTED.test(lines[start - 1]!) || lines[start - 1]!.trim() === '')) start--;
  if (start < end && start > 0 && lines.slice(start, end).some((line) => QUOTED.test(line))) {
    return lines.slice(0, start).join('\n').replace(/\s+$/, '');
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// HTML → Markdown (html2text's output style, through turndown)

const QUOTE_CLASSES = /(?:^|\s)(?:gmail_quote|gmail_quote_container|yahoo_quoted|moz-cite-prefix|protonmail_quote)(?:\s|$)/;
const QUOTE_IDS = new Set(['divRplyFwdMsg', 'appendonsend', 'OLK_SRC_BODY_SECTION', 'mail-editor-reference-message-container']);

interface DomElement {
  nodeName: string;
  getAttribute(name: string): string | null;
  parentNode: DomElement | null;
  nextSibling: DomElement | null;
  ownerDocument?: { getElementsByTagName(name: string): ArrayLike<DomElement> };
}

function hasAncestor(node: DomElement, name: string): boolean {
  for (let p = node.parentNode; p; p = p.parentNode) if (p.nodeName === name) return true;
  return false;
}

/** A reply's quoted part in HTML: the containers mail programs put it in, and the last top-level blockquote. */
function isQuoteElement(node: DomElement): boolean {
  if (typeof node.getAttribute !== 'function') return false;
  if (QUOTE_CLASSES.test(node.getAttribute('class') ?? '')) return true;
  const id = node.getAttribute('id');
  if (id && QUOTE_IDS.has(id)) return true;
  if (node.nodeName !== 'BLOCKQUOTE') return false;
  if (node.getAttribute('type') === 'cite') return true;
  if (hasAncestor(node, 'BLOCKQUOTE')) return false;
  const all = node.ownerDocument ? Array.from(node.ownerDocument.getElementsByTagName('blockquote')).filter((b) => !hasAncestor(b, 'BLOCKQUOTE')) : [];
  return all.length > 0 && all[all.length - 1] === node;
}

/** Outlook's reply rule: the quoted message follows the element (`#divRplyFwdMsg`, `#appendonsend`). */
function followsQuoteMarker(node: DomElement): boolean {
  if (typeof node.getAttribute !== 'function') return false;
  // Siblings after a marker are the quoted message.
  const parent = node.parentNode;
  if (!parent) return false;
  let before = true;
  for (let sibling = (parent as unknown as { firstChild: DomElement | null }).firstChild; sibling; sibling = sibling.nextSibling) {
    if (sibling === node) return !before;
    if (typeof sibling.getAttribute === 'function' && QUOTE_IDS.has(sibling.getAttribute('id') ?? '')) before = false;
  }
  return false;
}

function turndownService(includeQuotes: boolean): TurndownService {
  const service = new TurndownService({
    headingStyle: 'atx',
    hr: '* * *',
    bulletListMarker: '*',
    codeBlockStyle: 'fenced',
    emDelimiter: '_',
    strongDelimiter: '**',
    linkStyle: 'inlined',
  });
  service.remove(['style', 'script', 'head', 'title', 'meta', 'link']);
  if (!includeQuotes) {
    // A rule of its own (rules come before turndown's own, which would render a blockquote).
    service.addRule('quoted-reply', {
      filter: (node) => {
        const element = node as unknown as DomElement;
        return isQuoteElement(element) || followsQuoteMarker(element);
      },
      replacement: () => '',
    });
  }
  return service;
}

const withQuotes = turndownService(true);
const withoutQuotes = turndownService(false);

/**
 * Zulip's convert_html_to_markdown: html2text, then an image with no alt text and a query string
 * becomes a link named after its file.
 */
export function htmlToMarkdown(html: string, includeQuotes: boolean): string {
  const markdown = (includeQuotes ? withQuotes : withoutQuotes).turndown(html).trim();
  return markdown.replace(/!\[\]\((\S*)\/(\S*)\?(\S*)\)/g, '[$2]($1/$2)');
}

// ---------------------------------------------------------------------------------------------
// The message

/** Zulip's filter_footer: with exactly one `--` line, what follows it is a signature and goes. */
export function filterFooter(text: string): string {
  const footers = text.split('\n').filter((line) => line.trim() === '--');
  if (footers.length !== 1) return text;
  const match = /^\s*--\s*$/m.exec(text);
  return match ? text.slice(0, match.index).trim() : text;
}

/** Zulip's extract_body: the preferred part of the mail (plain text unless prefer-html), quotes removed unless kept. */
export function extractBody(mail: { text?: string | undefined; html?: string | false | undefined }, includeQuotes: boolean, preferText: boolean): string {
  const plain = mail.text === undefined ? null : includeQuotes ? mail.text : stripQuotedReply(mail.text);
  const html = mail.html ? (includeQuotes ? htmlToMarkdown(mail.html, true) : stripQuotedReply(htmlToMarkdown(mail.html, false))) : null;
  if (plain === null && html === null) throw new GatewayMailError('Unable to find plaintext or HTML message body');
  if (!plain && !html) throw new GatewayMailError('Email has no nonempty body sections; ignoring.');
  return preferText ? plain || html! : html || plain!;
}

/** Zulip's truncate_content, counted in characters (code points). */
export function truncateContent(content: string, maxLength: number, notice: string): string {
  const chars = [...content];
  if (chars.length <= maxLength) return content;
  return chars.slice(0, Math.max(0, maxLength - [...notice].length)).join('') + notice;
}

export interface MailForContent {
  text?: string | undefined;
  html?: string | false | undefined;
  subject?: string | undefined;
  /** The From header as written (names and addresses). */
  from: string;
}

/**
 * The content a mail becomes (Zulip's construct_zulip_body): the body (NULs removed, signature filtered
 * unless include-footer, "(No email body)" when empty), `From: …` first with show-sender, the
 * attachment links last, the body cut so that the whole fits `maxLength`.
 */
export function constructContent(mail: MailForContent, options: AddressOptions, attachmentLinks: string[], maxLength: number): string {
  const includeQuotes = options.include_quotes ?? isForwarded(mail.subject ?? '');
  let body = extractBody(mail, includeQuotes, options.prefer_text ?? true).replaceAll('\u0000', '');
  if (!options.include_footer) body = filterFooter(body);
  if (!body.endsWith('\n')) body += '\n';
  if (body.trimEnd() === '') body = '(No email body)';
  const preamble = options.show_sender ? `From: ${mail.from}\n` : '';
  const postamble = attachmentLinks.length > 0 ? `\n${attachmentLinks.join('\n')}` : '';
  body = truncateContent(body, maxLength - [...preamble].length - [...postamble].length, '\n[message truncated]');
  return preamble + body + postamble;
}

/** Zulip's attachment link: the file name without square brackets (its Markdown has no escaping for them). */
export const attachmentLink = (fileName: string, url: string) => `[${fileName.replace(/[[\]]/g, '')}](${url})`;
