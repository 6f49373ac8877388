// POST and DELETE /users/me/alert_words (Zulip's do_add_alert_words / do_remove_alert_words): one
// transaction each, answering the whole new list, with an `alert_words` event carrying it to the
// user's own clients, sent even when nothing changed (as Zulip does). How the words flag messages is in
// actions/personal-flags.ts and lib/alert-words.ts.
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import type { Realm, User } from '../data/models.ts';
import { alertWordsOfUser, deleteAlertWords, insertAlertWords } from '../data/alert-words.repo.ts';
import { alertWordKey, wordsToAdd } from '../lib/alert-words.ts';
import type { AfterCommit } from '../events/bus.ts';

/** Adds the words (trimmed; empty ones, and keys the user has already, left out); returns the new list. */
export async function doAddAlertWords(deps: AppDeps, realm: Realm, user: User, words: string[], cachedTableWrites: CachedTableWrites): Promise<string[]> {
  const added = await inTransaction(deps.db, async (tx, afterCommit) => {
    await insertAlertWords(tx, user.id, wordsToAdd(words));
    return announce(tx, afterCommit, deps, realm, user);
  });
  cachedTableWrites.none();
  return added;
}

/** Removes the words, compared case-insensitively and as given (not trimmed); returns the new list. */
export async function doRemoveAlertWords(deps: AppDeps, realm: Realm, user: User, words: string[], cachedTableWrites: CachedTableWrites): Promise<string[]> {
  const left = await inTransaction(deps.db, async (tx, afterCommit) => {
    await deleteAlertWords(tx, user.id, [...new Set(words.map(alertWordKey))]);
    return announce(tx, afterCommit, deps, realm, user);
  });
  cachedTableWrites.none();
  return left;
}

async function announce(tx: Db, afterCommit: AfterCommit, deps: AppDeps, realm: Realm, user: User): Promise<string[]> {
  const list = await alertWordsOfUser(tx, user.id);
  const payload: EventData<'alert_words'> = { type: 'alert_words', alert_words: list };
  await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  return list;
}
