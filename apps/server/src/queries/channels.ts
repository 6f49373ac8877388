// Read models of channels and subscriptions: the Channel and Subscription objects of responses (and of
// events, which the actions build with the same functions), and the channel reads of the API. Each read
// checks the caller's access through access/channels.ts; nothing here writes.
import type { Schema } from '@parley/api-types';
import type { Db, RawSql } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { channelDisplayFacts, listChannelsOfRealm, type ChannelFacts, type ChannelFactsRequest } from '../data/channels.repo.ts';
import {
  activeSubscriptionsOfUser,
  inactiveSubscriptionsOfUser,
  botSubscriberIdsOfChannels,
  subscribedChannelIds,
  subscriberIds,
  subscriberIdsOfChannels,
  type SubscriptionWithChannel,
} from '../data/subscriptions.repo.ts';
import { systemGroupIds } from '../data/system-groups.repo.ts';
import { accessChannelById, accessChannelByName, hasContentAccess, hasMetadataAccess, loadChannelViewer, type PermissionSubject } from '../access/channels.ts';
import { canBrowseUnsubscribedChannel, canSeeFormerSubscription, canSeeSubscribers } from '../access/subscriptions.ts';
import { canReadPublicChannels } from '../access/messages.ts';
import { CHANNEL_GROUP_SETTINGS, formatChannel, formatSubscription, type ChannelDisplayData } from '../lib/channel-format.ts';

/** Zulip's Stream.LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE. */
export const RECENT_ACTIVITY_DAYS = 180;

/** Zulip sends `partial_subscribers` instead of `subscribers` for channels this large. */
const PARTIAL_SUBSCRIBERS_THRESHOLD = 250;

const byChannelName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** What loadChannelDisplayData reads for the channels (see channelDisplayFacts). */
export function channelFactsRequest(channels: readonly Channel[], options: { withSubscribers?: boolean } = {}): ChannelFactsRequest {
  // Kept channel lists (data/digest-cache.ts) are frozen and the same array while unchanged: their
  // request is made once.
  const keep = Object.isFrozen(channels) && !options.withSubscribers;
  const kept = keep ? requestOfKeptChannels.get(channels) : undefined;
  if (kept) return kept;
  const request = {
    channelIds: channels.map((c) => c.id),
    groupIds: channels.flatMap((c) => CHANNEL_GROUP_SETTINGS.map((s) => c[s.column])),
    recentDays: RECENT_ACTIVITY_DAYS,
    withSubscribers: options.withSubscribers ?? false,
  };
  if (keep) requestOfKeptChannels.set(channels, request);
  return request;
}
const requestOfKeptChannels = new WeakMap<readonly Channel[], ChannelFactsRequest>();

/**
 * Everything formatChannel needs beyond the rows, for many channels in one statement (plus the system
 * groups, cached per organization); with `withSubscribers`, each channel's subscriber ids too.
 */
export async function loadChannelDisplayData(db: RawSql, realmId: number, channels: Channel[], options: { withSubscribers?: boolean } = {}): Promise<ChannelDisplayData> {
  return channelDisplayData(db, realmId, channels, await channelDisplayFacts(db, realmId, channelFactsRequest(channels, options)));
}

/** The display data of channels from facts already read (see channelFactsRequest). */
export async function channelDisplayData(db: RawSql, realmId: number, channels: Channel[], facts: ChannelFacts): Promise<ChannelDisplayData> {
  const since = new Date(Date.now() - RECENT_ACTIVITY_DAYS * 86_400_000);
  const groupValues = new Map<number, Schema<'GroupSettingValue'>>();
  for (const [id, value] of facts.groups) groupValues.set(id, value ? { direct_members: value.members, direct_subgroups: value.subgroups } : id);
  const system = await systemGroupIds(db, realmId);
  // Zulip marks channels inactive after 180 days without messages; new channels start active.
  const recentlyActive = new Set(channels.filter((c) => facts.withRecentMessages.has(c.id) || c.createdAt >= since).map((c) => c.id));
  return {
    subscriberCount: facts.subscriberCount,
    subscribers: facts.subscribers,
    firstMessageId: facts.firstMessageId,
    recentlyActive,
    groupValues,
    systemGroupNames: new Map(Object.entries(system).map(([name, id]) => [id, name])),
  };
}

/**
 * The display data of `channels`: from `known` (facts read once for many channels, e.g. every channel
 * of the organization for one /register) when it covers them all, else read now.
 */
async function displayDataOf(db: RawSql, realmId: number, channels: Channel[], known: ChannelFacts | undefined): Promise<ChannelDisplayData> {
  if (known && channels.every((c) => known.subscriberCount.has(c.id))) return channelDisplayData(db, realmId, channels, known);
  return loadChannelDisplayData(db, realmId, channels);
}

