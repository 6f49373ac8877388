// Domain actions on subscriptions: subscribing (creating missing channels) and unsubscribing, for the
// caller or for other users. One transaction each; the channels concerned are share-locked in id order
// (changes of a channel itself, which lock it FOR UPDATE, wait; subscription changes of different users
// run concurrently), and subscription rows change through conditional writes that report what they
// changed, so concurrent requests still report exact results. Events (subscription
// add/remove for the users concerned, peer_add/peer_remove for everyone else who can see the channel,
// stream create/delete for users who start or stop seeing it) are stored in the transaction and
// announced after commit.
import type { SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inSqlTransaction, type SqlTransaction } from '../data/pg-transactions.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db, RawSql } from '../data/db.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import type { Channel, Realm, Subscription, User } from '../data/models.ts';
import { defaultChannelIds, findChannelFolder, shareLockChannels, shareLockChannelsByNames, shareLockChannelsWithFacts, type ChannelFacts } from '../data/channels.repo.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import {
  activateExpectedSql,
  activateSubscriptions,
  deactivateSubscriptions,
  isExpectationFailure,
  newSubscriptionRow,
  findUsersByPrincipalIds,
  findUsersByPrincipalEmails,
  subscriptionRows,
  usedColorsOfUsers,
} from '../data/subscriptions.repo.ts';
import { insertEvents, insertEventsSql, type QueuedEvent } from '../data/events.repo.ts';
import { sorted } from '../lib/ids.ts';
import { JsonableError } from '../errors.ts';
import { userIdOfHiddenAddress } from '../access/users.ts';
import {
  channelAudience,
  ChannelDoesNotExistError,
  checkCanCreateChannel,
  checkCanSetTopicsPolicy,
  checkCanSubscribeOthers,
  checkCanUnsubscribe,
  checkCanSubscribe,
  channelsHiddenFromUnsubscribed,
  usersWhoSeeChannelOnlySubscribed,
  hasContentAccess,
  loadChannelViewer,
  type PermissionSubject,
} from '../access/channels.ts';
import { defaultStreamsEvent, insertChannel, streamCreateEvent, streamDeleteEvent, type NewChannel } from './channels.ts';
import type { GroupSettingValue } from './group-settings.ts';
import { channelDisplayData, channelFactsRequest, RECENT_ACTIVITY_DAYS } from '../queries/channels.ts';
import {
  CHANNEL_GROUP_SETTINGS,
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
 * Principals: user ids or e-mail addresses (as the caller sees them: the `email` field, or the real
 * address when the caller may see it; case-insensitively).
 * Unknown users give `No such user`, deactivated ones `User is deactivated` (both 400 BAD_REQUEST,
 * feature level 208); bots are allowed.
 */
async function resolvePrincipals(db: Db, realm: Realm, actor: User, principals: number[] | string[]): Promise<User[]> {
  const users =
    typeof principals[0] === 'string'
      ? await findUsersByPrincipalEmails(db, realm, principals as string[], actor)
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

/**
 * The caller's permission subject, read on first use: most requests (a member on public channels)
 * never need the caller's group memberships.
 */
function lazySubject(db: () => Db, actor: User): () => Promise<PermissionSubject> {
  let subject: Promise<PermissionSubject> | undefined;
  return () => (subject ??= loadChannelViewer(db(), actor));
}

/**
 * The transaction of a subscription change: a plain one (data/pg-transactions.ts inSqlTransaction), enough for the
 * common request, or Prisma's, which the rest needs (creating channels, resolving other users, reading
 * the caller's groups). Code that needs Prisma asks `prismaOf`, which in a plain transaction throws
 * NeedsPrismaTransaction: the plain attempt rolls back and the request runs again in Prisma's.
 */
interface SubscriptionTx {
  sql: RawSql;
  prisma: Db | null;
  /** For reads of what never changes once made (an organization's system groups): the transaction's, or the pool's. */
  reader: Db;
  /** The plain transaction's write sent with COMMIT (see SqlTransaction.atCommit). */
  atCommit?: SqlTransaction['atCommit'];
}
class NeedsPrismaTransaction extends Error {}
function prismaOf(tx: SubscriptionTx): Db {
  if (!tx.prisma) throw new NeedsPrismaTransaction('this subscription change needs the full transaction');
  return tx.prisma;
}
const prismaTx = (tx: Db): SubscriptionTx => ({ sql: tx, prisma: tx, reader: tx });

/** Stores events in the transaction and announces them after commit (deps.events.publish, for either kind). */
async function publish(deps: AppDeps, tx: SubscriptionTx, afterCommit: (fn: () => void | Promise<void>) => void, realmId: number, events: QueuedEvent[]) {
  if (tx.prisma) return deps.events.publish(tx.prisma, afterCommit, realmId, events);
  if (events.length === 0) return;
  // The events are the transaction's last write: they go out with COMMIT.
  const sql = insertEventsSql(realmId, events);
  if (sql && tx.atCommit) tx.atCommit(sql);
  else await insertEvents(tx.sql, realmId, events);
  afterCommit(() => deps.events.announce(realmId));
}

/**
 * The named channels that exist, share-locked (one statement), in the request's order, with the
 * caller's subscription rows on them and the colors the caller uses (null: not read); `withFacts`:
 * and, read by the same statement, the channels' display facts with their subscriber lists (null: not
 * read).
 */
async function lockNamedChannels(tx: RawSql, realm: Realm, actor: User, names: string[], withFacts = false) {
  const { channels, usedColors, facts } = withFacts
    ? await shareLockChannelsWithFacts(tx, realm.id, names, actor.id, { groupFields: CHANNEL_GROUP_SETTINGS.map((s) => s.column), recentDays: RECENT_ACTIVITY_DAYS })
    : { ...(await shareLockChannelsByNames(tx, realm.id, names, actor.id)), facts: null };
  const byName = new Map(channels.map((c) => [c.channel.name.toLowerCase(), c]));
  const found = names.map((n) => byName.get(n.toLowerCase())).filter((c) => c !== undefined);
  return {
    channels: found.map((c) => c.channel),
    missing: names.filter((n) => !byName.has(n.toLowerCase())),
    callerRows: new Map(found.filter((c) => c.subscription !== null).map((c) => [c.channel.id, c.subscription!])),
    usedColors: channels.length ? usedColors : null,
    facts,
  };
}

/**
 * Principals naming anyone but the caller (an e-mail principal naming the caller, by their real address
 * or the one others see, counts as the caller; Zulip treats every e-mail as "others").
 */
const namesOthers = (realm: Realm, principals: number[] | string[], actor: User) =>
  principals.some((p) =>
    typeof p === 'number' ? p !== actor.id : p.trim().toLowerCase() !== actor.deliveryEmail.toLowerCase() && userIdOfHiddenAddress(realm, p) !== actor.id,
  );

const pairKey = (userId: number, channelId: number) => `${userId}:${channelId}`;

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

export async function doSubscribe(deps: AppDeps, realm: Realm, actor: User, request: SubscribeRequest, writes: CachedTableWrites): Promise<SubscribeResult> {
  // Zulip's require_non_guest_user (bots may subscribe), before anything else is looked at.
  checkCanSubscribe(actor);
  return retryingChannelCreationRace(() => subscribeOnce(deps, realm, actor, request, writes));
}

/**
 * Two requests creating the same channel at once: the loser's transaction hits the unique index on
 * lower(name); running it again finds the channel and subscribes to it.
 */
async function retryingChannelCreationRace<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 3 || !isUniqueViolation(error)) throw error;
    }
  }
}

