/** Where and how one request parameter travels on Zulip's wire. */
export interface WireParam {
  /** JSON text inside the form field / query value (every non-string type). */
  readonly json: boolean;
  /** Where the spec declares it. Zulip servers accept every parameter from body or query string. */
  readonly in: 'query' | 'body';
  readonly required: boolean;
}

export interface WireOperation {
  readonly operationId: string;
  readonly method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path template relative to /api/v1, e.g. `/users/{user_id}`. */
  readonly path: string;
  readonly pathParams: readonly string[];
  /** The path parameters that are text (an e-mail address) rather than ids; absent when none are. */
  readonly textPathParams?: readonly string[];
  /** Text path parameters that take the rest of the path, slashes included (`x-parley-path`); absent when none do. */
  readonly restPathParams?: readonly string[];
  /**
   * Path parameters that are an id or text (schema `anyOf` integer and string: `/users/{user_id}`
   * names a user by id or by address); a segment of digits only is the id. Absent when none are.
   */
  readonly idOrTextPathParams?: readonly string[];
  /**
   * The request body is `multipart/form-data` with a file, streamed to the handler as it arrives
   * (apps/server/src/http/multipart-stream.ts) instead of being read into parameters.
   */
  readonly streamBody?: boolean;
  /**
   * The request body may also be `multipart/form-data` with a file part beside the parameters (Zulip's
   * `request.FILES`: a bot's avatar): the parameters are read as usual and the (small) files are held
   * for the handler (apps/server/src/http/multipart.ts).
   */
  readonly filesInBody?: boolean;
  /**
   * Incoming webhook bots' API keys are accepted (`x-parley-incoming-webhook-bots`, Zulip's
   * allow_incoming_webhooks: sending messages); absent, such a key is refused.
   */
  readonly incomingWebhookBots?: boolean;
  /**
   * The body is read as bytes, whatever its type (`x-parley-raw-body`: incoming webhooks), and handed to
   * the handler with the request's headers; form-encoded bodies are also decoded into parameters.
   */
  readonly rawBody?: boolean;
  /** `none`: public; `optional`: spectators allowed; `required`: HTTP Basic. */
  readonly auth: 'none' | 'optional' | 'required';
  readonly params: Readonly<Record<string, WireParam>>;
}
