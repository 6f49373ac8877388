// Outgoing webhooks (Zulip's get_service_bot_events, its outgoing_webhooks queue worker and
// zerver/lib/outgoing_webhook.py).
//
// Who triggers what: a message sent by a human (no bot's message triggers anything, as in Zulip) to a
// channel triggers each active outgoing-webhook bot it mentions by name (not silently; trigger
// `mention`); a direct message, one-to-one or group, triggers each such bot among its participants
// (trigger `direct_message`). The transaction storing the message records one delivery row per bot
// (the idempotency key) and enqueues its job, so a job exists exactly when the message committed.
//
// A job (jobs/outgoing-webhooks.ts) first checks that the bot is active and may read the message as it
// is now (queries/messages.ts readableMessage: a bot mentioned in a private channel it is not
// subscribed to gets nothing), builds Zulip's request from the message as the bot sees it, POSTs it
// (lib/outgoing-webhooks.ts: no redirects, a deadline, non-public addresses refused unless allowed) and
// then, in ONE transaction that locks the delivery row, posts the bot's reply or the failure notices
// and marks the delivery finished: a retried or duplicated job finds it finished and posts nothing.
// A timeout or connection failure (and, in Parley, a 5xx answer) is retried MAX_REQUEST_RETRIES times,
// each attempt a new job after a growing delay; then the bot says "Failure! Bot is unavailable" in the
// conversation and tells its owner why, in a direct message, as Zulip's bot does.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { findUserById } from '../data/users.repo.ts';
import { servicesOfBots } from '../data/bots.repo.ts';
import { messagePeople } from '../data/messages.repo.ts';
import { reactionsOfMessages } from '../data/reactions.repo.ts';
import { activeGenericBots, activeOutgoingWebhookBots, findDelivery, finishDelivery, insertDeliveries, lockDelivery, setDeliveryAttempt } from '../data/outgoing-webhooks.repo.ts';
import { JsonableError } from '../errors.ts';
import { defaultNarrowUrl } from '../lib/markdown.ts';
import { formatMessage, messageEmailOf, type MessagePerson } from '../lib/message-format.ts';
import {
  buildWebhookRequest,
  directMessageLinkPath,
  failureReply,
  MAX_REQUEST_RETRIES,
  ownerNotice,
  postWebhook,
  readAnswer,
  reprBytes,
  reprStr,
  retryDelayMs,
  timeoutSecondsText,
  type HttpOutcome,
  type TriggeringMessage,
} from '../lib/outgoing-webhooks.ts';
import { ZULIP_VERSION } from '../version.ts';
import { mentionedBotReceivesCopy } from '../access/bot-mentions.ts';
import { realmLinkifiers } from '../queries/linkifiers.ts';
import { readableMessage } from '../queries/messages.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { checkMessage, storeCheckedMessage, type CheckedMessage, type SendMessageRequest } from './messages.ts';

/** The client name of the bots' replies (Zulip's). */
const REPLY_CLIENT = 'OutgoingWebhookResponse';

export type OutgoingWebhookJob = { realmId: number; messageId: number; botId: number; attempt: number };

// ---------------------------------------------------------------------------------------------
// Triggering (inside the transaction that stores the message)

/**
 * The users whose outgoing-webhook bots a message may trigger (the recipients of a direct message, those
 * a channel message mentions; not the sender): none for a bot's message.
 */
export function outgoingWebhookCandidates(sender: Pick<User, 'id' | 'isBot'>, checked: Pick<CheckedMessage, 'channel' | 'directUserIds' | 'mentionedUserIds'>): number[] {
  if (sender.isBot) return [];
  return (checked.channel === null ? checked.directUserIds : (checked.mentionedUserIds ?? [])).filter((id) => id !== sender.id);
}

/**
 * Zulip's get_service_bot_events: records the deliveries a message triggers and enqueues their jobs,
 * inside `tx` (after the message row exists). Nothing is read for a bot's message, or for a channel
 * message that mentions nobody.
 */
