// Domain actions on subscriptions: subscribing (creating missing channels) and unsubscribing, for the
// caller or for other users. One transaction each; the channels concerned are locked in id order, so
// concurrent requests on the same channels serialise and report exact results. Events (subscription
// add/remove for the users concerned, peer_add/peer_remove for everyone else who can see the channel,
// stream create/delete for users who start or stop seeing it) are stored in the transaction and
// announced after commit.
import type { SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction, type Db } from '../data/db.ts';
import type { Channel, Realm, Subscription, User } from '../data/models.ts';
import { defaultChannelIds, findChannelFolder, findChannelsByIds, findChannelsByNames, lockChannels } from '../data/channels.repo.ts';
import { isUniqueViolation } from '../data/db.ts';
import {
  findUsersByPrincipalIds,
  findUsersByPrincipalEmails,
  insertSubscriptions,
  setSubscriptionsActive,
  subscribedChannelIds,
  subscriberIdsOfChannels,
  subscriptionRows,
  usedColorsOfUsers,
} from '../data/subscriptions.repo.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import { sorted } from '../lib/ids.ts';
import { JsonableError } from '../errors.ts';
import {
  ChannelDoesNotExistError,
  checkCanCreateChannel,
  checkCanSetTopicsPolicy,
  checkCanSubscribeOthers,
  checkCanUnsubscribe,
  hasContentAccess,
  hasMetadataAccess,
  loadChannelViewer,
  loadRealmAudience,
  metadataAccessUserIds,
} from '../access/channels.ts';
import { isAdmin, isGuest } from '../access/roles.ts';
import { defaultStreamsEvent, insertChannel, streamCreateEvent, streamDeleteEvent, type NewChannel } from './channels.ts';
import type { GroupSettingValue } from './group-settings.ts';
import { loadChannelDisplayData } from '../queries/channels.ts';
import {
  checkChannelName,
  checkColor,
  formatChannel,
  formatSubscription,
  normalizeDescription,
  parseMessageRetentionDays,
  pickColors,
  stripChannelName,
  type ChannelGroupSettingName,
  type TopicsPolicy,
} from '../lib/channel-format.ts';

/**
 * Principals: user ids or e-mail addresses (as shown in users' `email` field, case-insensitively).
 * Unknown users give `No such user`, deactivated ones `User is deactivated` (both 400 BAD_REQUEST,
 * feature level 208); bots are allowed.
 */
async function resolvePrincipals(db: Db, realm: Realm, principals: number[] | string[]): Promise<User[]> {
  const users =
    typeof principals[0] === 'string'
      ? await findUsersByPrincipalEmails(db, realm, principals as string[])
      : await findUsersByPrincipalIds(db, realm.id, principals as number[]);
  if (users === null) throw new JsonableError('No such user');
  for (const user of users) if (!user.isActive) throw new JsonableError('User is deactivated');
  return users;
}

/** Channel names of a request: stripped, checked (empty, length, characters), de-duplicated case-insensitively. */
function checkNames(names: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of names) {
    const name = stripChannelName(raw);
    checkChannelName(name);
    const key = name.toLowerCase();
    if (!seen.has(key)) {
      seen.add(key);
      out.push(name);
    }
  }
  return out;
}

const byName = (channels: Channel[]) => new Map(channels.map((c) => [c.name.toLowerCase(), c]));

/** Locks the channels (in id order) and reads them again, keeping the request's order. */
async function lockAndReload(tx: Db, realm: Realm, channels: Channel[]): Promise<Channel[]> {
  await lockChannels(tx, channels.map((c) => c.id));
  const fresh = new Map((await findChannelsByIds(tx, realm.id, channels.map((c) => c.id))).map((c) => [c.id, c]));
  return channels.map((c) => fresh.get(c.id)!);
}

// ---------------------------------------------------------------------------------------------
// POST /users/me/subscriptions

export interface SubscribeRequest {
  channels: Array<{ name: string; description?: string; color?: string }>;
  principals?: number[] | string[];
  authorizationErrorsFatal: boolean;
  inviteOnly: boolean;
  isWebPublic: boolean;
  isDefault: boolean;
  historyPublicToSubscribers?: boolean;
  messageRetentionDays: number | string;
  topicsPolicy?: TopicsPolicy;
  folderId?: number;
  groupSettings: Partial<Record<ChannelGroupSettingName, GroupSettingValue>>;
  sendNewSubscriptionMessages: boolean;
}

