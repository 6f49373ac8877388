// The message retention policy (Zulip's archive_messages): messages older than their conversation's
// retention period are deleted, oldest first, in batches of their own transaction (a channel's through
// its (channel_id, id) index, which holds its expired messages first; direct messages by date). A channel's period
// is its own `message_retention_days` (-1: kept for ever) or else the organization's; direct messages
// take the organization's (none: kept for ever). As in Zulip, no event is sent: clients learn of the
// deletion when they next fetch. Unlike Zulip, nothing is archived (Parley keeps no archive to restore
// deleted messages from). Run by the `message-retention` job (jobs/periodic.ts), hourly.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { channelsWithRetention, lockExpiredChannelMessages, lockExpiredDirectMessages, realmsWithRetention } from '../data/realm-settings.repo.ts';
import { deleteMessageRows, deleteRemindersAbout, fenceDeferredRecipients } from '../data/message-deletion.repo.ts';

/** Zulip's batch sizes: channel messages 100 per transaction, direct messages 1,000. */
export const RETENTION_BATCH = { channel: 100, direct: 1000 } as const;

const DAY_MS = 86_400_000;

/** Deletes one batch of a conversation list's expired messages; answers how many were deleted. */
async function deleteExpiredBatch(deps: Pick<AppDeps, 'db'>, q: { realmId: number; channelId: number | null; cutoff: Date; limit: number }): Promise<number> {
  return inTransaction(deps.db, async (tx) => {
    const ids = q.channelId === null ? await lockExpiredDirectMessages(tx, { realmId: q.realmId, cutoff: q.cutoff, limit: q.limit }) : await lockExpiredChannelMessages(tx, { channelId: q.channelId, cutoff: q.cutoff, limit: q.limit });
    if (ids.length === 0) return 0;
    // As every deletion: concurrent catch-ups of deferred rows finish first or find the messages gone
    // (data/message-deletion.repo.ts); reminders about them go with them (silently, as Zulip's cascade).
    if (q.channelId !== null) await fenceDeferredRecipients(tx, ids);
    await deleteRemindersAbout(tx, ids);
    return deleteMessageRows(tx, ids);
  });
}

/** Every expired message of a conversation list, a batch at a time. */
async function deleteExpired(deps: Pick<AppDeps, 'db'>, q: { realmId: number; channelId: number | null; days: number; now: Date; limit: number }): Promise<number> {
  const cutoff = new Date(q.now.getTime() - q.days * DAY_MS);
  let deleted = 0;
  for (;;) {
    const n = await deleteExpiredBatch(deps, { realmId: q.realmId, channelId: q.channelId, cutoff, limit: q.limit });
    deleted += n;
    if (n < q.limit) return deleted;
  }
}

/** One pass of the retention policy over every organization; answers how many messages were deleted. */
export async function runMessageRetention(deps: Pick<AppDeps, 'db' | 'logger'>, now: Date = new Date(), batch: { channel: number; direct: number } = RETENTION_BATCH): Promise<number> {
  let deleted = 0;
  for (const c of await channelsWithRetention(deps.db)) {
    deleted += await deleteExpired(deps, { realmId: c.realmId, channelId: c.channelId, days: c.days, now, limit: batch.channel });
  }
  for (const r of await realmsWithRetention(deps.db)) {
    deleted += await deleteExpired(deps, { realmId: r.realmId, channelId: null, days: r.days, now, limit: batch.direct });
  }
  if (deleted > 0) deps.logger.info({ deleted }, 'message retention: expired messages deleted');
  return deleted;
}