async function subscribeOnce(deps: AppDeps, realm: Realm, actor: User, request: SubscribeRequest, writes: CachedTableWrites): Promise<SubscribeResult> {
  // The common request (the caller joining existing channels it may join without its groups being read)
  // runs in a plain transaction; requests that turn out to need more run again in Prisma's.
  if (request.folderId === undefined && request.topicsPolicy === undefined && !namesOthers(realm, request.principals ?? [], actor)) {
    try {
      // Its statements (channels by name, subscription rows by key, the audience by the organization's
      // index) are planned once per connection: see inSqlTransaction's genericPlans.
      // It writes subscription and event rows only: none of CACHED_TABLES, which it says through `writes`.
      const result = await inSqlTransaction(deps.db, (sql, afterCommit) => subscribeIn(deps, realm, actor, request, { sql, prisma: null, reader: deps.db, atCommit: sql.atCommit }, afterCommit), {
        genericPlans: true,
      });
      writes.none();
      return result;
    } catch (error) {
      // A concurrent request of the caller's changed a row it was about to write: the plain attempt's
      // prediction failed and it rolled back (see addSubscriptions); the full transaction finds out.
      if (!(error instanceof NeedsPrismaTransaction) && !isExpectationFailure(error)) throw error;
    }
  }
  return inTransaction(deps.db, (tx, afterCommit) => subscribeIn(deps, realm, actor, request, prismaTx(tx), afterCommit));
}

