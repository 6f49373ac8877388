// Channel and subscription operations: thin handlers mapping decoded parameters to access checks,
// actions and formatted channels.
import type { Handler, HandlerTable } from '../http/handler.ts';
import { JsonableError } from '../errors.ts';
import { listChannelsOfRealm } from '../data/channels.repo.ts';
import { activeSubscriptionsOfUser, botSubscriberIdsOfChannels, subscribedChannelIds, subscriberIds, subscriberIdsOfChannels } from '../data/subscriptions.repo.ts';
import {
  accessChannelById,
  accessChannelByName,
  hasContentAccess,
  hasMetadataAccess,
  loadChannelViewer,
} from '../access/channels.ts';
import { isGuest } from '../access/roles.ts';
import { doArchiveChannel, doUpdateChannel, loadChannelDisplayData, presentChannels } from '../actions/channels.ts';
import { doSubscribe, doUnsubscribe } from '../actions/subscriptions.ts';
import type { GroupSettingUpdate, GroupSettingValue } from '../actions/group-settings.ts';
import { CHANNEL_GROUP_SETTINGS, formatSubscription, type ChannelGroupSettingName } from '../lib/channel-format.ts';

/** Zulip sends `partial_subscribers` instead of `subscribers` for channels this large. */
const PARTIAL_SUBSCRIBERS_THRESHOLD = 250;

const byChannelName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function groupSettingParams<V>(params: Record<string, unknown>): Partial<Record<ChannelGroupSettingName, V>> {
  const out: Partial<Record<ChannelGroupSettingName, V>> = {};
  for (const setting of CHANNEL_GROUP_SETTINGS) {
    if (params[setting.name] !== undefined) out[setting.name] = params[setting.name] as V;
  }
  return out;
}

export const getStreams: Handler<'get-streams'> = async ({ params, realm, user, deps }) => {
  const subject = await loadChannelViewer(deps.db, user);
  const channels = await listChannelsOfRealm(deps.db, realm.id, { excludeArchived: params.exclude_archived ?? true });
  const subscribed = await subscribedChannelIds(deps.db, user.id);
  let selected;
  if (params.include_all || params.include_all_active) {
    selected = channels.filter((c) => hasMetadataAccess(subject, c, subscribed.has(c.id)));
  } else {
    const ids = new Set<number>();
    if (params.include_can_access_content) {
      // Subscribed, public and web-public channels are all part of this set already.
      for (const c of channels) if (hasContentAccess(subject, c, subscribed.has(c.id))) ids.add(c.id);
    } else {
      const includePublic = (params.include_public ?? true) && !isGuest(user);
      for (const c of channels) {
        if ((params.include_subscribed ?? true) && subscribed.has(c.id)) ids.add(c.id);
        if (includePublic && !c.inviteOnly) ids.add(c.id);
        if (params.include_web_public && c.isWebPublic) ids.add(c.id);
      }
    }
    if (params.include_owner_subscribed && user.isBot && user.botOwnerId !== null) {
      const owners = await subscribedChannelIds(deps.db, user.botOwnerId);
      for (const c of channels) if (owners.has(c.id)) ids.add(c.id);
    }
    selected = channels.filter((c) => ids.has(c.id));
  }
  const streams = await presentChannels(deps.db, realm.id, selected, { includeDefault: params.include_default ?? false });
  return { streams: streams.sort(byChannelName) };
};

export const getStreamById: Handler<'get-stream-by-id'> = async ({ path, realm, user, deps }) => {
  const subject = await loadChannelViewer(deps.db, user);
  const { channel } = await accessChannelById(deps.db, realm, subject, path.stream_id, { requireContentAccess: false, allowArchived: true });
  const [stream] = await presentChannels(deps.db, realm.id, [channel]);
  return { stream: stream! };
};

export const getStreamId: Handler<'get-stream-id'> = async ({ params, realm, user, deps }) => {
  const subject = await loadChannelViewer(deps.db, user);
  const channel = await accessChannelByName(deps.db, realm, subject, params.stream);
  return { stream_id: channel.id };
};

export const getSubscribers: Handler<'get-subscribers'> = async ({ path, realm, user, deps }) => {
  const subject = await loadChannelViewer(deps.db, user);
  const { channel } = await accessChannelById(deps.db, realm, subject, path.stream_id, { requireContentAccess: false, allowArchived: true });
  return { subscribers: await subscriberIds(deps.db, channel.id) };
};

