// A subscriber's personal settings for a channel (columns of `subscription`): color, mute, pin and the
// per-channel notification overrides (null: the user's global setting applies).
import type { Db } from './db.ts';

export interface SubscriptionSettings {
  color?: string;
  isMuted?: boolean;
  pinToTop?: boolean;
  desktopNotifications?: boolean;
  audibleNotifications?: boolean;
  pushNotifications?: boolean;
  emailNotifications?: boolean;
  wildcardMentionsNotify?: boolean;
}

/** Changes the user's active subscription to the channel; false when there is none. */
export async function updateSubscriptionSettings(db: Db, userId: number, channelId: number, settings: SubscriptionSettings): Promise<boolean> {
  const { count } = await db.subscription.updateMany({ where: { userId, channelId, active: true }, data: settings });
  return count > 0;
}
