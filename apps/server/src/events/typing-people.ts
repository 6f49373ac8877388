// POST /typing without a query of its own: each process keeps the people it has sent typing notifications to and
// from (address and email_address_visibility, whether active, the three typing settings), filled on first use and
// dropped when the database announces a change, whoever wrote it: `parley_invalidate` user:<id> for the user's row
// (data/ migration 20261123070000), settings:<id> for their email_address_visibility (migration 20261123074500),
// `parley_typing_settings` <id> for their typing settings (migration 20261124120000). Nothing is kept while the listener is down (notifications could be
// missed), a load that overlapped an invalidation is used once but not kept, and every lookup first
// waits for the listener's barrier, so that it sees every change committed before it.
import type { Db } from '../data/db.ts';
import { typingPeople, type TypingPerson } from '../data/typing.repo.ts';
import type { DatabaseListener } from './listener.ts';
import { INVALIDATION_CHANNEL } from '../security/credential-cache.ts';

export const TYPING_SETTINGS_CHANNEL = 'parley_typing_settings';

/** At most this many people are kept per process (the oldest entries go first). */
const MAX_ENTRIES = 100_000;

export interface TypingPeopleCache {
  /** Users of the organization among `ids` (ascending; unknown ids left out), as typingPeople reads them. */
  people(db: Db, realmId: number, ids: number[]): Promise<TypingPerson[]>;
}

interface Entry {
  realmId: number;
  person: TypingPerson;
}

function createTypingPeopleCache(listener: DatabaseListener): TypingPeopleCache {
  const entries = new Map<number, Entry>();
  let generation = 0;
  const forget = (id: number) => {
    generation++;
    entries.delete(id);
  };
  const forgetAll = () => {
    generation++;
    entries.clear();
  };
  listener.onReset(forgetAll);
  listener.on(INVALIDATION_CHANNEL, (payload) => {
    const [kind, id] = payload.split(':');
    if (kind === 'user' || kind === 'settings') forget(Number(id));
    else if (kind === 'realm') forgetAll(); // rare; keeps the organization's users honest if it moved or was deleted
  });
  listener.on(TYPING_SETTINGS_CHANNEL, (payload) => forget(Number(payload)));
  // Nothing is kept before this process listens to the settings channel.
  let armed = false;
  void listener.listened(TYPING_SETTINGS_CHANNEL).then(() => {
    armed = true;
  });

  return {
    async people(db, realmId, ids) {
      // Every change committed before this call has been heard (a client that changed its settings
      // and then types, here or on another process, is served the new ones). One barrier round trip on
      // the listener connection serves every request waiting for it.
      await listener.barrier();
      const found: TypingPerson[] = [];
      const missing: number[] = [];
      for (const id of ids) {
        const entry = entries.get(id);
        if (entry === undefined) missing.push(id);
        else if (entry.realmId === realmId) found.push(entry.person);
      }
      if (missing.length > 0) {
        const startedAt = generation;
        const loaded = await typingPeople(db, realmId, missing);
        const keep = armed && generation === startedAt && listener.listening;
        for (const person of loaded) {
          found.push(person);
          if (!keep) continue;
          if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
          entries.set(person.id, { realmId, person });
        }
      }
      return sortById(found);
    },
  };
}

/** Ascending by id, in place: an insertion sort for the few people of a typing notification (no allocation). */
function sortById(people: TypingPerson[]): TypingPerson[] {
  if (people.length > 32) return people.sort((a, b) => a.id - b.id);
  for (let i = 1; i < people.length; i++) {
    const person = people[i]!;
    let j = i - 1;
    for (; j >= 0 && people[j]!.id > person.id; j--) people[j + 1] = people[j]!;
    people[j + 1] = person;
  }
  return people;
}

const caches = new WeakMap<DatabaseListener, TypingPeopleCache>();

/** The process's cache (one per listener connection, so per server instance). */
export function typingPeopleCache(listener: DatabaseListener): TypingPeopleCache {
  let cache = caches.get(listener);
  if (!cache) {
    cache = createTypingPeopleCache(listener);
    caches.set(listener, cache);
  }
  return cache;
}
