// Read models of messages: GET /messages (Zulip's get_messages_backend and lib/narrow.py), GET
// /messages/{message_id} (access_message) and GET /users/me/{stream_id}/topics (get_topics_backend).
//
// Who reads what: without a channel term a user reads their own user_message rows, minus channels they
// can no longer read; a positive channel term (or channels:public) for a channel whose history they may
// read (access/messages.ts canReadChannelHistory) reaches every message of that channel, those without a
// row of theirs flagged read and historical. Spectators read web-public channels only.
//
// These functions only read. A user's deferred rows (data/deferred-rows.repo.ts) must be caught up
// before any read of their rows or flags: the caller does it (actions/deferred-rows.ts
// catchUpDeferredRows, once per request), after the checks that refuse a request without reading
// (checkFetchRequest, checkTopicsRequest, isPossibleMessageId) and before the read.
import type { Schema, SuccessData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import {
  channelsForMessageRead,
  channelTopics,
  fetchMessagePage,
  firstMatchingId,
  messageWithViewerRow,
  type FetchChannel,
  type MessageScope,
  type PageRow,
  type PageSelection,
} from '../data/message-fetch.repo.ts';
import { directRecipientsByEmails, directRecipientsByIds, messagePeople } from '../data/messages.repo.ts';
import { reactionsOfMessages } from '../data/reactions.repo.ts';
import type { MessageReaction } from '../lib/reactions.ts';
import { hasContentAccess, loadChannelViewer, type PermissionSubject } from '../access/channels.ts';
import {
  canReadChannelHistory,
  canReadPublicChannels,
  channelAccessDependsOnGroups,
  channelsNeedingAccessCheck,
  hasMessageAccess,
  isChannelContentHidden,
} from '../access/messages.ts';
import { JsonableError, MissingArgumentError, UnauthorizedError } from '../errors.ts';
import { flagNames } from '../lib/message-flags.ts';
import { formatMessage, type MessageFormatContext, type MessagePerson, type MessageRow } from '../lib/message-format.ts';
import { realmLinkifiers } from './linkifiers.ts';
import { EMPTY_TOPIC_DISPLAY_NAME, MAX_MESSAGES_PER_FETCH } from '../lib/message-limits.ts';
import {
  BadNarrowError,
  buildNarrow,
  highlightString,
  InvalidNarrowCombinationError,
  isSpectatorNarrow,
  LARGER_THAN_MAX_MESSAGE_ID,
  matchLocations,
  MAX_MESSAGE_ID,
  narrowDefinesConversation,
  narrowLookups,
  parseNarrow,
  renameEmptyTopicTerms,
  withMessageId,
  withoutInHome,
  type NarrowCondition,
  type NarrowTerm,
} from '../lib/narrow.ts';

export interface FetchMessagesRequest {
  anchor?: string | undefined;
  anchorDate?: string | undefined;
  includeAnchor?: boolean | undefined;
  numBefore?: number | undefined;
  numAfter?: number | undefined;
  narrow?: unknown;
  useFirstUnreadAnchor?: boolean | undefined;
  messageIds?: number[] | undefined;
  clientGravatar?: boolean | undefined;
  applyMarkdown?: boolean | undefined;
  allowEmptyTopicName?: boolean | undefined;
}

type Anchor = { kind: 'id'; id: number } | { kind: 'first_unread' } | { kind: 'date'; date: Date };

const spectatorRefused = () => new UnauthorizedError('Missing authorization header for basic auth');
const invalidMessage = () => new JsonableError('Invalid message(s)');

// ---------------------------------------------------------------------------------------------
// Parameters

/** Zulip's parse_anchor_value. */
export function parseAnchor(anchor: string | undefined, useFirstUnread: boolean, anchorDate: string | undefined): Anchor {
  if (useFirstUnread) return { kind: 'first_unread' };
  if (anchor === undefined) throw new JsonableError("Missing 'anchor' argument.", { code: 'REQUEST_VARIABLE_MISSING', data: { var_name: 'anchor' } });
  if (anchor === 'oldest') return { kind: 'id', id: 0 };
  if (anchor === 'newest') return { kind: 'id', id: LARGER_THAN_MAX_MESSAGE_ID };
  if (anchor === 'first_unread') return { kind: 'first_unread' };
  if (anchor === 'date') {
    if (anchorDate === undefined) throw new JsonableError("Missing 'anchor_date' argument.", { code: 'REQUEST_VARIABLE_MISSING', data: { var_name: 'anchor_date' } });
    return { kind: 'date', date: parseAnchorDate(anchorDate) };
  }
  // Python's int(): surrounding blanks, a sign and digit-group underscores are accepted.
  if (!/^\s*[+-]?\d+(?:_\d+)*\s*$/.test(anchor)) throw new JsonableError('Invalid anchor');
  const id = Number(anchor.replace(/[\s_]/g, ''));
  return { kind: 'id', id: id < 0 ? 0 : Math.min(id, LARGER_THAN_MAX_MESSAGE_ID) };
}

/** An ISO 8601 date or date and time; without a zone, UTC. */
function parseAnchorDate(text: string): Date {
  const invalid = () => new JsonableError('Invalid anchor_date');
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(text.trim());
  if (!m) throw invalid();
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  // JavaScript rolls 31 February over to March: the day must exist in its month.
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (Number(d) < 1 || Number(d) > daysInMonth) throw invalid();
  const z = zone.toUpperCase() === 'Z' ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(-2)}`;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}${frac.slice(0, 4)}${z}`);
  if (Number.isNaN(date.getTime())) throw invalid();
  return date;
}

