// Who may have a channel's e-mail address post as whom, and whose rights a mail to an address is
// checked against (Zulip's get_stream_email_address and check_access_for_channel_email_address).
import type { User } from '../data/models.ts';
import { JsonableError } from '../errors.ts';
import { checkCanAdministerUser } from './roles.ts';

/**
 * The sender of the messages an address posts (Zulip's sender_id rules, feature level 335): the
 * organization's Email Gateway bot when none is named or the bot itself is, the caller, or a bot the
 * caller may administer (their own; any for an administrator). Anyone else is `No such bot` (a system
 * bot too: Zulip's live in another organization), a bot the caller may not administer
 * `Insufficient permission`.
 */
export function emailAddressSender(actor: User, gatewayBot: User, requested: { id: number; user: User | null } | null): User {
  if (requested === null || requested.id === gatewayBot.id) return gatewayBot;
  if (requested.id === actor.id) return actor;
  const target = requested.user;
  if (!target || !target.isBot || target.systemBot !== null) throw new JsonableError('No such bot');
  checkCanAdministerUser(actor, target);
  return target;
}

/**
 * Whose right to post in the channel a mail to an address needs (Zulip's
 * check_access_for_channel_email_address): the address's creator when it posts as the Email Gateway
 * bot (a system bot, which may post anywhere), otherwise its sender (the creator or one of their bots,
 * checked as a bot posting: it, or its owner).
 */
export const emailAddressActingUser = (address: { creator: User; sender: User }): User => (address.sender.systemBot !== null ? address.creator : address.sender);
