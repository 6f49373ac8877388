// POST /messages: address, permissions, rendering, per-recipient flags, then one statement storing the
// message, its user_message rows and its `message` event (published after commit): alone when nothing
// else is written, in a transaction with the writes that follow otherwise (planStore).
import type { AppDeps } from '../deps.ts';
import { inOneStatement, inTransaction } from '../data/transactions.ts';
import { claimAttachmentLinks } from './attachments.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { findUserById } from '../data/users.repo.ts';
import {
  activeMembersOfGroups,
  channelRecipientIds,
  channelSendingContext,
  type ChannelSendingContext,
  directRecipientsByEmails,
  directRecipientsByIds,
  mentionTargets,
  messagePeople,
  messageEventPayloadSql,
  storeMessage,
  topicParticipantIds,
  type NewMessage,
} from '../data/messages.repo.ts';
import { JsonableError } from '../errors.ts';
import { loadPermissionSubject, permissionSubjectOf, type PermissionSubject } from '../access/group-settings.ts';
import { channelsLinkableBy } from '../access/channels.ts';
import { checkCanMentionGroup, checkCanUseChannelWildcard, checkCanUseTopicWildcard } from '../access/mentions.ts';
import { checkCanSendToChannel, checkDirectMessagePermission } from '../access/messages.ts';
import { defaultNarrowUrl, extractReferences, renderMessage } from '../lib/markdown.ts';
import { MESSAGE_FLAG_BITS } from '../lib/message-flags.ts';
import { formatMessage, gravatarLeftToClient, type MessagePerson, type MessageRow } from '../lib/message-format.ts';
import { EMPTY_TOPIC_DISPLAY_NAME, MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH, topicFromClient } from '../lib/message-limits.ts';
import type { MessageDeliveryFields } from '../events/present.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import { pushTargetsForMessage, queuePushesForMessage, type MessagePushTargets } from './push.ts';
import { applyAutomaticTopicPolicies, automaticPolicyForSender, senderTopicStateBeforeSending } from './user-topics.ts';
import { addPersonalFlags } from './personal-flags.ts';
import { linkifierRendering, realmLinkifiers } from '../queries/linkifiers.ts';
import type { CompiledLinkifiers } from '../lib/linkifiers.ts';
import { uploadPathIdsOf } from '../lib/upload-links.ts';
import type { SenderTopicState } from '../data/user-topics.repo.ts';
import { realmEmojiIndex } from '../queries/realm-emoji.ts';
import { addImagePreviews } from './thumbnails.ts';
import { outgoingWebhookCandidates, queueOutgoingWebhooks, withMentionedGenericBots } from './outgoing-webhooks.ts';

/** Clients whose messages start read for their sender (Zulip's default_read_by_sender). */
export const READ_BY_SENDER_CLIENTS = new Set(['zulipandroid', 'zulipios', 'zulipdesktop', 'zulipmobile', 'zulipelectron', 'zulipterminal', 'snipe', 'website', 'ios', 'android']);

export interface SendMessageRequest {
  type: 'stream' | 'private';
  /** As sent: a channel name or id (JSON or plain), or a list of user ids or addresses. */
  to: string | undefined;
  topic: string | undefined;
  content: string;
  queueId: string | undefined;
  localId: string | undefined;
  readBySender: boolean | undefined;
  /** The sending client's name (from the User-Agent). */
  client: string;
}

/** A direct message the server itself sends (client `Internal`) to one user. */
export function internalDirectMessage(recipientId: number, content: string, readBySender?: boolean): SendMessageRequest {
  return { type: 'private', to: JSON.stringify([recipientId]), topic: undefined, content, queueId: undefined, localId: undefined, readBySender, client: 'Internal' };
}

// ---------------------------------------------------------------------------------------------
// Parsing what was sent

type ChannelAddress = { kind: 'name'; name: string } | { kind: 'id'; id: number };