// ---------------------------------------------------------------------------------------------
// Who may read what

/** The viewer's permission subject; the group memberships are read only when a decision needs them. */
async function subjectFor(db: Db, viewer: User, needGroups: boolean): Promise<PermissionSubject> {
  return needGroups ? loadChannelViewer(db, viewer) : { user: viewer, groups: new Set() };
}

/** Whether a message could have this id (ids are PostgreSQL integers, from 1): no other id is looked up. */
export const isPossibleMessageId = (messageId: number) => messageId >= 1 && messageId <= MAX_MESSAGE_ID;

/**
 * The message if `viewer` may read it, with their flags (null without a row); null otherwise, or when
 * it does not exist. The caller has caught up the viewer's deferred rows when the id is possible
 * (isPossibleMessageId): access to a protected history, and the flags, come from the viewer's row.
 */
export async function readableMessage(db: Db, realm: Realm, viewer: User | null, messageId: number, options: { lock?: boolean } = {}) {
  if (!isPossibleMessageId(messageId)) return null;
  const found = await messageWithViewerRow(db, realm.id, messageId, viewer?.id ?? null, options.lock ?? false);
  if (!found) return null;
  const subject = viewer ? await subjectFor(db, viewer, found.channel !== null && channelAccessDependsOnGroups(viewer, found.channel)) : null;
  return hasMessageAccess(subject, found) ? found : null;
}

/**
 * Zulip's access_message(..., is_modifying_message=True), for operations that change a message or
 * its reactions: the message as readableMessage finds it (the caller has caught up the user's
 * deferred rows), refused with `Invalid message(s)` also when its channel is archived. With `lock`
 * (in a transaction), the message row is share-locked as it is read (data/message-fetch.repo.ts
 * messageWithViewerRow), so that the message cannot change, hence the access decided holds, until the
 * transaction ends; changes of the message itself lock it exclusively instead.
 */
export async function changeableMessage(db: Db, realm: Realm, user: User, messageId: number, options: { lock?: boolean } = {}) {
  const found = await readableMessage(db, realm, user, messageId, options);
  if (!found || found.channel?.isArchived) throw invalidMessage();
  return found;
}

// ---------------------------------------------------------------------------------------------
// Narrow resolution

const CONVERSATION_OPERATORS = new Set(['stream', 'channel', 'topic', 'dm', 'pm-with']);

/**
 * Zulip's update_narrow_terms_containing_with_operator: `with:<id>` becomes the conversation that now
 * holds the message (channel and topic, or direct-message participants); when the viewer cannot read it,
 * the other terms stand if they define a conversation. The viewer's deferred rows must have been
 * caught up before (readableMessage).
 */
