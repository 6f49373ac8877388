// Linkifiers (table `realm_linkifier`, Zulip's RealmFilter): an organization's patterns with their URL
// templates and their order. Every write to the table gives realm.linkifiers_version a new value (a
// trigger of migration 20261127180000_linkifiers), which tells each process that its compiled copy is
// out of date (queries/linkifiers.ts).
import type { Db, RawSql } from './db.ts';
import type { LinkifierRow } from '../lib/linkifiers.ts';

/** The organization's linkifiers in the order they apply (`order`, then id). */
export async function linkifiersOfRealm(db: RawSql, realmId: number): Promise<LinkifierRow[]> {
  return db.$queryRaw<LinkifierRow[]>`
    SELECT id, pattern, url_template FROM realm_linkifier WHERE realm_id = ${realmId}::int ORDER BY "order", id`;
}

/** The linkifiers and the version of the list they are, read in one statement (one snapshot). */
export async function linkifiersWithVersion(db: RawSql, realmId: number): Promise<{ version: number; rows: LinkifierRow[] }> {
  const found = await db.$queryRaw<Array<{ version: number; rows: LinkifierRow[] }>>`
    SELECT r.linkifiers_version AS version,
           COALESCE((SELECT json_agg(json_build_object('id', l.id, 'pattern', l.pattern, 'url_template', l.url_template) ORDER BY l."order", l.id)
                     FROM realm_linkifier l WHERE l.realm_id = r.id), '[]'::json) AS rows
    FROM realm r WHERE r.id = ${realmId}::int`;
  return found[0] ?? { version: 0, rows: [] };
}

export async function findLinkifier(db: RawSql, realmId: number, id: number): Promise<LinkifierRow | null> {
  const rows = await db.$queryRaw<LinkifierRow[]>`
    SELECT id, pattern, url_template FROM realm_linkifier WHERE realm_id = ${realmId}::int AND id = ${id}::int`;
  return rows[0] ?? null;
}

/** Whether another linkifier of the organization has this pattern (the unique pair of Zulip's model). */
export async function patternTaken(db: RawSql, realmId: number, pattern: string, exceptId: number | null): Promise<boolean> {
  const rows = await db.$queryRaw<unknown[]>`
    SELECT 1 FROM realm_linkifier WHERE realm_id = ${realmId}::int AND pattern = ${pattern} AND id IS DISTINCT FROM ${exceptId}::int`;
  return rows.length > 0;
}

/** Adds a linkifier after the organization's others; returns its id. */
export async function insertLinkifier(db: Db, realmId: number, pattern: string, urlTemplate: string): Promise<number> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`
    INSERT INTO realm_linkifier (realm_id, pattern, url_template, "order")
    SELECT ${realmId}::int, ${pattern}, ${urlTemplate}, COALESCE(MAX("order") + 1, 0) FROM realm_linkifier WHERE realm_id = ${realmId}::int
    RETURNING id`;
  return rows[0]!.id;
}

export async function updateLinkifier(db: Db, realmId: number, id: number, pattern: string, urlTemplate: string): Promise<void> {
  await db.$executeRaw`UPDATE realm_linkifier SET pattern = ${pattern}, url_template = ${urlTemplate} WHERE realm_id = ${realmId}::int AND id = ${id}::int`;
}

export async function deleteLinkifier(db: Db, realmId: number, id: number): Promise<boolean> {
  return (await db.$executeRaw`DELETE FROM realm_linkifier WHERE realm_id = ${realmId}::int AND id = ${id}::int`) > 0;
}

/** Numbers the linkifiers 0, 1, 2… in the order of `ids` (which names each of them once). */
export async function reorderLinkifiers(db: Db, realmId: number, ids: number[]): Promise<void> {
  await db.$executeRaw`
    UPDATE realm_linkifier l SET "order" = o.position - 1
    FROM unnest(${ids}::int[]) WITH ORDINALITY AS o(id, position)
    WHERE l.realm_id = ${realmId}::int AND l.id = o.id AND l."order" IS DISTINCT FROM o.position - 1`;
}
