// Bot storage (Zulip's /bot_storage, what zulip_bots' bot_handler.storage uses): each bot its own
// string-to-string store; GET by keys or whole, PUT adding or replacing, DELETE by keys or whole;
// `Key does not exist.` failing a whole read or removal (nothing removed); the size limit (Zulip's
// USER_STATE_SIZE_LIMIT, set low here) counted in characters with nothing stored on a refusal; only
// bots (Zulip since feature level 494); no events.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';

/** A limit small enough to reach in a test (Zulip's own tests use 100 too). */
const LIMIT = 100;
const env = useTestServer({ config: { botStorageSizeLimit: LIMIT } });
const db = () => env.running.deps.db;

interface Bot {
  id: number;
  auth: string;
  client: ParleyClient;
}

/** A bot of hamlet's through POST /bots. */
async function createBot(botType = 1): Promise<Bot> {
  const short = `store${randomBytes(3).toString('hex')}`;
  const res = await env.raw('/bots', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ full_name: `Storage ${short}`, short_name: short, bot_type: String(botType) }) });
  if (res.status !== 200) throw new Error(`create-bot failed: ${JSON.stringify(res.body)}`);
  const host = new URL((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url).hostname;
  const email = `${short}-bot@${host}`;
  return { id: res.body.user_id, auth: basicAuth(email, res.body.api_key), client: createParleyClient({ site: env.url, email, apiKey: res.body.api_key }) };
}

const put = (bot: Bot, storage: Record<string, unknown>) =>
  env.raw('/bot_storage', { method: 'PUT', headers: { Authorization: bot.auth }, body: new URLSearchParams({ storage: JSON.stringify(storage) }) });
const get = (bot: Bot, keys?: unknown) =>
  env.raw(`/bot_storage${keys === undefined ? '' : `?${new URLSearchParams({ keys: JSON.stringify(keys) })}`}`, { headers: { Authorization: bot.auth } });
const remove = (bot: Bot, keys?: unknown) =>
  env.raw('/bot_storage', { method: 'DELETE', headers: { Authorization: bot.auth }, ...(keys === undefined ? {} : { body: new URLSearchParams({ keys: JSON.stringify(keys) }) }) });
const stored = async (bot: Bot) => Object.fromEntries((await db().botStorageData.findMany({ where: { botId: bot.id } })).map((r) => [r.key, r.value]));

