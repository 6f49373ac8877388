// Logging in with a password to obtain the API key (POST /fetch_api_key).
import type { AppDeps } from '../deps.ts';
import type { Realm } from '../data/models.ts';
import { findUserByDeliveryEmail } from '../data/users.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { JsonableError } from '../errors.ts';
import { verifyPassword } from '../security/passwords.ts';
import { getOrCreateApiKey } from './users.ts';

// Argon2id hash of a random string; makes the unknown-user path cost the same as a real check.
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$cGFybGV5ZHVtbXlzYWx0$3zQ8O4JfS0r7D5Vt9yY2a8cXlVqg9u4Wm1yq5bJd2kE';

/** The caller's API key for a correct e-mail address and password, with Zulip's errors otherwise. */
export async function doFetchApiKey(deps: AppDeps, realm: Realm, credentials: { username: string; password: string }): Promise<{ api_key: string; email: string; user_id: number }> {
  const username = credentials.username.trim();
  if (!/^[^\s@]+@[^\s@]+$/.test(username)) throw new JsonableError('Enter a valid email address.');
  const user = await findUserByDeliveryEmail(deps.db, realm.id, username);
  // Verify even for unknown users, so that response time does not reveal which addresses exist.
  const ok = await verifyPassword(credentials.password, user?.passwordHash ?? DUMMY_HASH);
  if (!user || !ok) throw new JsonableError('Your username or password is incorrect', { status: 401, code: 'AUTHENTICATION_FAILED' });
  if (!user.isActive) throw new JsonableError('Account is deactivated', { status: 401, code: 'USER_DEACTIVATED' });
  const userRealm = await findRealmById(deps.db, user.realmId);
  if (!userRealm || userRealm.deactivated) throw new JsonableError('This organization has been deactivated', { status: 401, code: 'REALM_DEACTIVATED' });
  return { api_key: await getOrCreateApiKey(deps, user), email: user.deliveryEmail, user_id: user.id };
}
