// What one queue receives of a stored (or ephemeral) event: whether it is for this queue at all
// (recipient, event_types, narrow, all_public_streams), and the event adapted to the client that
// registered it (apply_markdown, local_message_id, per-recipient flags). Stored payloads may carry
// delivery-only fields under keys starting with "_"; they never reach a client.
import type { EventQueueRow } from '../data/event-queues.repo.ts';
import { flagNames } from '../lib/message-flags.ts';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { isOperandMeaning, normaliseNarrow, operatorMeaning, type NarrowTerm } from '../lib/narrow.ts';
import { presenceEventForQueue } from '../lib/presence.ts';

/** An event as a process holds it for delivery. */
export interface DeliverableEvent {
  id: number;
  type: string;
  /** null: every user of the organization. */
  userIds: number[] | null;
  flags: number[] | null;
  allPublicStreams: boolean;
  payload: Record<string, unknown>;
  /** Ephemeral events: when they were published (database clock, ms). */
  publishedAtMs?: number;
}

/** Delivery-only fields of a stored `message` event's payload. */
export interface MessageDeliveryFields {
  /** The Markdown source, for queues registered without apply_markdown. */
  _markdown?: string;
  /** The queue that sent the message, and the client's local id for it (local_message_id). */
  _sender_queue_id?: string;
  _local_id?: string;
  /** The sender's avatar is their gravatar and their address is public: client_gravatar queues get null. */
  _gravatar?: boolean;
}

/** Fields some stored payloads carry for the server's own use (as Zulip's do), stripped at delivery. */
const SERVER_ONLY_FIELDS = new Set(['for_unarchiving', 'for_archiving']);

type Queue = Pick<EventQueueRow, 'id' | 'userId' | 'eventTypes' | 'allPublicStreams' | 'applyMarkdown' | 'narrow' | 'clientCapabilities' | 'createdAtMs' | 'clientGravatar'>;

/**
 * The event as this queue receives it, or null when it is not for this queue.
 *
 * Queues with the same formKey (events/present-forms.ts) share the JSON of what this gives them: the
 * output may depend on the queue only through that key (apply_markdown, client_gravatar, the client
 * capabilities, the recipient's flags, being the sender's queue); anything else of the queue may only
 * decide whether the event is for it. Extend the key along with any new dependency.
 */
export function presentEvent(event: DeliverableEvent, queue: Queue): Record<string, unknown> | null {
  if (queue.eventTypes && !queue.eventTypes.includes(event.type)) return null;
  // A stored event's id tells whether the queue's state includes it; an ephemeral one's time does.
  if (event.publishedAtMs !== undefined && event.publishedAtMs < queue.createdAtMs) return null;
  let recipientIndex = -1;
  if (event.userIds) {
    recipientIndex = indexOfSorted(event.userIds, queue.userId);
    if (recipientIndex < 0 && !(event.allPublicStreams && queue.allPublicStreams)) return null;
  }
  if (event.type === 'message') return presentMessageEvent(event, queue, recipientIndex);
  // Linkifiers' URL templates only reach clients that said they read them (Zulip's capability).
  if (event.type === 'realm_linkifiers' && queue.clientCapabilities['linkifier_url_template'] !== true) return null;
  // Channel typing only reaches clients that said they understand it.
  if (event.type === 'typing' && event.payload['message_type'] === 'stream' && queue.clientCapabilities['stream_typing_notifications'] !== true) return null;
  // The legacy forms of user_settings events only reach clients that do not understand user_settings.
  if ((event.type === 'update_display_settings' || event.type === 'update_global_notifications') && queue.clientCapabilities['user_settings_object'] === true) return null;
  const out: Record<string, unknown> = { id: event.id };
  for (const [k, v] of Object.entries(event.payload)) if (!k.startsWith('_') && !SERVER_ONLY_FIELDS.has(k)) out[k] = v;
  if (event.type === 'user_topic' && out['topic_name'] === '' && queue.clientCapabilities['empty_topic_name'] !== true) out['topic_name'] = EMPTY_TOPIC_DISPLAY_NAME;
  if (event.type === 'update_message') {
    // Each recipient's own flags on the edited message travel beside the one payload.
    out['flags'] = flagNames(recipientIndex >= 0 && event.flags ? (event.flags[recipientIndex] ?? 0) : 0);
    if (queue.clientCapabilities['empty_topic_name'] !== true) {
      for (const key of ['orig_subject', 'subject']) if (out[key] === '') out[key] = EMPTY_TOPIC_DISPLAY_NAME;
    }
  }
  if (event.type === 'delete_message' && out['topic'] === '' && queue.clientCapabilities['empty_topic_name'] !== true) out['topic'] = EMPTY_TOPIC_DISPLAY_NAME;
  if (event.type === 'presence') return presenceEventForQueue(out, event.payload, queue.clientCapabilities);
  return out;
}

