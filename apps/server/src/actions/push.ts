// Mobile push notifications: device registration (POST/DELETE /users/me/apns_device_token and
// /users/me/android_gcm_reg_id), the test notification, the pushes a message causes and the removals
// reading it causes, and their delivery by the `send-push` job.
//
// Every push is a row of the push outbox, written in the transaction of the change that causes it,
// with a job enqueued in that same transaction: it exists exactly when the change committed, and is
// sent after commit, never inside a request. Without APNs configuration the job only records it.
import { randomUUID } from 'node:crypto';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import {
  addPushDevice,
  pushDeviceExists,
  pushDevicesOfUser,
  pushTargets,
  removePushDevice,
  removeTokenEverywhere,
  type PushDeviceRow,
  type PushKind,
} from '../data/push-devices.repo.ts';
import {
  clearActivePushNotifications,
  insertPushes,
  isRead,
  lockPush,
  messageFlagsForPush,
  recordPushAttempt,
  setActivePushNotification,
  type NewPush,
  type PushStatus,
} from '../data/push-outbox.repo.ts';
import { JsonableError } from '../errors.ts';
import { requireHuman } from '../access/roles.ts';
import { avatarUrlOfPerson, messageEmailOf, type MessageRow } from '../lib/message-format.ts';
import type { ApnsSender } from '../push/apns.ts';
import {
  basePayload,
  MAX_REMOVED_MESSAGE_IDS,
  messagePayloadApns,
  messagePayloadFcm,
  removePayloadApns,
  removePayloadFcm,
  testPayloadApns,
  testPayloadFcm,
  type BasePayload,
  type MessageToPush,
  type PushedMessage,
} from '../push/payloads.ts';
import { pushTrigger } from '../push/triggers.ts';
import { EVENT_QUEUE_OFFLINE_TIMEOUT_SECS, OFFLINE_THRESHOLD_SECS } from '../lib/presence.ts';

/** Tokens longer than this are refused (Zulip's limit). */
export const MAX_TOKEN_LENGTH = 4096;
/** A push still failing after this many attempts is given up (status `failed`). */
export const MAX_PUSH_ATTEMPTS = 8;

type PushDeps = Pick<AppDeps, 'jobs' | 'config'>;

// ---------------------------------------------------------------------------------------------------
// Devices

/** Python's bytes.fromhex: pairs of hex digits, ASCII whitespace allowed between pairs. */
function isHex(token: string): boolean {
  for (let i = 0; i < token.length; ) {
    if (/[ \t\n\r\f\v]/.test(token[i]!)) {
      i++;
      continue;
    }
    if (!/^[0-9a-fA-F]{2}$/.test(token.slice(i, i + 2))) return false;
    i += 2;
  }
  return true;
}

/** Zulip's validate_token: every kind has a length limit; APNs tokens must be hexadecimal. */
function validateToken(token: string, kind: PushKind): void {
  if (token === '' || token.length > MAX_TOKEN_LENGTH) throw new JsonableError('Empty or invalid length token');
  if (kind === 'apns' && !isHex(token)) throw new JsonableError('Invalid APNS token');
}

/** Registers one of the user's devices; registering a known token again changes nothing. */
export async function doAddPushDevice(deps: Pick<AppDeps, 'db' | 'logger'>, user: User, kind: PushKind, token: string, appId: string | null): Promise<void> {
  requireHuman(user);
  validateToken(token, kind);
  await addPushDevice(deps.db, user.id, kind, token, appId);
  deps.logger.info({ user_id: user.id, kind, app_id: appId }, 'push device registered');
}

/** Unregisters one of the user's own devices (`Token does not exist` for any other token). */
export async function doRemovePushDevice(deps: Pick<AppDeps, 'db'>, user: User, kind: PushKind, token: string): Promise<void> {
  requireHuman(user);
  validateToken(token, kind);
  if (!(await removePushDevice(deps.db, user.id, kind, token))) throw new JsonableError('Token does not exist');
}

// ---------------------------------------------------------------------------------------------------
// Queuing pushes (inside the transaction of the change)

/** The device part of a push row: a copy of the token and app id, and a fresh apns-id. */
function pushFor(device: Pick<PushDeviceRow, 'id' | 'userId' | 'kind' | 'token' | 'appId'>, realmId: number) {
  return { realmId, userId: device.userId, deviceId: device.id, kind: device.kind, token: device.token, appId: device.appId, apnsId: randomUUID() };
}

/** Stores the pushes and enqueues one `send-push` job each, in the transaction `tx`. */
async function queuePushes(tx: Db, deps: PushDeps, pushes: NewPush[]): Promise<void> {
  const ids = await insertPushes(tx, pushes);
  for (const pushId of ids) await deps.jobs.send(tx, 'send-push', { pushId }, {});
}

const baseFor = (deps: PushDeps, realm: Realm, userId: number): BasePayload => basePayload(deps.config.publicUrl, realm, userId);

/**
 * POST /mobile_push/test_notification: a `test` push to the device with this token, or to every device
 * of the user when no token is given. The token must be one of the user's (`Device not recognized`).
 */
