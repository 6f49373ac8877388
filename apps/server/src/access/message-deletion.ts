// Who may delete a message (Zulip's validate_user_can_delete_message) or a whole topic, and who is told
// of a deletion (the audience of `delete_message` events, Zulip's do_delete_messages).
import type { Channel, Realm, User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { holds, type PermissionSubject } from './group-settings.ts';
import { requireAdmin, Role } from './roles.ts';

export type DeletionChannelFields = Pick<Channel, 'inviteOnly' | 'historyPublicToSubscribers' | 'canDeleteAnyMessageGroupId' | 'canDeleteOwnMessageGroupId'>;

const notAllowed = () => new JsonableError("You don't have permission to delete this message");

/**
 * May `subject` delete the message (which they can access)? In Zulip's order: anyone holding the
 * organization's or (channel messages) the channel's can_delete_any_message_group, at any age; else only
 * the sender or the owner of the sending bot, holding the organization's or the channel's
 * can_delete_own_message_group, within the organization's delete time limit (no grace period).
 */
export function checkCanDeleteMessage(
  subject: PermissionSubject,
  realm: Pick<Realm, 'canDeleteAnyMessageGroupId' | 'canDeleteOwnMessageGroupId' | 'messageContentDeleteLimitSeconds'>,
  channel: DeletionChannelFields | null,
  message: { senderId: number; dateSent: Date },
  sender: Pick<User, 'botOwnerId'> | null,
  now: number = Date.now(),
): void {
  if (holds(subject, realm.canDeleteAnyMessageGroupId)) return;
  if (channel && holds(subject, channel.canDeleteAnyMessageGroupId)) return;
  const own = message.senderId === subject.user.id || (sender !== null && sender.botOwnerId === subject.user.id);
  if (!own) throw notAllowed();
  if (!holds(subject, realm.canDeleteOwnMessageGroupId) && !(channel && holds(subject, channel.canDeleteOwnMessageGroupId))) throw notAllowed();
  const limit = realm.messageContentDeleteLimitSeconds;
  if (limit !== null && now - message.dateSent.getTime() > limit * 1000) throw new JsonableError('The time limit for deleting this message has passed');
}

/** POST /streams/{id}/delete_topic: organization administrators only (no group setting grants it). */
export function checkCanDeleteTopic(user: User): void {
  requireAdmin(user);
}

/**
 * Who is told that messages of one conversation were deleted, each of the messages they may see
 * (data/message-deletion.repo.ts deletionRecipients reads it): direct messages, their participants (the
 * users with a row); a channel with protected history, its subscribers of the messages they received; a
 * private channel with shared history, its subscribers; a public one, its subscribers and the non-guests
 * who received a message of it (they may read the whole channel). The acting user is told of them all
 * besides (they could access every one).
 */
export function deletionAudience(channel: Pick<DeletionChannelFields, 'inviteOnly' | 'historyPublicToSubscribers'> | null) {
  if (channel === null) return { subscribers: false, subscribersNeedRows: false, rowHolders: true, rowHoldersSeeAllUnlessRoleIn: null };
  if (!channel.historyPublicToSubscribers) return { subscribers: true, subscribersNeedRows: true, rowHolders: false, rowHoldersSeeAllUnlessRoleIn: null };
  if (channel.inviteOnly) return { subscribers: true, subscribersNeedRows: false, rowHolders: false, rowHoldersSeeAllUnlessRoleIn: null };
  return { subscribers: true, subscribersNeedRows: false, rowHolders: true, rowHoldersSeeAllUnlessRoleIn: [Role.GUEST] };
}
