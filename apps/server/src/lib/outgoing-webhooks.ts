// Outgoing webhooks, the pure parts (Zulip's zerver/lib/outgoing_webhook.py): the request each interface
// sends, how an answer is read, the texts of the failure notices, and the HTTP exchange itself (one
// POST, no redirects followed, a deadline, non-public destinations refused unless allowed: lib/ssrf.ts).
// What triggers a bot, the jobs and the replies are in actions/outgoing-webhooks.ts.
import http from 'node:http';
import https from 'node:https';
import { ServiceInterface } from './bots.ts';
import { ipLiteralOf, isPublicAddress, NonPublicAddressError, publicOnlyLookup } from './ssrf.ts';

/** Zulip's MAX_REQUEST_RETRIES: a request that timed out or could not connect is retried this many times. */
export const MAX_REQUEST_RETRIES = 3;
/** Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS default. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** An answer's body is read up to this size (Zulip reads it whole; its content is a message of at most 10,000 characters). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export interface OutgoingWebhookConfig {
  /** PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE: bots may post to loopback, private and other non-public addresses. */
  allowPrivate: boolean;
  /** PARLEY_OUTGOING_WEBHOOK_TIMEOUT_MS: a request's deadline (Zulip's OUTGOING_WEBHOOK_TIMEOUT_SECONDS, 10 s). */
  timeoutMs: number;
  /** PARLEY_OUTGOING_WEBHOOK_RETRY_DELAY_MS: the wait before the first retry; each further retry waits twice as long. */
  retryDelayMs: number;
}