function parseChannelAddress(to: string | undefined): ChannelAddress {
  if (to === undefined) throw new JsonableError('Missing channel');
  let value: unknown;
  try {
    value = JSON.parse(to);
  } catch {
    return { kind: 'name', name: to };
  }
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new JsonableError('Expected exactly one channel');
    value = value[0];
  }
  if (typeof value === 'string') return { kind: 'name', name: value };
  if (typeof value === 'number' && Number.isInteger(value)) return { kind: 'id', id: value };
  throw new JsonableError('Invalid data type for channel');
}

type DirectAddress = { kind: 'emails'; emails: string[] } | { kind: 'ids'; ids: number[] };

function parseDirectAddress(to: string | undefined): DirectAddress {
  if (to === undefined) throw new JsonableError('Message must have recipients');
  let value: unknown;
  try {
    value = JSON.parse(to);
  } catch {
    value = to;
  }
  if (typeof value === 'string') value = value.split(',');
  if (!Array.isArray(value)) throw new JsonableError('Invalid data type for recipients');
  if (value.length === 0) return { kind: 'ids', ids: [] };
  if (typeof value[0] === 'string') {
    if (!value.every((v) => typeof v === 'string')) throw new JsonableError('Recipient lists may contain emails or user IDs, but not both.');
    return { kind: 'emails', emails: [...new Set((value as string[]).map((e) => e.trim()).filter((e) => e !== ''))] };
  }
  if (typeof value[0] === 'number') {
    if (!value.every((v) => typeof v === 'number' && Number.isInteger(v))) throw new JsonableError('Recipient lists may contain emails or user IDs, but not both.');
    return { kind: 'ids', ids: [...new Set(value as number[])] };
  }
  throw new JsonableError('Invalid data type for recipients');
}

/** Unicode categories Cc and Cs, and noncharacters, are refused in topics (Zulip's printable check). */
function firstUnprintable(text: string): number | null {
  let position = 0;
  for (const ch of text) {
    position++;
    const cp = ch.codePointAt(0)!;
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return position;
    if (cp >= 0xd800 && cp <= 0xdfff) return position;
    if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe) return position;
  }
  return null;
}

/** Strip, map the display names of the empty topic to "", refuse unprintable characters. */
export function normalizeTopic(topic: string): string {
  const t = topicFromClient(topic.trim());
  const bad = firstUnprintable(t);
  if (bad !== null) throw new JsonableError(`Invalid character in topic, at position ${bad}!`);
  return t;
}

/** Zulip truncates rather than refuses: over-long topics end in "...". */
export const truncateTopic = (topic: string) => ([...topic].length > MAX_TOPIC_LENGTH ? [...topic].slice(0, MAX_TOPIC_LENGTH - 3).join('') + '...' : topic);

/** Trailing blanks and leading newlines go; empty or NUL content is refused; over-long content is cut. */
export function normalizeContent(content: string): string {
  const body = content.replace(/\s+$/u, '').replace(/^\n+/, '');
  if (body === '') throw new JsonableError('Message must not be empty');
  if (body.includes('\u0000')) throw new JsonableError('Message must not contain null bytes');
  const suffix = '\n[message truncated]';
  return body.length > MAX_MESSAGE_LENGTH ? body.slice(0, MAX_MESSAGE_LENGTH - suffix.length) + suffix : body;
}

// ---------------------------------------------------------------------------------------------
// Sending

interface Addressed {
  channel: Channel | null;
  topic: string;
  /** Users who get a user_message row (ascending). */
  recipientIds: number[];
  /** Direct messages: every participant, sender included (ascending). */
  directUserIds: number[];
}