async function subscribeIn(
  deps: AppDeps,
  realm: Realm,
  actor: User,
  request: SubscribeRequest,
  tx: SubscriptionTx,
  afterCommit: (fn: () => void | Promise<void>) => void,
): Promise<SubscribeResult> {
  const subject = lazySubject(() => prismaOf(tx), actor);

  // Request-wide values, checked in Zulip's order before any channel is looked at.
  if (request.folderId !== undefined && !(await findChannelFolder(prismaOf(tx), realm.id, request.folderId))) {
    throw new JsonableError('Invalid channel folder ID');
  }
  const colors = new Map<string, string>();
  for (const c of request.channels) if (c.color !== undefined) colors.set(stripChannelName(c.name).toLowerCase(), checkColor(c.color));
  const retention = parseMessageRetentionDays(request.messageRetentionDays);
  if (request.topicsPolicy !== undefined) checkCanSetTopicsPolicy(await subject(), realm, request.topicsPolicy);
  const descriptions = new Map(
    request.channels.filter((c) => c.description !== undefined).map((c) => [stripChannelName(c.name).toLowerCase(), normalizeDescription(c.description!)]),
  );

  const names = checkNames(request.channels.map((c) => c.name));
  // In the plain transaction, the channels' facts come with the locks, so that the subscription rows
  // and their events can be written with COMMIT (addSubscriptions).
  const { channels: existing, missing, callerRows, usedColors, facts } = await lockNamedChannels(tx.sql, realm, actor, names, tx.prisma === null);
  if (missing.length) {
    checkCanCreateChannel(await subject(), realm, {
      inviteOnly: request.inviteOnly,
      isWebPublic: request.isWebPublic,
      isDefault: request.isDefault,
      messageRetentionDays: retention,
    });
  }
  const events: QueuedEvent[] = [];

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
    const result = await insertChannel(prismaOf(tx), realm, actor, newChannel);
    created.push(result.channel);
    events.push(...result.events);
  }
  if (request.isDefault && created.length) events.push(defaultStreamsEvent(await defaultChannelIds(prismaOf(tx), realm.id)));

  // Existing channels: the caller needs content access (or is skipped with authorization_errors_fatal=false).
  // Public and web-public channels, and subscribed ones, need no group memberships to decide.
  const callerSubscribed = (c: Channel) => callerRows.get(c.id)?.active === true;
  const authorized: Channel[] = [];
  const unauthorized: Channel[] = [];
  for (const c of existing) {
    const known = c.isWebPublic || !c.inviteOnly || callerSubscribed(c);
    (hasContentAccess(known ? { user: actor, groups: new Set() } : await subject(), c, callerSubscribed(c)) ? authorized : unauthorized).push(c);
  }
  if (unauthorized.length && request.authorizationErrorsFatal) throw new JsonableError(`Unable to access channel (${unauthorized[0]!.name}).`);

  const principals = request.principals ?? [];
  const others = namesOthers(realm, principals, actor);
  if (others) checkCanSubscribeOthers(await subject(), realm, authorized);
  const users = others ? await resolvePrincipals(prismaOf(tx), realm, actor, principals) : [actor];

  const channels = [...authorized, ...created];
  // The caller's own rows and colors came with the lock (a channel created here has no rows yet).
  const known = !others && usedColors ? { rows: new Map([...callerRows].map(([channelId, row]) => [pairKey(actor.id, channelId), row])), usedColors: new Map([[actor.id, usedColors]]) } : undefined;
  if (facts && known && events.length === 0 && tx.atCommit) {
    // The plain transaction: the rows and their events go out with COMMIT (one round trip fewer).
    const outcome = await addSubscriptions(tx, realm, channels, users, colors, known, { facts, deps, afterCommit });
    return subscribeResult(request, unauthorized, outcome);
  }
  const outcome = await addSubscriptions(tx, realm, channels, users, colors, known);
  events.push(...outcome.events);
  await publish(deps, tx, afterCommit, realm.id, events);
  return subscribeResult(request, unauthorized, outcome);
}

