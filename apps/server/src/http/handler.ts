import type { OperationName, PathParams, RequestParams, SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';

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
   * Gives the request's admission slot back (http/admission.ts), for requests that wait on something
   * other than this server's work (long-polls), so that parked polls never crowd out other requests.
   */
  detachFromAdmission(): void;
}

export type Handler<K extends OperationName> = (ctx: HandlerContext<K>) => Promise<SuccessData<K>>;
/** Marks an operation of the spec that Parley does not serve yet (answered 404 NOT_IMPLEMENTED). */
export const NOT_SERVED = Symbol('not served');
/** Every operation of the spec, each with its handler or NOT_SERVED: a missing entry does not compile. */
export type RouteTable = { [K in OperationName]: Handler<K> | typeof NOT_SERVED };
