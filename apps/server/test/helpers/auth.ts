// Credentials for raw HTTP requests: HTTP Basic headers and API keys.
import { expect } from 'vitest';
import { TEST_PASSWORD, type Person } from './fixtures.ts';
import type { TestServer } from './test-server.ts';

/** The Authorization header value of HTTP Basic authentication with `email:key`. */
export const basicAuth = (email: string, key: string): string => `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`;

/** The Authorization header of a test person, or of an account made for the test (which carries its own). */
export const authorizationOf = (env: TestServer, who: Person | { auth: string }): string =>
  typeof who === 'string' ? basicAuth(env.users[who].email, env.users[who].apiKey) : who.auth;

/** A user's current API key, read from the database (setup only: fetch_api_key is tested on its own). */
export async function apiKeyOf(env: TestServer, userId: number): Promise<string> {
  const row = await env.running.deps.db.apiKey.findUniqueOrThrow({ where: { userId } });
  return env.running.deps.cipher.decrypt(row.ciphertext);
}

/** An API key through POST /fetch_api_key (form-encoded username and password), which must succeed. */
export async function fetchApiKey(env: TestServer, email: string, password = TEST_PASSWORD): Promise<string> {
  const res = await env.raw('/fetch_api_key', {
    method: 'POST',
    body: new URLSearchParams({ username: email, password }).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  expect(res.status).toBe(200);
  return res.body.api_key;
}
