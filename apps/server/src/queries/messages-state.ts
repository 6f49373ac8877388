// The message-derived pieces of /register: unread_msgs and recent_private_conversations.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { recentDirectConversationsOfUser, unreadMessagesOfUser } from '../data/message-state.repo.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';

/** Zulip reports at most this many unread messages (the newest), and says when older ones are missing. */
export const MAX_UNREAD_MESSAGES = 50_000;

const MENTION_BITS = MESSAGE_FLAG_BITS.mentioned | MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned;

export async function unreadMessagesState(db: Db, _realm: Realm, user: User) {
  const rows = await unreadMessagesOfUser(db, user.id, MAX_UNREAD_MESSAGES + 1);
  const missing = rows.length > MAX_UNREAD_MESSAGES;
  const kept = rows.slice(0, MAX_UNREAD_MESSAGES).reverse(); // ascending ids in every list
  const pms = new Map<number, number[]>();
  const streams = new Map<string, { stream_id: number; topic: string; unread_message_ids: number[] }>();
  const huddles = new Map<string, number[]>();
  const mentions: number[] = [];
  for (const r of kept) {
    if (r.channel_id !== null) {
      const key = `${r.channel_id}\u0000${r.topic.toLowerCase()}`;
      const entry = streams.get(key) ?? { stream_id: r.channel_id, topic: r.topic, unread_message_ids: [] };
      entry.unread_message_ids.push(r.id);
      streams.set(key, entry);
    } else if (r.direct_user_ids.length <= 2) {
      const other = r.direct_user_ids.find((id) => id !== user.id) ?? user.id;
      pms.set(other, [...(pms.get(other) ?? []), r.id]);
    } else {
      const key = r.direct_user_ids.join(',');
      huddles.set(key, [...(huddles.get(key) ?? []), r.id]);
    }
    if (r.flags & MENTION_BITS) mentions.push(r.id);
  }
  return {
    count: kept.length,
    pms: [...pms].map(([other, ids]) => ({ other_user_id: other, sender_id: other, unread_message_ids: ids })),
    streams: [...streams.values()],
    huddles: [...huddles].map(([key, ids]) => ({ user_ids_string: key, unread_message_ids: ids })),
    mentions,
    old_unreads_missing: missing,
  };
}

export async function recentDirectConversations(db: Db, userId: number) {
  const rows = await recentDirectConversationsOfUser(db, userId, 1_000);
  return rows.map((r) => ({
    user_ids: r.direct_user_ids.filter((id) => id !== userId),
    max_message_id: Number(r.max_id),
  }));
}