/** The answer of POST /users/me/subscriptions. */
function subscribeResult(request: SubscribeRequest, unauthorized: Channel[], outcome: { subscribed: Record<string, string[]>; alreadySubscribed: Record<string, string[]> }): SubscribeResult {
  const result: SubscribeResult = { subscribed: outcome.subscribed, already_subscribed: outcome.alreadySubscribed };
  if (!request.authorizationErrorsFatal) result.unauthorized = unauthorized.map((c) => c.name);
  // Zulip includes the field exactly when the request asked for the messages, and reports whether it
  // sent them. Parley sends no notification-bot messages yet, so it never claims to have.
  if (request.sendNewSubscriptionMessages) result.new_subscription_messages_sent = false;
  return result;
}

/**
 * Zulip's bulk_add_subscriptions: activates existing rows or inserts new ones (with the requested
 * color or a palette color the user does not use yet) and builds the events. The channels are
 * share-locked by the caller; `known` gives rows and colors already read (else they are read here).
 *
 * With `predicted` (the plain transaction, whose lock also read the channels' facts), the rows are
 * not written now: the outcome is predicted from the rows read under the locks, the events built from
 * it, and the rows and events written by one statement that goes out with COMMIT, which PostgreSQL
 * refuses (the transaction rolls back: isExpectationFailure) unless it changed exactly the predicted
 * rows. Its events are then stored (and announced after commit) here.
 */