/** A message that passed every check of sending, ready to be stored (CheckedMessage → storeCheckedMessage). */
export interface CheckedMessage {
  channel: Channel | null;
  topic: string;
  /** Users who get a user_message row (ascending), and their flag bits (aligned). */
  recipientIds: number[];
  flags: number[];
  /** Direct messages: every participant, sender included (ascending). */
  directUserIds: number[];
  /** Recipients the message mentions by name (not silently): they may follow the topic (user-topics). */
  personalMentionIds: number[];
  /** Everyone the message mentions by name (not silently), recipients or not: the bots it triggers (outgoing-webhooks). */
  mentionedUserIds?: number[];
  content: string;
  renderedContent: string;
  people: Map<number, MessagePerson>;
}

/** What reading needs: the database handle (the pool, or a transaction that also locks rows). */
interface Reads {
  db: Db;
}

/**
 * Every check of sending (address, content, permissions, mentions), rendering and the recipients'
 * flags, read through `db`: the pool when sending now, the delivery transaction for scheduled messages.
 */
export async function checkMessage(
  db: Db,
  realm: Realm,
  sender: User,
  request: SendMessageRequest,
  /** Whose access decides the channel links of the content (a reminder: its owner, not the bot that sends it). */
  options: { linksAs?: User; /** Mail of the e-mail gateway (rendered as Zulip renders it). */ emailGateway?: boolean } = {},
): Promise<CheckedMessage> {
  const reads: Reads = { db };
  let subject: PermissionSubject;
  let addressed: Addressed;
  let content: string;
  if (request.type === 'stream') {
    const address = parseChannelAddress(request.to);
    if (request.topic === undefined) throw new JsonableError('Missing topic');
    let topic = normalizeTopic(request.topic);
    content = normalizeContent(request.content);
    topic = truncateTopic(topic);
    const sending = await channelForSending(reads, realm, sender, address);
    subject = sending.subject;
    checkTopicsPolicy(realm, sending.channel, topic);
    addressed = { channel: sending.channel, topic, recipientIds: sending.recipientIds, directUserIds: [] };
  } else {
    subject = await loadPermissionSubject(db, sender);
    const participants = await directParticipants(reads, realm, sender, parseDirectAddress(request.to));
    content = normalizeContent(request.content);
    await checkDirectMessagePermission(db, realm, subject, participants);
    addressed = { channel: null, topic: '', recipientIds: participants.map((p) => p.id), directUserIds: participants.map((p) => p.id) };
  }
  const rendered = await render(reads, realm, options.linksAs ? await loadPermissionSubject(db, options.linksAs) : subject, content, { emailGateway: options.emailGateway ?? false });
  // Zulip: generic bots mentioned in a channel receive the message, subscribed or not (actions/outgoing-webhooks.ts).
  if (addressed.channel && rendered.mentionedUserIds.length) addressed.recipientIds = await withMentionedGenericBots(db, realm, addressed.channel, addressed.recipientIds, rendered.mentionedUserIds);
  const flags = await recipientFlags(reads, realm, sender, subject, addressed, rendered, request);
  // Muted senders and alert words (actions/personal-flags.ts), and the people the message shows: read at once.
  const [, people] = await Promise.all([addPersonalFlags(db, sender.id, addressed.recipientIds, content, flags), messagePeople(db, realm.id, [sender.id, ...addressed.directUserIds])]);
  return {
    channel: addressed.channel,
    topic: addressed.topic,
    recipientIds: addressed.recipientIds,
    flags,
    directUserIds: addressed.directUserIds,
    personalMentionIds: rendered.mentionedUserIds.filter((id) => addressed.recipientIds.includes(id)),
    mentionedUserIds: rendered.mentionedUserIds,
    content,
    renderedContent: rendered.html,
    people: new Map(people.map((p) => [p.id, p])),
  };
}

/** Where a message comes from: its client, and the sender's queue and local id for the local echo. */
type MessageOrigin = { client: string; queueId?: string | undefined; localId?: string | undefined };
/** A stored message, and the sender's new policy for its topic (POST /messages' automatic_new_visibility_policy). */
type StoredMessage = MessageRow & { automaticNewVisibilityPolicy: number | null };