export async function presentChannels(db: RawSql, realmId: number, channels: Channel[], options: { includeDefault?: boolean; known?: ChannelFacts } = {}): Promise<Schema<'Channel'>[]> {
  const data = await displayDataOf(db, realmId, channels, options.known);
  const known = options.known;
  // Kept facts and kept channel rows (frozen, the same objects while unchanged: data/digest-cache.ts):
  // each channel is formatted once while they are kept (is_recently_active, which also follows the
  // clock, and is_default are checked each time). The objects are shared: frozen.
  if (!known || !Object.isFrozen(known) || !channels.some((c) => Object.isFrozen(c))) return channels.map((c) => formatChannel(c, data, options));
  let byChannel = formattedOfKeptFacts.get(known);
  if (!byChannel) formattedOfKeptFacts.set(known, (byChannel = new WeakMap()));
  const includeDefault = options.includeDefault ?? false;
  return channels.map((c) => {
    if (!Object.isFrozen(c)) return formatChannel(c, data, options);
    const recent = data.recentlyActive.has(c.id);
    const kept = byChannel.get(c)?.find((k) => k.includeDefault === includeDefault && k.recent === recent);
    if (kept) return kept.channel;
    const channel = Object.freeze(formatChannel(c, data, options));
    byChannel.set(c, [...(byChannel.get(c) ?? []), { includeDefault, recent, channel }]);
    return channel;
  });
}
/** Channel objects formatted from kept facts and rows, by facts, then by channel row. */
const formattedOfKeptFacts = new WeakMap<ChannelFacts, WeakMap<Channel, Array<{ includeDefault: boolean; recent: boolean; channel: Schema<'Channel'> }>>>();

export interface ChannelListOptions {
  includePublic: boolean;
  includeWebPublic: boolean;
  includeSubscribed: boolean;
  includeAll: boolean;
  includeCanAccessContent: boolean;
  includeOwnerSubscribed: boolean;
  includeDefault: boolean;
  excludeArchived: boolean;
}

/** GET /streams: the channels the caller asks for among those they may see, sorted by name. */
export async function listChannelsForUser(db: Db, realm: Realm, user: User, options: ChannelListOptions): Promise<Schema<'Channel'>[]> {
  const subject = await loadChannelViewer(db, user);
  const channels = await listChannelsOfRealm(db, realm.id, { excludeArchived: options.excludeArchived });
  const subscribed = await subscribedChannelIds(db, user.id);
  let selected: Channel[];
  if (options.includeAll) {
    selected = channels.filter((c) => hasMetadataAccess(subject, c, subscribed.has(c.id)));
  } else {
    const ids = new Set<number>();
    if (options.includeCanAccessContent) {
      // Subscribed, public and web-public channels are all part of this set already.
      for (const c of channels) if (hasContentAccess(subject, c, subscribed.has(c.id))) ids.add(c.id);
    } else {
      const includePublic = options.includePublic && canReadPublicChannels(user);
      for (const c of channels) {
        if (options.includeSubscribed && subscribed.has(c.id)) ids.add(c.id);
        if (includePublic && !c.inviteOnly) ids.add(c.id);
        if (options.includeWebPublic && c.isWebPublic) ids.add(c.id);
      }
    }
    if (options.includeOwnerSubscribed && user.isBot && user.botOwnerId !== null) {
      const owners = await subscribedChannelIds(db, user.botOwnerId);
      for (const c of channels) if (owners.has(c.id)) ids.add(c.id);
    }
    selected = channels.filter((c) => ids.has(c.id));
  }
  const streams = await presentChannels(db, realm.id, selected, { includeDefault: options.includeDefault });
  return streams.sort(byChannelName);
}

/** GET /streams/{id}: a channel the caller can see (archived ones included). */
export async function channelById(db: Db, realm: Realm, user: User, channelId: number): Promise<Schema<'Channel'>> {
  const subject = await loadChannelViewer(db, user);
  const { channel } = await accessChannelById(db, realm, subject, channelId, { requireContentAccess: false, allowArchived: true });
  const [stream] = await presentChannels(db, realm.id, [channel]);
  return stream!;
}

/** GET /get_stream_id: the id of an active channel the caller can read, by name. */
export async function channelIdByName(db: Db, realm: Realm, user: User, name: string): Promise<number> {
  const subject = await loadChannelViewer(db, user);
  return (await accessChannelByName(db, realm, subject, name)).id;
}

/** GET /streams/{id}/members: the subscribers of a channel the caller can see. */
export async function channelSubscriberIds(db: Db, realm: Realm, user: User, channelId: number): Promise<number[]> {
  const subject = await loadChannelViewer(db, user);
  const { channel } = await accessChannelById(db, realm, subject, channelId, { requireContentAccess: false, allowArchived: true });
  return subscriberIds(db, channel.id);
}

