// Per-process cache of authenticated identities (API key → user → organization), so that the hot path
// of every request needs no database round trip. Correctness comes first:
// - entries are dropped when the database announces a change to the user, their API key or their
//   organization (triggers on those tables NOTIFY `parley_invalidate` at commit, whoever wrote);
// - nothing is cached while the notification connection is down, and everything is dropped when it
//   goes down or comes back (notifications may have been missed);
// - a lookup that was under way while any invalidation arrived is used once but not cached, so a
//   stale read can never outlive the invalidation that should have removed it;
// - entries also expire after a while, as a last line of defence.
import type { Realm, User } from '../data/models.ts';
import type { DatabaseListener } from '../events/listener.ts';

export interface CachedIdentity {
  user: User;
  realm: Realm;
  ciphertext: string;
}

interface Entry {
  value: CachedIdentity;
  expiresAt: number;
}

export const INVALIDATION_CHANNEL = 'parley_invalidate';

export interface CredentialCache {
  /** The identity for an API key's lookup hash, from memory or through `load` (null: no such key). */
  get(lookupHash: string, load: () => Promise<CachedIdentity | null>): Promise<CachedIdentity | null>;
  /** The identity for an API key's lookup hash when it is in memory (and not expired), without waiting. */
  peek(lookupHash: string): CachedIdentity | undefined;
  /** The organization answering unauthenticated requests, from memory or through `load`. */
  defaultRealm(load: () => Promise<Realm | null>): Promise<Realm | null>;
  readonly size: number;
}

export function createCredentialCache(listener: DatabaseListener, options: { maxEntries?: number; ttlMs?: number } = {}): CredentialCache {
  const maxEntries = options.maxEntries ?? 50_000;
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  const entries = new Map<string, Entry>();
  const hashesByUser = new Map<number, Set<string>>();
  /**
   * One copy of each organization's row for all its cached users (the row is ~2 KB in memory: 10,000
   * users present would otherwise hold 10,000 copies). Dropped with the organization's entries.
   */
  const realms = new Map<number, Realm>();
  let realmForAnonymous: { realm: Realm; expiresAt: number } | null = null;
  /** Bumped by every invalidation: loads that started before a bump are not cached. */
  let generation = 0;

  const forget = (hash: string) => {
    const entry = entries.get(hash);
    if (!entry) return;
    entries.delete(hash);
    const set = hashesByUser.get(entry.value.user.id);
    set?.delete(hash);
    if (set && set.size === 0) hashesByUser.delete(entry.value.user.id);
  };
  const clear = () => {
    generation++;
    entries.clear();
    hashesByUser.clear();
    realms.clear();
    realmForAnonymous = null;
  };

  listener.onReset(clear);
  listener.on(INVALIDATION_CHANNEL, (payload) => {
    generation++;
    const [kind, idText] = payload.split(':');
    const id = Number(idText);
    if (kind === 'user') {
      for (const hash of [...(hashesByUser.get(id) ?? [])]) forget(hash);
    } else if (kind === 'realm') {
      for (const [hash, entry] of entries) if (entry.value.realm.id === id) forget(hash);
      realms.delete(id);
      if (realmForAnonymous?.realm.id === id) realmForAnonymous = null;
    }
    // other kinds (profile values, directory) concern other caches
  });

  return {
    get size() {
      return entries.size;
    },
    peek(lookupHash) {
      const hit = entries.get(lookupHash);
      return hit && hit.expiresAt > Date.now() ? hit.value : undefined;
    },
    async get(lookupHash, load) {
      const hit = entries.get(lookupHash);
      if (hit && hit.expiresAt > Date.now()) return hit.value;
      if (hit) forget(lookupHash);
      const startedAt = generation;
      const value = await load();
      if (value && listener.listening && generation === startedAt) {
        // No change to the organization since this load began (it would have bumped the generation
        // and dropped the shared copy): the shared copy, when there is one, is the row as loaded.
        const shared = realms.get(value.realm.id);
        if (shared) value.realm = shared;
        else realms.set(value.realm.id, value.realm);
        if (entries.size >= maxEntries) forget(entries.keys().next().value!);
        entries.set(lookupHash, { value, expiresAt: Date.now() + ttlMs });
        const set = hashesByUser.get(value.user.id) ?? new Set<string>();
        set.add(lookupHash);
        hashesByUser.set(value.user.id, set);
      }
      return value;
    },
    async defaultRealm(load) {
      if (realmForAnonymous && realmForAnonymous.expiresAt > Date.now()) return realmForAnonymous.realm;
      const startedAt = generation;
      const realm = await load();
      if (realm && listener.listening && generation === startedAt) realmForAnonymous = { realm, expiresAt: Date.now() + ttlMs };
      return realm;
    },
  };
}
