// Pure channel helpers: Zulip's channel-name and description rules, retention-day parsing, colors,
// and the channel / subscription objects of responses and events (Schema<'Channel'>, Schema<'Subscription'>).
import type { Schema } from '@parley/api-types';
import type { Channel, Subscription } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { renderMarkdown } from './markdown.ts';
import { settingsOf, type GroupSettingColumn, type GroupSettingName } from './group-settings.ts';
import { unixSeconds } from './timestamps.ts';

/** The limits /register announces (max_stream_name_length, max_stream_description_length). */
export const MAX_CHANNEL_NAME_LENGTH = 60;
export const MAX_CHANNEL_DESCRIPTION_LENGTH = 1024;

export type TopicsPolicy = Schema<'Channel'>['topics_policy'];
export type SettingValue = Schema<'GroupSettingValue'>;
/** The legacy posting policy of the Channel object (1 any member … 4 moderators). */
export type StreamPostPolicy = Schema<'Channel'>['stream_post_policy'];

/** The channel's group settings (names from the spec's Channel object, columns from the row). */
export type ChannelGroupSettingName = GroupSettingName<'channel'>;
export type ChannelGroupSettingColumn = GroupSettingColumn<'channel'>;

/** The channel's group settings: API name → Prisma column, in the order of lib/group-settings.ts. */
export const CHANNEL_GROUP_SETTINGS = settingsOf('channel').map((s) => ({ name: s.name, column: s.column, definition: s }));

/** Zulip's is_character_printable: control characters, lone surrogates and non-characters are not. */
function isPrintable(char: string): boolean {
  if (/[\p{Cc}\p{Cs}]/u.test(char)) return false;
  const code = char.codePointAt(0)!;
  if (code >= 0xfdd0 && code <= 0xfdef) return false;
  if ((code & 0xffff) >= 0xfffe) return false; // U+xFFFE and U+xFFFF of every plane
  return true;
}

/** Zulip's check_stream_name (the caller has already stripped surrounding whitespace). */
export function checkChannelName(name: string): void {
  if (name.trim() === '') throw new JsonableError("Channel name can't be empty.");
  const chars = Array.from(name);
  if (chars.length > MAX_CHANNEL_NAME_LENGTH) {
    throw new JsonableError(`Channel name too long (limit: ${MAX_CHANNEL_NAME_LENGTH} characters).`);
  }
  const bad = chars.findIndex((c) => !isPrintable(c));
  if (bad >= 0) throw new JsonableError(`Invalid character in channel name, at position ${bad + 1}.`);
}

/** Zulip's stripping: Python's str.strip() removes Unicode whitespace, as String.prototype.trim does. */
export const stripChannelName = (name: string) => name.trim();

/** Channel descriptions are one line: newlines become spaces. */
export const normalizeDescription = (description: string) => description.replace(/\n/g, ' ');

export const renderDescription = (description: string) => renderMarkdown(description);

/**
 * Zulip's parse_message_retention_days: a positive integer of days, "unlimited" (stored as -1) or
 * "realm_default" (stored as null); anything else is `Bad value for 'message_retention_days': <value>`.
 */
export function parseMessageRetentionDays(value: number | string): number | null {
  if (value === 'realm_default') return null;
  if (value === 'unlimited') return -1;
  if (typeof value === 'string' || !Number.isInteger(value) || value <= 0) {
    throw new JsonableError(`Bad value for 'message_retention_days': ${value}`);
  }
  return value;
}

/** Zulip's check_color, with the variable name Zulip reports for subscription colors. */
export function checkColor(color: string): string {
  if (!/^#([a-fA-F0-9]{3,6})$/.test(color)) throw new JsonableError('add.color is not a valid hex color code');
  return color;
}

/** Zulip's palette for new subscriptions (zerver/lib/stream_color.py). */
export const SUBSCRIPTION_COLORS = [
  '#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5',
  '#f5ce6e', '#c2726a', '#94c849', '#bd86e5', '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063',
  '#9987e1', '#e4523d', '#c2c2c2', '#4f8de4', '#c6a8ad', '#e7cc4d', '#c8bebf', '#a47462',
] as const;

/** Colors for `count` new subscriptions of one user: unused palette colors first, then cycling. */
export function pickColors(used: Set<string>, count: number): string[] {
  const unused = SUBSCRIPTION_COLORS.filter((c) => !used.has(c));
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    out.push(i < unused.length ? unused[i]! : SUBSCRIPTION_COLORS[(used.size + i) % SUBSCRIPTION_COLORS.length]!);
  }
  return out;
}

