// The message object of GET /messages, GET /messages/{id} and `message` events (Schema<'Message'>),
// from a stored message and the people and channel it involves.
import { createHash } from 'node:crypto';
import type { Realm } from '../data/models.ts';
import { avatarUrl } from './avatar.ts';
import { EmailVisibility, publicEmailOf } from '../access/users.ts';
import { EMPTY_TOPIC_DISPLAY_NAME } from './message-limits.ts';
import type { EditHistoryEntry } from '../data/message-edits.repo.ts';
import type { MessageReaction } from './reactions.ts';
import type { CompiledLinkifiers } from './linkifiers.ts';

/** A stored message, as the data layer reads it. */
export interface MessageRow {
  id: number;
  sender_id: number;
  channel_id: number | null;
  topic: string;
  direct_user_ids: number[];
  content: string;
  rendered_content: string;
  date_sent: Date;
  last_edit_time: Date | null;
  sending_client: string;
  /** Edits and moves, newest first (data/message-edits.repo.ts EditHistoryEntry); null when none. */
  edit_history?: unknown[] | null;
  /** When it last changed topic (resolving aside) or channel. */
  last_moved_time?: Date | null;
}

/**
 * What a message shows of a person (sender or direct-message participant). Their address is not a
 * field: it is derived, with their visibility, by {@link messageEmailOf}.
 */
export interface MessagePerson {
  id: number;
  full_name: string;
  /** The real address: never shown as such (see messageEmailOf); gravatars are computed from it. */
  delivery_email: string;
  is_bot: boolean;
  /** Their email_address_visibility (1 everyone … 5 moderators). */
  email_address_visibility: number;
  avatar_version: number;
  avatar_source: string;
}

/**
 * The address a message shows for a person (sender_email, display_recipient[].email; typing events and
 * pushes alike): Zulip's `email` field, the same for every viewer (access/users.ts publicEmailOf).
 */
export function messageEmailOf(realm: Pick<Realm, 'url'>, person: MessagePerson): string {
  return publicEmailOf(realm, { id: person.id, isBot: person.is_bot, deliveryEmail: person.delivery_email }, person.email_address_visibility);
}

/** Clients asking for client_gravatar compute the sender's avatar themselves: only from an address everyone sees. */
export const gravatarLeftToClient = (person: MessagePerson) => person.email_address_visibility === EmailVisibility.EVERYONE && person.avatar_source === 'G';

export interface MessageFormatContext {
  realm: Realm;
  people: ReadonlyMap<number, MessagePerson>;
  channelNames: ReadonlyMap<number, string>;
  applyMarkdown: boolean;
  clientGravatar: boolean;
  /** Clients that understand the empty topic get ""; others get realm_empty_topic_display_name. */
  allowEmptyTopicName: boolean;
  /** The messages' reactions (data/reactions.repo.ts reactionsOfMessages); a message missing here has none. */
  reactions?: ReadonlyMap<number, MessageReaction[]>;
  /** The organization's linkifiers (queries/linkifiers.ts), for `topic_links`; none when absent. */
  linkifiers?: Pick<CompiledLinkifiers, 'topicLinks'>;
}

export type FormattedMessage = Record<string, unknown>;

/**
 * An id for the conversation of a message, stable and distinct across channels, one-to-one and group
 * conversations (Zulip's recipient_id): 3n+1 for channel n, 3n for the other person n of a one-to-one
 * conversation (the user n for a conversation with oneself), 3h+2 for a group with hash h of its ids.
 */
export function recipientIdOf(row: Pick<MessageRow, 'channel_id' | 'direct_user_ids' | 'sender_id'>, viewerId: number | null): number {
  if (row.channel_id !== null) return 3 * row.channel_id + 1;
  const ids = row.direct_user_ids;
  if (ids.length <= 2) {
    const other = ids.find((id) => id !== (viewerId ?? row.sender_id)) ?? ids[0] ?? row.sender_id;
    return 3 * other;
  }
  const h = createHash('sha1').update(ids.join(',')).digest().readUInt32BE(0) & 0x0fffffff;
  return 3 * h + 2;
}

export const isMeMessage = (content: string) => content.startsWith('/me ');

