// Presence (Zulip's zerver/actions/presence.py): POST /users/me/presence takes the user's report into
// this process's buffer (presence/buffer.ts) and answers from this process's copy (queries/presence.ts);
// the buffer writes reports in batches with flushPresenceReports. Turning `presence_enabled` off or on
// writes the user's presence at once (presenceEnabledChanged).
//
// Every write of an organization's presence takes its presence lock, draws update ids under it, stores
// its `presence` events (when Zulip would send them) and announces the organization's newest update
// id, all in one transaction.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import { countActiveUsers } from '../data/users.repo.ts';
import { announcePresenceChange, deletePresence, lockPresenceOfRealm, presenceTargets, writePresence, type PresenceTarget, type PresenceWrite } from '../data/presence.repo.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import { JsonableError } from '../errors.ts';
import { requireHuman } from '../access/roles.ts';
import { publicEmailOf } from '../access/users.ts';
import {
  applyReport,
  DISABLED_PRESENCE_AGE_SECS,
  presenceEventPayload,
  USER_LIMIT_FOR_PRESENCE_EVENTS,
  type PresenceReport,
  type PresenceTimes,
} from '../lib/presence.ts';
import { presenceCopies, type PresenceAnswer } from '../queries/presence.ts';

export interface PresenceUpdate {
  status: string;
  pingOnly: boolean;
  slimPresence: boolean;
  lastUpdateId: number | undefined;
  historyLimitDays: number | undefined;
}

/**
 * POST /users/me/presence (Zulip's update_active_status_backend). `new_user_input` only feeds Zulip's
 * usage statistics, which Parley does not keep. The report is written with the next batch; the answer
 * shows the caller's presence as that write will make it. Nothing per-process caches follow is
 * written by the request itself (`writes`).
 */
export async function doUpdatePresence(deps: AppDeps, realm: Realm, user: User, update: PresenceUpdate, writes: CachedTableWrites): Promise<Partial<PresenceAnswer>> {
  requireHuman(user);
  if (update.status !== 'active' && update.status !== 'idle') throw new JsonableError(`Invalid status: ${update.status}`);
  deps.presence.report(realm, user.id, update.status === 'active', Date.now());
  writes.none();
  if (update.pingOnly) return {};
  const report = deps.presence.pending(user.id);
  // `last_update_id` means the modern protocol, and so the modern format.
  const modern = update.slimPresence || update.lastUpdateId !== undefined;
  return presenceCopies(deps.listener).read(
    deps.db,
    realm,
    { format: modern ? 'modern' : 'legacy', afterUpdateId: update.lastUpdateId ?? null, historyDays: update.historyLimitDays ?? null, disabled: deps.config.presenceDisabled },
    { ...(report ? { own: { userId: user.id, report } } : {}), fresh: true },
  );
}

/** A user's times as stored (null: no row). */
function storedTimes(target: PresenceTarget): PresenceTimes | null {
  if (target.last_connected_time === null) return null;
  return { connectedMs: target.last_connected_time.getTime(), activeMs: target.last_active_time?.getTime() ?? null };
}

const toWrite = (userId: number, times: PresenceTimes): PresenceWrite => ({
  userId,
  connected: new Date(times.connectedMs),
  active: times.activeMs === null ? null : new Date(times.activeMs),
});

/** The user as a `presence` event names them (the address everyone sees). */
const eventUser = (realm: Realm, t: PresenceTarget) => ({
  id: t.user_id,
  email: publicEmailOf(realm, { id: t.user_id, isBot: t.is_bot, deliveryEmail: t.delivery_email }, t.email_address_visibility),
});

/**
 * Writes one organization's reports taken by a process (one transaction, one upsert): each applied to
 * the stored presence as Zulip's do_update_user_presence does, except for deactivated users, bots and
 * users who turned presence_enabled off. Users first seen or back online are announced with a
 * `presence` event to the organization when it has at most USER_LIMIT_FOR_PRESENCE_EVENTS active
 * users and presence is not turned off on the server.
 */
export async function flushPresenceReports(deps: AppDeps, realm: Realm, reports: Map<number, PresenceReport>): Promise<void> {
  const realmId = realm.id;
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await lockPresenceOfRealm(tx, realmId);
    const targets = await presenceTargets(tx, realmId, [...reports.keys()]);
    const rows: PresenceWrite[] = [];
    const announced: Array<{ target: PresenceTarget; times: PresenceTimes }> = [];
    for (const target of targets) {
      if (!target.is_active || target.is_bot || !target.presence_enabled) continue;
      const effect = applyReport(storedTimes(target), reports.get(target.user_id)!);
      if (!effect.changed) continue;
      rows.push(toWrite(target.user_id, effect.next));
      if (effect.announce) announced.push({ target, times: effect.next });
    }
    if (rows.length === 0) return;
    const ids = await writePresence(tx, realmId, rows);
    if (announced.length > 0 && !deps.config.presenceDisabled && (await countActiveUsers(tx, realmId)) <= USER_LIMIT_FOR_PRESENCE_EVENTS) {
      const now = Date.now();
      const events: QueuedEvent[] = announced.map(({ target, times }) => ({
        realmWide: true,
        payload: presenceEventPayload(eventUser(realm, target), times, target.date_joined.getTime(), now),
      }));
      await deps.events.publish(tx, afterCommit, realmId, events);
    }
    await announcePresenceChange(tx, realmId, Math.max(...ids.values()));
  });
}

/**
 * `presence_enabled` was set (Zulip's do_change_user_setting): the user's presence is written at once,
 * in the caller's transaction `tx`, so that everyone sees them as the setting says. Turned off, their
 * presence starts over as connected DISABLED_PRESENCE_AGE_SECS ago and never active (offline to every
 * client); turned on, as active now. Either way a `presence` event goes to every active user of the
 * organization, whatever its size (Zulip's force_send_update); it is added to `events`, which the
 * caller publishes in `tx`. Reports of the user this process has not written yet are dropped.
 */
export async function presenceEnabledChanged(tx: Db, deps: AppDeps, realm: Realm, user: User, enabled: boolean, events: QueuedEvent[]): Promise<void> {
  await lockPresenceOfRealm(tx, realm.id);
  const [target] = await presenceTargets(tx, realm.id, [user.id]);
  if (!target) return;
  const now = Date.now();
  let times: PresenceTimes;
  let id: number | undefined;
  if (enabled) {
    // Written even when the times do not change (a report within 55 s), with a new update id, so that
    // every process's copy reads the user again (their setting with it).
    times = applyReport(storedTimes(target), { atMs: now, activeAtMs: now }).next;
    id = (await writePresence(tx, realm.id, [toWrite(user.id, times)])).get(user.id);
  } else {
    await deletePresence(tx, user.id);
    times = { connectedMs: now - DISABLED_PRESENCE_AGE_SECS * 1000, activeMs: null };
    id = (await writePresence(tx, realm.id, [toWrite(user.id, times)])).get(user.id);
  }
  deps.presence.forget(user.id);
  events.push({ realmWide: true, payload: presenceEventPayload(eventUser(realm, target), times, target.date_joined.getTime(), now) });
  if (id !== undefined) await announcePresenceChange(tx, realm.id, id);
}