async function addSubscriptions(
  tx: SubscriptionTx,
  realm: Realm,
  channels: Channel[],
  users: User[],
  colors: Map<string, string>,
  known?: { rows: Map<string, Subscription>; usedColors: Map<number, Set<string>> },
  predicted?: { facts: ChannelFacts; deps: AppDeps; afterCommit: (fn: () => void | Promise<void>) => void },
) {
  const channelIds = channels.map((c) => c.id);
  const userIds = users.map((u) => u.id);
  const rowOf = known?.rows ?? new Map((await subscriptionRows(prismaOf(tx), userIds, channelIds)).map((r) => [pairKey(r.userId, r.channelId), r]));
  const usedColors = known?.usedColors ?? (await usedColorsOfUsers(prismaOf(tx), userIds));

  // What to write: a row for each pair without one, reactivation of inactive rows.
  const wanted: Array<{ userId: number; channelId: number; color: string }> = [];
  for (const user of users) {
    const fresh: Channel[] = [];
    for (const channel of channels) {
      const row = rowOf.get(pairKey(user.id, channel.id));
      if (row?.active) continue;
      if (row) wanted.push({ userId: user.id, channelId: channel.id, color: row.color });
      else fresh.push(channel);
    }
    const palette = pickColors(usedColors.get(user.id) ?? new Set(), fresh.length);
    fresh.forEach((channel, i) => wanted.push({ userId: user.id, channelId: channel.id, color: colors.get(channel.name.toLowerCase()) ?? palette[i]! }));
  }
  // Only what this statement changed counts as subscribed: a pair subscribed concurrently is "already".
  // The same statement reads what the events show of the channels written to.
  const candidates = channels.filter((c) => wanted.some((w) => w.channelId === c.id));
  let changed: Map<string, Subscription>;
  let facts: ChannelFacts;
  if (predicted) {
    // Every pair wanted changes: reactivated as read, or inserted with the table's defaults.
    changed = new Map(wanted.map((w) => {
      const row = rowOf.get(pairKey(w.userId, w.channelId));
      return [pairKey(w.userId, w.channelId), row ? { ...row, active: true } : newSubscriptionRow(w.userId, w.channelId, w.color)];
    }));
    facts = withNewSubscribers(predicted.facts, candidates, users.filter((u) => u.isActive), (c, u) => changed.has(pairKey(u.id, c.id)));
  } else {
    const activation = await activateSubscriptions(tx.sql, realm.id, wanted, channelFactsRequest(candidates, { withSubscribers: true }));
    changed = new Map(activation.rows.map((r) => [pairKey(r.userId, r.channelId), r]));
    facts = activation.facts!;
  }

  const subscribed: Record<string, string[]> = {};
  const alreadySubscribed: Record<string, string[]> = {};
  const added: Array<{ user: User; channel: Channel }> = [];
  for (const user of users) {
    for (const channel of channels) {
      if (changed.has(pairKey(user.id, channel.id))) {
        (subscribed[String(user.id)] ??= []).push(channel.name);
        added.push({ user, channel });
      } else {
        (alreadySubscribed[String(user.id)] ??= []).push(channel.name);
      }
    }
  }

  const events: QueuedEvent[] = [];
  if (added.length) {
    const touched = channels.filter((c) => added.some((a) => a.channel.id === c.id));
    const data = await channelDisplayData(tx.reader, realm.id, touched, facts);
    // Users who could not see a channel before get its creation event first.
    for (const channel of touched) {
      const joined = added.filter((a) => a.channel.id === channel.id).map((a) => a.user);
      const newcomers = await usersWhoSeeChannelOnlySubscribed(() => prismaOf(tx), realm.id, channel, joined);
      if (newcomers.length) events.push({ userIds: newcomers, payload: streamCreateEvent([formatChannel(channel, data)]) });
    }
    for (const user of users) {
      const mine = added.filter((a) => a.user.id === user.id);
      if (!mine.length) continue;
      const subscriptions = mine.map(({ channel }) =>
        formatSubscription(channel, changed.get(pairKey(user.id, channel.id))!, data, { subscribers: data.subscribers?.get(channel.id) ?? [] }),
      );
      events.push({ userIds: [user.id], payload: { type: 'subscription', op: 'add', subscriptions } });
    }
    // Everyone else who can see the channel (now), resolved when the event is stored.
    for (const channel of touched) {
      const altered = sorted(added.filter((a) => a.channel.id === channel.id).map((a) => a.user.id));
      events.push({ audience: { ...channelAudience(channel), except: altered }, payload: { type: 'subscription', op: 'peer_add', stream_ids: [channel.id], user_ids: altered } });
    }
  }
  if (predicted && changed.size > 0) {
    tx.atCommit!(activateExpectedSql([...changed.values()], insertEventsSql(realm.id, events)));
    if (events.length) predicted.afterCommit(() => predicted.deps.events.announce(realm.id));
    return { subscribed, alreadySubscribed, events: [] };
  }
  return { subscribed, alreadySubscribed, events };
}

/**
 * Facts read before the subscriptions were written, with the users who join each channel added to
 * its subscribers (as the facts activateSubscriptions reads show them). Throws NeedsPrismaTransaction
 * when they lack a channel or a group its settings name (a concurrent change of the channel made one
 * after the facts' snapshot).
 */