export async function queueOutgoingWebhooks(
  tx: Db,
  deps: Pick<AppDeps, 'jobs'>,
  realm: Realm,
  sender: User,
  checked: Pick<CheckedMessage, 'channel' | 'directUserIds' | 'mentionedUserIds'>,
  messageId: number,
): Promise<void> {
  const candidates = outgoingWebhookCandidates(sender, checked);
  if (candidates.length === 0) return;
  const direct = checked.channel === null;
  const bots = await activeOutgoingWebhookBots(tx, realm.id, candidates);
  if (bots.length === 0) return;
  const trigger = direct ? 'direct_message' : 'mention';
  const recorded = await insertDeliveries(tx, messageId, bots.map((botId) => ({ botId, trigger })));
  await deps.jobs.sendMany(tx, 'outgoing-webhook', recorded.map((botId) => ({ data: { realmId: realm.id, messageId, botId, attempt: 0 } })));
}

/**
 * Zulip's mentioned default bots: the recipients of a channel message plus the generic bots it mentions
 * that are not subscribed, where they may read the channel (access/bot-mentions.ts), ascending.
 */
export async function withMentionedGenericBots(db: Db, realm: Realm, channel: Channel, recipientIds: number[], mentionedUserIds: number[]): Promise<number[]> {
  const recipients = new Set(recipientIds);
  const outside = mentionedUserIds.filter((id) => !recipients.has(id));
  if (outside.length === 0) return recipientIds;
  const bots = (await activeGenericBots(db, realm.id, outside)).filter((bot) => mentionedBotReceivesCopy(bot, channel));
  if (bots.length === 0) return recipientIds;
  return [...recipientIds, ...bots.map((b) => b.id)].sort((a, b) => a - b);
}

// ---------------------------------------------------------------------------------------------
// Delivering (a job)

/** What the bot posts once the exchange is over, in the transaction that finishes the delivery. */
interface Plan {
  /** The answer's content, posted in the conversation; `answerText`: the body, for the owner's notice should posting fail. */
  reply?: { content: string; answerText: string };
  /** `Failure! …`, posted in the conversation. */
  failure?: string;
  /** The notice to the bot's owner (without its first line's link, added here). */
  owner?: Parameters<typeof ownerNotice>[2];
}

interface Conversation {
  realm: Realm;
  bot: User;
  /** Where the triggering message is now. */
  channelId: number | null;
  topic: string;
  directUserIds: number[];
  messageUrl: string;
}

/**
 * One attempt of a delivery: stale jobs (the delivery finished, or an attempt other than this one is
 * due) do nothing. Throws only on unexpected failures (the queue retries the same attempt).
 */
export async function doDeliverOutgoingWebhook(deps: AppDeps, job: OutgoingWebhookJob): Promise<void> {
  const delivery = await findDelivery(deps.db, job.messageId, job.botId);
  if (!delivery || delivery.finished || delivery.attempt !== job.attempt) return;
  const realm = await findRealmById(deps.db, job.realmId);
  const bot = realm ? await findUserById(deps.db, realm.id, job.botId) : null;
  const [service] = bot ? await servicesOfBots(deps.db, [bot.id]) : [];
  if (!realm || !bot || !bot.isActive || !service) return finish(deps, job, null, {});
  // The bot gets the message only if it may read it now (its rows caught up first, as for any read).
  await catchUpDeferredRows(deps.db, realm, bot);
  const found = await readableMessage(deps.db, realm, bot, job.messageId);
  if (!found) return finish(deps, job, null, {});
  const { message, conversation } = await triggeringMessage(deps.db, realm, bot, found);

  const request = buildWebhookRequest(
    { id: bot.id, email: message.botEmail, fullName: bot.fullName, token: service.token, interface: service.interface },
    message.triggering,
    delivery.trigger,
    { id: realm.id, host: new URL(realm.url).host },
  );
  if (!request) return finish(deps, job, conversation, { failure: "Slack outgoing webhooks don't support direct messages." });
  const config = deps.config.outgoingWebhooks;
  const started = performance.now();
  const outcome = await postWebhook(service.baseUrl, request, { timeoutMs: config.timeoutMs, allowPrivate: config.allowPrivate, userAgent: `ZulipOutgoingWebhook/${ZULIP_VERSION}` });
  deps.logger.info({ bot_id: bot.id, message_id: job.messageId, attempt: job.attempt, outcome: describe(outcome), ms: Math.round(performance.now() - started) }, 'outgoing webhook request');

  const retry = retryReason(outcome, config.timeoutMs);
  if (retry !== null) {
    if (job.attempt < MAX_REQUEST_RETRIES) return reschedule(deps, job);
    return finish(deps, job, conversation, outcome.kind === 'answer' ? nonSuccessPlan(outcome.status, outcome.body) : { failure: 'Bot is unavailable', owner: { failureMessage: retry } });
  }
  switch (outcome.kind) {
    case 'answer': {
      if (outcome.status >= 200 && outcome.status < 300) {
        const text = outcome.body.toString('utf8');
        const answer = readAnswer(service.interface, text);
        if (answer.kind === 'none') return finish(deps, job, conversation, {});
        if (answer.kind === 'error') return finish(deps, job, conversation, postingFailedPlan(answer.message, text));
        return finish(deps, job, conversation, { reply: { content: answer.content, answerText: text } });
      }
      return finish(deps, job, conversation, nonSuccessPlan(outcome.status, outcome.body));
    }
    case 'refused':
      // What Zulip's Smokescreen proxy answers for a non-public destination: 407, and an empty body.
      deps.logger.warn({ bot_id: bot.id, address: outcome.address }, 'outgoing webhook to a non-public address refused (PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE is off)');
      return finish(deps, job, conversation, nonSuccessPlan(407, Buffer.alloc(0)));
    case 'exception':
      return finish(deps, job, conversation, {
        failure: `An exception of type *${outcome.type}* occurred for message \`${message.triggering.content}\`! See the Zulip server logs for more information.`,
        owner: { exception: { type: outcome.type, message: outcome.message } },
      });
    default:
      return finish(deps, job, conversation, {});
  }
}