/**
 * What storing a checked message reads first (before the statement that stores it takes the
 * organization's event-order lock, held until commit), and whether anything is written with that
 * statement: `followUps` is false when the message's own statement is all there is to write (no file it
 * links to, no push, no outgoing-webhook bot it may trigger, no topic policy for its sender or those it
 * mentions). Each follow-up of storeWithPlan is listed here: the topic policies are written before the
 * statement, the others (which need the message's id) after it.
 */
interface StorePlan {
  pushTargets: MessagePushTargets;
  senderState: SenderTopicState | null;
  linkifiers: CompiledLinkifiers;
  followUps: boolean;
}

async function planStore(db: Db, deps: Pick<AppDeps, 'jobs' | 'config'>, realm: Realm, sender: User, checked: CheckedMessage, preparedPushTargets?: MessagePushTargets): Promise<StorePlan> {
  // Independent reads, sent at once (each on a connection of its own outside a transaction): one wait
  // for the answers rather than one per read.
  const [pushTargets, senderState, linkifiers] = await Promise.all([
    preparedPushTargets ?? pushTargetsForMessage(db, deps, checked, sender.id),
    checked.channel ? senderTopicStateBeforeSending(db, { sender, channel: checked.channel, topic: checked.topic }) : null,
    realmLinkifiers(db, realm),
  ]);
  const followUps =
    uploadPathIdsOf(checked.renderedContent, realm.url).length > 0 || // claimAttachmentLinks
    pushTargets.length > 0 || // queuePushesForMessage
    outgoingWebhookCandidates(sender, checked).length > 0 || // queueOutgoingWebhooks
    (checked.channel !== null && ((senderState !== null && automaticPolicyForSender(senderState) !== null) || checked.personalMentionIds.length > 0)); // applyAutomaticTopicPolicies
  return { pushTargets, senderState, linkifiers, followUps };
}

/**
 * Stores a checked message inside `tx` with its rows and its `message` event, in one statement
 * (storeMessage, through events.publishAlong: announced after commit like every event).
 */
export async function storeCheckedMessage(
  tx: Db,
  afterCommit: AfterCommit,
  deps: Pick<AppDeps, 'events' | 'jobs' | 'config'>,
  realm: Realm,
  sender: User,
  checked: CheckedMessage,
  origin: MessageOrigin,
  /** Looked up beforehand (pushTargetsForMessage) by callers that store several messages at once. */
  preparedPushTargets?: MessagePushTargets,
): Promise<StoredMessage> {
  const plan = await planStore(tx, deps, realm, sender, checked, preparedPushTargets);
  return storeWithPlan(tx, afterCommit, deps, realm, sender, checked, origin, plan);
}

