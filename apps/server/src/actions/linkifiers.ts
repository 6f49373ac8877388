// Linkifiers (Zulip's do_add_linkifier, do_update_linkifier, do_remove_linkifier,
// check_reorder_linkifiers): organization administrators change them, one transaction each under the
// realm's lock, and every user's clients get a `realm_linkifiers` event with the whole new list (only
// queues that declared `linkifier_url_template` receive it: events/present.ts). The change gives the
// organization a new linkifiers version (a trigger), so every process compiles the new list before it
// renders with it (queries/linkifiers.ts). Messages already sent keep their rendering, as in Zulip.
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import { lockRealm } from '../data/users.repo.ts';
import { deleteLinkifier, findLinkifier, insertLinkifier, linkifiersOfRealm, patternTaken, reorderLinkifiers, updateLinkifier } from '../data/linkifiers.repo.ts';
import { requireAdmin } from '../access/roles.ts';
import { reloadActor } from '../access/users.ts';
import { checkLinkifier, DUPLICATE_LINKIFIER, pythonStrip } from '../lib/linkifiers.ts';
import { JsonableError } from '../errors.ts';

const notFound = () => new JsonableError('Linkifier not found.');

/** A change by an administrator (checked on their row as committed, under the realm's lock), then the event. */
function changeLinkifiers<T>(deps: AppDeps, realm: Realm, actor: User, change: (tx: Db) => Promise<{ result: T; announce: boolean }>): Promise<T> {
  return inTransaction(deps.db, async (tx, afterCommit: AfterCommit) => {
    await lockRealm(tx, realm.id);
    requireAdmin(await reloadActor(tx, realm, actor));
    const { result, announce } = await change(tx);
    if (announce) {
      const payload: EventData<'realm_linkifiers'> = { type: 'realm_linkifiers', realm_linkifiers: await linkifiersOfRealm(tx, realm.id) };
      await deps.events.publish(tx, afterCommit, realm.id, [{ audience: { everyone: true }, payload }]);
    }
    return result;
  }).catch((error) => {
    // The realm's lock makes this a safety net: the pattern was checked free under it.
    if (isUniqueViolation(error)) throw new JsonableError(DUPLICATE_LINKIFIER, { data: { errors: { __all__: [DUPLICATE_LINKIFIER] } } });
    throw error;
  });
}

/** Zulip's full_clean: the pair's checks, then the pattern's uniqueness in the organization. */
async function validate(tx: Db, realm: Realm, pattern: string, urlTemplate: string, exceptId: number | null): Promise<void> {
  const failures = checkLinkifier(pattern, urlTemplate);
  if (!failures.has('pattern') && (await patternTaken(tx, realm.id, pattern, exceptId))) failures.add('__all__', DUPLICATE_LINKIFIER);
  failures.throwIfAny();
}

/** POST /realm/filters: the new linkifier's id. */
export async function doAddLinkifier(deps: AppDeps, realm: Realm, actor: User, input: { pattern: string; url_template: string }): Promise<number> {
  const pattern = pythonStrip(input.pattern);
  const urlTemplate = pythonStrip(input.url_template);
  return changeLinkifiers(deps, realm, actor, async (tx) => {
    await validate(tx, realm, pattern, urlTemplate, null);
    return { result: await insertLinkifier(tx, realm.id, pattern, urlTemplate), announce: true };
  });
}

/** PATCH /realm/filters/{filter_id}. */
export async function doUpdateLinkifier(deps: AppDeps, realm: Realm, actor: User, id: number, input: { pattern: string; url_template: string }): Promise<void> {
  const pattern = pythonStrip(input.pattern);
  const urlTemplate = pythonStrip(input.url_template);
  await changeLinkifiers(deps, realm, actor, async (tx) => {
    if (!(await findLinkifier(tx, realm.id, id))) throw notFound();
    await validate(tx, realm, pattern, urlTemplate, id);
    await updateLinkifier(tx, realm.id, id, pattern, urlTemplate);
    return { result: undefined, announce: true };
  });
}

/** DELETE /realm/filters/{filter_id}. */
export async function doRemoveLinkifier(deps: AppDeps, realm: Realm, actor: User, id: number): Promise<void> {
  await changeLinkifiers(deps, realm, actor, async (tx) => {
    if (!(await deleteLinkifier(tx, realm.id, id))) throw notFound();
    return { result: undefined, announce: true };
  });
}

/** PATCH /realm/linkifiers: the list must name every linkifier once; nothing happens (no event) when there are none. */
export async function doReorderLinkifiers(deps: AppDeps, realm: Realm, actor: User, orderedIds: number[]): Promise<void> {
  await changeLinkifiers(deps, realm, actor, async (tx) => {
    const ids = new Set(orderedIds);
    if (ids.size < orderedIds.length) throw new JsonableError('The ordered list must not contain duplicated linkifiers');
    const existing = await linkifiersOfRealm(tx, realm.id);
    if (existing.length !== ids.size || existing.some((l) => !ids.has(l.id))) {
      throw new JsonableError('The ordered list must enumerate all existing linkifiers exactly once');
    }
    if (existing.length === 0) return { result: undefined, announce: false };
    await reorderLinkifiers(tx, realm.id, orderedIds);
    return { result: undefined, announce: true };
  });
}
