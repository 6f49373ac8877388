// Reminders (POST /reminders, DELETE /reminders/{id}): as in Zulip, a reminder is a scheduled message
// of its own kind (DeliveryType.REMIND) about a message the user can read. At its time the
// notification bot sends it to the user as a direct message quoting that message (the delivery of
// scheduled messages does it: actions/scheduled-messages.ts). Its owner's clients are told with
// `reminders` events.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { deleteScheduledMessage, insertReminder, lockScheduledMessage, DeliveryType } from '../data/scheduled-messages.repo.ts';
import { findUsersByIds } from '../data/users.repo.ts';
import { JsonableError } from '../errors.ts';
import { formatReminder } from '../lib/scheduled-message-format.ts';
import { isPossibleMessageId, readableMessage } from '../queries/messages.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { checkMessage, internalDirectMessage } from './messages.ts';
import { MAX_MESSAGE_LENGTH, MAX_REMINDER_NOTE_LENGTH } from '../lib/message-limits.ts';

const TRUNCATED = '\n[message truncated]';

const notFound = () => new JsonableError('Reminder does not exist', { status: 404 });

export async function doCreateReminder(deps: AppDeps, realm: Realm, user: User, request: { messageId: number; scheduledDeliveryTimestamp: number; note: string | undefined }): Promise<number> {
  const scheduledAt = new Date(request.scheduledDeliveryTimestamp * 1000);
  if (scheduledAt.getTime() <= Date.now()) throw new JsonableError('Scheduled delivery time must be in the future.');
  const note = request.note === undefined ? '' : normalizeNote(request.note);
  if (isPossibleMessageId(request.messageId)) await catchUpDeferredRows(deps.db, realm, user);
  const found = await readableMessage(deps.db, realm, user, request.messageId);
  if (!found) throw new JsonableError('Invalid message(s)');
  const [author] = await findUsersByIds(deps.db, realm.id, [found.message.sender_id]);
  const content = reminderContent(realm, found.message, found.channel?.name ?? null, author?.fullName ?? 'Unknown user', note);
  // Checked as the user's note to themself (it renders the content, and refuses what cannot be sent).
  const checked = await checkMessage(deps.db, realm, user, internalDirectMessage(user.id, content));
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await insertReminder(tx, realm.id, user.id, { content: checked.content, renderedContent: checked.renderedContent, scheduledAt, targetMessageId: found.message.id });
    await deps.jobs.send(tx, 'deliver-scheduled-message', { id: row.id, at: scheduledAt.toISOString() }, { startAfter: scheduledAt });
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload: { type: 'reminders', op: 'add', reminders: [formatReminder(row)] } }]);
    return row.id;
  });
}

export async function doDeleteReminder(deps: AppDeps, realm: Realm, user: User, id: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await lockScheduledMessage(tx, id);
    if (!row || row.senderId !== user.id || row.realmId !== realm.id || row.deliveryType !== DeliveryType.REMIND || row.delivered) throw notFound();
    await deleteScheduledMessage(tx, id);
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload: { type: 'reminders', op: 'remove', reminder_id: id } }]);
  });
}

/** Trailing whitespace and leading blank lines go (Zulip's rule); then the length is checked. */
function normalizeNote(note: string): string {
  const normalized = note.trimEnd().replace(/^\n+/, '');
  if (normalized.length > MAX_REMINDER_NOTE_LENGTH) throw new JsonableError(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return normalized;
}

/** A code fence longer than any run of backticks in `text`. */
function fenceFor(text: string): string {
  const longest = Math.max(0, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  return '`'.repeat(Math.max(3, longest + 1));
}

/** The reminder's text: what it is about, the note, and the message quoted. */
function reminderContent(
  realm: Realm,
  message: { id: number; sender_id: number; channel_id: number | null; topic: string; content: string },
  channelName: string | null,
  authorName: string,
  note: string,
): string {
  const link = `${realm.url}/#narrow/id/${message.id}`;
  const where = channelName !== null ? ` in #**${channelName}>${message.topic}**` : ' in a direct message';
  const lines = [`Here is the reminder you asked for about [this message](${link}).`];
  if (note) lines.push('', 'Your note:', ...note.split('\n').map((l) => `> ${l}`));
  lines.push('', `@_**${authorName}|${message.sender_id}** wrote${where}:`);
  const fence = fenceFor(message.content);
  // The quote is shortened so that the whole reminder stays within the message length limit.
  const room = MAX_MESSAGE_LENGTH - lines.join('\n').length - 2 * (fence.length + 1) - 'quote'.length - 1;
  const quoted = message.content.length > room ? `${message.content.slice(0, room - TRUNCATED.length)}${TRUNCATED}` : message.content;
  lines.push(`${fence}quote`, quoted, fence);
  return lines.join('\n');
}
