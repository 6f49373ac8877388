// Zulip's generic JSON formatter (/api/v1/external/json, zerver/webhooks/json/view.py): whatever JSON
// object is posted becomes a message showing it pretty-printed in a ```json code block, in the topic
// "JSON" (or the URL's `topic`). The printing is Python's json.dumps(payload, indent=2): two-space
// indentation, `", "`-free line ends, `": "` after keys, and non-ASCII characters as \uXXXX escapes.
import type { Integration } from './types.ts';
import { WebhookPayloadError } from './types.ts';

export const json: Integration = {
  name: 'json',
  displayName: 'JSON',
  handle(request) {
    // Read as JSON whatever the Content-Type, as Zulip's JsonBodyPayload reads the body.
    let payload: unknown;
    try {
      payload = JSON.parse(request.rawBody.toString('utf8'));
    } catch {
      throw new WebhookPayloadError('Malformed JSON');
    }
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) throw new WebhookPayloadError('payload is not a dict');
    return { kind: 'messages', messages: [{ topic: 'JSON', content: '```json\n' + pythonJsonDumps(payload, 2) + '\n```' }] };
  },
};

/** Python's json.dumps(value, indent=indent) with its defaults (ensure_ascii, key order kept). */
export function pythonJsonDumps(value: unknown, indent: number, level = 0): string {
  if (value === null || value === undefined) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number') return pythonFloat(value);
  if (typeof value === 'string') return asciiString(value);
  const inner = ' '.repeat(indent * (level + 1));
  const outer = ' '.repeat(indent * level);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((item) => inner + pythonJsonDumps(item, indent, level + 1)).join(',\n')}\n${outer}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([k, v]) => `${inner}${asciiString(k)}: ${pythonJsonDumps(v, indent, level + 1)}`).join(',\n')}\n${outer}}`;
}

/**
 * Numbers as Python prints them: integral values up to 2^53 as integers (JSON.parse cannot tell 1
 * from 1.0, and payloads hold integers far more often), other numbers in Python's float repr (exponent
 * below 1e-4 and from 1e16 on, with at least two exponent digits).
 */
function pythonFloat(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : n < 0 ? '-Infinity' : 'NaN';
  if (Number.isSafeInteger(n)) return String(n);
  const [mantissa, exponentText] = n.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  if (exponent < -4 || exponent >= 16) return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return String(n);
}

function asciiString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i]!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += ch;
  }
  return out + '"';
}
