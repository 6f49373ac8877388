// Domain actions on channels: reconfiguring (PATCH /streams/{id}), archiving, and creating channels
// (used by subscribing). Each public action runs in one transaction that first locks the channel row;
// every check is made on the locked state before anything is written, so a request either applies
// completely or not at all (Zulip commits each property separately). Events are stored in the same
// transaction and announced after commit.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import {
  channelHasNamedTopics,
  clearModerationRequestChannel,
  createChannel,
  defaultChannelIds,
  findChannelFolder,
  findChannelsByNames,
  updateChannel,
  updateChannelAlong,
  type ChannelChanges,
} from '../data/channels.repo.ts';
import { subscriberIds } from '../data/subscriptions.repo.ts';
import { systemGroupIds } from '../data/system-groups.repo.ts';
import { audienceUserIds, insertEventsSql, type Audience, type QueuedEvent } from '../data/events.repo.ts';
import { sorted } from '../lib/ids.ts';
import { JsonableError } from '../errors.ts';
import {
  accessChannelForAdministration,
  channelAudience,
  checkCanChangeDefaultChannels,
  checkCanChangeGroupSetting,
  checkCanChangePrivacy,
  checkCanChangeRetention,
  checkCanSetTopicsPolicy,
  loadChannelViewer,
  nonGuestAudience,
  type PermissionSubject,
} from '../access/channels.ts';
import { lockGroupsShared } from '../data/user-groups.repo.ts';
import { formatGroupSettingValues } from '../queries/group-settings.ts';
import { presentChannels } from '../queries/channels.ts';
import { removeArchivedChannelFromGroups } from './default-channels.ts';
import {
  releaseGroupSettingValue,
  resolveGroupSettingUpdate,
  storeDefaultGroupSettingValue,
  storeNewGroupSettingValue,
  type GroupSettingUpdate,
  type GroupSettingValue,
} from './group-settings.ts';
import {
  CHANNEL_GROUP_SETTINGS,
  checkChannelName,
  normalizeDescription,
  parseMessageRetentionDays,
  renderDescription,
  stripChannelName,
  streamPostPolicy,
  type ChannelGroupSettingName,
  type TopicsPolicy,
} from '../lib/channel-format.ts';

// ---------------------------------------------------------------------------------------------
// Events shared by the channel and subscription actions

export const streamCreateEvent = (streams: unknown[], forUnarchiving = false) => ({ type: 'stream', op: 'create', streams, for_unarchiving: forUnarchiving });

export const streamDeleteEvent = (channelIds: number[], forArchiving = false) => ({
  type: 'stream',
  op: 'delete',
  // `streams` is kept for older clients, as Zulip does.
  streams: channelIds.map((id) => ({ stream_id: id })),
  stream_ids: channelIds,
  for_archiving: forArchiving,
});

/** The organization's default channels (active ones, ascending ids), for every non-guest. */
export const defaultStreamsEvent = (channelIds: number[]): QueuedEvent => ({ audience: nonGuestAudience(), payload: { type: 'default_streams', default_streams: channelIds } });


/** The named groups a setting value refers to (the group, or an anonymous value's subgroups). */
const groupsNamedBy = (value: GroupSettingValue | undefined): number[] =>
  value === undefined ? [] : typeof value === 'number' ? [value] : value.direct_subgroups;

// ---------------------------------------------------------------------------------------------
// Creating channels (POST /users/me/subscriptions with names that do not exist)

export interface NewChannel {
  name: string;
  description: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  /** undefined: public for public channels, protected for private ones. */
  historyPublicToSubscribers: boolean | undefined;
  messageRetentionDays: number | null;
  topicsPolicy: TopicsPolicy;
  folderId: number | null;
  isDefault: boolean;
  groupSettings: Partial<Record<ChannelGroupSettingName, GroupSettingValue>>;
}

/**
 * Creates one channel inside `tx` (the caller has checked the creation permissions) and queues its
 * stream-creation event for everyone who can see it. Anonymous group-setting values get one group per
 * channel, so that changing one channel's setting never affects another's.
 */