/**
 * The events this queue receives for a stored (or ephemeral) event: presentEvent's, except that a
 * `delete_message` event becomes one event per message, with `message_id` instead of `message_ids`,
 * for clients without the `bulk_message_deletion` capability (Zulip's form before feature level 13).
 * Those events share the stored event's id.
 */
export function presentEvents(event: DeliverableEvent, queue: Queue): Record<string, unknown>[] {
  const out = presentEvent(event, queue);
  if (!out) return [];
  if (event.type !== 'delete_message' || queue.clientCapabilities['bulk_message_deletion'] === true || !Array.isArray(out['message_ids'])) return [out];
  const { message_ids: ids, ...rest } = out;
  return (ids as number[]).map((id) => ({ ...rest, message_id: id }));
}

function presentMessageEvent(event: DeliverableEvent, queue: Queue, recipientIndex: number): Record<string, unknown> | null {
  const p = event.payload as Record<string, unknown> & MessageDeliveryFields;
  const stored = p['message'] as Record<string, unknown>;
  if (!matchesNarrow(stored, queue.narrow)) return null;
  const message = { ...stored };
  if (!queue.applyMarkdown && p._markdown !== undefined) {
    message['content'] = p._markdown;
    message['content_type'] = 'text/x-markdown';
  }
  if (queue.clientGravatar && p._gravatar) message['avatar_url'] = null;
  // Clients that do not know the empty topic see its display name.
  if (message['type'] === 'stream' && message['subject'] === '' && queue.clientCapabilities['empty_topic_name'] !== true) message['subject'] = EMPTY_TOPIC_DISPLAY_NAME;
  const bits = recipientIndex >= 0 && event.flags ? (event.flags[recipientIndex] ?? 0) : 0;
  const out: Record<string, unknown> = { id: event.id, type: 'message', message, flags: flagNames(bits) };
  if (p._sender_queue_id !== undefined && p._sender_queue_id === queue.id && p._local_id !== undefined) out['local_message_id'] = p._local_id;
  return out;
}

/** Ids are stored ascending; binary search. */
export function indexOfSorted(ids: number[], id: number): number {
  let lo = 0;
  let hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = ids[mid]!;
    if (v === id) return mid;
    if (v < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/**
 * Whether a message matches a queue's narrow (Zulip's event-queue narrow: channel, topic, sender,
 * is:dm / is:private, dm; every term must hold), read with the term model of lib/narrow.ts (its
 * 'events' reading of the operators). Unknown operators do not filter; names compare
 * case-insensitively.
 */
export function matchesNarrow(message: Record<string, unknown>, narrow: unknown): boolean {
  for (const term of normaliseNarrow(narrow)) {
    const holds = termHolds(message, term);
    if (holds === null) continue;
    if (holds === term.negated) return false;
  }
  return true;
}

const lower = (v: unknown) => String(v ?? '').toLowerCase();

function termHolds(m: Record<string, unknown>, t: NarrowTerm<unknown>): boolean | null {
  switch (operatorMeaning(t.operator, 'events')) {
    case 'channel':
      if (m['type'] !== 'stream') return false;
      return typeof t.operand === 'number' ? m['stream_id'] === t.operand : lower(m['display_recipient']) === lower(t.operand);
    case 'topic':
      return m['type'] === 'stream' && lower(m['subject']) === lower(t.operand);
    case 'sender':
      return typeof t.operand === 'number' ? m['sender_id'] === t.operand : lower(m['sender_email']) === lower(t.operand);
    case 'is':
      if (isOperandMeaning(t.operand) === 'dm') return m['type'] === 'private';
      return null;
    case 'dm': {
      if (m['type'] !== 'private') return false;
      const people = (m['display_recipient'] as { id: number; email: string }[]) ?? [];
      const wanted = Array.isArray(t.operand) ? t.operand : String(t.operand).split(',');
      const others = people.filter((p) => p.id !== m['sender_id'] || people.length === 1);
      return wanted.every((w) => people.some((p) => (typeof w === 'number' ? p.id === w : lower(p.email) === lower(w).trim()))) && others.length > 0;
    }
    default:
      return null;
  }
}