async function storeWithPlan(
  tx: Db,
  afterCommit: AfterCommit,
  deps: Pick<AppDeps, 'events' | 'jobs' | 'config'>,
  realm: Realm,
  sender: User,
  checked: CheckedMessage,
  origin: MessageOrigin,
  plan: StorePlan,
): Promise<StoredMessage> {
  const { pushTargets, senderState } = plan;
  const message: NewMessage = {
    realmId: realm.id,
    senderId: sender.id,
    channelId: checked.channel?.id ?? null,
    topic: checked.topic,
    directUserIds: checked.directUserIds,
    content: checked.content,
    renderedContent: checked.renderedContent,
    sendingClient: origin.client,
  };
  // The message is formatted before it has an id; the statement storing it fills in its id and time.
  const formatted = formatMessage(
    { ...message, id: 0, sender_id: sender.id, channel_id: message.channelId, direct_user_ids: message.directUserIds, rendered_content: message.renderedContent, date_sent: new Date(0), last_edit_time: null, sending_client: message.sendingClient },
    {
      realm,
      people: checked.people,
      channelNames: new Map(checked.channel ? [[checked.channel.id, checked.channel.name]] : []),
      applyMarkdown: true,
      clientGravatar: false,
      allowEmptyTopicName: true,
      linkifiers: plan.linkifiers,
    },
    null,
  );
  const delivery: MessageDeliveryFields = { _markdown: checked.content };
  if (origin.queueId !== undefined) delivery._sender_queue_id = origin.queueId;
  if (origin.localId !== undefined) delivery._local_id = origin.localId;
  const shownSender = checked.people.get(sender.id);
  if (shownSender && gravatarLeftToClient(shownSender)) delivery._gravatar = true;
  // Every recipient with their flags; a public channel's message also reaches all_public_streams queues
  // (even with no recipient). Published along the statement that stores the message (one round trip).
  const payload = { type: 'message', message: formatted, ...delivery };
  const event = { userIds: checked.recipientIds, flags: checked.flags, allPublicStreams: checked.channel !== null && !checked.channel.inviteOnly, payload, payloadSql: messageEventPayloadSql(payload) };
  const recipients = { userIds: checked.recipientIds, flags: checked.flags, deferred: deferredRecipients(checked, sender.id, pushTargets) };
  // The follow-ups (each one's condition is in planStore's followUps). First the topic policies its
  // sending gives (they apply to later messages, as in Zulip: this one's flags and pushes are decided):
  // their rows are written before the statement storing the message takes the organization's
  // event-order lock, and their events are stored by that statement, after the message's, so that the
  // lock is held across no round trip for them. (A transaction storing several messages takes later
  // policies' row locks while holding the lock: a rare deadlock with a send locking the same row,
  // which PostgreSQL detects and inTransaction retries.)
  const policyEvents: QueuedEvent[] = [];
  const automaticNewVisibilityPolicy =
    plan.followUps && checked.channel
      ? await applyAutomaticTopicPolicies(
          { tx, afterCommit, deps, realm },
          { sender, senderState, channel: checked.channel, topic: checked.topic, mentionedRecipientIds: checked.personalMentionIds },
          policyEvents,
        )
      : null;
  const row = await deps.events.publishAlong(afterCommit, realm.id, [event, ...policyEvents], (insert) => storeMessage(tx, message, recipients, insert));
  if (!plan.followUps) return { ...row, automaticNewVisibilityPolicy };
  // Then what needs the message's id. The uploaded files its content links to (actions/attachments.ts;
  // nothing to do without such a link).
  await claimAttachmentLinks({ tx, afterCommit, deps, realm }, sender, { id: row.id, renderedContent: checked.renderedContent });
  await queuePushesForMessage(tx, deps, realm, checked, row, pushTargets);
  // The outgoing-webhook bots it triggers (actions/outgoing-webhooks.ts; nothing is read for a bot's message).
  await queueOutgoingWebhooks(tx, deps, realm, sender, checked, row.id);
  return { ...row, automaticNewVisibilityPolicy };
}

/**
 * The recipients of a channel message whose user_message row can wait until they read (see
 * data/deferred-rows.repo.ts): flags 0, not the sender, and no device a push of the message may go to
 * (a push marks the row). Direct messages write every row at once (they have few recipients).
 */
function deferredRecipients(checked: CheckedMessage, senderId: number, pushTargets: MessagePushTargets): Set<number> {
  const deferred = new Set<number>();
  if (checked.channel === null) return deferred;
  const pushable = new Set(pushTargets.map((t) => t.user_id));
  checked.recipientIds.forEach((id, i) => {
    if (checked.flags[i] === 0 && id !== senderId && !pushable.has(id)) deferred.add(id);
  });
  return deferred;
}

