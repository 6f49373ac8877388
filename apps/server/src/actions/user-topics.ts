// A user's visibility policy for a topic (POST /user_topics and the older PATCH
// /users/me/subscriptions/muted_topics): who may set it, the write, and the `user_topic` event (with the
// older `muted_topics` list) for the user's own clients, in one transaction. Nothing is sent when the
// policy does not change.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { findChannelById, findChannelsByNames } from '../data/channels.repo.ts';
import { mutedTopicsOfUser, setUserTopicPolicy, VisibilityPolicy } from '../data/user-topics.repo.ts';
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
  const at = new Date(Math.floor(Date.now() / 1000) * 1000);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const changed = await setUserTopicPolicy(tx, { userId: user.id, channelId: channel.id, topic, policy, at });
    if (!changed) return;
    const userTopic = { type: 'user_topic', stream_id: channel.id, topic_name: topic, last_updated: at.getTime() / 1000, visibility_policy: policy };
    const mutedTopics = { type: 'muted_topics', muted_topics: await mutedTopicsOfUser(tx, user.id) };
    await deps.events.publish(tx, afterCommit, realm.id, [
      { userIds: [user.id], payload: mutedTopics },
      { userIds: [user.id], payload: userTopic },
    ]);
  });
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
