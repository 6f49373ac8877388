// Code playgrounds (table `realm_playground`, Zulip's RealmPlayground): one per (language, name) and
// organization.
import type { Db, RawSql } from './db.ts';

export interface PlaygroundRow {
  id: number;
  name: string;
  pygments_language: string;
  url_template: string;
}

/** The organization's playgrounds, oldest first. */
export async function playgroundsOfRealm(db: RawSql, realmId: number): Promise<PlaygroundRow[]> {
  return db.$queryRaw<PlaygroundRow[]>`
    SELECT id, name, pygments_language, url_template FROM realm_playground WHERE realm_id = ${realmId}::int ORDER BY id`;
}

export async function findPlayground(db: RawSql, realmId: number, id: number): Promise<PlaygroundRow | null> {
  const rows = await db.$queryRaw<PlaygroundRow[]>`
    SELECT id, name, pygments_language, url_template FROM realm_playground WHERE realm_id = ${realmId}::int AND id = ${id}::int`;
  return rows[0] ?? null;
}

export async function playgroundExists(db: RawSql, realmId: number, pygmentsLanguage: string, name: string): Promise<boolean> {
  const rows = await db.$queryRaw<unknown[]>`
    SELECT 1 FROM realm_playground WHERE realm_id = ${realmId}::int AND pygments_language = ${pygmentsLanguage} AND name = ${name}`;
  return rows.length > 0;
}

export async function insertPlayground(db: Db, realmId: number, playground: Omit<PlaygroundRow, 'id'>): Promise<number> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`
    INSERT INTO realm_playground (realm_id, name, pygments_language, url_template)
    VALUES (${realmId}::int, ${playground.name}, ${playground.pygments_language}, ${playground.url_template})
    RETURNING id`;
  return rows[0]!.id;
}

export async function deletePlayground(db: Db, realmId: number, id: number): Promise<void> {
  await db.$executeRaw`DELETE FROM realm_playground WHERE realm_id = ${realmId}::int AND id = ${id}::int`;
}

/**
 * Resets the organization's default code block language to none when it is `language`; whether it did.
 * (Zulip does so when a playground of that language is removed.)
 */
export async function clearDefaultCodeBlockLanguage(db: Db, realmId: number, language: string): Promise<boolean> {
  return (await db.$executeRaw`UPDATE realm SET default_code_block_language = '' WHERE id = ${realmId}::int AND default_code_block_language = ${language}`) > 0;
}
