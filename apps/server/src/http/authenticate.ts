// HTTP Basic `email:api_key` authentication with Zulip's exact failures (401 + WWW-Authenticate).
import type { Request } from 'express';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import type { Db } from '../data/db.ts';
import type { User, Realm } from '../data/models.ts';
import { findUserByApiKeyHash } from '../data/users.repo.ts';
import { isWellFormedApiKey, type ApiKeyCipher } from '../security/secrets.ts';
import type { CredentialCache } from '../security/credential-cache.ts';
import { checkIncomingWebhookBotAccess } from '../access/bots.ts';

export interface Credentials {
  email: string;
  apiKey: string;
}

/** Parses the Authorization header; null when absent. Throws Zulip's errors for malformed headers. */
export function parseBasicAuth(req: Request): Credentials | null {
  const header = req.headers.authorization;
  if (header === undefined || header === '') return null;
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2) throw new UnauthorizedError('Invalid authorization header for basic auth');
  const [scheme, encoded] = parts as [string, string];
  if (scheme.toLowerCase() !== 'basic') throw new JsonableError('This endpoint requires HTTP basic authentication.');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new UnauthorizedError('Invalid authorization header for basic auth');
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const pieces = decoded.split(':');
  if (pieces.length !== 2) throw new UnauthorizedError('Invalid authorization header for basic auth');
  return { email: pieces[0]!.trim(), apiKey: pieces[1]!.trim() };
}

/** What a well-formed header yields: the parsed credentials and the key's lookup hash. */
interface VerifiedHeader {
  credentials: Credentials;
  lookupHash: string;
}

/** At most this many headers are remembered per process (the oldest go first). */
const MAX_REMEMBERED_HEADERS = 10_000;

/**
 * The credentials of a request from its Authorization header (null: none), with the API key's lookup
 * hash. Parsing a header and hashing its key is a pure function of the header (and of the server
 * secret), so the answer for a header that authenticated a user before is remembered: only this
 * parsing and HMAC are skipped. Who the key belongs to, and every check of `authenticate`, still
 * come from the credential cache on every request, so a changed key or a deactivated user is refused
 * exactly as before. Headers that failed are not remembered (a flood of made-up keys cannot push out
 * the real ones).
 */
export function createHeaderAuthenticator(deps: { db: Db; cipher: ApiKeyCipher; credentials: CredentialCache }) {
  const remembered = new Map<string, VerifiedHeader>();
  const remember = (header: string, verified: VerifiedHeader) => {
    if (remembered.size >= MAX_REMEMBERED_HEADERS) remembered.delete(remembered.keys().next().value!);
    remembered.set(header, verified);
  };
  /**
   * Without waiting when both the header and its identity are known (the common case). With
   * `incomingWebhookBots`, the operation accepts incoming webhook bots' keys (sending messages).
   */
  const authenticateHeader = (req: Request, options: IdentityOptions = {}): { user: User; realm: Realm } | null | Promise<{ user: User; realm: Realm }> => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') return null;
    const known = remembered.get(header);
    if (known) {
      const identity = deps.credentials.peek(known.lookupHash);
      if (identity) return checkIdentity(identity, known.credentials, options);
      // Refused now (the key rotated, say): forgotten, so that it does not stay in memory.
      return authenticateHashed(deps, known.credentials, known.lookupHash, options).catch((error: unknown) => {
        remembered.delete(header);
        throw error;
      });
    }
    const credentials = parseBasicAuth(req)!;
    if (!isWellFormedApiKey(credentials.apiKey)) throw new UnauthorizedError('Malformed API key');
    const lookupHash = deps.cipher.lookupHash(credentials.apiKey);
    return authenticateHashed(deps, credentials, lookupHash, options).then((identity) => {
      remember(header, { credentials, lookupHash });
      return identity;
    });
  };
  /**
   * The identity of a header that authenticated before and whose user is in the credential cache, when
   * every check passes; otherwise null (not known here, or refused: `authenticateHeader` then gives the
   * answer). Changes nothing and never waits (http/events-route.ts).
   */
  const known = (header: string): { user: User; realm: Realm } | null => {
    const verified = remembered.get(header);
    const identity = verified && deps.credentials.peek(verified.lookupHash);
    if (!identity) return null;
    try {
      return checkIdentity(identity, verified.credentials);
    } catch {
      return null;
    }
  };
  return Object.assign(authenticateHeader, { known });
}