export async function expandWith(db: Db, realm: Realm, viewer: User | null, terms: NarrowTerm[]): Promise<NarrowTerm[]> {
  const withTerms = terms.filter((t) => t.operator === 'with');
  if (withTerms.length > 1) throw new InvalidNarrowCombinationError("Duplicate 'with' operators.");
  if (withTerms.length === 0) return terms;
  const rest = terms.filter((t) => t !== withTerms[0]);
  const id = withMessageId(withTerms[0]!.operand);
  if (id === null) throw new BadNarrowError("Invalid 'with' operator");
  const found = await readableMessage(db, realm, viewer, id);
  if (!found) {
    if (narrowDefinesConversation(rest)) return rest;
    throw new BadNarrowError("Invalid 'with' operator");
  }
  const others = rest.filter((t) => !CONVERSATION_OPERATORS.has(t.operator));
  const m = found.message;
  const conversation: NarrowTerm[] =
    m.channel_id !== null
      ? [
          { operator: 'channel', operand: m.channel_id, negated: false },
          { operator: 'topic', operand: m.topic, negated: false },
        ]
      : [{ operator: 'dm', operand: m.direct_user_ids, negated: false }];
  return [...conversation, ...others];
}

export interface ResolvedNarrow {
  scope: MessageScope;
  conditions: NarrowCondition[];
  search: { highlight: string | null } | null;
  hasChannelTerm: boolean;
  /** The viewer's rows only, whatever the narrow (for first_unread). */
  receivedScope: MessageScope | null;
}

/**
 * Looks up the channels and users the terms name (one statement each) and the channels the viewer can
 * no longer read, then builds the conditions and decides the scope.
 */
export async function resolveNarrow(db: Db, realm: Realm, viewer: User | null, terms: NarrowTerm[]): Promise<ResolvedNarrow> {
  const lookups = narrowLookups(terms);
  const [channels, usersById, usersByEmail] = await Promise.all([
    channelsForMessageRead(db, realm.id, viewer?.id ?? null, {
      names: lookups.channelNames,
      ids: lookups.channelIds,
      restricted: channelsNeedingAccessCheck(viewer),
    }),
    lookups.userIds.length > 0 ? directRecipientsByIds(db, realm.id, [...new Set(lookups.userIds)]) : Promise.resolve([]),
    lookups.userEmails.length > 0 ? directRecipientsByEmails(db, realm, [...new Set(lookups.userEmails)]) : Promise.resolve(null),
  ]);
  const subject = viewer ? await subjectFor(db, viewer, channels.some((c) => channelAccessDependsOnGroups(viewer, c))) : null;

  // Channels a user can no longer read keep their rows out of the user's history.
  const hidden = subject ? channels.filter((c) => isChannelContentHidden(subject, c)).map((c) => c.id) : [];

  const byName = new Map(channels.map((c) => [c.name.toLowerCase(), c]));
  const byId = new Map(channels.map((c) => [c.id, c]));
  const narrowChannel = (c: FetchChannel | undefined) =>
    c && { id: c.id, isWebPublic: c.isWebPublic, historyReadable: subject !== null && canReadChannelHistory(subject, c, c.subscribed) };
  const idSet = new Set(usersById.map((u) => u.id));
  const built = buildNarrow(terms, {
    viewerId: viewer?.id ?? null,
    canAccessPublicChannels: canReadPublicChannels(viewer),
    channelByName: (name) => narrowChannel(byName.get(name.toLowerCase())),
    channelById: (id) => narrowChannel(byId.get(id)),
    userById: (id) => (idSet.has(id) ? id : undefined),
    userByEmail: (email) => (usersByEmail ? usersByEmail.rows.find((u) => usersByEmail.matches(u, email))?.id : undefined),
  });

  const receivedScope: MessageScope | null = viewer ? { kind: 'received', realmId: realm.id, userId: viewer.id, hiddenChannelIds: hidden } : null;
  const scope: MessageScope = !viewer || built.includeHistory ? { kind: 'history', realmId: realm.id, userId: viewer?.id ?? null } : receivedScope!;
  return { scope, conditions: built.conditions, search: built.search, hasChannelTerm: built.hasChannelTerm, receivedScope };
}

// ---------------------------------------------------------------------------------------------
// GET /messages

export interface Range {
  selection: PageSelection;
  anchoredToLeft: boolean;
  anchoredToRight: boolean;
  numAfter: number;
}