export async function insertChannel(tx: Db, realm: Realm, creator: User, request: NewChannel): Promise<{ channel: Channel; events: QueuedEvent[] }> {
  // Public channels always have public history (Zulip's get_default_value_for_history_public_to_subscribers).
  const history = request.inviteOnly ? (request.historyPublicToSubscribers ?? false) : true;
  if (request.isWebPublic && request.inviteOnly) throw new JsonableError('Invalid parameters');
  const settings: Record<string, number> = {};
  // Share-lock every group the values name, in one sorted statement (the per-value locks in
  // actions/group-settings.ts then find them held; one ordered acquisition avoids lock-order deadlocks).
  await lockGroupsShared(tx, CHANNEL_GROUP_SETTINGS.flatMap((s) => groupsNamedBy(request.groupSettings[s.name])));
  for (const setting of CHANNEL_GROUP_SETTINGS) {
    const value = request.groupSettings[setting.name];
    settings[setting.column] =
      value === undefined
        ? await storeDefaultGroupSettingValue(tx, realm.id, setting.definition, creator.id)
        : await storeNewGroupSettingValue(tx, realm.id, setting.definition, value);
  }
  const channel = await createChannel(tx, {
    realmId: realm.id,
    name: request.name,
    description: request.description,
    renderedDescription: renderDescription(request.description),
    inviteOnly: request.inviteOnly,
    isWebPublic: request.isWebPublic,
    historyPublicToSubscribers: history,
    isDefault: request.isDefault,
    messageRetentionDays: request.messageRetentionDays,
    topicsPolicy: request.topicsPolicy,
    folderId: request.folderId,
    creatorId: creator.id,
    canAddSubscribersGroupId: settings.canAddSubscribersGroupId!,
    canAdministerChannelGroupId: settings.canAdministerChannelGroupId!,
    canDeleteAnyMessageGroupId: settings.canDeleteAnyMessageGroupId!,
    canDeleteOwnMessageGroupId: settings.canDeleteOwnMessageGroupId!,
    canMoveMessagesOutOfChannelGroupId: settings.canMoveMessagesOutOfChannelGroupId!,
    canMoveMessagesWithinChannelGroupId: settings.canMoveMessagesWithinChannelGroupId!,
    canRemoveSubscribersGroupId: settings.canRemoveSubscribersGroupId!,
    canResolveTopicsGroupId: settings.canResolveTopicsGroupId!,
    canSendMessageGroupId: settings.canSendMessageGroupId!,
    canSubscribeGroupId: settings.canSubscribeGroupId!,
  });
  const [formatted] = await presentChannels(tx, realm.id, [channel]);
  // Who can see the new channel before anyone subscribes to it (subscribers get it with their subscription).
  return { channel, events: [{ audience: channelAudience(channel, { subscribers: false }), payload: streamCreateEvent([formatted]) }] };
}

// ---------------------------------------------------------------------------------------------
// PATCH /streams/{stream_id}

export interface ChannelUpdate {
  description?: string;
  newName?: string;
  isPrivate?: boolean;
  isWebPublic?: boolean;
  historyPublicToSubscribers?: boolean;
  isDefault?: boolean;
  messageRetentionDays?: number | string;
  isArchived?: boolean;
  /** undefined: not sent; null: out of any folder. */
  folderId?: number | null;
  topicsPolicy?: TopicsPolicy;
  groupSettings: Partial<Record<ChannelGroupSettingName, GroupSettingUpdate>>;
}

export async function doUpdateChannel(deps: AppDeps, realm: Realm, actor: User, channelId: number, update: ChannelUpdate): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await loadChannelViewer(tx, actor);
    const { channel, subscribed } = await accessChannelForAdministration(tx, realm, subject, channelId, { lock: true });
    const plan = await planChannelUpdate(tx, realm, subject, channel, subscribed, update);
    if (!plan) return;
    // The change and its events are stored in one statement (see applyChannelUpdate).
    await applyChannelUpdate(tx, realm, channel, plan);
    afterCommit(() => deps.events.announce(realm.id));
  });
}

interface ChannelUpdatePlan {
  privacy?: { inviteOnly: boolean; historyPublicToSubscribers: boolean; isWebPublic: boolean };
  isDefault?: boolean;
  messageRetentionDays?: number | null;
  unarchive: boolean;
  topicsPolicy?: TopicsPolicy;
  description?: string;
  name?: string;
  folderId?: number | null;
  /** New group ids for the settings that change (old ones are released after the write). */
  groupSettings: Array<{ name: ChannelGroupSettingName; column: (typeof CHANNEL_GROUP_SETTINGS)[number]['column']; groupId: number }>;
}

