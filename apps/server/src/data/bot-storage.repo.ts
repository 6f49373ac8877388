// A bot's key/value storage (table bot_storage_data, migration 20261127200000_bots). Sizes are counted
// in characters (PostgreSQL's length(), code points), as Zulip counts them.
import type { Db } from './db.ts';

/** Serialises the changes of one bot's storage (the size check holds under concurrent writes). */
export async function lockBotStorage(db: Db, botId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(7265021, ${botId}::int)`;
}

/** The bot's entries: all of them, or those of `keys` that exist. */
export async function readBotStorage(db: Db, botId: number, keys?: readonly string[]): Promise<Map<string, string>> {
  const rows = await db.botStorageData.findMany({ where: { botId, ...(keys ? { key: { in: [...keys] } } : {}) }, orderBy: { key: 'asc' } });
  return new Map(rows.map((r) => [r.key, r.value]));
}

/** Characters of the bot's stored keys and values, in all and for the given keys. */
export async function botStorageSizes(db: Db, botId: number, keys: readonly string[]): Promise<{ total: number; ofKeys: number }> {
  const [row] = await db.$queryRaw<Array<{ total: bigint | null; of_keys: bigint | null }>>`
    SELECT sum(length(key) + length(value)) AS total,
           sum(length(key) + length(value)) FILTER (WHERE key = ANY(${[...keys]}::text[])) AS of_keys
    FROM bot_storage_data WHERE bot_id = ${botId}::int`;
  return { total: Number(row?.total ?? 0), ofKeys: Number(row?.of_keys ?? 0) };
}

/** Stores entries, replacing the values of existing keys (one statement). */
export async function writeBotStorage(db: Db, botId: number, entries: ReadonlyMap<string, string>): Promise<void> {
  if (entries.size === 0) return;
  await db.$executeRaw`
    INSERT INTO bot_storage_data (bot_id, key, value)
    SELECT ${botId}::int, k, v FROM unnest(${[...entries.keys()]}::text[], ${[...entries.values()]}::text[]) AS t(k, v)
    ON CONFLICT (bot_id, key) DO UPDATE SET value = EXCLUDED.value`;
}

/** Removes the given keys (all entries when absent); how many rows went. */
export async function deleteBotStorage(db: Db, botId: number, keys?: readonly string[]): Promise<number> {
  return (await db.botStorageData.deleteMany({ where: { botId, ...(keys ? { key: { in: [...keys] } } : {}) } })).count;
}
