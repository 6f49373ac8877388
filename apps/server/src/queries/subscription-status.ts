// GET /users/{user_id}/subscriptions/{stream_id}: whether a user is subscribed to a channel, for a
// requester who may see the channel's subscribers.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { accessUser } from '../access/users.ts';
import { accessChannelById, loadChannelViewer } from '../access/channels.ts';

/**
 * Zulip's get_subscription_backend: the user first (an active human: `No such user` for bots and
 * unknown ids, `User is deactivated`), then the channel with metadata access (`Invalid channel ID`
 * otherwise; archived channels stay readable, as for their subscriber list), then the answer.
 */
export async function subscriptionStatus(db: Db, realm: Realm, viewer: User, userId: number, channelId: number): Promise<boolean> {
  const target = await accessUser(db, realm, viewer, userId, { allowBots: false, allowDeactivated: false, forAdmin: false });
  const subject = await loadChannelViewer(db, viewer);
  const { channel } = await accessChannelById(db, realm, subject, channelId, { requireContentAccess: false, allowArchived: true });
  return (await subscribedChannelIds(db, target.id, [channel.id])).has(channel.id);
}