/** Zulip's limit_query_to_range (no organization history limit: the first visible id is 0). */
export function rangeAround(anchor: number, numBefore: number, numAfter: number, includeAnchor: boolean): Range {
  const anchoredToLeft = anchor === 0;
  const anchoredToRight = anchor >= LARGER_THAN_MAX_MESSAGE_ID;
  if (anchoredToRight) numAfter = 0;
  const needBefore = !anchoredToLeft && numBefore > 0;
  const needAfter = !anchoredToRight && numAfter > 0;
  const inc = includeAnchor ? 1 : 0;
  let selection: PageSelection;
  if (needBefore && needAfter) {
    selection = { kind: 'range', before: { maxId: anchor - 1, limit: numBefore }, after: { minId: anchor, limit: numAfter + 1 } };
  } else if (needBefore) {
    selection = {
      kind: 'range',
      before: { maxId: anchoredToRight ? null : anchor - (1 - inc), limit: numBefore + (anchoredToRight ? 0 : inc) },
      after: null,
    };
  } else if (needAfter) {
    selection = { kind: 'range', before: null, after: { minId: anchoredToLeft ? null : anchor + (1 - inc), limit: numAfter + inc } };
  } else {
    // Nothing on either side: at most the anchor itself (Zulip returns it even with include_anchor=false).
    selection = { kind: 'exact', id: anchor };
  }
  return { selection, anchoredToLeft, anchoredToRight, numAfter };
}

/** Zulip's post_process_limited_query. */
export function limitRows<R extends { id: number }>(rows: R[], anchor: number, numBefore: number, range: Range) {
  let before: R[];
  let at: R[];
  let after: R[];
  if (range.anchoredToRight) {
    before = rows;
    at = [];
    after = [];
  } else {
    before = rows.filter((r) => r.id < anchor);
    at = rows.filter((r) => r.id === anchor);
    after = rows.filter((r) => r.id > anchor);
  }
  if (numBefore) before = before.slice(-numBefore);
  if (range.numAfter) after = after.slice(0, range.numAfter);
  return {
    rows: [...before, ...at, ...after],
    found_anchor: at.length === 1,
    found_oldest: range.anchoredToLeft || before.length < numBefore,
    found_newest: range.anchoredToRight || after.length < range.numAfter,
  };
}

/** GET /messages's parameters once checked by checkFetchRequest, before anything is read. */
export interface MessagesQuery {
  request: FetchMessagesRequest;
  terms: NarrowTerm[];
  numBefore: number;
  numAfter: number;
  includeAnchor: boolean;
  /** null: the message_ids form. */
  anchor: Anchor | null;
}

/** GET /messages, the checks of its parameters that need no reading (Zulip's errors, in its order). */
export function checkFetchRequest(req: FetchMessagesRequest): MessagesQuery {
  const idsMode = req.messageIds !== undefined;
  if (!idsMode) {
    if (req.numBefore === undefined) throw new MissingArgumentError('num_before');
    if (req.numAfter === undefined) throw new MissingArgumentError('num_after');
  }
  const terms = parseNarrow(req.narrow);
  const numBefore = req.numBefore ?? 0;
  const numAfter = req.numAfter ?? 0;
  if (idsMode && (numBefore || numAfter || req.anchor !== undefined || req.anchorDate !== undefined || req.useFirstUnreadAnchor)) {
    throw new JsonableError('Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor', {
      code: 'INCOMPATIBLE_PARAMETERS',
      data: { parameters: 'num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor' },
    });
  }
  const includeAnchor = idsMode ? false : (req.includeAnchor ?? true);
  const anchor = idsMode ? null : parseAnchor(req.anchor, req.useFirstUnreadAnchor ?? false, req.anchorDate);
  return { request: req, terms, numBefore, numAfter, includeAnchor, anchor };
}

/**
 * GET /messages, once checkFetchRequest has checked the parameters and the caller has caught up the
 * viewer's deferred rows.
 */
