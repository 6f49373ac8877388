// Requests the typed client's types refuse, sent on purpose: a wrong value type, an unknown parameter,
// a missing required one (the tests of the server's errors). They go through the same client, so they
// are encoded as the typed client encodes the right ones (Zulip's wire format, from the spec's wire plan);
// for what no client encodes (broken JSON, odd encodings), tests use raw HTTP (env.raw).
import type { ParleyClient, paths } from '@parley/client';

interface UncheckedInit {
  params?: { path?: Record<string, unknown>; query?: Record<string, unknown> };
  body?: Record<string, unknown>;
}
/** The answer of an unchecked request: `data` on success, `error` (Zulip's error envelope) otherwise. */
export interface UncheckedAnswer {
  data?: any;
  error?: any;
  response: Response;
}
type Call = (path: keyof paths, init?: UncheckedInit) => Promise<UncheckedAnswer>;
export interface UncheckedClient {
  GET: Call;
  POST: Call;
  PATCH: Call;
  DELETE: Call;
}

/** The same client with the parameter types lifted, for requests that are wrong on purpose. */
export function unchecked(client: ParleyClient): UncheckedClient {
  // The one cast of the lifted types: openapi-fetch's methods take (path, { params, body }) whatever the
  // types say, and the client's middleware encodes any value by the spec's wire plan.
  return client as unknown as UncheckedClient;
}