/**
 * Resolves the key to its user and organization: from the per-process cache (no database round trip),
 * or from the database once, verified against the encrypted key. Every check below runs on every
 * request, on the cached rows too; the cache drops a user's entry as soon as any process changes them.
 */
export async function authenticate(
  deps: { db: Db; cipher: ApiKeyCipher; credentials: CredentialCache },
  credentials: Credentials,
): Promise<{ user: User; realm: Realm }> {
  if (!isWellFormedApiKey(credentials.apiKey)) throw new UnauthorizedError('Malformed API key');
  return authenticateHashed(deps, credentials, deps.cipher.lookupHash(credentials.apiKey));
}

async function authenticateHashed(
  deps: { db: Db; cipher: ApiKeyCipher; credentials: CredentialCache },
  credentials: Credentials,
  lookupHash: string,
  options: IdentityOptions = {},
): Promise<{ user: User; realm: Realm }> {
  const identity = await deps.credentials.get(lookupHash, async () => {
    const row = await findUserByApiKeyHash(deps.db, lookupHash);
    if (!row || !deps.cipher.matches(credentials.apiKey, row.ciphertext)) return null;
    const { realm, ...user } = row.user;
    return { user, realm, ciphertext: row.ciphertext };
  });
  if (!identity) throw new UnauthorizedError('Invalid API key');
  return checkIdentity(identity, credentials, options);
}

/**
 * The `?api_key=` of file downloads (Zulip's authenticated_uploads_api_view, for clients that cannot
 * set an Authorization header): the key alone names its user; every other check as for a header.
 */
export async function authenticateApiKeyAlone(
  deps: { db: Db; cipher: ApiKeyCipher; credentials: CredentialCache },
  apiKey: string,
  options: IdentityOptions = {},
): Promise<{ user: User; realm: Realm }> {
  if (!isWellFormedApiKey(apiKey)) throw new UnauthorizedError('Invalid API key');
  const lookupHash = deps.cipher.lookupHash(apiKey);
  const identity = await deps.credentials.get(lookupHash, async () => {
    const row = await findUserByApiKeyHash(deps.db, lookupHash);
    if (!row || !deps.cipher.matches(apiKey, row.ciphertext)) return null;
    const { realm, ...user } = row.user;
    return { user, realm, ciphertext: row.ciphertext };
  });
  if (!identity) throw new UnauthorizedError('Invalid API key');
  return checkIdentity(identity, { email: identity.user.deliveryEmail, apiKey }, options);
}

/** What the operation accepts beyond ordinary users' keys. */
export interface IdentityOptions {
  /** Incoming webhook bots' keys (Zulip's allow_incoming_webhooks: sending messages). */
  incomingWebhookBots?: boolean;
}

/** The checks every request passes, on a cached identity too. */
function checkIdentity<T extends { user: User; realm: Realm }>(identity: T, credentials: Credentials, options: IdentityOptions = {}): T {
  const { user, realm } = identity;
  if (user.deliveryEmail.toLowerCase() !== credentials.email.toLowerCase()) throw new UnauthorizedError('Invalid API key');
  if (!user.isActive) throw new UnauthorizedError('Account is deactivated');
  if (realm.deactivated) throw new UnauthorizedError('This organization has been deactivated');
  checkIncomingWebhookBotAccess(user, options.incomingWebhookBots === true);
  return identity;
}