export async function doSendTestNotification(deps: AppDeps, realm: Realm, user: User, token: string | undefined): Promise<void> {
  requireHuman(user);
  await inTransaction(deps.db, async (tx) => {
    const devices = await pushDevicesOfUser(tx, user.id, token);
    if (token !== undefined && devices.length === 0) throw new JsonableError('Device not recognized', { code: 'INVALID_PUSH_DEVICE_TOKEN' });
    const base = baseFor(deps, realm, user.id);
    const now = new Date();
    await queuePushes(
      tx,
      deps,
      devices.map((d) => ({ ...pushFor(d, realm.id), event: 'test', messageId: null, payload: d.kind === 'apns' ? testPayloadApns(base) : testPayloadFcm(base, now) })),
    );
  });
}

export type MessagePushTargets = Awaited<ReturnType<typeof pushTargets>>;

/**
 * The devices a message may be pushed to (recipients other than the sender with a registered device,
 * and what decides whether they are notified). Looked up before the message is stored, so that the
 * lookup is not made while the organization's event-order lock is held.
 */
export async function pushTargetsForMessage(db: Db, deps: PushDeps, checked: Pick<MessageToPush, 'channel' | 'topic' | 'recipientIds'>, senderId: number): Promise<MessagePushTargets> {
  const others = checked.recipientIds.filter((id) => id !== senderId);
  if (others.length === 0) return [];
  return pushTargets(db, {
    channel: checked.channel ? { id: checked.channel.id, topic: checked.topic } : null,
    userIds: others,
    senderId,
    // Zulip's idle rule (receiver_is_off_zulip, filter_presence_idle_user_ids): idle without a client
    // polling for messages lately, or (unless presence is turned off) without an `active` presence
    // report in the last OFFLINE_THRESHOLD_SECS.
    queueOfflineSeconds: EVENT_QUEUE_OFFLINE_TIMEOUT_SECS,
    activeSince: deps.config.presenceDisabled ? null : new Date(Date.now() - OFFLINE_THRESHOLD_SECS * 1000),
  });
}

/**
 * After a message is stored (in its transaction): a push to each device of each recipient Zulip's rules
 * notify (push/triggers.ts), in Zulip's payload shape. A recipient counts as active (not idle) while a
 * client of theirs polls for messages and their presence says active (pushTargetsForMessage).
 */
export async function queuePushesForMessage(tx: Db, deps: PushDeps, realm: Realm, checked: MessageToPush, row: MessageRow, targets: MessagePushTargets): Promise<void> {
  const flagsOf = new Map(checked.recipientIds.map((id, i) => [id, checked.flags[i] ?? 0]));
  if (targets.length === 0) return;
  const sender = checked.people.get(row.sender_id);
  const message: PushedMessage = {
    id: row.id,
    dateSent: row.date_sent,
    renderedContent: row.rendered_content,
    sender: {
      id: row.sender_id,
      email: sender ? messageEmailOf(realm, sender) : '',
      fullName: sender?.full_name ?? '',
      avatarUrl: sender ? avatarUrlOfPerson(realm, sender) : '',
    },
    channel: checked.channel ? { id: checked.channel.id, name: checked.channel.name, topic: row.topic } : null,
    participants: checked.directUserIds.map((id) => ({ id, fullName: checked.people.get(id)?.full_name ?? '' })),
  };
  const pushes: NewPush[] = [];
  for (const t of targets) {
    const flags = flagsOf.get(t.user_id);
    if (flags === undefined) continue;
    const trigger = pushTrigger({
      flags,
      isSender: false,
      direct: checked.channel === null,
      active: t.active,
      settings: {
        offlinePush: t.offline_push,
        onlinePush: t.online_push,
        streamPush: t.stream_push,
        wildcardMentionsNotify: t.wildcard_mentions_notify,
        followedTopicPush: t.followed_topic_push,
        followedTopicWildcardMentionsNotify: t.followed_topic_wildcard_mentions_notify,
      },
      topicPolicy: t.topic_policy,
      subscription:
        checked.channel && t.sub_is_muted !== null
          ? { isMuted: t.sub_is_muted, pushNotifications: t.sub_push_notifications, wildcardMentionsNotify: t.sub_wildcard_mentions_notify }
          : null,
    });
    if (!trigger) continue;
    const base = baseFor(deps, realm, t.user_id);
    pushes.push({
      ...pushFor({ id: t.device_id, userId: t.user_id, kind: t.kind, token: t.token, appId: t.app_id }, realm.id),
      event: 'message',
      messageId: row.id,
      payload: t.kind === 'apns' ? messagePayloadApns(base, message, trigger) : messagePayloadFcm(base, message),
    });
  }
  await queuePushes(tx, deps, pushes);
}

/**
 * After messages were marked read (in that transaction): those that had a push on the user's devices
 * get a `remove` push, so that the notification goes away (the newest 200 ids per push, as Zulip).
 */
