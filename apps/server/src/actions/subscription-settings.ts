// POST /users/me/subscriptions/properties: a subscriber's personal settings for channels. Every change
// is checked first (its property and value, in order, with Zulip's messages), then all are made in one
// transaction, each with its `subscription` update event for the user's own clients (and, for the mute,
// the older `in_home_view` event before it).
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { updateSubscriptionSettings, type SubscriptionSettings } from '../data/subscription-settings.repo.ts';
import { accessChannelById, loadChannelViewer } from '../access/channels.ts';
import { JsonableError } from '../errors.ts';

export interface SubscriptionSettingChange {
  stream_id: number;
  property: string;
  value: boolean | string;
}

/** The boolean properties and their columns; `in_home_view` is the opposite of `is_muted`. */
const BOOLEAN_PROPERTIES: Record<string, keyof SubscriptionSettings> = {
  is_muted: 'isMuted',
  in_home_view: 'isMuted',
  pin_to_top: 'pinToTop',
  desktop_notifications: 'desktopNotifications',
  audible_notifications: 'audibleNotifications',
  push_notifications: 'pushNotifications',
  email_notifications: 'emailNotifications',
  wildcard_mentions_notify: 'wildcardMentionsNotify',
};

/** Zulip's check_color: `#` and three to six hex digits. */
const HEX_COLOR = /^#[0-9a-fA-F]{3,6}$/;

interface CheckedChange {
  channelId: number;
  /** The property as stored and announced (`in_home_view` becomes `is_muted`). */
  property: string;
  settings: SubscriptionSettings;
  value: boolean | string;
}

function checkChange(change: SubscriptionSettingChange): CheckedChange {
  const { property, value } = change;
  if (property === 'color') {
    if (typeof value !== 'string') throw new JsonableError('color is not a string');
    if (!HEX_COLOR.test(value)) throw new JsonableError('color is not a valid hex color code');
    return { channelId: change.stream_id, property, settings: { color: value }, value };
  }
  const column = Object.hasOwn(BOOLEAN_PROPERTIES, property) ? BOOLEAN_PROPERTIES[property] : undefined;
  if (!column) throw new JsonableError(`Unknown subscription property: ${property}`);
  if (typeof value !== 'boolean') throw new JsonableError(`${property} is not a boolean`);
  if (property === 'in_home_view') return { channelId: change.stream_id, property: 'is_muted', settings: { isMuted: !value }, value: !value };
  return { channelId: change.stream_id, property, settings: { [column]: value }, value };
}

export async function doUpdateSubscriptionSettings(deps: AppDeps, realm: Realm, user: User, changes: SubscriptionSettingChange[]): Promise<void> {
  const checked = changes.map(checkChange);
  const viewer = await loadChannelViewer(deps.db, user);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const events: { userIds: number[]; payload: Record<string, unknown> }[] = [];
    for (const change of checked) {
      const { subscribed } = await accessChannelById(tx, realm, viewer, change.channelId, { requireContentAccess: true, allowArchived: false });
      if (!subscribed || !(await updateSubscriptionSettings(tx, user.id, change.channelId, change.settings))) {
        throw new JsonableError(`Not subscribed to channel ID ${change.channelId}`);
      }
      const event = { type: 'subscription', op: 'update', stream_id: change.channelId };
      if (change.property === 'is_muted') events.push({ userIds: [user.id], payload: { ...event, property: 'in_home_view', value: !change.value } });
      events.push({ userIds: [user.id], payload: { ...event, property: change.property, value: change.value } });
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);
  });
}