/** Every check of the update, in Zulip's order, on the locked channel; returns only real changes. */
async function planChannelUpdate(
  tx: Db,
  realm: Realm,
  subject: PermissionSubject,
  channel: Channel,
  subscribed: boolean,
  update: ChannelUpdate,
): Promise<ChannelUpdatePlan | null> {
  const plan: ChannelUpdatePlan = { unarchive: false, groupSettings: [] };

  // The state rules are computed on the combination of the requested and the current values.
  const isPrivate = update.isPrivate ?? channel.inviteOnly;
  const isWebPublic = update.isWebPublic ?? channel.isWebPublic;
  const isDefault = update.isDefault ?? channel.isDefault;
  const history = update.historyPublicToSubscribers ?? (update.isPrivate !== undefined ? !update.isPrivate : channel.historyPublicToSubscribers);
  if (isWebPublic && !history) throw new JsonableError('Invalid parameters');
  if (isWebPublic && isPrivate) throw new JsonableError('Invalid parameters');
  if (!isPrivate && !history) throw new JsonableError('Invalid parameters');
  if (isPrivate && isDefault) throw new JsonableError('A default channel cannot be private.');
  if (!isPrivate && realm.moderationRequestChannelId === channel.id) throw new JsonableError('Moderation request channel must be private.');

  checkCanChangePrivacy(subject, realm, channel, subscribed, { isPrivate: update.isPrivate, isWebPublic: update.isWebPublic });
  if (update.isPrivate !== undefined || update.isWebPublic !== undefined || update.historyPublicToSubscribers !== undefined) {
    if (isPrivate !== channel.inviteOnly || isWebPublic !== channel.isWebPublic || history !== channel.historyPublicToSubscribers) {
      plan.privacy = { inviteOnly: isPrivate, historyPublicToSubscribers: history, isWebPublic };
    }
  }

  if (update.isDefault !== undefined) {
    checkCanChangeDefaultChannels(subject);
    if (update.isDefault !== channel.isDefault) plan.isDefault = update.isDefault;
  }

  if (update.messageRetentionDays !== undefined) {
    checkCanChangeRetention(subject);
    const days = parseMessageRetentionDays(update.messageRetentionDays);
    if (days !== channel.messageRetentionDays) plan.messageRetentionDays = days;
  }

  // Only unarchiving is supported: `true` is ignored; `false` on an active channel is Zulip's error.
  if (update.isArchived === false) {
    if (!channel.isArchived) throw new JsonableError('Channel is not currently deactivated');
    if (isPrivate && (await subscriberIds(tx, channel.id)).length === 0) throw new JsonableError('Channel is private and have no subscribers');
    plan.unarchive = true;
  }

  if (update.topicsPolicy !== undefined) {
    checkCanSetTopicsPolicy(subject, realm, update.topicsPolicy);
    if (update.topicsPolicy === 'empty_topic_only' && (await channelHasNamedTopics(tx, channel.id))) {
      throw new JsonableError(
        'To enable this configuration, all messages in this channel must be in the "general chat" topic. Consider renaming or deleting other topics.',
      );
    }
    if (update.topicsPolicy !== channel.topicsPolicy) plan.topicsPolicy = update.topicsPolicy;
  }

  if (update.description !== undefined) {
    const description = normalizeDescription(update.description);
    if (description !== channel.description) plan.description = description;
  }

  if (update.newName !== undefined) {
    const name = stripChannelName(update.newName);
    if (name === channel.name) throw new JsonableError('Channel already has that name.');
    checkChannelName(name);
    // A case-only rename of the channel itself is allowed.
    if (name.toLowerCase() !== channel.name.toLowerCase()) {
      const taken = await findChannelsByNames(tx, realm.id, [name]);
      if (taken.some((c) => c.id !== channel.id)) throw new JsonableError('Channel name already in use.');
    }
    plan.name = name;
  }

  if (update.folderId !== undefined) {
    if (update.folderId !== null && !(await findChannelFolder(tx, realm.id, update.folderId))) throw new JsonableError('Invalid channel folder ID');
    if (update.folderId !== channel.folderId) plan.folderId = update.folderId;
  }

  // One sorted share-lock of every group the new values name (see insertChannel).
  await lockGroupsShared(tx, CHANNEL_GROUP_SETTINGS.flatMap((s) => groupsNamedBy(update.groupSettings[s.name]?.new)));
  for (const setting of CHANNEL_GROUP_SETTINGS) {
    const change = update.groupSettings[setting.name];
    if (change === undefined) continue;
    const groupId = await resolveGroupSettingUpdate(tx, realm.id, setting.definition, channel[setting.column], change);
    if (groupId === null) continue;
    // Checked once the value is known to change (after `old` and the groups were checked).
    checkCanChangeGroupSetting(subject, channel, subscribed, setting.name);
    plan.groupSettings.push({ name: setting.name, column: setting.column, groupId });
  }

  const changed =
    plan.privacy || plan.isDefault !== undefined || plan.messageRetentionDays !== undefined || plan.unarchive || plan.topicsPolicy ||
    plan.description !== undefined || plan.name !== undefined || plan.folderId !== undefined || plan.groupSettings.length > 0;
  return changed ? plan : null;
}