export const getSubscriptions: Handler<'get-subscriptions'> = async ({ params, realm, user, deps }) => {
  const rows = await activeSubscriptionsOfUser(deps.db, user.id);
  const channels = rows.map((r) => r.channel);
  const data = await loadChannelDisplayData(deps.db, realm.id, channels);
  const mode = params.include_subscribers ?? 'false';
  const ids = channels.map((c) => c.id);
  const subscribers = mode === 'false' ? new Map<number, number[]>() : await subscriberIdsOfChannels(deps.db, ids);
  // Parley keeps no presence data: a partial list is the channel's bots.
  const bots = mode === 'partial' ? await botSubscriberIdsOfChannels(deps.db, ids) : new Map<number, number[]>();
  const subscriptions = rows.map((row) => {
    let lists: { subscribers?: number[]; partial_subscribers?: number[] } | undefined;
    if (mode === 'true') lists = { subscribers: subscribers.get(row.channelId) ?? [] };
    if (mode === 'partial') {
      const all = subscribers.get(row.channelId) ?? [];
      lists = all.length < PARTIAL_SUBSCRIBERS_THRESHOLD ? { subscribers: all } : { partial_subscribers: bots.get(row.channelId) ?? [] };
    }
    return formatSubscription(row.channel, row, data, lists);
  });
  return { subscriptions: subscriptions.sort(byChannelName) };
};

export const subscribe: Handler<'subscribe'> = async ({ params, realm, user, deps }) => {
  // Zulip's require_non_guest_user (bots may subscribe).
  if (isGuest(user)) throw new JsonableError('Not allowed for guest users');
  return doSubscribe(deps, realm, user, {
    channels: params.subscriptions,
    ...(params.principals !== undefined ? { principals: params.principals } : {}),
    authorizationErrorsFatal: params.authorization_errors_fatal ?? true,
    inviteOnly: params.invite_only ?? false,
    isWebPublic: params.is_web_public ?? false,
    isDefault: params.is_default_stream ?? false,
    ...(params.history_public_to_subscribers !== undefined ? { historyPublicToSubscribers: params.history_public_to_subscribers } : {}),
    messageRetentionDays: params.message_retention_days ?? 'realm_default',
    ...(params.topics_policy !== undefined ? { topicsPolicy: params.topics_policy } : {}),
    ...(params.folder_id !== undefined ? { folderId: params.folder_id } : {}),
    groupSettings: groupSettingParams<GroupSettingValue>(params),
    sendNewSubscriptionMessages: params.send_new_subscription_messages ?? true,
  });
};

export const unsubscribe: Handler<'unsubscribe'> = async ({ params, realm, user, deps }) => {
  return doUnsubscribe(deps, realm, user, {
    names: params.subscriptions,
    ...(params.principals !== undefined ? { principals: params.principals } : {}),
  });
};

export const updateStream: Handler<'update-stream'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateChannel(deps, realm, user, path.stream_id, {
    ...(params.description !== undefined ? { description: params.description } : {}),
    ...(params.new_name !== undefined ? { newName: params.new_name } : {}),
    ...(params.is_private !== undefined ? { isPrivate: params.is_private } : {}),
    ...(params.is_web_public !== undefined ? { isWebPublic: params.is_web_public } : {}),
    ...(params.history_public_to_subscribers !== undefined ? { historyPublicToSubscribers: params.history_public_to_subscribers } : {}),
    ...(params.is_default_stream !== undefined ? { isDefault: params.is_default_stream } : {}),
    ...(params.message_retention_days !== undefined ? { messageRetentionDays: params.message_retention_days } : {}),
    ...(params.is_archived !== undefined ? { isArchived: params.is_archived } : {}),
    ...(params.folder_id !== undefined ? { folderId: params.folder_id } : {}),
    ...(params.topics_policy !== undefined ? { topicsPolicy: params.topics_policy } : {}),
    groupSettings: groupSettingParams<GroupSettingUpdate>(params),
  });
  return {};
};

export const archiveStream: Handler<'archive-stream'> = async ({ path, realm, user, deps }) => {
  await doArchiveChannel(deps, realm, user, path.stream_id);
  return {};
};

/** Channel and subscription operations. */
export const channelHandlers: HandlerTable = {
  'get-streams': getStreams,
  'get-stream-by-id': getStreamById,
  'get-stream-id': getStreamId,
  'get-subscribers': getSubscribers,
  'get-subscriptions': getSubscriptions,
  subscribe,
  unsubscribe,
  'update-stream': updateStream,
  'archive-stream': archiveStream,
};