/** Legacy stream_post_policy derived from can_send_message_group (1 when not exactly a mapped system group). */
export function streamPostPolicy(sendGroupName: string | null | undefined): StreamPostPolicy {
  switch (sendGroupName) {
    case 'role:administrators':
      return 2;
    case 'role:fullmembers':
      return 3;
    case 'role:moderators':
      return 4;
    default:
      return 1;
  }
}

/** Everything about a channel that is not on its row, gathered in batches by the caller. */
export interface ChannelDisplayData {
  subscriberCount: Map<number, number>;
  /** Subscriber ids by channel (ascending), when they were asked for. */
  subscribers?: Map<number, number[]>;
  firstMessageId: Map<number, number>;
  recentlyActive: Set<number>;
  /** Group-setting values by group id (named groups as ids, anonymous ones as members/subgroups). */
  groupValues: Map<number, SettingValue>;
  /** Names of the organization's system groups by id. */
  systemGroupNames: Map<number, string>;
}

export function formatChannel(channel: Channel, data: ChannelDisplayData, options: { includeDefault?: boolean } = {}): Schema<'Channel'> {
  const policy = streamPostPolicy(data.systemGroupNames.get(channel.canSendMessageGroupId));
  const out: Schema<'Channel'> = {
    stream_id: channel.id,
    name: channel.name,
    description: channel.description,
    rendered_description: channel.renderedDescription,
    date_created: unixSeconds(channel.createdAt),
    creator_id: channel.creatorId,
    invite_only: channel.inviteOnly,
    is_web_public: channel.isWebPublic,
    history_public_to_subscribers: channel.historyPublicToSubscribers,
    first_message_id: data.firstMessageId.get(channel.id) ?? null,
    folder_id: channel.folderId,
    message_retention_days: channel.messageRetentionDays,
    is_archived: channel.isArchived,
    is_announcement_only: policy === 2,
    stream_post_policy: policy,
    topics_policy: channel.topicsPolicy as TopicsPolicy,
    subscriber_count: data.subscriberCount.get(channel.id) ?? 0,
    // Parley keeps no traffic analytics yet; null is what Zulip sends for channels too new to estimate.
    stream_weekly_traffic: null,
    is_recently_active: data.recentlyActive.has(channel.id),
    can_add_subscribers_group: 0,
    can_administer_channel_group: 0,
    can_delete_any_message_group: 0,
    can_delete_own_message_group: 0,
    can_move_messages_out_of_channel_group: 0,
    can_move_messages_within_channel_group: 0,
    can_remove_subscribers_group: 0,
    can_resolve_topics_group: 0,
    can_send_message_group: 0,
    can_subscribe_group: 0,
  };
  for (const setting of CHANNEL_GROUP_SETTINGS) {
    const groupId = channel[setting.column];
    out[setting.name] = data.groupValues.get(groupId) ?? groupId;
  }
  if (options.includeDefault) out.is_default = channel.isDefault;
  return out;
}

export function formatSubscription(
  channel: Channel,
  subscription: Pick<Subscription, 'color' | 'isMuted' | 'pinToTop' | 'desktopNotifications' | 'audibleNotifications' | 'pushNotifications' | 'emailNotifications' | 'wildcardMentionsNotify'>,
  data: ChannelDisplayData,
  subscribers?: { subscribers?: number[]; partial_subscribers?: number[] },
): Schema<'Subscription'> {
  const { is_default: _ignored, ...fields } = formatChannel(channel, data);
  return {
    ...fields,
    color: subscription.color,
    is_muted: subscription.isMuted,
    in_home_view: !subscription.isMuted,
    pin_to_top: subscription.pinToTop,
    desktop_notifications: subscription.desktopNotifications,
    audible_notifications: subscription.audibleNotifications,
    push_notifications: subscription.pushNotifications,
    email_notifications: subscription.emailNotifications,
    wildcard_mentions_notify: subscription.wildcardMentionsNotify,
    ...(subscribers ?? {}),
  };
}
