// Channel and subscription operations: thin handlers mapping decoded parameters to a read model
// (queries/channels.ts) or to an action, which checks permissions on the rows it locks.
import type { Handler } from '../http/handler.ts';
import { channelById, channelIdByName, channelSubscriberIds, listChannelsForUser, subscriptionsOfUser } from '../queries/channels.ts';
import { doArchiveChannel, doUpdateChannel } from '../actions/channels.ts';
import { doSubscribe, doUnsubscribe, doUpdateSubscriptions } from '../actions/subscriptions.ts';
import { doUpdateSubscriptionSettings } from '../actions/subscription-settings.ts';
import type { GroupSettingUpdate, GroupSettingValue } from '../actions/group-settings.ts';
import { groupSettingParams } from '../lib/group-settings.ts';
import { subscriptionStatus } from '../queries/subscription-status.ts';
import { doGetChannelEmailAddress } from '../actions/email-gateway.ts';

export const getStreams: Handler<'get-streams'> = async ({ params, realm, user, deps }) => ({
  streams: await listChannelsForUser(deps.db, realm, user, {
    includePublic: params.include_public ?? true,
    includeWebPublic: params.include_web_public ?? false,
    includeSubscribed: params.include_subscribed ?? true,
    includeAll: (params.include_all ?? false) || (params.include_all_active ?? false),
    includeCanAccessContent: params.include_can_access_content ?? false,
    includeOwnerSubscribed: params.include_owner_subscribed ?? false,
    includeDefault: params.include_default ?? false,
    excludeArchived: params.exclude_archived ?? true,
  }),
});

export const getStreamById: Handler<'get-stream-by-id'> = async ({ path, realm, user, deps }) => ({
  stream: await channelById(deps.db, realm, user, path.stream_id),
});

export const getStreamId: Handler<'get-stream-id'> = async ({ params, realm, user, deps }) => ({
  stream_id: await channelIdByName(deps.db, realm, user, params.stream),
});

export const getSubscribers: Handler<'get-subscribers'> = async ({ path, realm, user, deps }) => ({
  subscribers: await channelSubscriberIds(deps.db, realm, user, path.stream_id),
});

export const getSubscriptions: Handler<'get-subscriptions'> = async ({ params, realm, user, deps }) => ({
  subscriptions: await subscriptionsOfUser(deps.db, realm, user, params.include_subscribers ?? 'false'),
});

export const subscribe: Handler<'subscribe'> = async ({ params, realm, user, deps, cachedTableWrites }) =>
  doSubscribe(
    deps,
    realm,
    user,
    {
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
      groupSettings: groupSettingParams<'channel', GroupSettingValue>('channel', params),
      sendNewSubscriptionMessages: params.send_new_subscription_messages ?? true,
    },
    cachedTableWrites,
  );

export const unsubscribe: Handler<'unsubscribe'> = async ({ params, realm, user, deps }) =>
  doUnsubscribe(deps, realm, user, {
    names: params.subscriptions,
    ...(params.principals !== undefined ? { principals: params.principals } : {}),
  });

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
    groupSettings: groupSettingParams<'channel', GroupSettingUpdate>('channel', params),
  });
  return {};
};

export const archiveStream: Handler<'archive-stream'> = async ({ path, realm, user, deps }) => {
  await doArchiveChannel(deps, realm, user, path.stream_id);
  return {};
};

export const updateSubscriptionSettings: Handler<'update-subscription-settings'> = async ({ params, realm, user, deps }) => {
  await doUpdateSubscriptionSettings(deps, realm, user, params.subscription_data);
  return {};
};

export const updateSubscriptions: Handler<'update-subscriptions'> = async ({ params, realm, user, deps }) =>
  doUpdateSubscriptions(deps, realm, user, { add: params.add ?? [], delete: params.delete ?? [] });

export const getSubscriptionStatus: Handler<'get-subscription-status'> = async ({ path, realm, user, deps }) => ({
  is_subscribed: await subscriptionStatus(deps.db, realm, user, path.user_id, path.stream_id),
});

/** The channel's address at the e-mail gateway (actions/email-gateway.ts; creates its token on first use). */
export const getStreamEmailAddress: Handler<'get-stream-email-address'> = async ({ path, params, realm, user, deps }) =>
  doGetChannelEmailAddress(deps, realm, user, path.stream_id, params.sender_id);
