// Per-recipient message flags, stored as bits in user_message.flags (Zulip's layout) and shown to
// clients as a list of names.

export const MESSAGE_FLAG_BITS = {
  read: 1,
  starred: 2,
  collapsed: 4,
  mentioned: 8,
  stream_wildcard_mentioned: 16,
  topic_wildcard_mentioned: 32,
  group_mentioned: 64,
  force_expand: 128,
  force_collapse: 256,
  has_alert_word: 512,
  historical: 1024,
  is_private: 2048,
  active_mobile_push_notification: 4096,
} as const;

export type MessageFlagName = keyof typeof MESSAGE_FLAG_BITS;

/** Flags kept for the server's own use, never listed to clients. */
const INTERNAL_FLAGS = new Set<MessageFlagName>(['is_private', 'active_mobile_push_notification', 'group_mentioned', 'force_expand', 'force_collapse']);

const LISTED = (Object.entries(MESSAGE_FLAG_BITS) as [MessageFlagName, number][]).filter(([name]) => !INTERNAL_FLAGS.has(name));

/**
 * The names clients see for a flag value. Either wildcard flag also lists the deprecated
 * `wildcard_mentioned`, which older clients read.
 */
export function flagNames(bits: number): string[] {
  const names: string[] = [];
  for (const [name, bit] of LISTED) if (bits & bit) names.push(name);
  if (bits & (MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned)) names.push('wildcard_mentioned');
  return names;
}