export function formatMessage(row: MessageRow, ctx: MessageFormatContext, viewerId: number | null): FormattedMessage {
  const sender = ctx.people.get(row.sender_id);
  const channel = row.channel_id !== null;
  const out: FormattedMessage = {
    id: row.id,
    sender_id: row.sender_id,
    sender_full_name: sender?.full_name ?? '',
    sender_email: sender ? messageEmailOf(ctx.realm, sender) : '',
    sender_realm_str: '',
    timestamp: Math.floor(row.date_sent.getTime() / 1000),
    client: row.sending_client,
    content: ctx.applyMarkdown ? row.rendered_content : row.content,
    content_type: ctx.applyMarkdown ? 'text/html' : 'text/x-markdown',
    subject: channel ? (row.topic === '' && !ctx.allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : row.topic) : '',
    topic_links: channel && ctx.linkifiers ? ctx.linkifiers.topicLinks(row.topic) : [],
    is_me_message: isMeMessage(row.content),
    reactions: ctx.reactions?.get(row.id) ?? [],
    submessages: [],
    recipient_id: recipientIdOf(row, viewerId),
    type: channel ? 'stream' : 'private',
    avatar_url: sender ? avatarUrlOf(ctx.realm, sender, ctx.clientGravatar) : null,
  };
  if (channel) {
    out['stream_id'] = row.channel_id;
    out['display_recipient'] = ctx.channelNames.get(row.channel_id!) ?? '';
  } else {
    const people = row.direct_user_ids
      .map((id) => ctx.people.get(id))
      .filter((p): p is MessagePerson => p !== undefined)
      .map((p) => ({ id: p.id, email: messageEmailOf(ctx.realm, p), full_name: p.full_name, is_mirror_dummy: false }));
    // One-to-one conversations list both people by address (as shown); groups by id (as Zulip does).
    if (people.length <= 2) people.sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
    out['display_recipient'] = people;
  }
  if (row.last_edit_time) out['last_edit_timestamp'] = Math.floor(row.last_edit_time.getTime() / 1000);
  if (row.last_moved_time) out['last_moved_timestamp'] = Math.floor(row.last_moved_time.getTime() / 1000);
  if (row.edit_history) {
    const shown = visibleEditHistory(ctx.realm, row.edit_history as EditHistoryEntry[], ctx.allowEmptyTopicName);
    if (shown && shown.length) out['edit_history'] = shown;
  }
  return out;
}

function avatarUrlOf(realm: Pick<Realm, 'id'>, person: MessagePerson, clientGravatar: boolean): string | null {
  if (clientGravatar && gravatarLeftToClient(person)) return null;
  return avatarUrlOfPerson(realm, person);
}

/** A message person's avatar URL (uploaded or gravatar: lib/avatar.ts). */
export const avatarUrlOfPerson = (realm: Pick<Realm, 'id'>, person: MessagePerson): string =>
  avatarUrl({ id: person.id, realmId: realm.id, deliveryEmail: person.delivery_email, avatarSource: person.avatar_source, avatarVersion: person.avatar_version });

/**
 * The entries of a stored history a viewer is shown under the organization's policy (`all`, or `moves`:
 * content changes left out), newest first, with the empty topic named for clients that do not handle it.
 */
export function visibleEditHistory(realm: Pick<Realm, 'messageEditHistoryVisibilityPolicy'>, history: EditHistoryEntry[], allowEmptyTopicName: boolean): EditHistoryEntry[] | null {
  const policy = realm.messageEditHistoryVisibilityPolicy;
  if (policy === 'none') return null;
  const shown = (topic: string) => (topic === '' && !allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic);
  const out: EditHistoryEntry[] = [];
  for (const entry of history) {
    const e: EditHistoryEntry = { ...entry };
    if (policy === 'moves') {
      delete e.prev_content;
      delete e.prev_rendered_content;
      if (e.prev_topic === undefined && e.prev_stream === undefined) continue;
    }
    if (e.prev_topic !== undefined) e.prev_topic = shown(e.prev_topic);
    if (e.topic !== undefined) e.topic = shown(e.topic);
    out.push(e);
  }
  return out;
}