describe('PUT /bot_storage', () => {
  it("adds entries and replaces values, in the bot's own storage only, sending no event", async () => {
    const bot = await createBot();
    const other = await createBot();
    const mark = await markEvents(env);
    const res = await put(bot, { 'key 1': 'value 1', 'key 2': 'value 2', 'key 3': 'value 3' });
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect((await put(bot, { 'key 1': 'new value', 'key 4': 'value 4' })).status).toBe(200);
    expect(await stored(bot)).toEqual({ 'key 1': 'new value', 'key 2': 'value 2', 'key 3': 'value 3', 'key 4': 'value 4' });
    expect(await stored(other)).toEqual({});
    expect((await put(other, { 'key 1': 'theirs' })).status).toBe(200);
    expect((await stored(bot))['key 1']).toBe('new value');
    // The typed client sends the same thing.
    expect((await bot.client.PUT('/bot_storage', { body: { storage: { typed: 'yes' } } })).data).toMatchObject({ result: 'success' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('keeps a bot within its storage limit, counting characters of keys and values; a refused request stores nothing', async () => {
    const bot = await createBot();
    const key = 'capacity-filling entry';
    expect((await put(bot, { [key]: 'x'.repeat(LIMIT - key.length) })).status).toBe(200);
    expectJsonError(await put(bot, { 'too much data': 'a few bits too long', another: '' }), 400, 'Request exceeds storage limit by 39 characters. The limit is 100 characters.');
    expect(Object.keys(await stored(bot))).toEqual([key]);
    // Replacing a value counts only the difference; emoji are one character each.
    expect((await put(bot, { [key]: '🙂'.repeat(LIMIT - key.length) })).status).toBe(200);
    expectJsonError(await put(bot, { [key]: '🙂'.repeat(LIMIT - key.length + 1) }), 400, 'Request exceeds storage limit by 1 characters. The limit is 100 characters.');
    // Another bot has its own room.
    const second = await createBot();
    expect((await put(second, { 'another big entry': 'x'.repeat(LIMIT - 40) })).status).toBe(200);
    expect((await put(second, { 'normal entry': 'abcd' })).status).toBe(200);
  });

  it('refuses values that are not strings and storage that is not a JSON object', async () => {
    const bot = await createBot();
    expectJsonError(await put(bot, { foo: [1, 2, 3] }), 400, 'storage["foo"] is not a string');
    expectJsonError(await env.raw('/bot_storage', { method: 'PUT', headers: { Authorization: bot.auth }, body: new URLSearchParams({ storage: 'not json' }) }), 400, 'storage is not valid JSON');
    expectJsonError(await env.raw('/bot_storage', { method: 'PUT', headers: { Authorization: bot.auth }, body: new URLSearchParams({ storage: '["a"]' }) }), 400, 'storage is not a dict');
    expectJsonError(await env.raw('/bot_storage', { method: 'PUT', headers: { Authorization: bot.auth } }), 400, "Missing 'storage' argument", 'REQUEST_VARIABLE_MISSING');
    expect(await stored(bot)).toEqual({});
  });

  it.each(['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'] as const)('is for bots only: %s is refused', async (person: Person) => {
    expectJsonError(
      await env.raw('/bot_storage', { method: 'PUT', as: person, body: new URLSearchParams({ storage: JSON.stringify({ a: 'b' }) }) }),
      400,
      'Must be a bot user',
      'PERMISSION_DENIED',
    );
    expectJsonError(await env.raw('/bot_storage', { as: person }), 400, 'Must be a bot user', 'PERMISSION_DENIED');
    expectJsonError(await env.raw('/bot_storage', { method: 'DELETE', as: person }), 400, 'Must be a bot user', 'PERMISSION_DENIED');
    expect(await db().botStorageData.count({ where: { botId: env.users[person].id } })).toBe(0);
  });
});

describe('GET /bot_storage', () => {
  it('reads the given keys, or every entry; a key the bot has not stored fails the whole read', async () => {
    const bot = await createBot();
    await put(bot, { 'key 1': 'value 1', 'key 2': 'value 2', 'key 3': 'value 3' });
    expect((await get(bot, ['key 1', 'key 3'])).body).toEqual({ result: 'success', msg: '', storage: { 'key 1': 'value 1', 'key 3': 'value 3' } });
    expect((await get(bot)).body.storage).toEqual({ 'key 1': 'value 1', 'key 2': 'value 2', 'key 3': 'value 3' });
    expect((await get(bot, [])).body.storage).toEqual({});
    expectJsonError(await get(bot, ['key 1', 'nonexistent key']), 400, 'Key does not exist.');
    expectJsonError(await env.raw('/bot_storage?keys=key', { headers: { Authorization: bot.auth } }), 400, 'keys is not valid JSON');
    // The typed client, as the Python client sends it (keys JSON-encoded in the query string).
    const typed = await bot.client.GET('/bot_storage', { params: { query: { keys: ['key 2'] } } });
    expect(typed.data!.storage).toEqual({ 'key 2': 'value 2' });
    // Another bot's keys do not exist for this one.
    const other = await createBot();
    expectJsonError(await get(other, ['key 1']), 400, 'Key does not exist.');
  });
});

describe('DELETE /bot_storage', () => {
  it('removes the given keys, or everything; a key the bot has not stored removes nothing', async () => {
    const bot = await createBot();
    await put(bot, { 'key 1': 'value 1', 'key 2': 'value 2', 'key 3': 'value 3', 'key 4': 'value 4' });
    expect((await remove(bot, ['key 1', 'key 2'])).body).toEqual({ result: 'success', msg: '' });
    expect(await stored(bot)).toEqual({ 'key 3': 'value 3', 'key 4': 'value 4' });
    expectJsonError(await remove(bot, ['key 3', 'nonexistent key']), 400, 'Key does not exist.');
    expectJsonError(await remove(bot, ['key 3', 'key 3']), 400, 'Key does not exist.');
    expect(await stored(bot)).toEqual({ 'key 3': 'value 3', 'key 4': 'value 4' });
    expect((await remove(bot)).status).toBe(200);
    expect(await stored(bot)).toEqual({});
    expect((await get(bot)).body.storage).toEqual({});
  });

  it("is refused to an incoming webhook bot's key, as every endpoint but sending messages", async () => {
    const hook = await createBot(2);
    expectJsonError(await remove(hook), 401, 'This API is not available to incoming webhook bots.');
    expectJsonError(await put(hook, { a: 'b' }), 401, 'This API is not available to incoming webhook bots.');
  });
});
