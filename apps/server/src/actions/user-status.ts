// POST /users/me/status and POST /users/{user_id}/status: a user's status (Zulip's
// do_update_user_status). Every check runs before anything is written; then one transaction writes the
// status (and, for the deprecated `away`, the user's presence_enabled setting) and stores the events:
// `user_status` for every user of the organization, and for `away` the `user_settings` change of
// presence_enabled for the user's own clients and what that change does to the user's presence.
import type { AppDeps } from '../deps.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';
import { inTransaction } from '../data/transactions.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { Realm, User } from '../data/models.ts';
import { settingsRowOf, updateSettingsRow } from '../data/user-settings.repo.ts';
import { upsertUserStatus } from '../data/user-status.repo.ts';
import { requireHuman } from '../access/roles.ts';
import { accessUser, publicEmailOf } from '../access/users.ts';
import { settingChangeEvents, userSettingDefinition } from '../lib/user-settings.ts';
import { presenceEnabledChanged } from './presence.ts';
import { NO_REALM_EMOJI, type RealmEmojiIndex } from '../lib/realm-emoji.ts';
import { ReactionType } from '../lib/reactions.ts';
import { realmEmojiIndex } from '../queries/realm-emoji.ts';
import { checkStatusText, checkStatusUpdate, userStatusEvent, type CheckedStatusUpdate, type StatusUpdateRequest } from '../lib/user-status.ts';

const PRESENCE_ENABLED = userSettingDefinition('presence_enabled')!;

/** POST /users/me/status: the caller's own status (humans only). */
export async function doUpdateOwnStatus(deps: AppDeps, realm: Realm, user: User, request: StatusUpdateRequest, client: string, writes: CachedTableWrites): Promise<void> {
  requireHuman(user);
  const update = checkStatusUpdate(request, checkStatusText(request.statusText), await statusRealmEmoji(deps, realm, request));
  await storeStatusUpdate(deps, realm, user, update, client);
  // `away` writes user_settings, which per-process caches follow; otherwise nothing they follow changed.
  if (update.away === undefined) writes.none();
}

/**
 * POST /users/{user_id}/status (feature level 407): an administrator sets another user's status, as
 * Zulip's update_user_status_admin does: the text is checked first (a parameter), then the user (an
 * active human the caller may administer), then the rest; there is no `away`.
 */
export async function doUpdateStatusForUser(
  deps: AppDeps,
  realm: Realm,
  actor: User,
  userId: number,
  request: Omit<StatusUpdateRequest, 'away'>,
  client: string,
  writes: CachedTableWrites,
): Promise<void> {
  const statusText = checkStatusText(request.statusText);
  const target = await accessUser(deps.db, realm, actor, userId, { allowBots: false, allowDeactivated: false, forAdmin: true });
  const update = checkStatusUpdate(request, statusText, await statusRealmEmoji(deps, realm, request));
  await storeStatusUpdate(deps, realm, target, update, client);
  writes.none();
}

async function storeStatusUpdate(deps: AppDeps, realm: Realm, user: User, update: CheckedStatusUpdate, client: string): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const events: QueuedEvent[] = [];
    if (update.away !== undefined) {
      // Zulip's do_change_user_setting(presence_enabled): written and announced even when unchanged.
      const presenceEnabled = !update.away;
      const row = await settingsRowOf(tx, user.id);
      await updateSettingsRow(tx, user.id, { presenceEnabled });
      const shownEmail = publicEmailOf(realm, user, row.emailAddressVisibility);
      for (const payload of settingChangeEvents(PRESENCE_ENABLED, presenceEnabled, shownEmail)) events.push({ userIds: [user.id], payload });
      // What turning presence_enabled off or on does to the user's presence (actions/presence.ts).
      await presenceEnabledChanged(tx, deps, realm, user, presenceEnabled, events);
    }
    await upsertUserStatus(tx, {
      realmId: realm.id,
      userId: user.id,
      change: { ...(update.statusText !== undefined ? { statusText: update.statusText } : {}), ...(update.emoji ? { emoji: update.emoji } : {}) },
      client,
      at: new Date(),
    });
    // Everyone who can see the user (every active user: Parley does not restrict who sees whom).
    events.push({ realmWide: true, payload: userStatusEvent(user.id, update) });
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
}

/** The organization's custom emoji, when the status may name one (an emoji name without a Unicode code and type). */
async function statusRealmEmoji(deps: AppDeps, realm: Realm, request: StatusUpdateRequest): Promise<RealmEmojiIndex> {
  if (!request.emojiName || (request.emojiCode !== undefined && request.reactionType !== undefined && request.reactionType !== ReactionType.REALM)) return NO_REALM_EMOJI;
  return realmEmojiIndex(deps.db, realm.id);
}
