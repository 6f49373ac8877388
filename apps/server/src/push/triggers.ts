// Which messages are pushed to whom: Zulip's notification rules for mobile push, for one recipient.
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import type { PushTrigger } from './payloads.ts';
import { VisibilityPolicy } from '../data/user-topics.repo.ts';

export interface PushRecipientState {
  /** user_message flag bits of the recipient. */
  flags: number;
  isSender: boolean;
  /** A direct message (one-to-one or group). */
  direct: boolean;
  /**
   * The recipient is not idle (Zulip's rule): a client of theirs polls for messages and their presence
   * says active (actions/push.ts pushTargetsForMessage).
   */
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
    /** enable_followed_topic_push_notifications: every message of followed topics. */
    followedTopicPush: boolean;
    /** enable_followed_topic_wildcard_mentions_notify: @all / @topic in followed topics count as mentions. */
    followedTopicWildcardMentionsNotify: boolean;
  };
  /** Channel messages: the recipient's visibility policy for the topic (VisibilityPolicy; 0 none). */
  topicPolicy: number;
  /** Channel messages: the recipient's subscription (per-channel overrides; null inherits). */
  subscription: { isMuted: boolean; pushNotifications: boolean | null; wildcardMentionsNotify: boolean | null } | null;
}

/**
 * Why the recipient gets a push for the message, or null for no push, as Zulip decides it (in its order
 * of precedence). A recipient with an active client gets one only with online push on (as in Zulip,
 * where that setting is on by default); the sender never does. Direct messages and personal mentions
 * need offline push on, whatever the channel or topic. In a followed topic, wildcard mentions obey the
 * followed-topic setting and every message is pushed with followed-topic pushes on, even in a muted
 * channel. Otherwise wildcard mentions and channel-wide push obey the topic's and the channel's mute
 * (an unmuted topic of a muted channel counts as not muted) and the per-channel overrides. Recipients
 * who muted the sender never get here: their devices are not push targets (data/push-devices.repo.ts).
 */
export function pushTrigger(r: PushRecipientState): PushTrigger | null {
  if (r.isSender) return null;
  if (r.active && !r.settings.onlinePush) return null;
  const sub = r.subscription;
  const personal = r.settings.offlinePush;
  if (r.direct && personal) return 'direct_message';
  if (r.flags & MESSAGE_FLAG_BITS.mentioned && personal) return 'mentioned';
  const followed = r.topicPolicy === VisibilityPolicy.FOLLOWED;
  const topicWildcard = (r.flags & MESSAGE_FLAG_BITS.topic_wildcard_mentioned) !== 0;
  const channelWildcard = (r.flags & MESSAGE_FLAG_BITS.stream_wildcard_mentioned) !== 0;
  if (followed && personal && r.settings.followedTopicWildcardMentionsNotify) {
    if (topicWildcard) return 'topic_wildcard_mentioned_in_followed_topic';
    if (channelWildcard) return 'stream_wildcard_mentioned_in_followed_topic';
  }
  // Zulip's user_allows_notifications_in_StreamTopic: the topic's policy, then the channel's setting,
  // then the user's.
  const channelAllows = (specific: boolean | null | undefined, global: boolean) => {
    if (sub?.isMuted && r.topicPolicy !== VisibilityPolicy.UNMUTED) return false;
    if (r.topicPolicy === VisibilityPolicy.MUTED) return false;
    return specific ?? global;
  };
  const wildcard = personal && channelAllows(sub?.wildcardMentionsNotify, r.settings.wildcardMentionsNotify);
  if (topicWildcard && wildcard) return 'topic_wildcard_mentioned';
  if (channelWildcard && wildcard) return 'stream_wildcard_mentioned';
  if (!r.direct && followed && r.settings.followedTopicPush) return 'followed_topic_push_notify';
  if (!r.direct && sub && channelAllows(sub.pushNotifications, r.settings.streamPush)) return 'stream_push_notify';
  return null;
}