export async function doSendMessage(
  deps: AppDeps,
  realm: Realm,
  sender: User,
  request: SendMessageRequest,
): Promise<{ id: number; automaticNewVisibilityPolicy: number | null }> {
  const checked = await checkMessage(deps.db, realm, sender, request);
  const origin = { client: request.client, queueId: request.queueId, localId: request.localId };
  // Read before any transaction (each statement reads the latest commits, as in a read-committed one).
  const plan = await planStore(deps.db, deps, realm, sender, checked);
  // Only the message's own statement to write: on its own, so that the event-order lock it takes is held
  // for that statement and its commit, not across a round trip back to this process before COMMIT.
  const row = plan.followUps
    ? await inTransaction(deps.db, (tx, afterCommit) => storeWithPlan(tx, afterCommit, deps, realm, sender, checked, origin, plan))
    : await inOneStatement((afterCommit) => storeWithPlan(deps.db, afterCommit, deps, realm, sender, checked, origin, plan));
  return { id: row.id, automaticNewVisibilityPolicy: row.automaticNewVisibilityPolicy };
}

/**
 * The channel a message goes to, once the sender may send there, with the sender's permission subject
 * and the channel's recipients (read together: data/messages.repo.ts channelSendingContext).
 */
async function channelForSending(deps: Reads, realm: Realm, sender: User, address: ChannelAddress): Promise<{ channel: Channel; subject: PermissionSubject; recipientIds: number[] }> {
  let context: ChannelSendingContext | null;
  if (address.kind === 'name') {
    const name = address.name.trim();
    if (name === '') throw new JsonableError("Channel name can't be empty.");
    context = await channelSendingContext(deps.db, realm.id, { name }, sender.id);
    if (!context) throw new JsonableError(`Channel '${name}' does not exist`, { code: 'STREAM_DOES_NOT_EXIST', data: { stream: name } });
  } else {
    context = await channelSendingContext(deps.db, realm.id, { id: address.id }, sender.id);
    if (!context) throw new JsonableError(`Channel with ID '${address.id}' does not exist`, { code: 'STREAM_DOES_NOT_EXIST', data: { stream_id: address.id } });
  }
  const { channel, subscribed } = context;
  const subject = permissionSubjectOf(sender, context.senderGroupIds);
  let ownerSubject: PermissionSubject | null = null;
  let ownerSubscribed = false;
  if (sender.isBot && sender.botOwnerId !== null) {
    const owner = await findUserById(deps.db, realm.id, sender.botOwnerId);
    if (owner) {
      ownerSubject = await loadPermissionSubject(deps.db, owner);
      ownerSubscribed = (await subscribedChannelIds(deps.db, owner.id, [channel.id])).has(channel.id);
    }
  }
  checkCanSendToChannel(subject, channel, { subscribed, ownerSubject, ownerSubscribed });
  return { channel, subject, recipientIds: context.recipientIds };
}

/** The channel's topics policy (or the organization's, when the channel inherits it). */
export function checkTopicsPolicy(realm: Realm, channel: Channel, topic: string): void {
  const policy = channel.topicsPolicy === 'inherit' ? realm.topicsPolicy : channel.topicsPolicy;
  if (policy === 'disable_empty_topic' && topic === '') {
    throw new JsonableError(`Sending messages to the ${EMPTY_TOPIC_DISPLAY_NAME} is not allowed in this channel.`, {
      data: { empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME },
    });
  }
  if (policy === 'empty_topic_only' && topic !== '') throw new JsonableError(`Only the ${EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.`);
}

