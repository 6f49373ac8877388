// Read side of linkifiers: the list (GET /realm/linkifiers, /register's realm_linkifiers) and the
// compiled linkifiers rendering uses.
//
// Compiled linkifiers are kept per organization and version of its list (realm.linkifiers_version, a
// new random value with every change to the table, in the same transaction). The realm row each
// request carries comes from the per-process credential cache, which drops it when the database
// announces a change to the realm (its trigger NOTIFYs every process at commit), so a process renders
// with a version it knows to be current; a version it has not compiled is read (rows and version in one
// statement) and compiled once. Nothing else needs invalidating: a version's content never changes, so
// the copies are shared by every server of the Node process (tests run several).
import type { RawSql } from '../data/db.ts';
import type { Realm } from '../data/models.ts';
import { linkifiersOfRealm, linkifiersWithVersion } from '../data/linkifiers.repo.ts';
import { CompiledLinkifiers, type LinkifierRow } from '../lib/linkifiers.ts';
import type { LinkifierRendering } from '../lib/markdown/linkifiers.ts';
import { databaseCache } from '../lib/process-caches.ts';

/** The organization's linkifiers, in the order they apply. */
export async function linkifiersList(db: RawSql, realmId: number): Promise<LinkifierRow[]> {
  return linkifiersOfRealm(db, realmId);
}

const MAX_KEPT = 64;
const compiled = databaseCache<string, CompiledLinkifiers>();
const loading = databaseCache<string, Promise<CompiledLinkifiers>>();
const keyOf = (realmId: number, version: number) => `${realmId}:${version}`;

/** The organization's linkifiers compiled for rendering, at the version its realm row names. */
export async function realmLinkifiers(db: RawSql, realm: Pick<Realm, 'id' | 'linkifiersVersion'>): Promise<CompiledLinkifiers> {
  const key = keyOf(realm.id, realm.linkifiersVersion);
  const known = compiled.get(key);
  if (known) return known;
  const pending = loading.get(key);
  if (pending) return pending;
  const load = (async () => {
    const { version, rows } = await linkifiersWithVersion(db, realm.id);
    const fresh = new CompiledLinkifiers(rows);
    // Kept under the version read with the rows (a change may have committed since the realm row was
    // read: then the request renders with the newer list, which is also the one its realm will name).
    if (compiled.size >= MAX_KEPT) compiled.delete(compiled.keys().next().value!);
    compiled.set(keyOf(realm.id, version), fresh);
    return fresh;
  })();
  loading.set(key, load);
  try {
    return await load;
  } finally {
    loading.delete(key);
  }
}

/** What rendering a message of the organization needs of its linkifiers. */
export async function linkifierRendering(db: RawSql, realm: Pick<Realm, 'id' | 'linkifiersVersion' | 'url'>): Promise<LinkifierRendering> {
  return { linkifiers: await realmLinkifiers(db, realm), realmUrl: realm.url };
}
