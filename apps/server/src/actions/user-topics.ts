// A user's visibility policy for a topic (POST /user_topics and the older PATCH
// /users/me/subscriptions/muted_topics): who may set it, the write, and the `user_topic` event (with the
// older `muted_topics` list) for the user's own clients, in one transaction. Nothing is sent when the
// policy does not change. Also the policies Parley sets by itself when a channel message is sent
// (applyAutomaticTopicPolicies, called by actions/messages.ts in the sending transaction).
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { findChannelById, findChannelsByNames } from '../data/channels.repo.ts';
import {
  mutedTopicsOfUser,
  senderTopicState,
  setUserTopicPolicy,
  usersToFollowWhenMentioned,
  VisibilityPolicy,
  type SenderTopicState,
} from '../data/user-topics.repo.ts';
import { accessChannelById, accessChannelByName, loadChannelViewer } from '../access/channels.ts';
import { JsonableError } from '../errors.ts';
import { topicFromClient } from '../lib/message-limits.ts';

/** How the caller named the channel: by id, or (older endpoint) by name. */
export type ChannelReference = { id: number } | { name: string };

/**
 * The channel whose topic gets the policy. Setting a policy needs read access to the channel (as
 * sending to it would); taking one away only needs the channel to be of the organization, so that
 * policies left in channels the user lost access to can still be removed (`notFound` is then the error).
 */
async function channelForPolicy(deps: AppDeps, realm: Realm, user: User, ref: ChannelReference, removing: boolean, notFound: string): Promise<Channel> {
  if (removing) {
    const channel = 'id' in ref ? await findChannelById(deps.db, realm.id, ref.id) : (await findChannelsByNames(deps.db, realm.id, [ref.name]))[0];
    if (!channel) throw new JsonableError(notFound);
    return channel;
  }
  const viewer = await loadChannelViewer(deps.db, user);
  if ('id' in ref) return (await accessChannelById(deps.db, realm, viewer, ref.id, { requireContentAccess: true, allowArchived: false })).channel;
  return accessChannelByName(deps.db, realm, viewer, ref.name);
}

async function setPolicy(deps: AppDeps, realm: Realm, user: User, channel: Channel, topic: string, policy: number): Promise<void> {
  await inTransaction(deps.db, (tx, afterCommit) => writePolicy({ tx, afterCommit, deps, realm }, user.id, channel, topic, policy));
}

interface InTransaction {
  tx: Db;
  afterCommit: AfterCommit;
  deps: Pick<AppDeps, 'events'>;
  realm: Realm;
}

/**
 * Writes the policy, and when it changed, stores the user's `muted_topics` and `user_topic` events, or
 * adds them to `collected` for the caller to store (with a message: applyAutomaticTopicPolicies).
 */
export async function writePolicy(t: InTransaction, userId: number, channel: Pick<Channel, 'id'>, topic: string, policy: number, collected?: QueuedEvent[]): Promise<boolean> {
  const at = new Date(Math.floor(Date.now() / 1000) * 1000);
  const changed = await setUserTopicPolicy(t.tx, { userId, channelId: channel.id, topic, policy, at });
  if (!changed) return false;
  const userTopic = { type: 'user_topic', stream_id: channel.id, topic_name: topic, last_updated: at.getTime() / 1000, visibility_policy: policy };
  const mutedTopics = { type: 'muted_topics', muted_topics: await mutedTopicsOfUser(t.tx, userId) };
  const events: QueuedEvent[] = [
    { userIds: [userId], payload: mutedTopics },
    { userIds: [userId], payload: userTopic },
  ];
  if (collected) collected.push(...events);
  else await t.deps.events.publish(t.tx, t.afterCommit, t.realm.id, events);
  return true;
}

/** POST /user_topics. */
export async function doUpdateUserTopic(deps: AppDeps, realm: Realm, user: User, channelId: number, topic: string, policy: number): Promise<void> {
  const channel = await channelForPolicy(deps, realm, user, { id: channelId }, policy === VisibilityPolicy.INHERIT, 'Invalid channel ID');
  await setPolicy(deps, realm, user, channel, topicFromClient(topic), policy);
}

/**
 * PATCH /users/me/subscriptions/muted_topics: `add` mutes, `remove` takes the topic's policy away.
 * Exactly one of the channel's id and name.
 */
export async function doMuteTopic(deps: AppDeps, realm: Realm, user: User, q: { streamId?: number; stream?: string; topic: string; op: 'add' | 'remove' }): Promise<void> {
  if (q.streamId === undefined && q.stream === undefined) throw new JsonableError("Missing 'stream_id' argument");
  if (q.streamId !== undefined && q.stream !== undefined) {
    throw new JsonableError('Unsupported parameter combination: stream_id, stream', { code: 'INCOMPATIBLE_PARAMETERS', data: { parameters: 'stream_id, stream' } });
  }
  const ref: ChannelReference = q.streamId !== undefined ? { id: q.streamId } : { name: q.stream! };
  const removing = q.op === 'remove';
  const channel = await channelForPolicy(deps, realm, user, ref, removing, 'Topic is not muted');
  await setPolicy(deps, realm, user, channel, topicFromClient(q.topic), removing ? VisibilityPolicy.INHERIT : VisibilityPolicy.MUTED);
}

// ---------------------------------------------------------------------------------------------------
// Automatic policies when a channel message is sent

/** Zulip's automatically_follow_topics_policy / automatically_unmute_topics_in_muted_streams_policy values. */
const AUTOMATICALLY = { ON_PARTICIPATION: 1, ON_SEND: 2, ON_INITIATION: 3, NEVER: 4 } as const;

