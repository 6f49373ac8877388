// Scheduled messages (POST/PATCH/DELETE /scheduled_messages) and their delivery. A scheduled message
// is checked like a message when it is scheduled or edited, and again when it is delivered. Delivery
// is a job of the job queue (jobs/queue.ts) enqueued in the same transaction as the change; the job
// carries the delivery time it was made for, so that a job outdated by an edit does nothing. Delivery
// locks the row and sends the message and marks it delivered in one transaction: a message is sent at
// most once however often a job runs, and at least once since a failed or lost job is retried.
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserById } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import {
  DeliveryType,
  deleteScheduledMessage,
  insertScheduledMessage,
  lockScheduledMessage,
  lockScheduledMessages,
  markScheduledMessagesDelivered,
  updateScheduledMessage,
  type ScheduledMessageFields,
  type ScheduledMessageRow,
} from '../data/scheduled-messages.repo.ts';
import { JsonableError } from '../errors.ts';
import type { AfterCommit } from '../events/bus.ts';
import { formatScheduledMessage } from '../lib/scheduled-message-format.ts';
import { checkMessage, internalDirectMessage, normalizeTopic, READ_BY_SENDER_CLIENTS, storeCheckedMessage, truncateTopic, type SendMessageRequest } from './messages.ts';
import { notificationBot, sendNotificationMessage } from './system-bots.ts';
import { pushTargetsForMessage, type MessagePushTargets } from './push.ts';

const inFuture = (seconds: number) => {
  if (seconds * 1000 <= Date.now()) throw new JsonableError('Scheduled delivery time must be in the future.');
  return new Date(seconds * 1000);
};

const notFound = () => new JsonableError('Scheduled message does not exist', { status: 404 });

type Kind = 'stream' | 'private';
const kindOf = (type: string): Kind => (type === 'stream' || type === 'channel' ? 'stream' : 'private');

/** The recipients as Zulip keeps them: everyone but the sender (the sender alone for a note to self). */
function directRecipients(to: number[], senderId: number): number[] {
  const unique = [...new Set(to)];
  const others = unique.filter((id) => id !== senderId).sort((a, b) => a - b);
  return others.length ? others : [senderId];
}

/** The send request a scheduled message amounts to (checked now, and again at delivery). */
function asSendRequest(f: Pick<ScheduledMessageFields, 'type' | 'channelId' | 'directUserIds' | 'topic' | 'content'>, readBySender: boolean | null): SendMessageRequest {
  return {
    type: f.type,
    to: f.type === 'stream' ? String(f.channelId) : JSON.stringify(f.directUserIds),
    topic: f.type === 'stream' ? f.topic : undefined,
    content: f.content,
    queueId: undefined,
    localId: undefined,
    readBySender: readBySender ?? undefined,
    client: 'Internal',
  };
}

async function publishScheduled(deps: AppDeps, tx: Db, afterCommit: AfterCommit, realmId: number, senderId: number, payload: Record<string, unknown>) {
  await deps.events.publish(tx, afterCommit, realmId, [{ userIds: [senderId], payload: { type: 'scheduled_messages', ...payload } }]);
}

export interface ScheduleRequest {
  type: string;
  to: number | number[];
  content: string;
  topic: string | undefined;
  scheduledDeliveryTimestamp: number;
  readBySender: boolean | undefined;
  client: string;
}

export async function doCreateScheduledMessage(deps: AppDeps, realm: Realm, sender: User, request: ScheduleRequest): Promise<number> {
  const kind = kindOf(request.type);
  const scheduledAt = inFuture(request.scheduledDeliveryTimestamp);
  let fields: Omit<ScheduledMessageFields, 'renderedContent' | 'scheduledAt' | 'readBySender'>;
  if (kind === 'stream') {
    if (typeof request.to !== 'number') throw new JsonableError('Invalid data type for channel ID');
    fields = { type: kind, channelId: request.to, directUserIds: [], topic: request.topic ?? '', content: request.content };
    if (request.topic === undefined) throw new JsonableError('Missing topic');
  } else {
    if (!Array.isArray(request.to)) throw new JsonableError('Invalid data type for recipients');
    fields = { type: kind, channelId: null, directUserIds: directRecipients(request.to, sender.id), topic: '', content: request.content };
  }
  const toSelf = kind === 'private' && fields.directUserIds.length === 1 && fields.directUserIds[0] === sender.id;
  const readBySender = request.readBySender ?? (READ_BY_SENDER_CLIENTS.has(request.client.toLowerCase()) && !toSelf);
  const checked = await checkMessage(deps.db, realm, sender, asSendRequest(fields, readBySender));
  const stored: ScheduledMessageFields = { ...fields, topic: checked.topic, content: checked.content, renderedContent: checked.renderedContent, scheduledAt, readBySender };
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await insertScheduledMessage(tx, realm.id, sender.id, stored);
    await deps.jobs.send(tx, 'deliver-scheduled-message', { id: row.id, at: scheduledAt.toISOString() }, { startAfter: scheduledAt });
    await publishScheduled(deps, tx, afterCommit, realm.id, sender.id, { op: 'add', scheduled_messages: [formatScheduledMessage(row)] });
    return row.id;
  });
}