/** Recipients of an event: an audience resolved when it is stored, or listed users. */
type Recipients = { audience: Audience } | { userIds: number[] };

/** Group settings that decide who can see a (private) channel (see hasMetadataAccess). */
const ACCESS_SETTINGS: readonly ChannelGroupSettingName[] = ['can_administer_channel_group', 'can_add_subscribers_group', 'can_subscribe_group'];

/**
 * Builds the events of the plan, in the order Zulip sends them, then writes the channel row and stores
 * the events in one statement, so that the locked row is held for as few round trips as possible.
 * Everything the events say is read before the write (none of it depends on the row's new values but
 * through `updated`, built here). Unless the plan changes who can see the channel, the events go to the
 * channel's audience resolved in SQL (realm-wide when that is everyone), never listed through Node.
 */
async function applyChannelUpdate(tx: Db, realm: Realm, channel: Channel, plan: ChannelUpdatePlan): Promise<void> {
  const data: ChannelChanges = {};
  if (plan.privacy) Object.assign(data, plan.privacy);
  if (plan.isDefault !== undefined) data.isDefault = plan.isDefault;
  if (plan.messageRetentionDays !== undefined) data.messageRetentionDays = plan.messageRetentionDays;
  if (plan.unarchive) data.isArchived = false;
  if (plan.topicsPolicy) data.topicsPolicy = plan.topicsPolicy;
  if (plan.description !== undefined) {
    data.description = plan.description;
    data.renderedDescription = renderDescription(plan.description);
  }
  if (plan.name !== undefined) data.name = plan.name;
  if (plan.folderId !== undefined) data.folderId = plan.folderId;
  for (const s of plan.groupSettings) data[s.column] = s.groupId;
  const updated: Channel = { ...channel, ...data };

  // Who sees the channel before and after: the same audience unless privacy or an access-granting
  // setting changes; then both are read (subscriptions and group members do not change here).
  let keep: Recipients;
  let after: Recipients;
  let gained: number[] = [];
  let lost: number[] = [];
  if (plan.privacy || plan.groupSettings.some((s) => ACCESS_SETTINGS.includes(s.name))) {
    const beforeIds = await audienceUserIds(tx, realm.id, channelAudience(channel));
    const afterIds = await audienceUserIds(tx, realm.id, channelAudience(updated));
    const beforeSet = new Set(beforeIds);
    const afterSet = new Set(afterIds);
    keep = { userIds: afterIds.filter((id) => beforeSet.has(id)) };
    gained = afterIds.filter((id) => !beforeSet.has(id));
    lost = beforeIds.filter((id) => !afterSet.has(id));
    after = { userIds: afterIds };
  } else {
    keep = { audience: channelAudience(channel) };
    after = keep;
  }

  const events: QueuedEvent[] = [];
  let name = channel.name;
  const update = (property: string, value: unknown, extra: Record<string, unknown> = {}) =>
    events.push({ ...keep, payload: { type: 'stream', op: 'update', stream_id: channel.id, name, property, value, ...extra } });

  if (plan.privacy) {
    update('invite_only', plan.privacy.inviteOnly, {
      history_public_to_subscribers: plan.privacy.historyPublicToSubscribers,
      is_web_public: plan.privacy.isWebPublic,
    });
  }
  if (plan.isDefault !== undefined) {
    // The default channels once this change is written.
    const others = (await defaultChannelIds(tx, realm.id)).filter((id) => id !== channel.id);
    events.push(defaultStreamsEvent(updated.isDefault && !updated.isArchived ? sorted([...others, channel.id]) : others));
  }
  if (plan.messageRetentionDays !== undefined) update('message_retention_days', plan.messageRetentionDays);
  if (plan.unarchive) update('is_archived', false);
  if (plan.topicsPolicy) update('topics_policy', plan.topicsPolicy);
  if (plan.description !== undefined) update('description', plan.description, { rendered_description: updated.renderedDescription });
  if (plan.name !== undefined) {
    update('name', plan.name);
    name = plan.name;
  }
  if (plan.folderId !== undefined) update('folder_id', plan.folderId);
  if (plan.groupSettings.length) {
    const values = await formatGroupSettingValues(tx, realm.id, plan.groupSettings.map((s) => s.groupId));
    const system = new Map(Object.entries(await systemGroupIds(tx, realm.id)).map(([n, id]) => [id, n]));
    for (const s of plan.groupSettings) {
      update(s.name, values.get(s.groupId));
      if (s.name === 'can_send_message_group') {
        const oldPolicy = streamPostPolicy(system.get(channel.canSendMessageGroupId));
        const newPolicy = streamPostPolicy(system.get(s.groupId));
        if (oldPolicy !== newPolicy) {
          update('stream_post_policy', newPolicy);
          update('is_announcement_only', newPolicy === 2);
        }
      }
    }
  }

  // Users who can see the channel only now get it whole; users who no longer can see it lose it.
  if (plan.unarchive) {
    const [formatted] = await presentChannels(tx, realm.id, [updated]);
    events.push({ ...after, payload: streamCreateEvent([formatted], true) });
  } else if (gained.length) {
    const [formatted] = await presentChannels(tx, realm.id, [updated]);
    events.push({ userIds: gained, payload: streamCreateEvent([formatted]) });
  }
  if (gained.length) {
    const subs = await subscriberIds(tx, channel.id);
    if (subs.length) events.push({ userIds: gained, payload: { type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: subs } });
  }
  if (lost.length) events.push({ userIds: lost, payload: streamDeleteEvent([channel.id]) });

  try {
    await updateChannelAlong(tx, channel.id, data, insertEventsSql(realm.id, events.filter((e) => !('userIds' in e) || e.userIds.length > 0)));
  } catch (error) {
    // A concurrent rename or creation took the name between the check and the write.
    if (plan.name !== undefined && isUniqueViolation(error)) throw new JsonableError('Channel name already in use.');
    throw error;
  }
  for (const s of plan.groupSettings) {
    const old = channel[s.column];
    if (old !== s.groupId) await releaseGroupSettingValue(tx, realm.id, old);
  }
}