export type IncludeSubscribers = 'true' | 'false' | 'partial';
type SubscriberLists = { subscribers?: number[]; partial_subscribers?: number[] };

/**
 * The subscriber lists of channels as the client asked (`include_subscribers`): none; every
 * subscriber; or, with `partial`, every subscriber of smaller channels and a subset of larger ones.
 * A channel whose subscribers the viewer may not know (`visible` false) gets an empty list, as in
 * Zulip's bulk_get_subscriber_user_ids; its subscribers are never read.
 */
async function subscriberLists(db: RawSql, channels: Channel[], includeSubscribers: IncludeSubscribers, visible: (channel: Channel) => boolean): Promise<Map<number, SubscriberLists>> {
  const out = new Map<number, SubscriberLists>();
  if (includeSubscribers === 'false') return out;
  const ids = channels.filter(visible).map((c) => c.id);
  const subscribers = await subscriberIdsOfChannels(db, ids);
  // Parley keeps no presence data: a partial list is the channel's bots.
  const bots = includeSubscribers === 'partial' ? await botSubscriberIdsOfChannels(db, ids) : new Map<number, number[]>();
  for (const channel of channels) {
    const all = subscribers.get(channel.id) ?? [];
    if (includeSubscribers === 'partial' && all.length >= PARTIAL_SUBSCRIBERS_THRESHOLD) out.set(channel.id, { partial_subscribers: bots.get(channel.id) ?? [] });
    else out.set(channel.id, { subscribers: all });
  }
  return out;
}

type SubscriptionRow = SubscriptionWithChannel;

/** What POST /register has read already, in its snapshot: the channels' facts, the subscription rows wanted. */
interface AlreadyRead {
  known?: ChannelFacts;
  rows?: SubscriptionRow[];
}

async function formatSubscriptions(db: RawSql, realm: Realm, rows: SubscriptionRow[], lists: Map<number, SubscriberLists>, known?: ChannelFacts): Promise<Schema<'Subscription'>[]> {
  const data = await displayDataOf(db, realm.id, rows.map((r) => r.channel), known);
  return rows.map((row) => formatSubscription(row.channel, row, data, lists.get(row.channelId))).sort(byChannelName);
}

/**
 * GET /users/me/subscriptions (and /register's `subscriptions`): the caller's current subscriptions,
 * with subscriber lists as asked, sorted by name. A subscriber may always know a channel's
 * subscribers (canSeeSubscribers answers yes to anyone subscribed), so no group is read here.
 */
export async function subscriptionsOfUser(db: RawSql, realm: Realm, user: User, includeSubscribers: IncludeSubscribers, read: AlreadyRead = {}): Promise<Schema<'Subscription'>[]> {
  const rows = read.rows ?? (await activeSubscriptionsOfUser(db, user.id));
  const lists = await subscriberLists(db, rows.map((r) => r.channel), includeSubscribers, () => true);
  return formatSubscriptions(db, realm, rows, lists, read.known);
}

/**
 * /register's `unsubscribed`: the channels the viewer was subscribed to and left, only those they can
 * still see (canSeeFormerSubscription), with their subscription settings and the subscriber lists
 * they may know, sorted by name.
 */
export async function formerSubscriptionsOfUser(db: RawSql, realm: Realm, viewer: PermissionSubject, includeSubscribers: IncludeSubscribers, read: AlreadyRead = {}): Promise<Schema<'Subscription'>[]> {
  const rows = (read.rows ?? (await inactiveSubscriptionsOfUser(db, viewer.user.id))).filter((r) => canSeeFormerSubscription(viewer, r.channel));
  const lists = await subscriberLists(db, rows.map((r) => r.channel), includeSubscribers, (c) => canSeeSubscribers(viewer, c, false));
  return formatSubscriptions(db, realm, rows, lists, read.known);
}

/**
 * /register's `never_subscribed`: among `channels` (the organization's, read once per /register), those
 * the viewer has no subscription row for, active or not, and can see (canBrowseUnsubscribedChannel),
 * with the subscriber lists they may know, sorted by name.
 */
export async function neverSubscribedChannels(
  db: RawSql,
  realm: Realm,
  viewer: PermissionSubject,
  channels: readonly Channel[],
  subscriptionRows: Map<number, boolean>,
  includeSubscribers: IncludeSubscribers,
  known?: ChannelFacts,
): Promise<Array<Schema<'Channel'> & SubscriberLists>> {
  const visible = channels.filter((c) => !subscriptionRows.has(c.id) && canBrowseUnsubscribedChannel(viewer, c));
  const lists = await subscriberLists(db, visible, includeSubscribers, (c) => canSeeSubscribers(viewer, c, false));
  const formatted = await presentChannels(db, realm.id, visible, known ? { known } : {});
  return formatted.map((c) => ({ ...c, ...lists.get(c.stream_id) })).sort(byChannelName);
}