export interface RescheduleRequest {
  type: string | undefined;
  to: number | number[] | undefined;
  content: string | undefined;
  topic: string | undefined;
  scheduledDeliveryTimestamp: number | undefined;
}

export async function doUpdateScheduledMessage(deps: AppDeps, realm: Realm, sender: User, id: number, request: RescheduleRequest): Promise<void> {
  const { type, to, content, topic, scheduledDeliveryTimestamp } = request;
  if (type === undefined && to === undefined && content === undefined && topic === undefined && scheduledDeliveryTimestamp === undefined) {
    throw new JsonableError('Nothing to change');
  }
  if (type !== undefined && to === undefined) throw new JsonableError('Recipient required when updating type of scheduled message.');
  if (type !== undefined && kindOf(type) === 'stream' && topic === undefined) throw new JsonableError('Topic required when updating scheduled message type to channel.');
  const newTime = scheduledDeliveryTimestamp === undefined ? undefined : inFuture(scheduledDeliveryTimestamp);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await lockScheduledMessage(tx, id);
    if (!row || row.senderId !== sender.id || row.realmId !== realm.id || row.deliveryType !== DeliveryType.SEND_LATER) throw notFound();
    if (row.delivered) throw new JsonableError('Scheduled message was already sent');
    if (row.failed && newTime === undefined) throw new JsonableError('Scheduled delivery time must be in the future.');

    const kind: Kind = type !== undefined ? kindOf(type) : (row.type as Kind);
    const next: ScheduledMessageFields = { ...row, type: kind, scheduledAt: newTime ?? row.scheduledAt } as ScheduledMessageFields;
    if (to !== undefined) {
      if (kind === 'stream') {
        if (typeof to !== 'number') throw new JsonableError('Invalid data type for channel ID');
        next.channelId = to;
        next.directUserIds = [];
      } else {
        if (!Array.isArray(to)) throw new JsonableError('Invalid data type for recipients');
        next.channelId = null;
        next.directUserIds = directRecipients(to, sender.id);
        next.topic = '';
      }
    }
    if (content !== undefined) next.content = content;
    // A topic alone on a direct message is ignored, as Zulip does.
    if (topic !== undefined && kind === 'stream') next.topic = topic;

    if (to !== undefined || content !== undefined || type !== undefined) {
      const checked = await checkMessage(tx, realm, sender, asSendRequest(next, row.readBySender));
      next.topic = checked.topic;
      next.content = checked.content;
      next.renderedContent = checked.renderedContent;
    } else if (topic !== undefined && kind === 'stream') {
      next.topic = truncateTopic(normalizeTopic(topic));
    }
    const updated = await updateScheduledMessage(tx, id, {
      type: next.type,
      channelId: next.channelId,
      directUserIds: next.directUserIds,
      topic: next.topic,
      content: next.content,
      renderedContent: next.renderedContent,
      scheduledAt: next.scheduledAt,
      failed: false,
      failureMessage: null,
    });
    if (newTime !== undefined) {
      await deps.jobs.send(tx, 'deliver-scheduled-message', { id, at: newTime.toISOString() }, { startAfter: newTime });
    }
    await publishScheduled(deps, tx, afterCommit, realm.id, sender.id, { op: 'update', scheduled_message: formatScheduledMessage(updated) });
  });
}

export async function doDeleteScheduledMessage(deps: AppDeps, realm: Realm, sender: User, id: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await lockScheduledMessage(tx, id);
    if (!row || row.senderId !== sender.id || row.realmId !== realm.id || row.deliveryType !== DeliveryType.SEND_LATER || row.delivered) throw notFound();
    await deleteScheduledMessage(tx, id);
    await publishScheduled(deps, tx, afterCommit, realm.id, sender.id, { op: 'remove', scheduled_message_id: id });
  });
}

/**
 * The delivery job: sends the message if it is still due (not delivered, not failed, not deleted, and
 * still scheduled for the time the job was made for), re-checking everything sending checks. When it
 * cannot be sent it is marked failed with the reason, and the sender's clients are told.
 */
export async function deliverScheduledMessage(deps: AppDeps, job: { id: number; at: string }): Promise<DeliveryOutcome> {
  return (await deliverScheduledMessages(deps, [job]))[0]!;
}

export type DeliveryOutcome = 'sent' | 'failed' | 'skipped';

/** How late a scheduled message may still be sent (Zulip's rule); later, it is marked failed. */
export const LATE_DELIVERY_CUTOFF_MS = 10 * 60_000;

/**
 * Delivers the jobs a worker fetched together (outcomes in the order of `jobs`), in one transaction:
 * every row is locked (in id order), every message checked, and only then are they stored, by
 * organization, delivery time and id — so the organization's event-order lock, which the first store takes, is held
 * for the stores alone — marked delivered in one statement, and the senders told. (A topic wildcard
 * mention is checked against the topic as it was before the batch.)
 */