/** What POST /users/me/subscriptions answers (the spec's success fields). */
export type SubscribeResult = SuccessData<'subscribe'>;

export async function doSubscribe(deps: AppDeps, realm: Realm, actor: User, request: SubscribeRequest): Promise<SubscribeResult> {
  // Zulip's require_non_guest_user (bots may subscribe), before anything else is looked at.
  if (isGuest(actor)) throw new JsonableError('Not allowed for guest users');
  // Two requests creating the same channel at once: the loser's transaction hits the unique index on
  // lower(name); running it again finds the channel and subscribes to it.
  for (let attempt = 1; ; attempt++) {
    try {
      return await subscribeOnce(deps, realm, actor, request);
    } catch (error) {
      if (attempt >= 3 || !isUniqueViolation(error)) throw error;
    }
  }
}

async function subscribeOnce(deps: AppDeps, realm: Realm, actor: User, request: SubscribeRequest): Promise<SubscribeResult> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await loadChannelViewer(tx, actor);

    // Request-wide values, checked in Zulip's order before any channel is looked at.
    if (request.folderId !== undefined && !(await findChannelFolder(tx, realm.id, request.folderId))) {
      throw new JsonableError('Invalid channel folder ID');
    }
    const colors = new Map<string, string>();
    for (const c of request.channels) if (c.color !== undefined) colors.set(stripChannelName(c.name).toLowerCase(), checkColor(c.color));
    const retention = parseMessageRetentionDays(request.messageRetentionDays);
    if (request.topicsPolicy !== undefined) checkCanSetTopicsPolicy(subject, realm, request.topicsPolicy);
    const descriptions = new Map(
      request.channels.filter((c) => c.description !== undefined).map((c) => [stripChannelName(c.name).toLowerCase(), normalizeDescription(c.description!)]),
    );

    const names = checkNames(request.channels.map((c) => c.name));
    const found = byName(await findChannelsByNames(tx, realm.id, names));
    const missing = names.filter((n) => !found.has(n.toLowerCase()));
    if (missing.length) {
      checkCanCreateChannel(subject, realm, {
        inviteOnly: request.inviteOnly,
        isWebPublic: request.isWebPublic,
        isDefault: request.isDefault,
        messageRetentionDays: retention,
      });
    }

    const existing = await lockAndReload(tx, realm, names.map((n) => found.get(n.toLowerCase())).filter((c): c is Channel => c !== undefined));
    const audience = await loadRealmAudience(tx, realm.id);
    const events: StoredEvent[] = [];

    const created: Channel[] = [];
    for (const name of missing) {
      const newChannel: NewChannel = {
        name,
        description: descriptions.get(name.toLowerCase()) ?? '',
        inviteOnly: request.inviteOnly,
        isWebPublic: request.isWebPublic,
        historyPublicToSubscribers: request.historyPublicToSubscribers,
        messageRetentionDays: retention,
        topicsPolicy: request.topicsPolicy ?? 'inherit',
        folderId: request.folderId ?? null,
        isDefault: request.isDefault,
        groupSettings: request.groupSettings,
      };
      const result = await insertChannel(tx, realm, actor, newChannel, audience);
      created.push(result.channel);
      events.push(...result.events);
    }
    if (request.isDefault && created.length) events.push(await defaultStreamsEvent(tx, realm.id, audience));

    // Existing channels: the caller needs content access (or is skipped with authorization_errors_fatal=false).
    const callerSubscribed = await subscribedChannelIds(tx, actor.id, existing.map((c) => c.id));
    const authorized = existing.filter((c) => hasContentAccess(subject, c, callerSubscribed.has(c.id)));
    const unauthorized = existing.filter((c) => !authorized.includes(c));
    if (unauthorized.length && request.authorizationErrorsFatal) throw new JsonableError(`Unable to access channel (${unauthorized[0]!.name}).`);

    // An e-mail principal naming the caller counts as the caller (Zulip treats every e-mail as "others").
    const principals = request.principals ?? [];
    const others = principals.some((p) => (typeof p === 'number' ? p !== actor.id : p.trim().toLowerCase() !== actor.email.toLowerCase()));
    if (others) checkCanSubscribeOthers(subject, realm, authorized);
    const users = others ? await resolvePrincipals(tx, realm, principals) : [actor];

    const channels = [...authorized, ...created];
    const outcome = await addSubscriptions(tx, realm, channels, users, colors);
    events.push(...outcome.events);
    if (events.length) {
      await deps.events.enqueue(tx, realm.id, events);
      afterCommit(() => deps.events.announce(realm.id));
    }

    const result: SubscribeResult = { subscribed: outcome.subscribed, already_subscribed: outcome.alreadySubscribed };
    if (!request.authorizationErrorsFatal) result.unauthorized = unauthorized.map((c) => c.name);
    // Zulip includes the field exactly when the request asked for the messages, and reports whether it
    // sent them. Parley sends no notification-bot messages yet, so it never claims to have.
    if (request.sendNewSubscriptionMessages) result.new_subscription_messages_sent = false;
    return result;
  });
}

