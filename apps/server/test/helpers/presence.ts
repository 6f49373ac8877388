// Presence in tests: reports through POST /users/me/presence, writing what a process took at once
// (instead of waiting for its flush interval), moving a user's stored presence back in time (what a
// minute or a week without reports would leave), and bots with API keys (Parley has no bot API yet).
import { randomBytes } from 'node:crypto';
import { createParleyClient, type ParleyClient } from '@parley/client';
import type { TestServer } from './test-server.ts';

/** A report (status active unless said), answered; throws on an error answer. */
export async function report(client: ParleyClient, body: { status?: string; ping_only?: boolean; new_user_input?: boolean; slim_presence?: boolean; last_update_id?: number; history_limit_days?: number } = {}): Promise<any> {
  const { data, error } = await client.POST('/users/me/presence', { body: { status: 'active', ...body } });
  if (!data) throw new Error(`presence: ${JSON.stringify(error)}`);
  return data;
}

/** Writes the reports the server process took and has not written yet (as its flush interval would). */
export const writeReports = (running: { deps: { presence: { flush(): Promise<void> } } }): Promise<void> => running.deps.presence.flush();

/**
 * Moves a user's stored presence `seconds` into the past (both times, keeping the gap between them), as
 * if they had reported nothing since; announced like any write, so that every process's copy follows.
 */
export async function agePresence(env: TestServer, userId: number, seconds: number): Promise<void> {
  await env.running.deps.db.$executeRawUnsafe(
    `WITH bumped AS (
       UPDATE user_presence SET last_connected_time = last_connected_time - make_interval(secs => $2),
         last_active_time = last_active_time - make_interval(secs => $2), last_update_id = nextval('user_presence_update_id_seq')
       WHERE user_id = $1 RETURNING realm_id, last_update_id)
     SELECT pg_notify('parley_presence', realm_id || ':' || last_update_id) FROM bumped`,
    userId,
    seconds,
  );
}

/** The user's stored presence (null: none), in milliseconds. */
export async function storedPresence(env: TestServer, userId: number): Promise<{ connectedMs: number; activeMs: number | null; updateId: number } | null> {
  const row = await env.running.deps.db.userPresence.findUnique({ where: { userId } });
  return row ? { connectedMs: row.lastConnectedTime.getTime(), activeMs: row.lastActiveTime?.getTime() ?? null, updateId: Number(row.lastUpdateId) } : null;
}

/** A generic bot of `ownerId` with its own API key. */
export async function createBot(env: TestServer, ownerId: number, label: string): Promise<{ id: number; email: string; client: ParleyClient }> {
  const email = `${label}-${randomBytes(3).toString('hex')}-bot@parley.test`;
  const db = env.running.deps.db;
  const bot = await db.user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: `Bot ${label}`, isBot: true, botType: 1, botOwnerId: ownerId, settings: { create: {} } },
  });
  const key = randomBytes(16).toString('hex');
  await db.apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
  return { id: bot.id, email, client: createParleyClient({ site: env.url, email, apiKey: key }) };
}

/** UNIX seconds now, as the server's timestamps are (whole seconds). */
export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
