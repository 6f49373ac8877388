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
  /** `none`: public; `optional`: spectators allowed; `required`: HTTP Basic. */
  readonly auth: 'none' | 'optional' | 'required';
  readonly params: Readonly<Record<string, WireParam>>;
}
