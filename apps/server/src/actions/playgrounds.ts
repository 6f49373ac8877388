// Code playgrounds (Zulip's check_add_realm_playground, do_remove_realm_playground): organization
// administrators add and remove them, one transaction each under the realm's lock, and every user's
// clients get a `realm_playgrounds` event with the whole new list. Removing the playground of the
// organization's default code block language resets that setting to none, with its `realm` event, as
// Zulip's view does.
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import { lockRealm } from '../data/users.repo.ts';
import { clearDefaultCodeBlockLanguage, deletePlayground, findPlayground, insertPlayground, playgroundExists, playgroundsOfRealm } from '../data/playgrounds.repo.ts';
import { requireAdmin } from '../access/roles.ts';
import { reloadActor } from '../access/users.ts';
import { checkPlayground, checkPygmentsLanguage, DUPLICATE_PLAYGROUND } from '../lib/playgrounds.ts';
import { pythonStrip } from '../lib/linkifiers.ts';
import { JsonableError } from '../errors.ts';

async function playgroundsEvent(tx: Db, realm: Realm): Promise<QueuedEvent> {
  const payload: EventData<'realm_playgrounds'> = { type: 'realm_playgrounds', realm_playgrounds: await playgroundsOfRealm(tx, realm.id) };
  return { audience: { everyone: true }, payload };
}

function changePlaygrounds<T>(deps: AppDeps, realm: Realm, actor: User, change: (tx: Db) => Promise<{ result: T; events: QueuedEvent[] }>): Promise<T> {
  return inTransaction(deps.db, async (tx, afterCommit: AfterCommit) => {
    await lockRealm(tx, realm.id);
    requireAdmin(await reloadActor(tx, realm, actor));
    const { result, events } = await change(tx);
    await deps.events.publish(tx, afterCommit, realm.id, [...events, await playgroundsEvent(tx, realm)]);
    return result;
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError(DUPLICATE_PLAYGROUND, { data: { errors: { __all__: [DUPLICATE_PLAYGROUND] } } });
    throw error;
  });
}

/** POST /realm/playgrounds: the new playground's id. */
export async function doAddPlayground(deps: AppDeps, realm: Realm, actor: User, input: { name: string; pygments_language: string; url_template: string }): Promise<number> {
  const playground = { name: pythonStrip(input.name), pygments_language: pythonStrip(input.pygments_language), url_template: pythonStrip(input.url_template) };
  return changePlaygrounds(deps, realm, actor, async (tx) => {
    checkPygmentsLanguage(input.pygments_language);
    const failures = checkPlayground(playground);
    if (!failures.has('name') && !failures.has('pygments_language') && (await playgroundExists(tx, realm.id, playground.pygments_language, playground.name))) {
      failures.add('__all__', DUPLICATE_PLAYGROUND);
    }
    failures.throwIfAny();
    return { result: await insertPlayground(tx, realm.id, playground), events: [] };
  });
}

/** DELETE /realm/playgrounds/{playground_id}. */
export async function doRemovePlayground(deps: AppDeps, realm: Realm, actor: User, id: number): Promise<void> {
  await changePlaygrounds(deps, realm, actor, async (tx) => {
    const playground = await findPlayground(tx, realm.id, id);
    if (!playground) throw new JsonableError('Invalid playground');
    const events: QueuedEvent[] = [];
    if (await clearDefaultCodeBlockLanguage(tx, realm.id, playground.pygments_language)) {
      events.push({ audience: { everyone: true }, payload: { type: 'realm', op: 'update', property: 'default_code_block_language', value: '' } });
    }
    await deletePlayground(tx, realm.id, id);
    return { result: undefined, events };
  });
}
