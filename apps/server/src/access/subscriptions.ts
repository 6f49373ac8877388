// Which channels and subscriber lists the subscription read models show a user (/register's
// `subscriptions`, `unsubscribed` and `never_subscribed`, GET /users/me/subscriptions). Every answer is
// a metadata-access question (access/channels.ts hasMetadataAccess), named for the read it decides.
import type { PermissionSubject } from './group-settings.ts';
import { hasMetadataAccess, type ChannelPermissionFields } from './channels.ts';

/**
 * Zulip's has_metadata_access_to_previously_subscribed_stream: a channel the user was subscribed to
 * and left is listed (`unsubscribed`, with its current name, settings and subscribers) only while the
 * user can still see it: web-public channels; for everyone but guests, public channels; private
 * channels for organization administrators and the members of the groups granting metadata access.
 * Otherwise clients treat it as an unknown channel, as one never subscribed to.
 */
export const canSeeFormerSubscription = (subject: PermissionSubject, channel: ChannelPermissionFields) => hasMetadataAccess(subject, channel, false);

/**
 * `never_subscribed` (Zulip's gather_subscriptions_helper): the channels a user can see without a
 * subscription: for guests only web-public ones; for others public ones, and private ones to
 * administrators and the members of the groups granting metadata access.
 */
export const canBrowseUnsubscribedChannel = (subject: PermissionSubject, channel: ChannelPermissionFields) => hasMetadataAccess(subject, channel, false);

/**
 * Zulip's validate_user_access_to_subscribers_helper (bulk_get_subscriber_user_ids): may the user know
 * the channel's subscribers? Web-public channels; subscribed channels; for everyone but guests public
 * channels, and private ones to administrators and the members of the groups granting metadata
 * access. That is metadata access; a subscriber list the user may not know is sent empty.
 */
export const canSeeSubscribers = (subject: PermissionSubject, channel: ChannelPermissionFields, subscribed: boolean) => hasMetadataAccess(subject, channel, subscribed);