/** Resolves the recipients (errors in Zulip's order), adding the sender: every participant, ascending. */
async function directParticipants(deps: Reads, realm: Realm, sender: User, address: DirectAddress): Promise<{ id: number; is_bot: boolean }[]> {
  let found: { id: number; email: string; is_active: boolean; is_bot: boolean }[];
  if (address.kind === 'emails') {
    if (address.emails.length === 0) throw new JsonableError('Message must have recipients');
    // An address names a user by the form everyone sees, or by their real one if the sender may see it.
    const { rows, matches } = await directRecipientsByEmails(deps.db, realm, address.emails, sender);
    found = [];
    for (const email of address.emails) {
      const user = rows.find((r) => matches(r, email));
      if (!user) throw new JsonableError(`Invalid email '${email}'`);
      found.push(user);
    }
  } else {
    if (address.ids.length === 0) throw new JsonableError('Message must have recipients');
    const rows = await directRecipientsByIds(deps.db, realm.id, address.ids);
    found = [];
    for (const id of address.ids) {
      const user = rows.find((r) => r.id === id);
      if (!user) throw new JsonableError(`Invalid user ID ${id}`);
      found.push(user);
    }
  }
  // `email` is the address everyone sees (Zulip names user_profile.email here).
  for (const user of found) if (!user.is_active) throw new JsonableError(`'${user.email}' is no longer using Zulip.`);
  const participants = new Map(found.map((u) => [u.id, { id: u.id, is_bot: u.is_bot }]));
  participants.set(sender.id, { id: sender.id, is_bot: sender.isBot });
  return [...participants.values()].sort((a, b) => a.id - b.id);
}

/**
 * Renders the content; channel links only to channels the sender may read (access/channels.ts
 * channelsLinkableBy). Also POST /messages/render's (actions/render-message.ts).
 */
export async function render(deps: Reads, realm: Realm, subject: PermissionSubject, content: string, options: { emailGateway?: boolean } = {}) {
  const refs = extractReferences(content);
  const targets = refs.userNames.length + refs.userIds.length + refs.groupNames.length + refs.channelNames.length > 0
    ? await mentionTargets(deps.db, realm.id, subject.user.id, refs)
    : { users: [], groups: [], channels: [] };
  const rendered = renderMessage(content, {
    users: targets.users,
    groups: targets.groups,
    channels: channelsLinkableBy(subject, targets.channels).map((c) => ({ id: c.id, name: c.name })),
    narrowUrl: (channel, topic) => defaultNarrowUrl(channel, topic),
    linkifiers: await linkifierRendering(deps.db, realm),
    emailGateway: options.emailGateway ?? false,
    // Custom emoji (:name:) only when the content may name one.
    ...(content.includes(':') ? { realmEmoji: await realmEmojiIndex(deps.db, realm.id) } : {}),
  });
  // Inline previews of linked uploaded images (actions/thumbnails.ts).
  rendered.html = await addImagePreviews(deps.db, realm, rendered.html);
  return { ...rendered, groups: targets.groups };
}

/** Each recipient's flag bits (aligned with addressed.recipientIds); checks mention permissions. */
async function recipientFlags(
  deps: Reads,
  realm: Realm,
  sender: User,
  subject: PermissionSubject,
  addressed: Addressed,
  rendered: Awaited<ReturnType<typeof render>>,
  request: SendMessageRequest,
): Promise<number[]> {
  if (addressed.channel && rendered.streamWildcardMentioned) checkCanUseChannelWildcard(subject, realm, addressed.recipientIds.length);
  let topicParticipants = new Set<number>();
  if (addressed.channel && rendered.topicWildcardMentioned) {
    topicParticipants = new Set([...(await topicParticipantIds(deps.db, addressed.channel.id, addressed.topic)), sender.id]);
    checkCanUseTopicWildcard(subject, realm, topicParticipants.size);
  }
  for (const id of rendered.mentionedGroupIds) checkCanMentionGroup(subject, rendered.groups.find((g) => g.id === id)!);
  const mentioned = new Set([...rendered.mentionedUserIds, ...(await activeMembersOfGroups(deps.db, rendered.mentionedGroupIds))]);
  const readBySender = request.readBySender ?? READ_BY_SENDER_CLIENTS.has(request.client.toLowerCase());
  const direct = addressed.channel === null;
  return addressed.recipientIds.map((id) => {
    let bits = 0;
    if (id === sender.id && readBySender) bits |= MESSAGE_FLAG_BITS.read;
    if (mentioned.has(id)) bits |= MESSAGE_FLAG_BITS.mentioned;
    if (rendered.streamWildcardMentioned) bits |= MESSAGE_FLAG_BITS.stream_wildcard_mentioned;
    if (rendered.topicWildcardMentioned && topicParticipants.has(id)) bits |= MESSAGE_FLAG_BITS.topic_wildcard_mentioned;
    if (direct) bits |= MESSAGE_FLAG_BITS.is_private;
    return bits;
  });
}