/**
 * Zulip's visibility_policy_for_send_message: the policy the sender's settings give the topic they
 * just sent to, or null when it would not make the topic more visible. Following wins over unmuting
 * (unmuting applies only in a muted channel); starting a topic (no other readable message in it) counts
 * as participating and sending too; a followed topic stays followed.
 */
export function automaticPolicyForSender(state: SenderTopicState): number | null {
  const { followPolicy: follow, unmutePolicy: unmute, current, channelMuted } = state;
  if (follow === AUTOMATICALLY.NEVER && unmute === AUTOMATICALLY.NEVER) return null;
  if (current === VisibilityPolicy.FOLLOWED) return null;
  if (follow === AUTOMATICALLY.ON_PARTICIPATION || follow === AUTOMATICALLY.ON_SEND) return VisibilityPolicy.FOLLOWED;
  let policy: number | null = channelMuted && (unmute === AUTOMATICALLY.ON_PARTICIPATION || unmute === AUTOMATICALLY.ON_SEND) ? VisibilityPolicy.UNMUTED : null;
  if (current !== VisibilityPolicy.INHERIT) return policy === current ? null : policy;
  if (!state.topicHasOtherMessages) {
    if (follow === AUTOMATICALLY.ON_INITIATION) return VisibilityPolicy.FOLLOWED;
    if (channelMuted && unmute === AUTOMATICALLY.ON_INITIATION) policy = VisibilityPolicy.UNMUTED;
  }
  return policy;
}

/**
 * What the sender's automatic policy depends on, read in the sending transaction before the message is
 * stored (storing it takes the organization's event-order lock until commit: nothing should be read
 * after it); null for bots, which get no policy.
 */
export async function senderTopicStateBeforeSending(tx: Db, q: { sender: Pick<User, 'id' | 'isBot'>; channel: Channel; topic: string }): Promise<SenderTopicState | null> {
  if (q.sender.isBot) return null;
  return senderTopicState(tx, { senderId: q.sender.id, channelId: q.channel.id, topic: q.topic, historyPublic: q.channel.historyPublicToSubscribers });
}

/**
 * In a channel message's sending transaction (Zulip's do_send_messages): the sender's automatic follow
 * or unmute of the topic (from `senderState`, senderTopicStateBeforeSending), then following it for the
 * recipients it personally mentions who asked for that (`automatically_follow_topics_where_mentioned`).
 * Both apply after the message's own recipients, flags and pushes were decided (checkMessage and the
 * store's plan, beforehand), so they change what later messages do. The rows are written before the
 * statement storing the message, and their events are added to `collected`, which that statement
 * stores after the message's own event (actions/messages.ts storeWithPlan): the organization's
 * event-order lock the statement takes is then held until commit by nothing but the statement itself.
 * Answers the sender's new policy (POST /messages' `automatic_new_visibility_policy`), or null.
 */
export async function applyAutomaticTopicPolicies(
  t: InTransaction,
  q: { sender: Pick<User, 'id' | 'isBot'>; senderState: SenderTopicState | null; channel: Channel; topic: string; mentionedRecipientIds: number[] },
  collected: QueuedEvent[],
): Promise<number | null> {
  let senderPolicy: number | null = null;
  if (q.senderState) {
    const policy = automaticPolicyForSender(q.senderState);
    if (policy !== null && (await writePolicy(t, q.sender.id, q.channel, q.topic, policy, collected))) senderPolicy = policy;
  }
  // As in Zulip, a sender who mentions themselves counts too.
  for (const userId of await usersToFollowWhenMentioned(t.tx, { userIds: q.mentionedRecipientIds, channelId: q.channel.id, topic: q.topic })) {
    await writePolicy(t, userId, q.channel, q.topic, VisibilityPolicy.FOLLOWED, collected);
  }
  return senderPolicy;
}

// ---------------------------------------------------------------------------------------------------
// Automatic policies when a user takes part in a topic without sending (reactions)

/**
 * Zulip's visibility_policy_for_participation and should_change_visibility_policy: the policy the
 * user's settings give a channel topic they took part in (by reacting), or null when it would not make
 * the topic more visible. Following wins over unmuting (which applies only in a muted channel); a
 * followed topic stays followed.
 */
export function automaticPolicyForParticipant(state: Pick<SenderTopicState, 'followPolicy' | 'unmutePolicy' | 'current' | 'channelMuted'>): number | null {
  let policy: number | null = null;
  if (state.followPolicy === AUTOMATICALLY.ON_PARTICIPATION) policy = VisibilityPolicy.FOLLOWED;
  else if (state.channelMuted && state.unmutePolicy === AUTOMATICALLY.ON_PARTICIPATION) policy = VisibilityPolicy.UNMUTED;
  if (policy === null || policy === state.current || state.current === VisibilityPolicy.FOLLOWED) return null;
  return policy;
}

/**
 * In the caller's transaction: the policy automaticPolicyForParticipant gives the user for the topic,
 * written with its events when it changes anything. Bots get none (as when sending).
 */
export async function applyParticipationTopicPolicy(
  t: InTransaction,
  q: { user: Pick<User, 'id' | 'isBot'>; channelId: number; topic: string; state: Pick<SenderTopicState, 'followPolicy' | 'unmutePolicy' | 'current' | 'channelMuted'> },
): Promise<void> {
  if (q.user.isBot) return;
  const policy = automaticPolicyForParticipant(q.state);
  if (policy !== null) await writePolicy(t, q.user.id, { id: q.channelId }, q.topic, policy);
}
