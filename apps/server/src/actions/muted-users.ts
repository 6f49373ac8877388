// POST and DELETE /users/me/muted_users/{muted_user_id} (Zulip's do_mute_user / do_unmute_user). Each
// runs in one transaction with its events for the user's own clients: muting marks every unread
// message the muted user sent read (an `update_message_flags` event for `read`, and the withdrawal of
// their mobile notifications) and then sends `muted_users` with the whole new list; unmuting sends
// `muted_users` and changes nothing else. What muting does to later messages is in
// actions/personal-flags.ts (they arrive read) and data/push-devices.repo.ts (no push).
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import type { Realm, User } from '../data/models.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import { deleteMute, insertMute, markUnreadFromSenderRead, mutedUsersOf } from '../data/muted-users.repo.ts';
import { JsonableError } from '../errors.ts';
import { accessUserToMute, accessUserToUnmute } from '../access/muted-users.ts';
import { catchUpDeferredRows } from './deferred-rows.ts';
import { queuePushRemovals } from './push.ts';

export async function doMuteUser(deps: AppDeps, realm: Realm, user: User, mutedUserId: number, cachedTableWrites: CachedTableWrites): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const muted = await accessUserToMute(tx, realm, user, mutedUserId);
    if (!(await insertMute(tx, user.id, muted.id, new Date()))) throw new JsonableError('User already muted');
    // Messages whose rows are still deferred are unread too: written first, then marked.
    await catchUpDeferredRows(tx, realm, user);
    const read = await markUnreadFromSenderRead(tx, user.id, muted.id);
    const events: StoredEvent[] = [];
    if (read.length > 0) {
      await queuePushRemovals(tx, deps, realm, user, read);
      const flags: EventData<'update_message_flags', 'add'> = { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: read, all: false };
      events.push({ userIds: [user.id], payload: flags });
    }
    const list: EventData<'muted_users'> = { type: 'muted_users', muted_users: await mutedUsersOf(tx, user.id) };
    events.push({ userIds: [user.id], payload: list });
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
  cachedTableWrites.none();
}

export async function doUnmuteUser(deps: AppDeps, realm: Realm, user: User, mutedUserId: number, cachedTableWrites: CachedTableWrites): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const muted = await accessUserToUnmute(tx, realm, mutedUserId);
    if (!(await deleteMute(tx, user.id, muted.id))) throw new JsonableError('User is not muted');
    const list: EventData<'muted_users'> = { type: 'muted_users', muted_users: await mutedUsersOf(tx, user.id) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload: list }]);
  });
  cachedTableWrites.none();
}