/** Zulip's failure texts for the outcomes it retries (Parley also retries 5xx answers); null for the others. */
function retryReason(outcome: HttpOutcome, timeoutMs: number): string | null {
  if (outcome.kind === 'timeout') return `Request timed out after ${timeoutSecondsText(timeoutMs)} seconds.`;
  if (outcome.kind === 'connection-error') return 'A connection error occurred. Is my bot server down?';
  if (outcome.kind === 'answer' && outcome.status >= 500 && outcome.status < 600) return 'Internal Server error at third party.';
  return null;
}

/** Zulip's handling of a non-2xx answer: `Failure! Third party responded with N` and the owner's notice with the body. */
const nonSuccessPlan = (status: number, body: Buffer): Plan => ({
  failure: `Third party responded with ${status}`,
  owner: { statusCode: status, ...(body.length ? { responseContent: reprBytes(body) } : {}) },
});

/** Zulip's handling of a 2xx answer that could not be posted (bad JSON, bad format, a refused message). */
const postingFailedPlan = (error: string, answerText: string): Plan => ({
  failure: error,
  owner: {
    failureMessage: `The outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> ${error}`,
    ...(answerText ? { responseContent: reprStr(answerText) } : {}),
  },
});

function describe(outcome: HttpOutcome): string {
  switch (outcome.kind) {
    case 'answer':
      return `status ${outcome.status}`;
    case 'connection-error':
      return `connection error: ${outcome.error.message}`;
    case 'refused':
      return `refused: ${outcome.address}`;
    case 'exception':
      return `${outcome.type}: ${outcome.message}`;
    default:
      return outcome.kind;
  }
}

/** The next attempt, after its delay, recorded with its job in one transaction (a stale job changes nothing). */
async function reschedule(deps: AppDeps, job: OutgoingWebhookJob): Promise<void> {
  const next = job.attempt + 1;
  await inTransaction(deps.db, async (tx) => {
    const row = await lockDelivery(tx, job.messageId, job.botId);
    if (!row || row.finished || row.attempt !== job.attempt) return;
    await setDeliveryAttempt(tx, job.messageId, job.botId, next);
    const startAfter = new Date(Date.now() + retryDelayMs(deps.config.outgoingWebhooks, next));
    await deps.jobs.send(tx, 'outgoing-webhook', { ...job, attempt: next }, { startAfter });
  });
}

/**
 * Ends a delivery: in one transaction that locks its row, posts what `plan` says (as the bot) and
 * marks it finished; a delivery already finished, or due for another attempt, is left alone.
 */