/**
 * Zulip's bulk_add_subscriptions: activates existing rows or inserts new ones (with the requested
 * color or a palette color the user does not use yet) and builds the events.
 */
async function addSubscriptions(tx: Db, realm: Realm, channels: Channel[], users: User[], colors: Map<string, string>) {
  const channelIds = channels.map((c) => c.id);
  const userIds = users.map((u) => u.id);
  const rows = await subscriptionRows(tx, userIds, channelIds);
  const rowOf = new Map(rows.map((r) => [`${r.userId}:${r.channelId}`, r]));
  const audience = await loadRealmAudience(tx, realm.id);
  const before = await metadataAccessUserIds(tx, audience, channels);
  const usedColors = await usedColorsOfUsers(tx, userIds);

  const subscribed: Record<string, string[]> = {};
  const alreadySubscribed: Record<string, string[]> = {};
  const toInsert: Array<{ userId: number; channelId: number; color: string }> = [];
  const toActivate: Array<{ userId: number; channelId: number }> = [];
  const added: Array<{ user: User; channel: Channel }> = [];
  for (const user of users) {
    const fresh: Channel[] = [];
    for (const channel of channels) {
      const row = rowOf.get(`${user.id}:${channel.id}`);
      if (row?.active) {
        (alreadySubscribed[String(user.id)] ??= []).push(channel.name);
      } else {
        (subscribed[String(user.id)] ??= []).push(channel.name);
        added.push({ user, channel });
        if (row) toActivate.push({ userId: user.id, channelId: channel.id });
        else fresh.push(channel);
      }
    }
    const palette = pickColors(usedColors.get(user.id) ?? new Set(), fresh.length);
    fresh.forEach((channel, i) => toInsert.push({ userId: user.id, channelId: channel.id, color: colors.get(channel.name.toLowerCase()) ?? palette[i]! }));
  }
  await insertSubscriptions(tx, toInsert);
  await setSubscriptionsActive(tx, toActivate, true);

  const events: StoredEvent[] = [];
  if (added.length) {
    const touched = channels.filter((c) => added.some((a) => a.channel.id === c.id));
    const data = await loadChannelDisplayData(tx, realm.id, touched);
    const after = await metadataAccessUserIds(tx, audience, touched);
    const subscribers = await subscriberIdsOfChannels(tx, touched.map((c) => c.id));
    const newRows = new Map((await subscriptionRows(tx, userIds, touched.map((c) => c.id))).map((r) => [`${r.userId}:${r.channelId}`, r]));
    // Users who could not see a channel before get its creation event first.
    for (const channel of touched) {
      const newcomers = sorted(added.filter((a) => a.channel.id === channel.id && !before.get(channel.id)!.has(a.user.id)).map((a) => a.user.id));
      if (newcomers.length) events.push({ userIds: newcomers, payload: streamCreateEvent([formatChannel(channel, data)]) });
    }
    for (const user of users) {
      const mine = added.filter((a) => a.user.id === user.id);
      if (!mine.length) continue;
      const subscriptions = mine.map(({ channel }) =>
        formatSubscription(channel, newRows.get(`${user.id}:${channel.id}`) as Subscription, data, { subscribers: subscribers.get(channel.id) ?? [] }),
      );
      events.push({ userIds: [user.id], payload: { type: 'subscription', op: 'add', subscriptions } });
    }
    for (const channel of touched) {
      const altered = sorted(added.filter((a) => a.channel.id === channel.id).map((a) => a.user.id));
      const peers = sorted([...after.get(channel.id)!].filter((id) => !altered.includes(id)));
      if (peers.length) events.push({ userIds: peers, payload: { type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: altered } });
    }
  }
  return { subscribed, alreadySubscribed, events };
}

