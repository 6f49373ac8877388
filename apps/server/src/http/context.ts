import type { WireOperation } from '@parley/wire';
import type { Realm, User } from '../data/models.ts';

/** What the HTTP pipeline learned about a request, stored in res.locals.parley. */
export interface RequestState {
  operation: WireOperation;
  /** Ids as numbers; text parameters (an e-mail address) percent-decoded. */
  pathParams: Record<string, number | string>;
  /** The path parameters as the path spells them (request validation checks these). */
  rawPathParams: Record<string, string>;
  realm: Realm;
  /** null for unauthenticated calls (public operations, spectators). */
  user: User | null;
  params: Record<string, unknown>;
  ignored: string[];
  /** The body as read, for operations that take it raw (`rawBody` in the wire plan: incoming webhooks). */
  rawBody?: Buffer;
}
