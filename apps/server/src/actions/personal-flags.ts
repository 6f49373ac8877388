// The flags a message gets for a recipient from the recipient's own settings, as Zulip sets them:
// - a recipient who muted the sender gets the message already `read` (so it counts in no unread total
//   and is pushed to nobody: the push targets leave such recipients out, data/push-devices.repo.ts);
// - a recipient with an alert word in the message gets `has_alert_word` (lib/alert-words.ts has the
//   matching rules), the sender included, at sending and again at every content edit.
// Sending (actions/messages.ts checkMessage, checkInternalChannelMessage) and editing
// (actions/message-edits.ts) call these; the words and mutes are read in one query per message.
import type { RawSql } from '../data/db.ts';
import { personalFlagSources } from '../data/personal-flags.repo.ts';
import { alertWordCandidatesOfMessage, rewriteAlertWordFlags } from '../data/alert-words.repo.ts';
import { usersWithAlertWords } from '../lib/alert-words.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';

/**
 * Adds to `flags` (aligned with `recipientIds`) the `read` bit of the recipients who muted the sender
 * and the `has_alert_word` bit of those with an alert word in `content` (the message as stored).
 */
export async function addPersonalFlags(db: RawSql, senderId: number, recipientIds: readonly number[], content: string, flags: number[]): Promise<void> {
  if (recipientIds.length === 0) return;
  const { muters, words } = await personalFlagSources(db, senderId, recipientIds, content.toLowerCase());
  if (muters.length === 0 && words.length === 0) return;
  const muted = new Set(muters);
  const alerted = usersWithAlertWords(content, words);
  recipientIds.forEach((id, i) => {
    if (muted.has(id)) flags[i] = flags[i]! | MESSAGE_FLAG_BITS.read;
    if (alerted.has(id)) flags[i] = flags[i]! | MESSAGE_FLAG_BITS.has_alert_word;
  });
}

/**
 * After a content edit (in its transaction, before its update_message events are built from the
 * rows): `has_alert_word` recomputed for everyone who has the message, from the new content.
 */
export async function recomputeAlertWordFlags(tx: RawSql, messageId: number, content: string): Promise<void> {
  const words = await alertWordCandidatesOfMessage(tx, messageId, content.toLowerCase());
  await rewriteAlertWordFlags(tx, messageId, [...usersWithAlertWords(content, words)]);
}
