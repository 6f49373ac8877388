// Caches a process keeps for the one database it serves (system group ids, compiled linkifiers):
// keyed by organization id, which is only unique within a database. A process that moves to another
// database (the test runner runs many test files, each on its own copy of one template database, in
// one process) forgets them all first.
const caches = new Set<{ clear(): void }>();

/** A Map that `forgetDatabaseCaches` empties. */
export function databaseCache<K, V>(): Map<K, V> {
  const cache = new Map<K, V>();
  caches.add(cache);
  return cache;
}

/** Empties every cache made by `databaseCache`. */
export function forgetDatabaseCaches(): void {
  for (const cache of caches) cache.clear();
}
