// Slack's Block Kit blocks and legacy attachments (what integrations post) as text, the way Zulip's
// Slack importer renders them (process_slack_block_and_attachment in slack_message_conversion.py): when
// this gives any text, it replaces the message's `text`, and the markup conversion runs on it after.
// - blocks: `header` → `## text`, `divider` → `----`, `section` → its text, accessory image and fields
//   (one field as is, several as a two-column table), `context` → its texts and images one per
//   paragraph, `image` → `[alt or title](url)`; `rich_text` (the same words as `text`), `actions`,
//   `input`, `file`, `call` and other kinds give nothing;
// - attachments: `## [title](title_link)` (or `## title`), pretext, text, fields (`*title*: value`),
//   their blocks, `[](image_url)`, footer, and `ts` as Zulip's global time `<time:…>`.
type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string => (isObj(v) && typeof v.text === 'string' ? v.text : '');
const s = (v: unknown): string => (typeof v === 'string' ? v : '');
const join = (pieces: string[]) =>
  pieces
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .join('\n\n');

function image(element: Obj): string {
  return element.type === 'image' && typeof element.image_url === 'string' ? `[${s(element.alt_text)}](${element.image_url})` : '';
}

function block(b: Obj): string {
  switch (b.type) {
    case 'header':
      return `## ${text(b.text)}`;
    case 'divider':
      return '----';
    case 'image':
      return typeof b.image_url === 'string' ? `[${text(b.title) || s(b.alt_text)}](${b.image_url})` : '';
    case 'context':
      return join((Array.isArray(b.elements) ? b.elements.filter(isObj) : []).map((e) => (e.type === 'image' ? image(e) : text(e))));
    case 'section': {
      const pieces = [text(b.text)];
      if (isObj(b.accessory)) pieces.push(image(b.accessory));
      const fields = Array.isArray(b.fields) ? b.fields.map(text) : [];
      if (fields.length === 1) pieces.push(fields[0]!);
      else if (fields.length > 1) {
        const cells = fields.map((f) => f.replace(/\n/g, ' ').replace(/\|/g, ' '));
        let table = '| | |\n|-|-|\n';
        for (let i = 0; i < cells.length; i += 2) table += `| ${cells[i]} | ${cells[i + 1] ?? ''} |\n`;
        pieces.push(table);
      }
      return join(pieces);
    }
    default:
      return '';
  }
}

function attachment(a: Obj): string {
  const pieces: string[] = [];
  if (s(a.title)) pieces.push(s(a.title_link) ? `## [${s(a.title)}](${s(a.title_link)})` : `## ${s(a.title)}`);
  pieces.push(s(a.pretext), s(a.text));
  if (Array.isArray(a.fields)) {
    pieces.push(
      a.fields
        .filter(isObj)
        .map((f) => (s(f.title) && s(f.value) ? `*${s(f.title)}*: ${s(f.value)}` : s(f.title) ? `*${s(f.title)}*` : s(f.value)))
        .filter((f) => f !== '')
        .join('\n'),
    );
  }
  if (Array.isArray(a.blocks)) pieces.push(...a.blocks.filter(isObj).map(block));
  if (s(a.image_url)) pieces.push(`[](${s(a.image_url)})`);
  pieces.push(s(a.footer));
  const ts = typeof a.ts === 'number' ? a.ts : Number(s(a.ts));
  if (a.ts !== undefined && Number.isFinite(ts) && ts > 0) pieces.push(`<time:${new Date(Math.trunc(ts) * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`);
  return join(pieces);
}

/** The text of a message's blocks and attachments ('' when they give none). */
export function renderBlocksAndAttachments(message: Obj): string {
  const pieces: string[] = [];
  if (Array.isArray(message.blocks)) pieces.push(...message.blocks.filter(isObj).map(block));
  if (Array.isArray(message.attachments)) pieces.push(...message.attachments.filter(isObj).map(attachment));
  return pieces
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .join('\n');
}