export async function fetchMessages(
  db: Db,
  realm: Realm,
  viewer: User | null,
  query: MessagesQuery,
  /**
   * The viewer's deferred rows being caught up (the caller started it): awaited before the first read
   * of the viewer's rows (a `with` message's, then the page), so that the narrow's channels are read
   * meanwhile. Its failure is the request's, once awaited.
   */
  caughtUp: Promise<void> = Promise.resolve(),
): Promise<SuccessData<'get-messages'>> {
  const { request: req, numBefore, numAfter, includeAnchor, anchor } = query;
  const idsMode = req.messageIds !== undefined;
  if (query.terms.some((t) => t.operator === 'with')) await caughtUp;
  let terms = renameEmptyTopicTerms(await expandWith(db, realm, viewer, query.terms));

  const requested = idsMode ? req.messageIds!.length : numBefore + numAfter;
  if (requested > MAX_MESSAGES_PER_FETCH) throw new JsonableError(`Too many messages requested (maximum ${MAX_MESSAGES_PER_FETCH}).`);
  if (numBefore > 0 && numAfter > 0 && !includeAnchor) throw new JsonableError('The anchor can only be excluded at an end of the range');

  if (!viewer) {
    // Spectators must say they read web-public channels, with operators that make sense for them.
    terms = withoutInHome(terms);
    if (!isSpectatorNarrow(terms)) throw spectatorRefused();
  }

  const narrow = await resolveNarrow(db, realm, viewer, terms);
  await caughtUp;
  const format = {
    applyMarkdown: req.applyMarkdown ?? true,
    clientGravatar: viewer ? (req.clientGravatar ?? true) : false,
    allowEmptyTopicName: req.allowEmptyTopicName ?? false,
  };

  if (idsMode) {
    const ids = [...new Set(req.messageIds!)].filter((id) => id >= 0 && id <= MAX_MESSAGE_ID);
    const rows = ids.length > 0 ? await fetchMessagePage(db, { ...narrow, selection: { kind: 'ids', ids } }) : [];
    return {
      messages: await formatPage(db, realm, viewer, rows, format),
      found_anchor: false,
      found_oldest: false,
      found_newest: false,
      history_limited: false,
    };
  }

  let anchorId: number;
  if (anchor!.kind === 'id') {
    anchorId = anchor!.id;
  } else if (anchor!.kind === 'first_unread') {
    anchorId = await firstUnread(db, narrow);
  } else {
    // The first matching message sent at or after the date, else the newest one; none at all: nothing.
    const found =
      (await firstMatchingId(db, narrow.scope, narrow.conditions, { order: 'ASC', sentSince: anchor!.date })) ??
      (await firstMatchingId(db, narrow.scope, narrow.conditions, { order: 'DESC' }));
    if (found === null) {
      return { messages: [], anchor: LARGER_THAN_MAX_MESSAGE_ID, found_anchor: false, found_oldest: false, found_newest: false, history_limited: false };
    }
    anchorId = found;
  }

  const range = rangeAround(anchorId, numBefore, numAfter, includeAnchor);
  const rows = await fetchMessagePage(db, { ...narrow, selection: range.selection });
  const limited = limitRows(rows, anchorId, numBefore, range);
  return {
    messages: await formatPage(db, realm, viewer, limited.rows, format),
    anchor: anchorId,
    found_anchor: limited.found_anchor,
    found_oldest: limited.found_oldest,
    found_newest: limited.found_newest,
    history_limited: false,
  };
}

/**
 * Zulip's find_first_unread_anchor: the oldest unread message of the viewer's own rows matching the
 * narrow, skipping muted topics, and muted channels unless the narrow names a channel (their unmuted
 * and followed topics are not skipped); none: the newest position.
 */
export async function firstUnread(db: Db, narrow: ResolvedNarrow): Promise<number> {
  if (!narrow.receivedScope) return LARGER_THAN_MAX_MESSAGE_ID;
  const conditions: NarrowCondition[] = [...narrow.conditions, { condition: { kind: 'unread' }, negated: false }];
  conditions.push({ condition: { kind: 'muted', topicsOnly: narrow.hasChannelTerm }, negated: true });
  return (await firstMatchingId(db, narrow.receivedScope, conditions, { order: 'ASC' })) ?? LARGER_THAN_MAX_MESSAGE_ID;
}

type FormatOptions = Pick<MessageFormatContext, 'applyMarkdown' | 'clientGravatar' | 'allowEmptyTopicName'>;

/** The messages as the API shows them, with the viewer's flags and search highlights; one query for the people. */
async function formatPage(db: Db, realm: Realm, viewer: User | null, rows: PageRow[], options: FormatOptions): Promise<Schema<'Message'>[] & SuccessData<'get-messages'>['messages']> {
  const ctx = await formatContext(db, realm, rows, options);
  return rows.map((row) => {
    const out = formatMessage(row, ctx, viewer?.id ?? null);
    out['flags'] = viewer === null ? ['read'] : row.flags === null ? ['read', 'historical'] : flagNames(row.flags);
    if (row.topic_html !== undefined) {
      out['match_content'] = row.content_matches ? highlightString(row.rendered_content, matchLocations(row.content_matches)) : row.rendered_content;
      out['match_subject'] =
        row.channel_id !== null && row.topic === '' && !options.allowEmptyTopicName
          ? EMPTY_TOPIC_DISPLAY_NAME
          : row.topic_matches
            ? highlightString(row.topic_html, matchLocations(row.topic_matches))
            : row.topic_html;
    }
    return out;
  }) as never;
}

