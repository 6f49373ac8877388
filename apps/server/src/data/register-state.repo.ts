// Small reads for the /register state that no other read model needs.
import type { Db } from './db.ts';
import { newestOwnMessageId } from './message-flags.repo.ts';

/** The user's subscription rows by channel: true when active, false when unsubscribed. */
export async function subscriptionStatesOfUser(db: Db, userId: number): Promise<Map<number, boolean>> {
  const rows = await db.subscription.findMany({ where: { userId }, select: { channelId: true, active: true } });
  return new Map(rows.map((r) => [r.channelId, r.active]));
}

/** The newest message the user has received (-1 when none). */
export async function maxMessageIdOfUser(db: Db, userId: number): Promise<number> {
  return (await newestOwnMessageId(db, userId)) || -1;
}