export function parseOutgoingWebhookConfig(env: NodeJS.ProcessEnv): OutgoingWebhookConfig {
  const number = (name: string, fallback: number, min: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number of milliseconds (${min} or more), got ${raw}`);
    return n;
  };
  const allow = env.PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE ?? '';
  if (allow !== '' && !/^(1|0|true|false|yes|no|on|off)$/i.test(allow)) throw new Error(`PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE must be 1 or 0, got ${allow}`);
  return {
    allowPrivate: /^(1|true|yes|on)$/i.test(allow),
    timeoutMs: number('PARLEY_OUTGOING_WEBHOOK_TIMEOUT_MS', DEFAULT_TIMEOUT_MS, 1),
    retryDelayMs: number('PARLEY_OUTGOING_WEBHOOK_RETRY_DELAY_MS', 1000, 0),
  };
}

/** The wait before retry number `retry` (1-based): the configured delay, doubled for each retry after the first. */
export const retryDelayMs = (config: OutgoingWebhookConfig, retry: number) => config.retryDelayMs * 2 ** (retry - 1);

/** `10` for 10,000 ms, `0.5` for 500 ms: how Zulip's notice prints its timeout setting. */
export const timeoutSecondsText = (timeoutMs: number) => String(timeoutMs / 1000);

// ---------------------------------------------------------------------------------------------
// The request

/** What a message that triggered a bot is, for building the request (the message as the bot may read it). */
export interface TriggeringMessage {
  /** The message dict as the API shows it to the bot, raw Markdown content, with rendered_content. */
  dict: Record<string, unknown>;
  content: string;
  channelId: number | null;
  channelName: string | null;
  senderId: number;
  senderFullName: string;
  timestamp: number;
}

export interface WebhookBot {
  id: number;
  email: string;
  fullName: string;
  token: string;
  interface: number;
}

export interface WebhookRequest {
  contentType: string;
  body: string;
}

/**
 * Zulip's GenericOutgoingWebhookService / SlackOutgoingWebhookService make_request: the JSON payload,
 * or Slack's form fields; null for a direct message to a Slack-compatible bot (refused).
 */
export function buildWebhookRequest(bot: WebhookBot, message: TriggeringMessage, trigger: string, realm: { id: number; host: string }): WebhookRequest | null {
  if (bot.interface === ServiceInterface.SLACK) {
    if (message.channelId === null) return null;
    const fields: Array<[string, string]> = [
      ['token', bot.token],
      ['team_id', `T${realm.id}`],
      ['team_domain', realm.host],
      ['channel_id', `C${message.channelId}`],
      ['channel_name', message.channelName ?? ''],
      ['thread_ts', String(message.timestamp)],
      ['timestamp', String(message.timestamp)],
      ['user_id', `U${message.senderId}`],
      ['user_name', message.senderFullName],
      ['text', message.content],
      ['trigger_word', trigger],
      ['service_id', String(bot.id)],
    ];
    return { contentType: 'application/x-www-form-urlencoded', body: new URLSearchParams(fields).toString() };
  }
  const payload = { data: message.content, message: message.dict, bot_email: bot.email, bot_full_name: bot.fullName, token: bot.token, trigger };
  return { contentType: 'application/json', body: JSON.stringify(payload) };
}

// ---------------------------------------------------------------------------------------------
// The exchange

export type HttpOutcome =
  | { kind: 'answer'; status: number; body: Buffer }
  | { kind: 'timeout' }
  | { kind: 'connection-error'; error: Error }
  /** The destination is not a public address (Zulip's Smokescreen answers 407). */
  | { kind: 'refused'; address: string }
  /** The request could not be made (Zulip: a requests exception, by its class name). */
  | { kind: 'exception'; type: string; message: string };

class DeadlineError extends Error {}

/**
 * One POST to `url`: no redirect is followed (a 3xx is an answer like any other), the whole exchange
 * must end within `timeoutMs`, and unless `allowPrivate`, every address the host resolves to must be
 * public.
 */
export function postWebhook(url: string, request: WebhookRequest, options: { timeoutMs: number; allowPrivate: boolean; userAgent: string }): Promise<HttpOutcome> {
  if (url === '') return Promise.resolve({ kind: 'exception', type: 'MissingSchema', message: "Invalid URL '': No scheme supplied. Perhaps you meant https://?" });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ kind: 'exception', type: 'MissingSchema', message: `Invalid URL '${url}': No scheme supplied. Perhaps you meant https://${url}?` });
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    return Promise.resolve({ kind: 'exception', type: 'InvalidSchema', message: `No connection adapters were found for '${url}'` });
  }
  if (!options.allowPrivate) {
    const literal = ipLiteralOf(target.hostname);
    if (literal !== null && !isPublicAddress(literal)) return Promise.resolve({ kind: 'refused', address: literal });
  }
  const body = Buffer.from(request.body, 'utf8');
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<HttpOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: HttpOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: { 'Content-Type': request.contentType, 'Content-Length': String(body.length), 'User-Agent': options.userAgent, Accept: '*/*' },
        agent: false,
        ...(options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size >= MAX_ANSWER_BYTES) return;
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => finish({ kind: 'answer', status: res.statusCode ?? 0, body: Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES) }));
        res.on('error', (error) => finish(error instanceof DeadlineError ? { kind: 'timeout' } : { kind: 'connection-error', error }));
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new DeadlineError('deadline'));
      finish({ kind: 'timeout' });
    }, options.timeoutMs);
    req.on('error', (error) => {
      if (error instanceof DeadlineError) finish({ kind: 'timeout' });
      else if (error instanceof NonPublicAddressError) finish({ kind: 'refused', address: error.address });
      else finish({ kind: 'connection-error', error });
    });
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------
// The answer

/** What a 2xx answer asks for: a reply, nothing, or an error Zulip reports (as its JsonableError text). */
export type AnswerOutcome = { kind: 'reply'; content: string } | { kind: 'none' } | { kind: 'error'; message: string };

/**
 * Zulip's process_success_response with the interface's process_success: the body must be JSON
 * (`Invalid JSON in response`); `""` means no reply (older botservers); anything but an object is
 * `Invalid response format`. Generic: `response_not_required` → nothing, else `response_string`
 * (deprecated) or `content`; Slack-compatible: `text`. Blank content → nothing.
 */
export function readAnswer(botInterface: number, body: string): AnswerOutcome {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'error', message: 'Invalid JSON in response' };
  }
  if (json === '') return { kind: 'none' };
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { kind: 'error', message: 'Invalid response format' };
  const answer = json as Record<string, unknown>;
  let content: unknown;
  if (botInterface === ServiceInterface.SLACK) {
    if (!('text' in answer)) return { kind: 'none' };
    content = answer['text'];
  } else {
    if (pythonTruthy(answer['response_not_required'])) return { kind: 'none' };
    if ('response_string' in answer) content = pythonStr(answer['response_string']);
    else if ('content' in answer) content = pythonStr(answer['content']);
    else return { kind: 'none' };
  }
  if (content === null || content === undefined) return { kind: 'none' };
  if (typeof content !== 'string') return { kind: 'error', message: 'Invalid response format' };
  if (content.trim() === '') return { kind: 'none' };
  return { kind: 'reply', content };
}

