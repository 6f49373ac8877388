// Slack's message markup ("mrkdwn") → Zulip Markdown, as Zulip's Slack importer converts it
// (zerver/data_import/slack_message_conversion.py):
// - `*bold*` → `**bold**`, `~strike~` → `~~strike~~`, `_italic_` → `*italic*`, only when the markers
//   stand at word boundaries (after punctuation, a space, a symbol or the line's start; before one of
//   those or the line's end), since Slack has no mid-word emphasis;
// - `<!here>`, `<!channel>`, `<!everyone>` → `@**all**`;
// - `<#C123|general>` → `#**general**`;
// - `<@U123>` / `<@U123|name>` → `@**Full Name**` (the mentioned users get the `mentioned` flag);
// - `<https://x|text>` → `[text](https://x)`, `<https://x>` → `https://x`, `<mailto:a@b|a@b>` → `mailto:a@b`.
// Beyond Zulip's converter: code spans and ``` blocks are left untouched by the rules above (a block
// written inline, ```like this```, gets its fences on lines of their own, as Markdown needs), and
// Slack's three escapes (`&lt;`, `&gt;`, `&amp;`) are decoded in one pass, so the text reads as typed.

export interface MarkupContext {
  /** Slack user id → the user's full name and Zulip id; unknown ids stay as written. */
  userById(id: string): { fullName: string; zulipId: number } | undefined;
  /** Slack channel id → the channel's name. */
  channelNameById(id: string): string | undefined;
}

export interface ConvertedMarkup {
  content: string;
  mentionedUserIds: number[];
  wildcardMention: boolean;
  hasLink: boolean;
}

// Boundary classes of Zulip's regexes: punctuation (\p{P}), space separators (\p{Zs}) and symbols
// (\p{S}), minus the marker itself, backquote, `@` and backslash, and minus closing (before) or opening
// (after) brackets and quotes.
function emphasisRegex(marker: string): RegExp {
  const m = marker === '*' ? '\\*' : marker;
  return new RegExp(
    `((?![${m}\`@\\\\\\p{Pf}\\p{Pe}])[\\p{P}\\p{Zs}\\p{S}]|^)(${m})([^${m}]+)(${m})((?![${m}\`@\\\\\\p{Pi}\\p{Ps}])(?=[\\p{P}\\p{Zs}\\p{S}]|$))`,
    'gmu',
  );
}
const BOLD = emphasisRegex('*');
const STRIKE = emphasisRegex('~');
const ITALIC = emphasisRegex('_');

const PLACEHOLDER = /\uE000(\d+)\uE001/g;
const PROTECTED = /```[\s\S]*?```|`[^`\n]+`|<[^<>\n]+>/g;

function unescapeSlack(text: string): string {
  return text.replace(/&(amp|lt|gt);/g, (_m, name: string) => (name === 'amp' ? '&' : name === 'lt' ? '<' : '>'));
}

function codeBlock(raw: string): string {
  let body = unescapeSlack(raw.slice(3, -3));
  if (body.startsWith('\n')) body = body.slice(1);
  if (body.endsWith('\n')) body = body.slice(0, -1);
  const fence = body.includes('```') ? '~~~' : '```';
  return `\n${fence}\n${body}\n${fence}\n`;
}

/** Converts one Slack message text. */
export function convertSlackMarkup(text: string, ctx: MarkupContext): ConvertedMarkup {
  const mentioned = new Set<number>();
  let wildcardMention = false;
  let hasLink = false;
  const saved: string[] = [];
  // Protect code and `<…>` tokens from the emphasis rules with private-use placeholders.
  let body = text.replace(PROTECTED, (m) => {
    saved.push(m);
    return `\uE000${saved.length - 1}\uE001`;
  });
  body = body.replace(BOLD, (_m, before: string, _a, inner: string) => `${before}**${inner}**`);
  body = body.replace(STRIKE, (_m, before: string, _a, inner: string) => `${before}~~${inner}~~`);
  body = body.replace(ITALIC, (_m, before: string, _a, inner: string) => `${before}*${inner}*`);
  body = unescapeSlack(body);

  const token = (raw: string): string => {
    if (raw.startsWith('```')) return codeBlock(raw);
    if (raw.startsWith('`')) return unescapeSlack(raw);
    const inner = raw.slice(1, -1);
    const bar = inner.indexOf('|');
    const target = bar < 0 ? inner : inner.slice(0, bar);
    const label = bar < 0 ? undefined : unescapeSlack(inner.slice(bar + 1));
    if (target.startsWith('@')) {
      const user = ctx.userById(target.slice(1));
      if (!user) return unescapeSlack(raw);
      mentioned.add(user.zulipId);
      return `@**${user.fullName}**`;
    }
    if (target.startsWith('#')) {
      const name = ctx.channelNameById(target.slice(1)) ?? label;
      return name ? `#**${name}**` : unescapeSlack(raw);
    }
    if (target.startsWith('!')) {
      const special = target.slice(1);
      if (special === 'here' || special === 'channel' || special === 'everyone') {
        wildcardMention = true;
        return '@**all**';
      }
      // <!subteam^ID|@group>, <!date^…|fallback> and the like: their label is the readable form.
      return label ?? unescapeSlack(raw);
    }
    const url = unescapeSlack(target);
    if (/^mailto:/i.test(url)) {
      hasLink = true;
      return url;
    }
    if (/^(https?|ftp):\/\//i.test(url)) {
      hasLink = true;
      return label !== undefined && label !== '' && label !== url ? `[${label}](${url})` : url;
    }
    return unescapeSlack(raw);
  };
  const content = body
    .replace(PLACEHOLDER, (_m, index: string) => token(saved[Number(index)]!))
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { content, mentionedUserIds: [...mentioned], wildcardMention, hasLink };
}