export async function queuePushRemovals(tx: Db, deps: PushDeps, realm: Realm, user: Pick<User, 'id'>, readMessageIds: number[]): Promise<void> {
  if (readMessageIds.length === 0) return;
  // Most readers have no mobile device: one probe of the (small) device table, and nothing else.
  const devices = await pushDevicesOfUser(tx, user.id);
  if (devices.length === 0) return;
  const pushed = await clearActivePushNotifications(tx, user.id, readMessageIds);
  if (pushed.length === 0) return;
  const ids = pushed.slice(-MAX_REMOVED_MESSAGE_IDS);
  const base = baseFor(deps, realm, user.id);
  await queuePushes(
    tx,
    deps,
    devices.map((d) => ({ ...pushFor(d, realm.id), event: 'remove', messageId: null, payload: d.kind === 'apns' ? removePayloadApns(base, ids) : removePayloadFcm(base, ids) })),
  );
}

// ---------------------------------------------------------------------------------------------------
// Delivery (the send-push job)

/** Thrown by deliverPush when the push should be tried again later: the job queue retries with backoff. */
export class PushRetryError extends Error {}

/**
 * Sends one push of the outbox, at most once: the row is locked while sending and only a pending row
 * is sent. A message push is skipped once the message was read, and dropped when its device was
 * removed. Without a sender for its kind (APNs not configured, or an Android device) it is recorded.
 * APNs answers: accepted → sent; the token is dead (410 Unregistered, BadDeviceToken,
 * DeviceTokenNotForTopic) → rejected and the token removed from every user, as Zulip does; another 4xx
 * → rejected; a timeout, connection failure, 429 or 5xx → retried (PushRetryError) until
 * MAX_PUSH_ATTEMPTS, then failed. Nothing of this reaches a client.
 */
export async function deliverPush(deps: AppDeps, pushId: number, apns: ApnsSender | null): Promise<PushStatus | 'gone'> {
  // A short transaction first: marking the message as pushed must not hold its row while sending.
  const ready = await inTransaction(deps.db, async (tx) => {
    const push = await lockPush(tx, pushId);
    if (!push) return 'gone' as const;
    if (push.status !== 'pending') return push.status as PushStatus;
    if (push.deviceId === null || !(await pushDeviceExists(tx, push.deviceId))) {
      await recordPushAttempt(tx, push.id, { status: 'dropped', attempted: false });
      return 'dropped' as const;
    }
    if (push.event === 'message' && push.messageId !== null) {
      const flags = await messageFlagsForPush(tx, push.userId, push.messageId);
      if (flags === null || isRead(flags)) {
        await recordPushAttempt(tx, push.id, { status: 'skipped', attempted: false });
        return 'skipped' as const;
      }
      await setActivePushNotification(tx, push.userId, push.messageId);
    }
    return null;
  });
  if (ready !== null) return ready;

  let retry: string | null = null;
  const status = await inTransaction(deps.db, async (tx) => {
    const push = await lockPush(tx, pushId);
    if (!push) return 'gone' as const;
    if (push.status !== 'pending') return push.status as PushStatus;
    if (push.kind !== 'apns' || !apns || !deps.config.apns) {
      await recordPushAttempt(tx, push.id, { status: 'recorded', attempted: false });
      return 'recorded' as const;
    }
    const outcome = await apns.send({
      token: push.token.replace(/\s+/g, ''),
      topic: push.appId ?? deps.config.apns.topic,
      payload: push.payload as Record<string, unknown>,
      apnsId: push.apnsId,
    });
    const log = { push_id: push.id, user_id: push.userId, event: push.event, attempt: push.attempts + 1 };
    if (outcome.result === 'sent') {
      await recordPushAttempt(tx, push.id, { status: 'sent', attempted: true, error: null });
      deps.logger.info(log, 'APNs: push sent');
      return 'sent' as const;
    }
    if (outcome.result === 'rejected') {
      if (outcome.tokenInvalid) {
        const removed = await removeTokenEverywhere(tx, 'apns', push.token);
        deps.logger.info({ ...log, reason: outcome.reason, removed }, 'APNs: removing invalid or expired token');
      } else {
        deps.logger.warn({ ...log, status: outcome.status, reason: outcome.reason }, 'APNs: push refused');
      }
      await recordPushAttempt(tx, push.id, { status: 'rejected', attempted: true, error: `${outcome.status} ${outcome.reason}` });
      return 'rejected' as const;
    }
    const error = outcome.status === null ? outcome.reason : `${outcome.status} ${outcome.reason}`;
    const giveUp = push.attempts + 1 >= MAX_PUSH_ATTEMPTS;
    await recordPushAttempt(tx, push.id, { status: giveUp ? 'failed' : 'pending', attempted: true, error });
    deps.logger.warn({ ...log, error }, giveUp ? 'APNs: push failed; giving up' : 'APNs: push failed; will retry');
    if (!giveUp) retry = error;
    return giveUp ? ('failed' as const) : ('pending' as const);
  });
  if (retry !== null) throw new PushRetryError(`push ${pushId}: ${retry}`);
  return status;
}
