// Read models of channels and subscriptions: the Channel and Subscription objects of responses (and of
// events, which the actions build with the same functions), and the channel reads of the API. Each read
// checks the caller's access through access/channels.ts; nothing here writes.
import type { Schema } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { channelDisplayFacts, listChannelsOfRealm, type ChannelFacts, type ChannelFactsRequest } from '../data/channels.repo.ts';
import {
  activeSubscriptionsOfUser,
  inactiveSubscriptionsOfUser,
  botSubscriberIdsOfChannels,
  subscribedChannelIds,
  subscriberIds,
  subscriberIdsOfChannels,
} from '../data/subscriptions.repo.ts';
import { systemGroupIds } from '../data/system-groups.repo.ts';
import { accessChannelById, accessChannelByName, hasContentAccess, hasMetadataAccess, loadChannelViewer } from '../access/channels.ts';
import { isGuest } from '../access/roles.ts';
import { CHANNEL_GROUP_SETTINGS, formatChannel, formatSubscription, type ChannelDisplayData } from '../lib/channel-format.ts';

/** Zulip's Stream.LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE. */
const RECENT_ACTIVITY_DAYS = 180;

/** Zulip sends `partial_subscribers` instead of `subscribers` for channels this large. */
const PARTIAL_SUBSCRIBERS_THRESHOLD = 250;

const byChannelName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** What loadChannelDisplayData reads for the channels (see channelDisplayFacts). */
export function channelFactsRequest(channels: Channel[], options: { withSubscribers?: boolean } = {}): ChannelFactsRequest {
  return {
    channelIds: channels.map((c) => c.id),
    groupIds: channels.flatMap((c) => CHANNEL_GROUP_SETTINGS.map((s) => c[s.column])),
    recentDays: RECENT_ACTIVITY_DAYS,
    withSubscribers: options.withSubscribers ?? false,
  };
}

/**
 * Everything formatChannel needs beyond the rows, for many channels in one statement (plus the system
 * groups, cached per organization); with `withSubscribers`, each channel's subscriber ids too.
 */
export async function loadChannelDisplayData(db: Db, realmId: number, channels: Channel[], options: { withSubscribers?: boolean } = {}): Promise<ChannelDisplayData> {
  return channelDisplayData(db, realmId, channels, await channelDisplayFacts(db, realmId, channelFactsRequest(channels, options)));
}

/** The display data of channels from facts already read (see channelFactsRequest). */
export async function channelDisplayData(db: Db, realmId: number, channels: Channel[], facts: ChannelFacts): Promise<ChannelDisplayData> {
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

export async function presentChannels(db: Db, realmId: number, channels: Channel[], options: { includeDefault?: boolean } = {}): Promise<Schema<'Channel'>[]> {
  const data = await loadChannelDisplayData(db, realmId, channels);
  return channels.map((c) => formatChannel(c, data, options));
}

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
      const includePublic = options.includePublic && !isGuest(user);
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

/** GET /users/me/subscriptions: the caller's subscriptions, with subscriber lists as asked, sorted by name. */
export async function subscriptionsOfUser(
  db: Db,
  realm: Realm,
  user: User,
  includeSubscribers: 'true' | 'false' | 'partial',
  options: { active: boolean } = { active: true },
): Promise<Schema<'Subscription'>[]> {
  const rows = options.active ? await activeSubscriptionsOfUser(db, user.id) : await inactiveSubscriptionsOfUser(db, user.id);
  const channels = rows.map((r) => r.channel);
  const data = await loadChannelDisplayData(db, realm.id, channels);
  const ids = channels.map((c) => c.id);
  const subscribers = includeSubscribers === 'false' ? new Map<number, number[]>() : await subscriberIdsOfChannels(db, ids);
  // Parley keeps no presence data: a partial list is the channel's bots.
  const bots = includeSubscribers === 'partial' ? await botSubscriberIdsOfChannels(db, ids) : new Map<number, number[]>();
  const subscriptions = rows.map((row) => {
    let lists: { subscribers?: number[]; partial_subscribers?: number[] } | undefined;
    if (includeSubscribers === 'true') lists = { subscribers: subscribers.get(row.channelId) ?? [] };
    if (includeSubscribers === 'partial') {
      const all = subscribers.get(row.channelId) ?? [];
      lists = all.length < PARTIAL_SUBSCRIBERS_THRESHOLD ? { subscribers: all } : { partial_subscribers: bots.get(row.channelId) ?? [] };
    }
    return formatSubscription(row.channel, row, data, lists);
  });
  return subscriptions.sort(byChannelName);
}
