// The people of a test organization beyond the fixed test users: the organization's active users by
// role, and new accounts created through the API for a test.
import { randomBytes } from 'node:crypto';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { apiKeyOf, basicAuth } from './auth.ts';
import { TEST_PASSWORD, type Person } from './fixtures.ts';
import type { TestServer } from './test-server.ts';

/** Zulip's role values: owner, administrator, moderator, member, guest. */
export type Role = 100 | 200 | 300 | 400 | 600;

export interface UserRole {
  id: number;
  role: number;
}

/** The active users of an organization (bots and the bootstrap owner included), by ascending id. */
export function activeUsers(env: TestServer, realmId: number): Promise<UserRole[]> {
  return env.running.deps.db.user.findMany({ where: { realmId, isActive: true }, select: { id: true, role: true }, orderBy: { id: 'asc' } });
}

/** The ids of the owners and administrators among `users`. */
export const adminIds = (users: UserRole[]): number[] => users.filter((u) => u.role <= 200).map((u) => u.id);

/** The ids of everyone but the guests among `users`. */
export const nonGuestIds = (users: UserRole[]): number[] => users.filter((u) => u.role !== 600).map((u) => u.id);

/** An e-mail address no other test uses: `<label>-<8 hex digits>@parley.test`. */
export const uniqueEmail = (label: string): string => `${label}-${randomBytes(4).toString('hex')}@parley.test`;

/**
 * A new account with a unique e-mail address (see uniqueEmail) and TEST_PASSWORD, created by iago; any
 * role but member is then given by desdemona (an owner) through PATCH /users/{user_id}.
 */
export async function createUser(env: TestServer, options: { label: string; fullName: string; role?: Role }): Promise<{ id: number; email: string }> {
  const email = uniqueEmail(options.label);
  const { data, error } = await env.client('iago').POST('/users', { body: { email, password: TEST_PASSWORD, full_name: options.fullName } });
  if (!data) throw new Error(`setup: create-user failed: ${JSON.stringify(error)}`);
  if (options.role !== undefined && options.role !== 400) await setRole(env, data.user_id, options.role);
  return { id: data.user_id, email };
}

/** A new account of a test (see createUser) with what a client needs to act as it. */
export interface Account {
  id: number;
  email: string;
  fullName: string;
  /** Its API key (read from the database). */
  key: string;
  /** The Authorization header of HTTP Basic authentication with its key. */
  auth: string;
  /** A typed client authenticated as it. */
  client: ParleyClient;
}

/** A new account (see createUser) with its API key, Authorization header and typed client. */
export async function createAccount(env: TestServer, options: { label: string; fullName: string; role?: Role }): Promise<Account> {
  const { id, email } = await createUser(env, options);
  const key = await apiKeyOf(env, id);
  return { id, email, fullName: options.fullName, key, auth: basicAuth(email, key), client: createParleyClient({ site: env.url, email, apiKey: key }) };
}

/** Gives a user a role, as desdemona (an owner). */
export async function setRole(env: TestServer, userId: number, role: Role): Promise<void> {
  const { error } = await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: userId } }, body: { role } });
  if (error) throw new Error(`setup: role change failed: ${JSON.stringify(error)}`);
}

/** Deactivates a user through DELETE /users/{user_id}, as `as` (an administrator). */
export async function deactivateUser(env: TestServer, userId: number, as: Person = 'iago'): Promise<void> {
  const { error } = await env.client(as).DELETE('/users/{user_id}', { params: { path: { user_id: userId } } });
  if (error) throw new Error(`setup: deactivation failed: ${JSON.stringify(error)}`);
}

/** A new member (see createUser), deactivated at once by iago; returns the user id. */
export async function createDeactivatedUser(env: TestServer, label: string): Promise<number> {
  const { id } = await createUser(env, { label, fullName: 'Gone User' });
  await deactivateUser(env, id);
  return id;
}

/** A user as GET /users/{user_id} shows it to `as` (custom profile fields included, no gravatar hashing). */
export async function readUser(env: TestServer, userId: number, as: Person) {
  const { data, error } = await env.client(as).GET('/users/{user_id}', {
    params: { path: { user_id: userId }, query: { client_gravatar: false, include_custom_profile_fields: true } },
  });
  if (!data) throw new Error(`read-back of user ${userId} failed: ${JSON.stringify(error)}`);
  return data.user;
}