function withNewSubscribers(facts: ChannelFacts, channels: Channel[], users: User[], joins: (channel: Channel, user: User) => boolean): ChannelFacts {
  const subscribers = new Map(facts.subscribers);
  const subscriberCount = new Map(facts.subscriberCount);
  for (const channel of channels) {
    const before = facts.subscribers.get(channel.id);
    if (!before || CHANNEL_GROUP_SETTINGS.some((s) => !facts.groups.has(channel[s.column]))) throw new NeedsPrismaTransaction('the facts read with the lock are incomplete');
    const ids = new Set(before);
    for (const user of users) if (joins(channel, user)) ids.add(user.id);
    const list = [...ids].sort((a, b) => a - b);
    subscribers.set(channel.id, list);
    subscriberCount.set(channel.id, list.length);
  }
  return { ...facts, subscribers, subscriberCount };
}

/** A new user joins the organization's default channels (Zulip's do_create_user); returns the events. */
export async function subscribeToDefaultChannels(tx: Db, realm: Realm, user: User): Promise<QueuedEvent[]> {
  const ids = await defaultChannelIds(tx, realm.id);
  if (ids.length === 0) return [];
  const channels = (await shareLockChannels(tx, realm.id, ids)).filter((c) => c.isDefault && !c.isArchived);
  if (channels.length === 0) return [];
  return (await addSubscriptions(prismaTx(tx), realm, channels, [user], new Map())).events;
}

// ---------------------------------------------------------------------------------------------
// DELETE /users/me/subscriptions

export interface UnsubscribeRequest {
  names: string[];
  principals?: number[] | string[];
}

export async function doUnsubscribe(deps: AppDeps, realm: Realm, actor: User, request: UnsubscribeRequest): Promise<{ removed: string[]; not_removed: string[] }> {
  // An unknown channel is STREAM_DOES_NOT_EXIST with its name in `stream`.
  return inTransaction(deps.db, (tx, afterCommit) => unsubscribeIn(deps, realm, actor, request, tx, afterCommit, (missing) => new ChannelDoesNotExistError(missing[0]!)));
}

/**
 * DELETE /users/me/subscriptions inside the caller's transaction; `unknownChannels` is the error for the
 * names that match no channel (checked after permissions, as Zulip does, so an unauthorized request
 * learns nothing about names).
 */
async function unsubscribeIn(
  deps: AppDeps,
  realm: Realm,
  actor: User,
  request: UnsubscribeRequest,
  tx: Db,
  afterCommit: (fn: () => void | Promise<void>) => void,
  unknownChannels: (names: string[]) => Error,
): Promise<{ removed: string[]; not_removed: string[] }> {
  const subject = lazySubject(() => tx, actor);
  const principals = request.principals ?? [];
  const users = principals.length ? await resolvePrincipals(tx, realm, actor, principals) : [actor];

  const names = checkNames(request.names);
  const { channels, missing, callerRows } = await lockNamedChannels(tx, realm, actor, names);
  const callerSubscribed = new Set([...callerRows.values()].filter((r) => r.active).map((r) => r.channelId));
  // Removing only oneself needs no permission (nor the caller's groups).
  checkCanUnsubscribe(users.every((u) => u.id === actor.id) ? { user: actor, groups: new Set() } : await subject(), users, channels, callerSubscribed);
  if (missing.length) throw unknownChannels(missing);

  // Only what this statement changed counts as removed (a concurrent removal already did the rest).
  const changed = new Set(
    (await deactivateSubscriptions(tx, users.flatMap((u) => channels.map((c) => ({ userId: u.id, channelId: c.id }))))).map((r) => pairKey(r.userId, r.channelId)),
  );
  const removed: Array<{ user: User; channel: Channel }> = [];
  const result = { removed: [] as string[], not_removed: [] as string[] };
  for (const user of users) {
    for (const channel of channels) {
      if (changed.has(pairKey(user.id, channel.id))) {
        removed.push({ user, channel });
        result.removed.push(channel.name);
      } else {
        result.not_removed.push(channel.name);
      }
    }
  }
  if (removed.length === 0) return result;

  const events = await removalEvents(tx, users, channels, removed);
  await deps.events.publish(tx, afterCommit, realm.id, events);
  return result;
}

