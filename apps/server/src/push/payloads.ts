// Zulip's mobile push payloads: what the Zulip apps read out of a notification. APNs bodies are
// `{aps: {...}, zulip: {...}}`; FCM data is one flat object (kept in the outbox only: Parley delivers
// through APNs). Every payload starts with the same base fields, so that an app signed in to several
// servers and organizations can tell them apart.
import { EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import type { MessagePerson } from '../lib/message-format.ts';

/** Common fields of every payload. */
export interface BasePayload {
  /** Host (and port) of the server, Zulip's EXTERNAL_HOST. */
  server: string;
  realm_id: number;
  realm_uri: string;
  realm_url: string;
  realm_name: string;
  user_id: number;
}

export function basePayload(publicUrl: string, realm: { id: number; name: string; url: string }, userId: number): BasePayload {
  return {
    server: new URL(publicUrl).host,
    realm_id: realm.id,
    realm_uri: realm.url,
    realm_url: realm.url,
    realm_name: realm.name,
    user_id: userId,
  };
}

export function testPayloadApns(base: BasePayload): Record<string, unknown> {
  return {
    zulip: { ...base, event: 'test' },
    aps: {
      alert: { title: 'Test notification', body: `This is a test notification from ${base.realm_name} (${base.realm_url}).` },
      sound: 'default',
    },
  };
}

export function testPayloadFcm(base: BasePayload, now: Date): Record<string, unknown> {
  return { ...base, event: 'test', time: Math.floor(now.getTime() / 1000) };
}

/** Why a message is pushed (Zulip's NotificationTriggers, in the order they take precedence). */
export type PushTrigger =
  | 'direct_message'
  | 'mentioned'
  | 'topic_wildcard_mentioned_in_followed_topic'
  | 'stream_wildcard_mentioned_in_followed_topic'
  | 'topic_wildcard_mentioned'
  | 'stream_wildcard_mentioned'
  | 'followed_topic_push_notify'
  | 'stream_push_notify';

/**
 * What the pushes of a message are decided and written from: a message checked for sending (the shape
 * of actions/messages.ts CheckedMessage, which push code does not import: sending depends on pushing,
 * not the other way round).
 */
export interface MessageToPush {
  channel: { id: number; name: string } | null;
  topic: string;
  /** Users who get the message (ascending), and their flag bits (aligned). */
  recipientIds: number[];
  flags: number[];
  /** Direct messages: every participant, sender included (ascending). */
  directUserIds: number[];
  /** The sender and direct-message participants. */
  people: ReadonlyMap<number, MessagePerson>;
}

export interface PushedMessage {
  id: number;
  dateSent: Date;
  renderedContent: string;
  /** `email`: the address everyone sees (lib/message-format.ts messageEmailOf), as in messages. */
  sender: { id: number; email: string; fullName: string; avatarUrl: string };
  /** Channel messages. */
  channel: { id: number; name: string; topic: string } | null;
  /** Direct messages: every participant, sender included, ascending, with their names. */
  participants: { id: number; fullName: string }[];
}

/** The `zulip` fields of a message push, shared by both platforms. */
function messageFields(base: BasePayload, message: PushedMessage): Record<string, unknown> {
  const data: Record<string, unknown> = {
    ...base,
    sender_id: message.sender.id,
    sender_email: message.sender.email,
    time: Math.floor(message.dateSent.getTime() / 1000),
  };
  if (message.channel) {
    data['recipient_type'] = 'stream';
    data['stream'] = message.channel.name;
    data['stream_id'] = message.channel.id;
    data['topic'] = message.channel.topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : message.channel.topic;
  } else {
    data['recipient_type'] = 'private';
    if (message.participants.length > 2) data['pm_users'] = message.participants.map((p) => p.id).join(',');
  }
  return data;
}

/** First bold line of an iOS notification: the conversation. */
function alertTitle(message: PushedMessage): string {
  if (message.channel) return `#${message.channel.name} > ${message.channel.topic === '' ? EMPTY_TOPIC_DISPLAY_NAME : message.channel.topic}`;
  if (message.participants.length > 2) return message.participants.map((p) => p.fullName).sort().join(', ');
  return message.sender.fullName;
}

/** Second bold line: who, and why it is pushed. */
function alertSubtitle(message: PushedMessage, trigger: PushTrigger): string {
  const name = message.sender.fullName;
  if (trigger === 'mentioned') return `${name} mentioned you:`;
  if (trigger.includes('wildcard_mentioned')) return `${name} mentioned everyone:`;
  if (!message.channel && message.participants.length <= 2) return '';
  return `${name}:`;
}

export function messagePayloadApns(base: BasePayload, message: PushedMessage, trigger: PushTrigger): Record<string, unknown> {
  return {
    zulip: { ...messageFields(base, message), message_ids: [message.id] },
    aps: {
      alert: { title: alertTitle(message), subtitle: alertSubtitle(message, trigger), body: truncate(pushContent(message.renderedContent)).text },
      sound: 'default',
      // Zulip sends 0 for now (the apps' badge handling is not settled).
      badge: 0,
    },
  };
}

export function messagePayloadFcm(base: BasePayload, message: PushedMessage): Record<string, unknown> {
  const { text, truncated } = truncate(pushContent(message.renderedContent));
  return {
    ...messageFields(base, message),
    event: 'message',
    zulip_message_id: message.id,
    content: text,
    content_truncated: truncated,
    sender_full_name: message.sender.fullName,
    sender_avatar_url: message.sender.avatarUrl,
  };
}

/** A removal lists at most this many (the newest) message ids: APNs bodies are limited to 4 KB. */
export const MAX_REMOVED_MESSAGE_IDS = 200;

export function removePayloadApns(base: BasePayload, messageIds: number[]): Record<string, unknown> {
  return { zulip: { ...base, event: 'remove', zulip_message_ids: messageIds.join(',') }, aps: { badge: 0 } };
}

export function removePayloadFcm(base: BasePayload, messageIds: number[]): Record<string, unknown> {
  return { ...base, event: 'remove', zulip_message_ids: messageIds.join(','), zulip_message_id: messageIds[0] };
}

// ---------------------------------------------------------------------------------------------------
// Message text for a notification: the rendered HTML as plain text

/** At most 200 characters, then an ellipsis (U+2026). */
export function truncate(text: string): { text: string; truncated: boolean } {
  const chars = [...text];
  return chars.length <= 200 ? { text, truncated: false } : { text: chars.slice(0, 200).join('') + '\u2026', truncated: true };
}

interface HtmlNode {
  tag: string;
  attrs: Record<string, string>;
  children: Array<HtmlNode | string>;
}

const VOID_TAGS = new Set(['br', 'img', 'hr', 'input', 'wbr', 'source', 'meta', 'link']);
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** A forgiving parser for the HTML our Markdown renderer writes (well-formed, no scripts). */
function parseHtml(html: string): HtmlNode {
  const root: HtmlNode = { tag: '', attrs: {}, children: [] };
  const stack = [root];
  const tagRe = /<!--[\s\S]*?-->|<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^\s=>/]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*)\s*(\/?)>/g;
  let last = 0;
  for (let m = tagRe.exec(html); m; m = tagRe.exec(html)) {
    if (m.index > last) stack.at(-1)!.children.push(decodeEntities(html.slice(last, m.index)));
    last = tagRe.lastIndex;
    if (m[0].startsWith('<!--')) continue;
    const tag = m[2]!.toLowerCase();
    if (m[1]) {
      const at = stack.map((n) => n.tag).lastIndexOf(tag);
      if (at > 0) stack.length = at;
      continue;
    }
    const attrs: Record<string, string> = {};
    for (const a of (m[3] ?? '').matchAll(/([^\s=>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g)) {
      attrs[a[1]!.toLowerCase()] = decodeEntities(a[2] ?? a[3] ?? a[4] ?? '');
    }
    const node: HtmlNode = { tag, attrs, children: [] };
    stack.at(-1)!.children.push(node);
    if (!VOID_TAGS.has(tag) && !m[4]) stack.push(node);
  }
  if (last < html.length) stack.at(-1)!.children.push(decodeEntities(html.slice(last)));
  return root;
}

const classesOf = (node: HtmlNode) => (node.attrs['class'] ?? '').split(/\s+/);

/**
 * Plain text of a rendered message as Zulip's apps show it in a notification: emoji as characters,
 * images as their alt text, quotes as `> ` lines, ordered lists numbered, spoilers reduced to their
 * header and `(…)`.
 */
export function pushContent(renderedHtml: string): string {
  const text = (node: HtmlNode | string): string => {
    if (typeof node === 'string') return node;
    const classes = classesOf(node);
    if (classes.includes('emoji')) {
      const code = classes.find((c) => c.startsWith('emoji-'))?.slice('emoji-'.length);
      if (code && /^[0-9a-f]+(-[0-9a-f]+)*$/i.test(code)) return String.fromCodePoint(...code.split('-').map((h) => parseInt(h, 16)));
    }
    if (node.tag === 'img') return node.attrs['alt'] ?? '';
    if (classes.includes('spoiler-block')) {
      const header = node.children.find((c): c is HtmlNode => typeof c !== 'string' && classesOf(c).includes('spoiler-header'));
      const title = header ? inner(header).trim() : '';
      return title ? `${title} (\u2026)\n` : '(\u2026)\n';
    }
    if (node.tag === 'ol') {
      let n = Number(node.attrs['start']) || 1;
      return node.children
        .filter((c): c is HtmlNode => typeof c !== 'string' && c.tag === 'li')
        .map((li) => `${n++}. ${inner(li).trim()}`)
        .join('\n');
    }
    if (node.tag === 'blockquote') {
      return inner(node)
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => `> ${line}\n`)
        .join('');
    }
    return inner(node);
  };
  const inner = (node: HtmlNode) => node.children.map(text).join('');
  return text(parseHtml(renderedHtml)).trim();
}
