// Per-user message state: the message-derived pieces of /register (unread_msgs and
// recent_private_conversations), and the range of the user's messages a flag update for a narrow
// covers (POST /messages/flags/narrow).
import type { Db, RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { recentDirectConversationsOfUser, unreadGroupsOfUser } from '../data/message-state.repo.ts';
import { fetchPageIds, type MessageScope } from '../data/message-fetch.repo.ts';
import { JsonableError } from '../errors.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import { parseNarrow, renameEmptyTopicTerms } from '../lib/narrow.ts';
import { expandWith, firstUnread, limitRows, parseAnchor, rangeAround, resolveNarrow } from './messages.ts';

/** Zulip reports at most this many unread messages (the newest), and says when older ones are missing. */
export const MAX_UNREAD_MESSAGES = 50_000;

const MENTION_BITS = MESSAGE_FLAG_BITS.mentioned | MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned;

/**
 * Zulip's unread_msgs: the newest MAX_UNREAD_MESSAGES unread messages of the user by conversation, a
 * channel's topic (case-insensitively, spelled as its oldest unread message) or a direct-message
 * conversation, each in the order of its oldest unread message; every list of ids ascending. Read
 * from the user's rows: the caller has caught up their deferred rows in the same snapshot
 * (actions/event-queues.ts doRegisterQueue).
 */
export async function unreadMessagesState(db: RawSql, _realm: Realm, user: User) {
  const groups = await unreadGroupsOfUser(db, user.id, MAX_UNREAD_MESSAGES, MENTION_BITS);
  groups.sort((a, b) => a.first_id - b.first_id);
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const pms: { other_user_id: number; sender_id: number; unread_message_ids: number[] }[] = [];
  const huddles: { user_ids_string: string; unread_message_ids: number[] }[] = [];
  const mentions: number[] = [];
  let count = 0;
  for (const g of groups) {
    if (g.channel_id !== null) {
      const key = `${g.channel_id}\u0000${g.topic.toLowerCase()}`;
      const topic = streams.get(key);
      if (topic) topic.unread_message_ids = topic.unread_message_ids.concat(g.ids);
      else streams.set(key, { stream_id: g.channel_id, topic: g.topic, unread_message_ids: g.ids });
    } else if (g.direct_user_ids.length <= 2) {
      const other = g.direct_user_ids.find((id) => id !== user.id) ?? user.id;
      pms.push({ other_user_id: other, sender_id: other, unread_message_ids: g.ids });
    } else {
      huddles.push({ user_ids_string: g.direct_user_ids.join(','), unread_message_ids: g.ids });
    }
    count += g.ids.length;
    for (const id of g.mention_ids) mentions.push(id);
  }
  const ascending = (a: number, b: number) => a - b;
  for (const list of [...streams.values(), ...pms, ...huddles]) list.unread_message_ids.sort(ascending);
  mentions.sort(ascending);
  return { count, pms, streams: [...streams.values()], huddles, mentions, old_unreads_missing: groups[0]?.missing ?? false };
}

export async function recentDirectConversations(db: RawSql, userId: number) {
  const rows = await recentDirectConversationsOfUser(db, userId, 1_000);
  return rows.map((r) => ({
    user_ids: r.direct_user_ids.filter((id) => id !== userId),
    max_message_id: Number(r.max_id),
  }));
}

// ---------------------------------------------------------------------------------------------
// POST /messages/flags/narrow

/** Zulip's MAX_MESSAGES_PER_UPDATE: the most messages one flag update for a narrow covers. */
export const MAX_MESSAGES_PER_FLAG_UPDATE = 5000;

export interface FlagRangeRequest {
  anchor: string;
  includeAnchor: boolean;
  numBefore: number;
  numAfter: number;
  narrow: unknown;
}

export interface FlagRange {
  /** The user's messages in the range, ascending. */
  ids: number[];
  foundOldest: boolean;
  foundNewest: boolean;
}

/**
 * Zulip's update_message_flags_for_narrow, up to the flag change: the user's messages matching the
 * narrow around the anchor, as GET /messages picks a page, with the counts lowered so that together
 * they are at most MAX_MESSAGES_PER_FLAG_UPDATE. The range is taken from the user's own rows only
 * (messages without one cannot be flagged, as in POST /messages/flags), including those of channels
 * the user can no longer read, whose flags are still theirs. The caller catches up the user's deferred
 * rows first (actions/deferred-rows.ts catchUpDeferredRows): the range is read from the rows as they are.
 */
export async function messagesInFlagRange(db: Db, realm: Realm, user: User, req: FlagRangeRequest): Promise<FlagRange> {
  let terms = parseNarrow(req.narrow);
  // `date` anchors are a later Zulip addition (with anchor_date); this operation has none.
  if (req.anchor === 'date') throw new JsonableError('Invalid anchor');
  const anchor = parseAnchor(req.anchor, false, undefined);
  if (req.numBefore > 0 && req.numAfter > 0 && !req.includeAnchor) throw new JsonableError('The anchor can only be excluded at an end of the range');
  const numBefore = Math.min(req.numBefore, Math.max(MAX_MESSAGES_PER_FLAG_UPDATE - req.numAfter, MAX_MESSAGES_PER_FLAG_UPDATE / 2));
  const numAfter = Math.min(req.numAfter, MAX_MESSAGES_PER_FLAG_UPDATE - numBefore);

  terms = renameEmptyTopicTerms(await expandWith(db, realm, user, terms));
  const narrow = await resolveNarrow(db, realm, user, terms);
  const scope: MessageScope = { kind: 'received', realmId: realm.id, userId: user.id, hiddenChannelIds: [] };
  const anchorId = anchor.kind === 'id' ? anchor.id : await firstUnread(db, { ...narrow, receivedScope: scope });
  const range = rangeAround(anchorId, numBefore, numAfter, req.includeAnchor);
  const ids = await fetchPageIds(db, { scope, conditions: narrow.conditions, selection: range.selection });
  const limited = limitRows(ids.map((id) => ({ id })), anchorId, numBefore, range);
  return { ids: limited.rows.map((r) => r.id), foundOldest: limited.found_oldest, foundNewest: limited.found_newest };
}