export async function deliverScheduledMessages(deps: AppDeps, jobs: Array<{ id: number; at: string }>): Promise<DeliveryOutcome[]> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const outcomes: DeliveryOutcome[] = jobs.map(() => 'skipped');
    const rows = new Map((await lockScheduledMessages(tx, [...new Set(jobs.map((j) => j.id))])).map((r) => [r.id, r]));
    const realms = new Map<number, Realm | null>();
    const senders = new Map<number, User | null>();
    // `author` sends the message: the sender, or for a reminder the notification bot (to the sender).
    const due: Array<{ index: number; row: ScheduledMessageRow; realm: Realm; author: User; checked: Awaited<ReturnType<typeof checkMessage>>; pushTargets: MessagePushTargets }> = [];
    const taken = new Set<number>();
    for (const [index, job] of jobs.entries()) {
      const row = rows.get(job.id);
      if (!row || row.delivered || row.failed || taken.has(row.id) || row.scheduledAt.toISOString() !== job.at) continue;
      taken.add(row.id);
      if (!realms.has(row.realmId)) realms.set(row.realmId, await findRealmById(tx, row.realmId));
      if (!senders.has(row.senderId)) senders.set(row.senderId, await findUserById(tx, row.realmId, row.senderId));
      const realm = realms.get(row.realmId);
      const sender = senders.get(row.senderId);
      if (!realm || !sender) continue;
      const reminder = row.deliveryType === DeliveryType.REMIND;
      const fail = async (reason: string) => {
        const updated = await updateScheduledMessage(tx, row.id, { failed: true, failureMessage: reason });
        outcomes[index] = 'failed';
        if (reminder) return; // reminders have no update event, and nobody to tell but their owner
        await publishScheduled(deps, tx, afterCommit, realm.id, sender.id, { op: 'update', scheduled_message: formatScheduledMessage(updated) });
        // As Zulip does, the notification bot tells the sender (a deactivated sender is not told).
        await sendNotificationMessage(tx, afterCommit, deps, realm, sender, scheduledMessageFailedNotice(row.scheduledAt, reason));
      };
      if (!sender.isActive || realm.deactivated) {
        await fail('Account is deactivated');
        continue;
      }
      // As Zulip: a message more than 10 minutes overdue (the servers were down) is not sent late; a
      // reminder still is.
      if (!reminder && Date.now() - row.scheduledAt.getTime() > LATE_DELIVERY_CUTOFF_MS) {
        await fail('Message could not be sent at the scheduled time.');
        continue;
      }
      try {
        const author = reminder ? await notificationBot(tx, deps, realm) : sender;
        // A reminder goes to its owner, from the notification bot.
        const request = reminder ? internalDirectMessage(sender.id, row.content) : asSendRequest(row as ScheduledMessageFields, row.readBySender);
        const checked = await checkMessage(tx, realm, author, request, reminder ? { linksAs: sender } : {});
        due.push({ index, row, realm, author, checked, pushTargets: await pushTargetsForMessage(tx, deps, checked, author.id) });
      } catch (error) {
        if (error instanceof JsonableError) await fail(error.message);
        else throw error;
      }
    }
    // By organization first: each store takes its organization's event-order lock until commit, and two
    // batches taking those locks in different orders could deadlock.
    due.sort((a, b) => a.row.realmId - b.row.realmId || a.row.scheduledAt.getTime() - b.row.scheduledAt.getTime() || a.row.id - b.row.id);
    const delivered: Array<{ id: number; messageId: number }> = [];
    for (const { index, row, realm, author, checked, pushTargets } of due) {
      const message = await storeCheckedMessage(tx, afterCommit, deps, realm, author, checked, { client: 'Internal' }, pushTargets);
      delivered.push({ id: row.id, messageId: message.id });
      outcomes[index] = 'sent';
    }
    await markScheduledMessagesDelivered(tx, delivered);
    const removals = new Map<number, Array<{ userIds: number[]; payload: Record<string, unknown> }>>();
    for (const { row } of due) {
      const list = removals.get(row.realmId) ?? [];
      const payload =
        row.deliveryType === DeliveryType.REMIND
          ? { type: 'reminders', op: 'remove', reminder_id: row.id }
          : { type: 'scheduled_messages', op: 'remove', scheduled_message_id: row.id };
      list.push({ userIds: [row.senderId], payload });
      removals.set(row.realmId, list);
    }
    for (const [realmId, events] of removals) await deps.events.publish(tx, afterCommit, realmId, events);
    return outcomes;
  });
}

/** The notification bot's message to a sender whose scheduled message could not be sent. */
export function scheduledMessageFailedNotice(scheduledAt: Date, reason: string): string {
  const when = `${scheduledAt.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return `Your message scheduled for ${when} could not be sent:\n\n> ${reason}\n\n[View scheduled messages](#scheduled)`;
}

export type { ScheduledMessageRow };