async function finish(deps: AppDeps, job: OutgoingWebhookJob, conversation: Conversation | null, plan: Plan): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await lockDelivery(tx, job.messageId, job.botId);
    if (!row || row.finished || row.attempt !== job.attempt) return;
    if (conversation) {
      const send = async (request: SendMessageRequest) => {
        const checked = await checkMessage(tx, conversation.realm, conversation.bot, request);
        await storeCheckedMessage(tx, afterCommit, deps, conversation.realm, conversation.bot, checked, { client: REPLY_CLIENT });
      };
      const quietly = async (request: SendMessageRequest) => {
        try {
          await send(request);
        } catch (error) {
          if (!(error instanceof JsonableError)) throw error;
          deps.logger.info({ bot_id: conversation.bot.id, message_id: job.messageId, err: error.message }, 'outgoing webhook notice not sent');
        }
      };
      let owner = plan.owner;
      if (plan.reply) {
        try {
          await send(toConversation(conversation, plan.reply.content));
        } catch (error) {
          if (!(error instanceof JsonableError)) throw error;
          const failed = postingFailedPlan(error.message, plan.reply.answerText);
          await quietly(toConversation(conversation, failureReply(failed.failure!)));
          owner = failed.owner;
        }
      }
      if (plan.failure) await quietly(toConversation(conversation, failureReply(plan.failure)));
      const ownerId = conversation.bot.botOwnerId;
      if (owner && ownerId !== null) {
        await quietly(toUser(ownerId, ownerNotice(conversation.messageUrl, conversation.bot.fullName, owner)));
      }
    }
    await finishDelivery(tx, job.messageId, job.botId);
  });
}

const toConversation = (c: Conversation, content: string): SendMessageRequest =>
  c.channelId !== null
    ? { content, type: 'stream', to: String(c.channelId), topic: c.topic, queueId: undefined, localId: undefined, readBySender: undefined, client: REPLY_CLIENT }
    : { content, type: 'private', to: JSON.stringify(c.directUserIds), topic: undefined, queueId: undefined, localId: undefined, readBySender: undefined, client: REPLY_CLIENT };

const toUser = (userId: number, content: string): SendMessageRequest => ({
  content,
  type: 'private',
  to: JSON.stringify([userId]),
  topic: undefined,
  queueId: undefined,
  localId: undefined,
  readBySender: undefined,
  client: REPLY_CLIENT,
});

type Found = NonNullable<Awaited<ReturnType<typeof readableMessage>>>;

/**
 * The message as Zulip's generic interface sends it (MessageDict.finalize_payload with
 * apply_markdown=False, client_gravatar=False, keep_rendered_content=True): the API's message dict as
 * the bot sees it, Markdown content, plus `rendered_content`; and where it is, for the replies.
 */
async function triggeringMessage(db: Db, realm: Realm, bot: User, found: Found): Promise<{ message: { triggering: TriggeringMessage; botEmail: string }; conversation: Conversation }> {
  const row = found.message;
  const [people, reactions, linkifiers] = await Promise.all([
    messagePeople(db, realm.id, [...new Set([row.sender_id, bot.id, ...row.direct_user_ids])]),
    reactionsOfMessages(db, [row.id]),
    realmLinkifiers(db, realm),
  ]);
  const byId = new Map<number, MessagePerson>(people.map((p) => [p.id, p]));
  const channelName = found.channel?.name ?? null;
  const dict = formatMessage(
    row,
    {
      realm,
      people: byId,
      channelNames: new Map(row.channel_id !== null && channelName !== null ? [[row.channel_id, channelName]] : []),
      applyMarkdown: false,
      clientGravatar: false,
      allowEmptyTopicName: true,
      reactions,
      linkifiers,
    },
    bot.id,
  );
  dict['rendered_content'] = row.rendered_content;
  const sender = byId.get(row.sender_id);
  const botPerson = byId.get(bot.id);
  const messageUrl =
    row.channel_id !== null
      ? `${realm.url}${defaultNarrowUrl({ id: row.channel_id, name: channelName ?? '' }, row.topic)}/near/${row.id}`
      : `${realm.url}${directMessageLinkPath(row.direct_user_ids, row.id)}`;
  return {
    message: {
      triggering: {
        dict,
        content: row.content,
        channelId: row.channel_id,
        channelName,
        senderId: row.sender_id,
        senderFullName: sender?.full_name ?? '',
        timestamp: Math.floor(row.date_sent.getTime() / 1000),
      },
      botEmail: botPerson ? messageEmailOf(realm, botPerson) : bot.email,
    },
    conversation: { realm, bot, channelId: row.channel_id, topic: row.topic, directUserIds: row.direct_user_ids, messageUrl },
  };
}
