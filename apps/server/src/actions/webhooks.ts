// Incoming webhooks (Zulip's webhook_view and check_send_webhook_message): the integration turns the
// request into messages (src/integrations/*, pure functions); here they are filtered by the caller's
// only_events/exclude_events and sent as the caller, to the channel of `stream` or, without one, to
// the bot's owner as a direct message. Sending is POST /messages' own (checkMessage, then
// storeCheckedMessage in one transaction): same rendering, events, pushes and permission to post.
// Nothing is deduplicated: a request the service sends again is posted again, as in Zulip.
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { findUserById } from '../data/users.repo.ts';
import { inTransaction } from '../data/transactions.ts';
import { JsonableError, MissingArgumentError } from '../errors.ts';
import { MissingEventHeaderError, WebhookPayloadError, type Integration, type WebhookMessage, type WebhookRequest } from '../integrations/types.ts';
import { checkMessage, storeCheckedMessage, type SendMessageRequest } from './messages.ts';
import { sendNotificationMessage } from './system-bots.ts';

export interface IncomingWebhookCall {
  integration: Integration;
  request: WebhookRequest;
  /** The `stream` parameter: a channel name, or an ID in digits; undefined: the bot's owner. */
  stream: string | undefined;
  onlyEvents: readonly string[] | undefined;
  excludeEvents: readonly string[] | undefined;
}

/** What the answer carries beyond success: nothing, or Zulip's unsupported-event fields. */
export type WebhookAnswer =
  | { ok?: true }
  | { msg: string; code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE'; webhook_name: string; event_type: string };

/** The client a webhook's messages are sent from, as Zulip names it (`ZulipGitHubWebhook`). */
export const webhookClientName = (integration: Integration) => `Zulip${integration.displayName}Webhook`;

export async function doReceiveIncomingWebhook(deps: AppDeps, realm: Realm, caller: User, call: IncomingWebhookCall): Promise<WebhookAnswer> {
  if (!call.integration.slackCompatible) return receive(deps, realm, caller, call);
  // Slack's answers: `ok: true`, or `ok: false` with `error` (Zulip's slack_error_handler).
  try {
    const answer = await receive(deps, realm, caller, call);
    return { ...answer, ok: true };
  } catch (error) {
    if (!(error instanceof JsonableError)) throw error;
    throw new JsonableError(error.message, { status: error.status, code: error.code, headers: error.headers, data: { ...error.data, ok: false, error: error.message } });
  }
}

async function receive(deps: AppDeps, realm: Realm, caller: User, call: IncomingWebhookCall): Promise<WebhookAnswer> {
  const { integration } = call;
  let outcome;
  try {
    outcome = integration.handle(call.request);
  } catch (error) {
    if (error instanceof MissingEventHeaderError) {
      throw new JsonableError(error.message, { code: 'MISSING_HTTP_EVENT_HEADER', data: { header: error.header } });
    }
    if (error instanceof WebhookPayloadError) throw new JsonableError(error.message);
    throw error;
  }
  if (outcome.kind === 'unsupported') {
    return {
      msg: `The '${outcome.eventType}' event isn't currently supported by the ${integration.displayName} webhook; ignoring`,
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      webhook_name: integration.displayName,
      event_type: outcome.eventType,
    };
  }
  if (outcome.kind === 'ignored') return {};
  // Each message is filtered on its own event type, else the outcome's.
  const wanted = outcome.messages.filter((message) => {
    const eventType = message.eventType ?? outcome.eventType;
    return eventType === undefined || eventWanted(eventType, call.onlyEvents, call.excludeEvents);
  });
  for (const message of wanted) await sendWebhookMessage(deps, realm, caller, call, message);
  return {};
}

/** Zulip's filter: only_events must match (when given) and exclude_events must not, with fnmatch patterns. */
export function eventWanted(eventType: string, onlyEvents: readonly string[] | undefined, excludeEvents: readonly string[] | undefined): boolean {
  if (onlyEvents !== undefined && !onlyEvents.some((pattern) => fnmatch(eventType, pattern))) return false;
  if (excludeEvents !== undefined && excludeEvents.some((pattern) => fnmatch(eventType, pattern))) return false;
  return true;
}

/** Python's fnmatch.fnmatchcase: `*`, `?`, `[seq]`, `[!seq]`; everything else literal. */
export function fnmatch(name: string, pattern: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') {
      let j = i + 1;
      if (pattern[j] === '!') j++;
      if (pattern[j] === ']') j++;
      while (j < pattern.length && pattern[j] !== ']') j++;
      if (j >= pattern.length) {
        source += '\\[';
        continue;
      }
      let set = pattern.slice(i + 1, j).replace(/\\/g, '\\\\');
      i = j;
      if (set.startsWith('!')) set = '^' + set.slice(1);
      else if (set.startsWith('^')) set = '\\' + set;
      source += `[${set}]`;
    } else source += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  try {
    return new RegExp(`^(?:${source})$`, 's').test(name);
  } catch {
    return false;
  }
}

async function sendWebhookMessage(deps: AppDeps, realm: Realm, caller: User, call: IncomingWebhookCall, message: WebhookMessage): Promise<void> {
  const client = webhookClientName(call.integration);
  let request: SendMessageRequest;
  if (call.stream === undefined) {
    // Zulip sends to the bot's owner; an account without one (a person's key) must name a channel.
    if (caller.botOwnerId === null) throw new MissingArgumentError('stream');
    request = { type: 'private', to: JSON.stringify([caller.botOwnerId]), topic: undefined, content: message.content, queueId: undefined, localId: undefined, readBySender: undefined, client };
  } else {
    const to = /^\d+$/.test(call.stream) ? call.stream : JSON.stringify(call.stream);
    const topic = call.request.userTopic ?? message.topic;
    request = { type: 'stream', to, topic, content: message.content, queueId: undefined, localId: undefined, readBySender: undefined, client };
  }
  let checked;
  try {
    checked = await checkMessage(deps.db, realm, caller, request);
  } catch (error) {
    // A channel that does not exist: nothing is posted and the answer is a success; the bot's owner
    // is told (Zulip's send_pm_if_empty_stream), as Zulip's check_send_webhook_message does.
    if (error instanceof JsonableError && error.code === 'STREAM_DOES_NOT_EXIST' && call.stream !== undefined) {
      await tellOwnerAboutMissingChannel(deps, realm, caller, call.stream);
      return;
    }
    throw error;
  }
  await inTransaction(deps.db, (tx, afterCommit) => storeCheckedMessage(tx, afterCommit, deps, realm, caller, checked, { client }));
}

async function tellOwnerAboutMissingChannel(deps: AppDeps, realm: Realm, bot: User, stream: string): Promise<void> {
  if (!bot.isBot || bot.botOwnerId === null) return;
  const owner = await findUserById(deps.db, realm.id, bot.botOwnerId);
  if (!owner) return;
  const botIdentity = `@_**${bot.fullName}|${bot.id}**`;
  const content = /^\d+$/.test(stream)
    ? `Your bot ${botIdentity} tried to send a message to channel ID ${stream}, but there is no channel with that ID.`
    : `Your bot ${botIdentity} tried to send a message to channel #**${stream}**, but that channel does not exist. Click [here](#channels/new) to create it.`;
  await inTransaction(deps.db, (tx, afterCommit) => sendNotificationMessage(tx, afterCommit, deps, realm, owner, content));
}