async function removalEvents(tx: Db, users: User[], channels: Channel[], removed: Array<{ user: User; channel: Channel }>): Promise<QueuedEvent[]> {
  const events: QueuedEvent[] = [];
  const touched = channels.filter((c) => removed.some((r) => r.channel.id === c.id));
  for (const user of users) {
    const mine = removed.filter((r) => r.user.id === user.id).map((r) => r.channel);
    if (!mine.length) continue;
    events.push({ userIds: [user.id], payload: { type: 'subscription', op: 'remove', subscriptions: mine.map((c) => ({ name: c.name, stream_id: c.id })) } });
    // Channels the user can no longer see at all disappear from their client.
    const gone = await channelsHiddenFromUnsubscribed(tx, user, mine);
    if (gone.length) events.push({ userIds: [user.id], payload: streamDeleteEvent(gone.map((c) => c.id)) });
  }
  // Everyone else who can still see the channel, resolved when the event is stored.
  for (const channel of touched) {
    const altered = sorted(removed.filter((r) => r.channel.id === channel.id).map((r) => r.user.id));
    events.push({ audience: { ...channelAudience(channel), except: altered }, payload: { type: 'subscription', op: 'peer_remove', stream_ids: [channel.id], user_ids: altered } });
  }
  return events;
}

// ---------------------------------------------------------------------------------------------
// PATCH /users/me/subscriptions

export interface UpdateSubscriptionsRequest {
  add: SubscribeRequest['channels'];
  delete: string[];
}

/** What PATCH /users/me/subscriptions answers: the answers of subscribing and unsubscribing, merged. */
export type UpdateSubscriptionsResult = SuccessData<'update-subscriptions'>;

/**
 * Zulip's update_subscriptions_backend: POST /users/me/subscriptions for the caller with its defaults,
 * then DELETE /users/me/subscriptions for the caller, in one transaction (an error in either undoes
 * both).
 */
export async function doUpdateSubscriptions(deps: AppDeps, realm: Realm, actor: User, request: UpdateSubscriptionsRequest): Promise<UpdateSubscriptionsResult> {
  if (request.add.length === 0 && request.delete.length === 0) throw new JsonableError('Nothing to do. Specify at least one of "add" or "delete".');
  // The subscribing part refuses guests, even when it has nothing to do (Zulip's require_non_guest_user).
  checkCanSubscribe(actor);
  const subscribe: SubscribeRequest = {
    channels: request.add,
    authorizationErrorsFatal: true,
    inviteOnly: false,
    isWebPublic: false,
    isDefault: false,
    messageRetentionDays: 'realm_default',
    groupSettings: {},
    sendNewSubscriptionMessages: true,
  };
  return retryingChannelCreationRace(() =>
    inTransaction(deps.db, async (tx, afterCommit) => {
      const subscribed = await subscribeIn(deps, realm, actor, subscribe, prismaTx(tx), afterCommit);
      // Unlike DELETE /users/me/subscriptions, unknown names are listed in one BAD_REQUEST error (Zulip's list_to_streams).
      const unsubscribed = await unsubscribeIn(deps, realm, actor, { names: request.delete }, tx, afterCommit, (names) => new JsonableError(`Channel(s) (${names.join(', ')}) do not exist`));
      return {
        subscribed: subscribed.subscribed,
        already_subscribed: subscribed.already_subscribed,
        new_subscription_messages_sent: subscribed.new_subscription_messages_sent ?? false,
        removed: unsubscribed.removed,
        not_removed: unsubscribed.not_removed,
      };
    }),
  );
}
