// Who is told about a change to a message that stays where it is (a reaction added or removed): Zulip's
// event_recipient_ids_for_action_on_messages, the users who can see the message now (the same rules as
// access/messages.ts hasMessageAccess), narrowed as Zulip narrows them to those who have the message
// (a row) or follow its channel. Reacting itself needs what changing a message needs
// (queries/messages.ts changeableMessage).
import type { FetchChannel } from '../data/message-fetch.repo.ts';
import { Role } from './roles.ts';

/**
 * The audience of an event about one message, resolved in SQL by the data layer
 * (data/reactions.repo.ts) among active users. "Rows" are the users who have the message: a
 * user_message row, a deferred row still to be written (message.deferred_recipient_ids), or the
 * historical row the same change creates.
 */
export type MessageEventAudience =
  /** Direct messages: their participants (each has a row). */
  | { kind: 'rows' }
  /** A private channel whose history subscribers may read: its subscribers (content access). */
  | { kind: 'subscribers' }
  /** A channel with protected history: subscribers who have the message. */
  | { kind: 'subscribers-with-rows' }
  /**
   * A public channel: its subscribers (guests too: subscribed, they read it), and users who have the
   * message and are not of `rowRolesExcluded` (unsubscribed guests cannot read a public channel).
   */
  | { kind: 'subscribers-or-rows'; rowRolesExcluded: number[] };

/** The audience of a `reaction` event for a message of `channel` (null: a direct message). */
export function messageEventAudience(channel: Pick<FetchChannel, 'inviteOnly' | 'historyPublicToSubscribers'> | null): MessageEventAudience {
  if (channel === null) return { kind: 'rows' };
  if (!channel.historyPublicToSubscribers) return { kind: 'subscribers-with-rows' };
  if (channel.inviteOnly) return { kind: 'subscribers' };
  return { kind: 'subscribers-or-rows', rowRolesExcluded: [Role.GUEST] };
}
