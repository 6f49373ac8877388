// Which messages are pushed to whom: Zulip's notification rules for mobile push, for one recipient.
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import type { PushTrigger } from './payloads.ts';

export interface PushRecipientState {
  /** user_message flag bits of the recipient. */
  flags: number;
  isSender: boolean;
  /** A direct message (one-to-one or group). */
  direct: boolean;
  /** The recipient has a client polling for messages now (Zulip: not idle). */
  active: boolean;
  settings: {
    /** enable_offline_push_notifications: direct messages and mentions. */
    offlinePush: boolean;
    /** enable_online_push_notifications: push even while a client is active. */
    onlinePush: boolean;
    /** enable_stream_push_notifications: every message of subscribed channels. */
    streamPush: boolean;
    /** wildcard_mentions_notify: @all / @topic count as mentions. */
    wildcardMentionsNotify: boolean;
  };
  /** Channel messages: the recipient's subscription (per-channel overrides; null inherits). */
  subscription: { isMuted: boolean; pushNotifications: boolean | null; wildcardMentionsNotify: boolean | null } | null;
}

/**
 * Why the recipient gets a push for the message, or null for no push. A recipient with an active client
 * gets one only with online push on (as in Zulip, where that setting is on by default); the sender never
 * does; direct messages and mentions need offline push on; wildcard mentions and channel-wide push obey
 * the channel's mute and the per-channel overrides. Followed topics and muted users are not modelled.
 */
export function pushTrigger(r: PushRecipientState): PushTrigger | null {
  if (r.isSender) return null;
  if (r.active && !r.settings.onlinePush) return null;
  const sub = r.subscription;
  // Per-channel setting, else the user's; nothing from a muted channel.
  const channelAllows = (specific: boolean | null | undefined, global: boolean) => (sub?.isMuted ? false : (specific ?? global));
  const personal = r.settings.offlinePush;
  if (r.direct && personal) return 'direct_message';
  if (r.flags & MESSAGE_FLAG_BITS.mentioned && personal) return 'mentioned';
  const wildcard = personal && channelAllows(sub?.wildcardMentionsNotify, r.settings.wildcardMentionsNotify);
  if (r.flags & MESSAGE_FLAG_BITS.topic_wildcard_mentioned && wildcard) return 'topic_wildcard_mentioned';
  if (r.flags & MESSAGE_FLAG_BITS.stream_wildcard_mentioned && wildcard) return 'stream_wildcard_mentioned';
  if (!r.direct && sub && channelAllows(sub.pushNotifications, r.settings.streamPush)) return 'stream_push_notify';
  return null;
}