// ---------------------------------------------------------------------------------------------
// Editing (actions/message-edits.ts) and the server's own channel messages

/** New content of an edit, rendered as its sender sends, with the mentions it makes. */
export interface EditedContent {
  content: string;
  renderedContent: string;
  /** Users mentioned by name or through a mentioned group. */
  mentioned: number[];
  streamWildcard: boolean;
  /** Users a topic wildcard mention reaches (the topic's participants and the sender). */
  topicWildcardUsers: number[];
}

/**
 * The content of an edit: empty content becomes `(deleted)`, as in Zulip; rendered and checked for
 * mention permissions as at sending (`recipientCount`: the channel's subscribers, for wildcard limits).
 */
export async function checkEditedContent(
  db: Db,
  realm: Realm,
  sender: User,
  place: { channel: Channel | null; topic: string; recipientCount: number },
  rawContent: string,
): Promise<EditedContent> {
  const content = rawContent.trimEnd() === '' ? '(deleted)' : normalizeContent(rawContent);
  const subject = await loadPermissionSubject(db, sender);
  const rendered = await render({ db }, realm, subject, content);
  if (place.channel && rendered.streamWildcardMentioned) checkCanUseChannelWildcard(subject, realm, place.recipientCount);
  let topicWildcardUsers: number[] = [];
  if (place.channel && rendered.topicWildcardMentioned) {
    topicWildcardUsers = [...new Set([...(await topicParticipantIds(db, place.channel.id, place.topic)), sender.id])];
    checkCanUseTopicWildcard(subject, realm, topicWildcardUsers.length);
  }
  for (const id of rendered.mentionedGroupIds) checkCanMentionGroup(subject, rendered.groups.find((g) => g.id === id)!);
  const mentioned = [...new Set([...rendered.mentionedUserIds, ...(await activeMembersOfGroups(db, rendered.mentionedGroupIds))])];
  return { content, renderedContent: rendered.html, mentioned, streamWildcard: rendered.streamWildcardMentioned, topicWildcardUsers };
}

/**
 * A message the server sends to a channel in its own name (the notification bot's notices of moves and
 * resolved topics): no permission to post is needed (Zulip's internal sends), mentions are rendered
 * as the bot's; `readFor` start read.
 */
export async function checkInternalChannelMessage(db: Db, realm: Realm, bot: User, channel: Channel, topic: string, content: string, readFor: number[]): Promise<CheckedMessage> {
  const subject = await loadPermissionSubject(db, bot);
  const addressed: Addressed = { channel, topic, recipientIds: await channelRecipientIds(db, channel.id), directUserIds: [] };
  const rendered = await render({ db }, realm, subject, normalizeContent(content));
  const request = { ...internalDirectMessage(bot.id, content, false) };
  const read = new Set(readFor);
  const flags = (await recipientFlags({ db }, realm, bot, subject, addressed, rendered, request)).map((bits, i) => (read.has(addressed.recipientIds[i]!) ? bits | MESSAGE_FLAG_BITS.read : bits));
  await addPersonalFlags(db, bot.id, addressed.recipientIds, normalizeContent(content), flags);
  const people = await messagePeople(db, realm.id, [bot.id]);
  return {
    channel,
    topic,
    recipientIds: addressed.recipientIds,
    flags,
    directUserIds: [],
    personalMentionIds: [],
    content: normalizeContent(content),
    renderedContent: rendered.html,
    people: new Map(people.map((p) => [p.id, p])),
  };
}