/** Python's truth of a decoded JSON value (empty lists and objects are false). */
const pythonTruthy = (value: unknown) => (Array.isArray(value) ? value.length > 0 : value !== null && typeof value === 'object' ? Object.keys(value).length > 0 : Boolean(value));

/** Python's str() of a decoded JSON value (Zulip applies it to `content` and `response_string`). */
function pythonStr(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  return pythonRepr(value);
}

function pythonRepr(value: unknown): string {
  if (typeof value === 'string') return reprStr(value);
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (value !== null && typeof value === 'object') return `{${Object.entries(value).map(([k, v]) => `${reprStr(k)}: ${pythonRepr(v)}`).join(', ')}}`;
  return pythonStr(value);
}

// ---------------------------------------------------------------------------------------------
// Python's repr(), which Zulip's notice applies to the answer's body

const PRINTABLE_ASCII = (c: number) => c >= 0x20 && c < 0x7f;

/** repr() of a Python str: single quotes unless the text has ' and no ", escapes for the unprintable. */
export function reprStr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (c >= 0x80 && c < 0xa0) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else if (/\p{C}|\p{Z}/u.test(ch) && ch !== ' ') out += c <= 0xff ? `\\x${c.toString(16).padStart(2, '0')}` : c > 0xffff ? `\\U${c.toString(16).padStart(8, '0')}` : `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out + quote;
}

/** repr() of Python bytes: b'…' with \xNN for every byte outside printable ASCII. */
export function reprBytes(bytes: Buffer): string {
  const hasSingle = bytes.includes(0x27);
  const quote = hasSingle && !bytes.includes(0x22) ? '"' : "'";
  let out = `b${quote}`;
  for (const b of bytes) {
    const ch = String.fromCharCode(b);
    if (ch === quote || ch === '\\') out += `\\${ch}`;
    else if (b === 0x0a) out += '\\n';
    else if (b === 0x0d) out += '\\r';
    else if (b === 0x09) out += '\\t';
    else if (PRINTABLE_ASCII(b)) out += ch;
    else out += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return out + quote;
}

// ---------------------------------------------------------------------------------------------
// Notices

/** Zulip's notify_bot_owner: the direct message the bot sends its owner when a request fails. */
export function ownerNotice(
  messageUrl: string,
  botFullName: string,
  details: { statusCode?: number; responseContent?: string; failureMessage?: string; exception?: { type: string; message: string } },
): string {
  let text = `[A message](${messageUrl}) to your bot @_**${botFullName}** triggered an outgoing webhook.`;
  if (details.exception) {
    text += `\nWhen trying to send a request to the webhook service, an exception of type ${details.exception.type} occurred:\n\`\`\`\n${details.exception.message}\n\`\`\``;
  } else if (details.failureMessage) {
    text += `\n${details.failureMessage}`;
  } else if (details.statusCode === 407) {
    text += '\nThe URL configured for the webhook is for a private or disallowed network.';
  } else if (details.statusCode) {
    text += `\nThe webhook got a response with status code *${details.statusCode}*.`;
  }
  if (details.responseContent) text += `\nThe response contains the following payload:\n\`\`\`\n${details.responseContent}\n\`\`\``;
  return text;
}

/** Zulip's fail_with_message: what the bot says in the conversation when it could not answer. */
export const failureReply = (failureMessage: string) => `Failure! ${failureMessage}`;

/** Zulip's message_link_url: `…/#narrow/channel/<id>-<name>/topic/<topic>/near/<id>` or `…/#narrow/dm/<ids>[-group]/near/<id>`. */
export function directMessageLinkPath(participantIds: number[], messageId: number): string {
  const ids = [...participantIds].sort((a, b) => a - b);
  return `/#narrow/dm/${ids.join(',')}${ids.length >= 3 ? '-group' : ''}/near/${messageId}`;
}