/** A new user joins the organization's default channels (Zulip's do_create_user); returns the events. */
export async function subscribeToDefaultChannels(tx: Db, realm: Realm, user: User): Promise<StoredEvent[]> {
  const channels = (await findChannelsByIds(tx, realm.id, await defaultChannelIds(tx, realm.id))).filter((c) => !c.isArchived);
  if (channels.length === 0) return [];
  await lockChannels(tx, channels.map((c) => c.id));
  return (await addSubscriptions(tx, realm, channels, [user], new Map())).events;
}

// ---------------------------------------------------------------------------------------------
// DELETE /users/me/subscriptions

export async function doUnsubscribe(
  deps: AppDeps,
  realm: Realm,
  actor: User,
  request: { names: string[]; principals?: number[] | string[] },
): Promise<{ removed: string[]; not_removed: string[] }> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await loadChannelViewer(tx, actor);
    const principals = request.principals ?? [];
    const users = principals.length ? await resolvePrincipals(tx, realm, principals) : [actor];

    const names = checkNames(request.names);
    const found = byName(await findChannelsByNames(tx, realm.id, names));
    const channels = await lockAndReload(tx, realm, names.map((n) => found.get(n.toLowerCase())).filter((c): c is Channel => c !== undefined));
    checkCanUnsubscribe(subject, users, channels, await subscribedChannelIds(tx, actor.id, channels.map((c) => c.id)));
    // The seed: an unknown channel is STREAM_DOES_NOT_EXIST with its name in `stream` (checked after
    // permissions, as Zulip does, so an unauthorized request learns nothing about names).
    const missing = names.find((n) => !found.has(n.toLowerCase()));
    if (missing !== undefined) throw new ChannelDoesNotExistError(missing);

    const rows = await subscriptionRows(tx, users.map((u) => u.id), channels.map((c) => c.id));
    const active = new Set(rows.filter((r) => r.active).map((r) => `${r.userId}:${r.channelId}`));
    const removed: Array<{ user: User; channel: Channel }> = [];
    const result = { removed: [] as string[], not_removed: [] as string[] };
    for (const user of users) {
      for (const channel of channels) {
        if (active.has(`${user.id}:${channel.id}`)) {
          removed.push({ user, channel });
          result.removed.push(channel.name);
        } else {
          result.not_removed.push(channel.name);
        }
      }
    }
    if (removed.length === 0) return result;
    await setSubscriptionsActive(tx, removed.map((r) => ({ userId: r.user.id, channelId: r.channel.id })), false);

    const events = await removalEvents(tx, realm, users, channels, removed);
    await deps.events.enqueue(tx, realm.id, events);
    afterCommit(() => deps.events.announce(realm.id));
    return result;
  });
}

async function removalEvents(tx: Db, realm: Realm, users: User[], channels: Channel[], removed: Array<{ user: User; channel: Channel }>): Promise<StoredEvent[]> {
  const events: StoredEvent[] = [];
  const touched = channels.filter((c) => removed.some((r) => r.channel.id === c.id));
  const audience = await loadRealmAudience(tx, realm.id);
  const after = await metadataAccessUserIds(tx, audience, touched);
  for (const user of users) {
    const mine = removed.filter((r) => r.user.id === user.id).map((r) => r.channel);
    if (!mine.length) continue;
    events.push({ userIds: [user.id], payload: { type: 'subscription', op: 'remove', subscriptions: mine.map((c) => ({ name: c.name, stream_id: c.id })) } });
    // Channels the user can no longer see at all disappear from their client.
    if (!isAdmin(user)) {
      const subject = await loadChannelViewer(tx, user);
      const gone = mine.filter((c) => !hasMetadataAccess(subject, c, false));
      if (gone.length) events.push({ userIds: [user.id], payload: streamDeleteEvent(gone.map((c) => c.id)) });
    }
  }
  for (const channel of touched) {
    const altered = sorted(removed.filter((r) => r.channel.id === channel.id).map((r) => r.user.id));
    const peers = sorted([...after.get(channel.id)!].filter((id) => !altered.includes(id)));
    if (peers.length) events.push({ userIds: peers, payload: { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: altered } });
  }
  return events;
}