async function formatContext(
  db: Db,
  realm: Realm,
  rows: Array<MessageRow & { channel_name: string | null; reactions?: MessageReaction[] | null }>,
  options: FormatOptions,
): Promise<MessageFormatContext> {
  // A page's rows carry their reactions; the others' are read here.
  const [people, reactions, linkifiers] = await Promise.all([
    messagePeople(db, realm.id, rows.flatMap((r) => [r.sender_id, ...r.direct_user_ids])),
    reactionsOfMessages(db, rows.filter((r) => r.reactions === undefined).map((r) => r.id)),
    realmLinkifiers(db, realm),
  ]);
  for (const r of rows) if (r.reactions) reactions.set(r.id, r.reactions);
  const channelNames = new Map<number, string>();
  for (const r of rows) if (r.channel_id !== null && r.channel_name !== null) channelNames.set(r.channel_id, r.channel_name);
  return { realm, people: new Map<number, MessagePerson>(people.map((p) => [p.id, p])), channelNames, reactions, linkifiers, ...options };
}

// ---------------------------------------------------------------------------------------------
// GET /messages/{message_id}

/** The caller has caught up the viewer's deferred rows when the id is possible (readableMessage). */
export async function messageForViewer(
  db: Db,
  realm: Realm,
  viewer: User | null,
  messageId: number,
  options: { applyMarkdown: boolean; allowEmptyTopicName: boolean },
): Promise<SuccessData<'get-message'>> {
  const found = await readableMessage(db, realm, viewer, messageId);
  if (!found) throw viewer ? invalidMessage() : spectatorRefused();
  const row = { ...found.message, channel_name: found.channel?.name ?? null };
  // client_gravatar is always on here for users (Zulip's get_message_backend); spectators get URLs.
  const ctx = await formatContext(db, realm, [row], { applyMarkdown: options.applyMarkdown, allowEmptyTopicName: options.allowEmptyTopicName, clientGravatar: viewer !== null });
  const message = formatMessage(row, ctx, viewer?.id ?? null);
  message['flags'] = viewer === null ? ['read'] : found.flags === null ? ['read', 'historical'] : flagNames(found.flags);
  return { message: message as never, raw_content: found.message.content };
}

// ---------------------------------------------------------------------------------------------
// GET /users/me/{stream_id}/topics

/** A channel whose topics the viewer may list, checked by checkTopicsRequest. */
export interface TopicsQuery {
  channelId: number;
  /** Protected history: only the topics of messages this user received (from their rows). */
  rowsOf: User | null;
}

/** The channel if the viewer may list its topics (`Invalid channel ID` otherwise), and whose rows answer. */
export async function checkTopicsRequest(db: Db, realm: Realm, viewer: User | null, channelId: number): Promise<TopicsQuery> {
  const invalid = new JsonableError('Invalid channel ID');
  const [channel] = await channelsForMessageRead(db, realm.id, viewer?.id ?? null, { names: [], ids: [channelId], restricted: null });
  if (!channel || channel.isArchived) throw invalid;
  let rowsOf: User | null = null;
  if (!viewer) {
    if (!channel.isWebPublic) throw invalid;
  } else {
    const subject = await subjectFor(db, viewer, channelAccessDependsOnGroups(viewer, channel));
    if (!hasContentAccess(subject, channel, channel.subscribed)) throw invalid;
    // Protected history: only the topics of messages the user received.
    if (!channel.historyPublicToSubscribers) rowsOf = viewer;
  }
  return { channelId: channel.id, rowsOf };
}

/** The channel's topics; the caller has caught up the deferred rows of `query.rowsOf`, if any. */
export async function topicsOfChannel(db: Db, query: TopicsQuery, options: { allowEmptyTopicName: boolean }): Promise<SuccessData<'get-stream-topics'>> {
  const topics = await channelTopics(db, query.channelId, query.rowsOf?.id ?? null);
  return {
    topics: topics.map((t) => ({ name: t.name === '' && !options.allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : t.name, max_id: t.max_id })),
  };
}
