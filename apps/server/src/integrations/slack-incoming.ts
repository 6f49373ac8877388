// Zulip's Slack-compatible incoming webhook (/api/v1/external/slack_incoming,
// zerver/webhooks/slack_incoming/view.py), for tools that can post to a Slack "incoming webhook" URL:
// - the payload is the JSON body (Content-Type application/json) or, otherwise, the `payload` form
//   field (or query parameter), else `Missing 'payload' argument`;
// - the topic is the URL's `topic`, else the payload's `channel` without a leading `#`/`@`, else the
//   empty topic;
// - the message is the payload's `blocks` then `attachments`, each rendered to Markdown, joined by
//   blank lines; only when they give nothing, `text` (after `icon_emoji` and a space); Slack's
//   `<url|label>` links become Markdown links and Slack's `*bold*`/`_italic_` become Zulip's
//   `**bold**`/`*italic*`. Nothing else is escaped: the text is Markdown as it stands. An empty
//   result posts nothing (a success).
// - answers carry Slack's `ok` field (`true`; `false` with `error` on failure).
import type { Integration, WebhookRequest } from './types.ts';
import { WebhookPayloadError } from './types.ts';
import { Wild } from './wild-value.ts';

export const slackIncoming: Integration = {
  name: 'slack_incoming',
  displayName: 'SlackIncoming',
  slackCompatible: true,
  handle(request) {
    const payload = new Wild(parsePayload(request), 'payload');
    let topic = request.userTopic;
    if (topic === undefined && payload.has('channel')) topic = payload.at('channel').string().replace(/^[@#]/, '');
    topic ??= '';
    const pieces: string[] = [];
    if (payload.get('blocks').truthy) pieces.push(...payload.at('blocks').list().map(renderBlock));
    if (payload.get('attachments').truthy) pieces.push(...payload.at('attachments').list().map(renderAttachment));
    let body = joinPieces(pieces);
    if (body === '' && payload.get('text').truthy) {
      if (payload.get('icon_emoji').truthy) body = payload.at('icon_emoji').string() + ' ';
      body += payload.at('text').string();
      body = body.trim();
    }
    if (body === '') return { kind: 'ignored' };
    return { kind: 'messages', messages: [{ topic, content: replaceFormatting(replaceLinks(body).trim()) }] };
  },
};

function parsePayload(request: WebhookRequest): unknown {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  let text: string;
  if (type === 'application/json') text = request.rawBody.toString('utf8');
  else {
    const fields = type === 'application/x-www-form-urlencoded' ? (request.body as Record<string, string | undefined>) : {};
    const value = fields['payload'] ?? request.query['payload'];
    if (value === undefined) throw new WebhookPayloadError("Missing 'payload' argument");
    text = value;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new WebhookPayloadError('payload is not valid JSON');
  }
}

/** Python's `str.strip()` of each piece, empty ones dropped, joined by blank lines. */
const joinPieces = (pieces: string[]) =>
  pieces
    .map((piece) => piece.trim())
    .filter((piece) => piece !== '')
    .join('\n\n');

const BLOCK_TYPES = ['actions', 'context', 'divider', 'header', 'image', 'input', 'section'] as const;

function renderBlock(block: Wild): string {
  const type = block.at('type').oneOf(BLOCK_TYPES);
  if (type === 'context' && block.get('elements').truthy) {
    const pieces = block
      .at('elements')
      .list()
      .map((element) => (element.at('type').oneOf(['image', 'plain_text', 'mrkdwn'] as const) === 'image' ? renderBlockElement(element) : textBlock(element)));
    return joinPieces(pieces);
  }
  if (type === 'divider') return '----';
  if (type === 'header') return '## ' + textBlock(block.at('text'), true);
  if (type === 'image') {
    const url = urlOrNull(block.at('image_url'));
    let alt = block.at('alt_text').string();
    if (block.has('title')) alt = textBlock(block.at('title'), true);
    return url === null ? '' : `[${alt}](${url})`;
  }
  if (type === 'section') {
    const pieces: string[] = [];
    if (block.has('text')) pieces.push(textBlock(block.at('text')));
    if (block.has('accessory')) pieces.push(renderBlockElement(block.at('accessory')));
    if (block.has('fields')) {
      const fields = block.at('fields').list().map((field) => textBlock(field));
      if (fields.length === 1) pieces.push(fields[0]!);
      else {
        // A two-column table with an empty header row; no newlines or pipes inside cells.
        const cells = fields.map((text) => text.replaceAll('\n', ' ').replaceAll('|', ' '));
        let table = '| | |\n|-|-|\n';
        for (let i = 0; i < cells.length; i += 2) table += `| ${cells[i]} | ${cells[i + 1] ?? ''} |\n`;
        pieces.push(table);
      }
    }
    return joinPieces(pieces);
  }
  return ''; // actions, input (and a context without elements): not rendered
}

/** A text object ({type: plain_text|mrkdwn, text}); headers and titles take plain text only. */
function textBlock(value: Wild, plainTextOnly = false): string {
  value.at('type').oneOf(plainTextOnly ? (['plain_text'] as const) : (['plain_text', 'mrkdwn'] as const));
  return value.at('text').string();
}

function renderBlockElement(element: Wild): string {
  if (element.at('type').string() !== 'image') return '';
  const url = urlOrNull(element.at('image_url'));
  return url === null ? '' : `[${element.at('alt_text').string()}](${url})`;
}

function renderAttachment(attachment: Wild): string {
  const pieces: string[] = [];
  if (attachment.get('title').truthy) {
    const title = attachment.at('title').string();
    // A title link that is not an absolute URL (a relative one) is left out.
    const link = attachment.get('title_link').truthy ? urlOrNull(attachment.at('title_link')) : null;
    pieces.push(link === null ? `## ${title}` : `## [${title}](${link})`);
  }
  if (attachment.get('pretext').truthy) pieces.push(attachment.at('pretext').string());
  if (attachment.get('text').truthy) pieces.push(attachment.at('text').string());
  if (attachment.has('fields')) {
    const lines: string[] = [];
    for (const field of attachment.at('fields').list()) {
      const title = field.get('title');
      const value = field.get('value');
      if (title.truthy && value.truthy) lines.push(`*${title.string()}*: ${value.string()}`);
      else if (title.truthy) lines.push(`*${title.string()}*`);
      else if (value.truthy) lines.push(value.string());
    }
    pieces.push(lines.join('\n'));
  }
  if (attachment.get('blocks').truthy) pieces.push(...attachment.at('blocks').list().map(renderBlock));
  if (attachment.get('image_url').truthy) {
    const url = urlOrNull(attachment.at('image_url'));
    if (url !== null) pieces.push(`[](${url})`);
  }
  if (attachment.get('footer').truthy) pieces.push(attachment.at('footer').string());
  if (attachment.get('ts').truthy) {
    const ts = attachment.at('ts').number();
    // Zulip's global time syntax, in ISO 8601 with the UTC offset.
    pieces.push(`<time:${new Date(Math.trunc(ts) * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`);
  }
  return joinPieces(pieces);
}

/** An absolute http(s)/ftp(s) URL (Django's URLValidator, roughly), or null: such a link or image is left out. */
function urlOrNull(value: Wild): string | null {
  const url = value.string();
  return /^(?:https?|ftps?):\/\/[^\s/?#]+[^\s]*$/i.test(url) ? url : null;
}

/** Slack's `<https://example.com|label>` links as Markdown links. */
export const replaceLinks = (text: string) => text.replace(/<(\w+?:\/\/.*?)\|(.*?)>/g, '[$2]($1)');

/**
 * Slack's `*bold*` as Zulip's `**bold**`, then Slack's `_italic_` as Zulip's `*italic*` (Python's
 * patterns: `\w` is Unicode-aware there, so it is here too).
 */
export function replaceFormatting(text: string): string {
  const bold = /([^\p{L}\p{N}_]|^)\*(?!\s+)([^*\n]+)(?<!\s)\*((?=[^\p{L}\p{N}_])|$)/gu;
  const italic = /([^\p{L}\p{N}_]|^)_(?!\s+)([^_\n]+)(?<!\s)_((?=[^\p{L}\p{N}_])|$)/gu;
  return text.replace(bold, '$1**$2**$3').replace(italic, '$1*$2*$3');
}
