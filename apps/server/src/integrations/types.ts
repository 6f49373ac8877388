// The contract between the incoming-webhook endpoint (/api/v1/external/{integration}) and the
// integrations: one small module per integration turns a third party's request into Zulip's topic
// and message content, as a pure function of the request. The endpoint does everything else:
// authentication (API key in the query string or Basic auth), the `stream`/`topic` parameters,
// `only_events`/`exclude_events`, sending as the bot, and turning the outcomes below into answers.

/** What an integration sees of the request. */
export interface WebhookRequest {
  /** The body: parsed JSON for JSON bodies; the decoded fields for form-encoded ones. */
  body: unknown;
  /** The body exactly as received (for integrations that check signatures or parse it themselves). */
  rawBody: Buffer;
  /** Request headers, names lower-cased. */
  headers: Readonly<Record<string, string | undefined>>;
  /** Query-string parameters (the endpoint's own — api_key, stream, topic, … — included). */
  query: Readonly<Record<string, string | undefined>>;
  /** The `topic` the user put in the webhook URL, if any (trimmed; undefined when absent or empty). */
  userTopic: string | undefined;
}

/** One message to post. `topic` is ignored when the message goes to the bot owner as a direct message. */
export interface WebhookMessage {
  topic: string;
  content: string;
  /**
   * This message's own event type, checked against only_events/exclude_events instead of the
   * outcome's (one notification of several events, such as Grafana's firing and resolved alerts).
   */
  eventType?: string;
}

export type WebhookOutcome =
  /** Post these messages (usually one). `eventType` is checked against only_events/exclude_events. */
  | { kind: 'messages'; eventType?: string; messages: WebhookMessage[] }
  /** An event type the integration does not handle: answered as Zulip answers it. */
  | { kind: 'unsupported'; eventType: string }
  /** An event Zulip deliberately ignores (posts nothing, answers success). */
  | { kind: 'ignored'; eventType?: string };

export interface Integration {
  /** The URL segment: /api/v1/external/<name>. */
  name: string;
  /** The name Zulip shows, used in error messages (e.g. "GitHub"). */
  displayName: string;
  /** Every event type the integration can produce (documentation, and validation of only_events). */
  eventTypes?: readonly string[];
  handle(request: WebhookRequest): WebhookOutcome;
  /**
   * Answers as Slack's incoming webhooks do besides Zulip's envelope: `ok: true` on success, and
   * `ok: false` with `error` (the message) on a failure of the request's content.
   */
  slackCompatible?: boolean;
}

/**
 * A payload the integration cannot read (a missing field, a wrong type). The endpoint answers 400
 * with this message; throw it instead of letting a TypeError become a 500.
 */
export class WebhookPayloadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookPayloadError';
  }
}

/** The integration needs an event-type header the request lacks (Zulip's MissingHTTPEventHeaderError). */
export class MissingEventHeaderError extends Error {
  constructor(readonly header: string) {
    super(`Missing the HTTP event header '${header}'`);
    this.name = 'MissingEventHeaderError';
  }
}