// ---------------------------------------------------------------------------------------------
// DELETE /streams/{stream_id}

/**
 * Archives a channel: it keeps its name, messages and subscriptions (so it can be unarchived), stops
 * being a default channel and the moderation-request channel. Stream update (is_archived) and
 * deletion events go to everyone who could see it.
 */
export async function doArchiveChannel(deps: AppDeps, realm: Realm, actor: User, channelId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await loadChannelViewer(tx, actor);
    const { channel } = await accessChannelForAdministration(tx, realm, subject, channelId, { lock: true });
    if (channel.isArchived) throw new JsonableError('Channel is already deactivated');
    await updateChannel(tx, channel.id, { isArchived: true, isDefault: false });
    const events: QueuedEvent[] = [];
    if (channel.isDefault) events.push(defaultStreamsEvent(await defaultChannelIds(tx, realm.id)));
    events.push(...(await removeArchivedChannelFromGroups(tx, realm, channel.id)));
    if (await clearModerationRequestChannel(tx, realm.id, channel.id)) {
      events.push({ realmWide: true, payload: { type: 'realm', op: 'update', property: 'moderation_request_channel_id', value: -1 } });
    }
    // Who could see it (archiving does not change that); one audience for both events.
    const affected = { audience: channelAudience(channel) };
    events.push({ ...affected, payload: { type: 'stream', op: 'update', stream_id: channel.id, name: channel.name, property: 'is_archived', value: true } });
    events.push({ ...affected, payload: streamDeleteEvent([channel.id], true) });
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
}
