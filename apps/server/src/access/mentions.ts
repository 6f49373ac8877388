// Who may mention whom in a message: wildcard mentions (@**all**, @**topic**) of many people, and
// user groups (@*group*). Answers come from the organization's and the group's group-setting values
// (access/group-settings.ts).
import type { Realm } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { holds, type PermissionSubject } from './group-settings.ts';

/** More people than this need can_mention_many_users_group for a wildcard mention (Zulip's threshold). */
export const WILDCARD_MENTION_THRESHOLD = 15;

/** Zulip's can_mention_many_users: the organization's can_mention_many_users_group. */
const mayMentionManyUsers = (subject: PermissionSubject, realm: Realm) => holds(subject, realm.canMentionManyUsersGroupId);

/** @**all** (@**everyone**, @**channel**, @**stream**) in a channel with `subscriberCount` recipients. */
export function checkCanUseChannelWildcard(subject: PermissionSubject, realm: Realm, subscriberCount: number): void {
  if (subscriberCount > WILDCARD_MENTION_THRESHOLD && !mayMentionManyUsers(subject, realm)) {
    throw new JsonableError('You do not have permission to use channel wildcard mentions in this channel.', { code: 'STREAM_WILDCARD_MENTION_NOT_ALLOWED' });
  }
}

/** @**topic** in a topic with `participantCount` participants (the sender included). */
export function checkCanUseTopicWildcard(subject: PermissionSubject, realm: Realm, participantCount: number): void {
  if (participantCount > WILDCARD_MENTION_THRESHOLD && !mayMentionManyUsers(subject, realm)) {
    throw new JsonableError('You do not have permission to use topic wildcard mentions in this topic.', { code: 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED' });
  }
}

/** Zulip's sender_can_mention_group: the group's can_mention_group. */
export function checkCanMentionGroup(subject: PermissionSubject, group: { name: string; can_mention_group_id: number | null }): void {
  if (!holds(subject, group.can_mention_group_id)) throw new JsonableError(`You are not allowed to mention user group '${group.name}'.`);
}
