// HTTP Basic `email:api_key` authentication with Zulip's exact failures (401 + WWW-Authenticate).
import type { Request } from 'express';
import { JsonableError, UnauthorizedError } from '../errors.ts';
import type { Db } from '../data/db.ts';
import type { User, Realm } from '../data/models.ts';
import { findUserByApiKeyHash } from '../data/users.repo.ts';
import { isWellFormedApiKey, type ApiKeyCipher } from '../security/secrets.ts';
import type { CredentialCache } from '../security/credential-cache.ts';

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
  const lookupHash = deps.cipher.lookupHash(credentials.apiKey);
  const identity = await deps.credentials.get(lookupHash, async () => {
    const row = await findUserByApiKeyHash(deps.db, lookupHash);
    if (!row || !deps.cipher.matches(credentials.apiKey, row.ciphertext)) return null;
    const { realm, ...user } = row.user;
    return { user, realm, ciphertext: row.ciphertext };
  });
  if (!identity) throw new UnauthorizedError('Invalid API key');
  const { user, realm } = identity;
  if (user.deliveryEmail.toLowerCase() !== credentials.email.toLowerCase()) throw new UnauthorizedError('Invalid API key');
  if (!user.isActive) throw new UnauthorizedError('Account is deactivated');
  if (realm.deactivated) throw new UnauthorizedError('This organization has been deactivated');
  if (user.isBot && user.botType === 2) throw new UnauthorizedError('This API is not available to incoming webhook bots.');
  return { user, realm };
}
