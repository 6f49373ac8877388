import type { OperationName, PathParams, RequestParams, SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import type { BodyFile, StreamedMultipart } from '../lib/multipart-body.ts';
import type { PollConnection } from '../events/delivery.ts';

export interface HandlerContext<K extends OperationName> {
  params: RequestParams<K>;
  path: PathParams<K>;
  realm: Realm;
  /** The authenticated user; operations whose spec requires authentication always have one. */
  user: User;
  /** The caller, or null for a spectator / unauthenticated call (operations with optional auth). */
  viewer: User | null;
  deps: AppDeps;
  /** The calling client's name, from the User-Agent's first product token (Zulip's `client`). */
  client: string;
  /** Aborted when the client goes away before the answer. */
  signal: AbortSignal;
  /**
   * The same, without an AbortSignal (whose making and listening cost more than a long-poll's own
   * work): `gone` once the response closed unfinished; `onGone` listens for that (not called for a
   * response that finishes) and returns the function that stops listening.
   */
  connection: PollConnection;
  /**
   * Gives the request's admission slot back (http/admission.ts), for requests that wait on something
   * other than this server's work (long-polls), so that parked polls never crowd out other requests.
   */
  detachFromAdmission(): void;
  /**
   * Where the handler's action says its change wrote none of the tables per-process caches follow
   * (data/cached-tables.ts): the answer then does not wait for this process's invalidation barrier.
   */
  cachedTableWrites: CachedTableWrites;
  /**
   * The request's multipart body, read as it arrives: only for operations whose spec body is a file
   * (`streamBody` in the wire plan: POST /user_uploads); others throw.
   */
  readonly multipart: StreamedMultipart;
  /**
   * The file parts of a multipart body whose other parts are the parameters (`filesInBody` in the
   * wire plan: a bot's avatar); empty for other bodies and operations.
   */
  readonly files: readonly BodyFile[];
  /**
   * The request as received, for operations that take their body raw (`rawBody` in the wire plan:
   * incoming webhooks); others throw.
   */
  readonly raw: RawRequest;
}

export interface RawRequest {
  body: Buffer;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  query: URLSearchParams;
  /** The request's path (without the query string). */
  path: string;
}

export type Handler<K extends OperationName> = (ctx: HandlerContext<K>) => Promise<SuccessData<K>>;
/** Every operation of the spec with its handler: the spec describes what is served, so a missing entry does not compile. */
export type RouteTable = { [K in OperationName]: Handler<K> };
