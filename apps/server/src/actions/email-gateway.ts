// The incoming e-mail gateway: a channel's address (GET /streams/{stream_id}/email_address, Zulip's
// get_stream_email_address) and what a mail to it becomes (Zulip's process_stream_message): a channel
// message posted through the send path of POST /messages, as the address's sender. The SMTP listener
// is src/email-gateway/smtp.ts; the mail's content is built by src/email-gateway/mail-content.ts.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import type { AfterCommit } from '../events/bus.ts';
import { inTransaction } from '../data/transactions.ts';
import { findChannelById } from '../data/channels.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { subscribedChannelIds } from '../data/subscriptions.repo.ts';
import { findSystemBot, findUserById, lockSystemBots } from '../data/users.repo.ts';
import {
  channelEmailToken,
  deliveredMessageId,
  findChannelEmailAddressByToken,
  lockAddressDeliveries,
  recordDelivery,
  type ChannelEmailAddressRow,
} from '../data/email-gateway.repo.ts';
import { JsonableError } from '../errors.ts';
import { accessChannelById } from '../access/channels.ts';
import { emailAddressActingUser, emailAddressSender } from '../access/email-gateway.ts';
import { loadPermissionSubject, type PermissionSubject } from '../access/group-settings.ts';
import { checkCanSendToChannel } from '../access/messages.ts';
import { Role } from '../access/roles.ts';
import { hostnameOf } from '../access/users.ts';
import { MAX_MESSAGE_LENGTH } from '../lib/message-limits.ts';
import type { StreamedMultipart } from '../lib/multipart-body.ts';
import { decodeEmailAddress, encodeEmailAddress, GatewayAddressError, type AddressOptions } from '../email-gateway/address.ts';
import { attachmentLink, constructContent, GatewayMailError, topicFromSubject } from '../email-gateway/mail-content.ts';
import { checkMessage, storeCheckedMessage } from './messages.ts';
import { doUploadFile } from './uploads.ts';
import { insertUser } from './users.ts';

/** Zulip's EMAIL_GATEWAY_BOT (`emailgateway@…`, "Email Gateway"): the default sender of mail. */
export const EMAIL_GATEWAY_BOT = { kind: 'emailgateway', fullName: 'Email Gateway', botType: 1 } as const;

/** The organization's Email Gateway bot, created inside `tx` the first time it is needed (announced after commit). */
export async function emailGatewayBot(tx: Db, afterCommit: AfterCommit, deps: Pick<AppDeps, 'cipher' | 'events'>, realm: Realm): Promise<User> {
  const existing = await findSystemBot(tx, realm.id, EMAIL_GATEWAY_BOT.kind);
  if (existing) return existing;
  await lockSystemBots(tx, realm.id);
  const raced = await findSystemBot(tx, realm.id, EMAIL_GATEWAY_BOT.kind);
  if (raced) return raced;
  const { user } = await insertUser(tx, deps, realm, {
    email: `${EMAIL_GATEWAY_BOT.kind}@${hostnameOf(realm.url)}`,
    fullName: EMAIL_GATEWAY_BOT.fullName,
    passwordHash: null,
    role: Role.MEMBER,
    systemBot: { kind: EMAIL_GATEWAY_BOT.kind, botType: EMAIL_GATEWAY_BOT.botType },
  });
  afterCommit(() => deps.events.announce(realm.id));
  return user;
}

// ---------------------------------------------------------------------------------------------
// GET /streams/{stream_id}/email_address

/**
 * The channel's address for the caller and the chosen sender (the token made on first use): the caller
 * needs access to the channel's messages (Zulip 11's access_stream_by_id), then the sender rules.
 */
export async function doGetChannelEmailAddress(deps: AppDeps, realm: Realm, user: User, channelId: number, senderId: number | undefined): Promise<{ email: string }> {
  const subject = await loadPermissionSubject(deps.db, user);
  const { channel } = await accessChannelById(deps.db, realm, subject, channelId, { requireContentAccess: true, allowArchived: false });
  const token = await inTransaction(deps.db, async (tx, afterCommit) => {
    const bot = await emailGatewayBot(tx, afterCommit, deps, realm);
    const requested = senderId === undefined ? null : { id: senderId, user: await findUserById(tx, realm.id, senderId) };
    const sender = emailAddressSender(user, bot, requested);
    return channelEmailToken(tx, { realmId: realm.id, channelId: channel.id, creatorId: user.id, senderId: sender.id });
  });
  return { email: encodeEmailAddress(channel.name, token, true, deps.config.emailGateway.domain) };
}

// ---------------------------------------------------------------------------------------------
// Mail

/** A mail or recipient the gateway refuses: the SMTP reply code and text (with its enhanced status code). */
export class GatewayRefusal extends Error {
  constructor(
    readonly responseCode: number,
    text: string,
  ) {
    super(text);
  }
}

/** A recipient the gateway posts for. */
export interface GatewayRecipient {
  address: ChannelEmailAddressRow;
  options: AddressOptions;
  realm: Realm;
  channel: Channel;
  sender: User;
}

/** Zulip's check of a bot's or user's right to post, as the send path decides it (a bot: or its owner). */
async function checkMayPost(db: Db, realm: Realm, subject: PermissionSubject, channel: Channel): Promise<void> {
  const user = subject.user;
  const subscribed = (await subscribedChannelIds(db, user.id, [channel.id])).has(channel.id);
  let ownerSubject: PermissionSubject | null = null;
  let ownerSubscribed = false;
  if (user.isBot && user.botOwnerId !== null) {
    const owner = await findUserById(db, realm.id, user.botOwnerId);
    if (owner) {
      ownerSubject = await loadPermissionSubject(db, owner);
      ownerSubscribed = (await subscribedChannelIds(db, owner.id, [channel.id])).has(channel.id);
    }
  }
  checkCanSendToChannel(subject, channel, { subscribed, ownerSubject, ownerSubscribed });
}

/**
 * Whether mail to `rcpt` can be posted now (Zulip's validate_to_address, asked at RCPT TO and again
 * when the mail arrives): a gateway address whose token exists, within the organization's mail rate,
 * whose creator (or sender) may still post in the channel. `admit` is the rate limit (false: refused).
 */
export async function checkGatewayRecipient(deps: AppDeps, rcpt: string, admit: (realmId: number) => boolean = () => true): Promise<GatewayRecipient> {
  let decoded: ReturnType<typeof decodeEmailAddress>;
  try {
    decoded = decodeEmailAddress(rcpt, deps.config.emailGateway.domain);
  } catch (error) {
    if (error instanceof GatewayAddressError) throw new GatewayRefusal(550, `5.1.1 Bad destination mailbox address: ${error.message}`);
    throw error;
  }
  const address = /^[0-9a-f]{32}$/.test(decoded.token) ? await findChannelEmailAddressByToken(deps.db, decoded.token) : null;
  const realm = address && !address.deactivated ? await findRealmById(deps.db, address.realmId) : null;
  const channel = realm ? await findChannelById(deps.db, realm.id, address!.channelId) : null;
  const sender = realm ? await findUserById(deps.db, realm.id, address!.senderId) : null;
  const creator = realm ? await findUserById(deps.db, realm.id, address!.creatorId) : null;
  if (!address || !realm || realm.deactivated || !channel || !sender || !creator) {
    throw new GatewayRefusal(550, `5.1.1 Bad destination mailbox address: Bad stream token from email recipient ${rcpt}`);
  }
  if (!admit(realm.id)) throw new GatewayRefusal(550, '4.7.0 Rate-limited due to too many emails on this realm.');
  try {
    await checkMayPost(deps.db, realm, await loadPermissionSubject(deps.db, emailAddressActingUser({ creator, sender })), channel);
  } catch (error) {
    if (error instanceof JsonableError) throw new GatewayRefusal(550, `5.7.1 Permission denied: ${error.message}`);
    throw error;
  }
  return { address, options: decoded.options, realm, channel, sender };
}

/** What the gateway needs of a parsed mail. */
export interface GatewayMail {
  subject?: string | undefined;
  /** The From header as written. */
  from: string;
  text?: string | undefined;
  html?: string | false | undefined;
  attachments: { filename?: string | undefined; contentType: string; content: Buffer }[];
  /** The Message-ID header, when the mail has one. */
  messageId?: string | undefined;
  /** The mail as received (its digest stands in for a missing Message-ID). */
  raw: Buffer;
}

/** The key under which a mail counts as delivered once per address: its Message-ID, or a digest of it. */
export const mailKeyOf = (mail: Pick<GatewayMail, 'messageId' | 'raw'>): string =>
  mail.messageId?.trim() ? `id:${mail.messageId.trim()}` : `sha256:${createHash('sha256').update(mail.raw).digest('hex')}`;

/** One file as the body of POST /user_uploads (a mail's attachment goes through the same upload action). */
function singleFile(filename: string, contentType: string, content: Buffer): StreamedMultipart {
  let given = false;
  return {
    async nextFile() {
      if (given) return null;
      given = true;
      return { field: 'file', filename, contentType, stream: Readable.from([content]) };
    },
    async discardRest() {
      return [];
    },
    abandon() {},
  };
}

/**
 * Posts a mail to the recipient's channel (Zulip's process_stream_message): the attachments stored as
 * uploads of the sender, the content and topic built from the mail, checked and stored by the send
 * path of POST /messages (client "Internal"). A mail already delivered to this address (same
 * Message-ID) is not posted again: its message id is answered.
 */
export async function doDeliverGatewayMail(deps: AppDeps, recipient: GatewayRecipient, mail: GatewayMail): Promise<{ messageId: number; duplicate: boolean }> {
  const { address, realm, channel, sender, options } = recipient;
  const mailKey = mailKeyOf(mail);
  const earlier = await deliveredMessageId(deps.db, address.id, mailKey);
  if (earlier !== null) return { messageId: earlier, duplicate: true };

  const links: string[] = [];
  for (const attachment of mail.attachments) {
    if (!attachment.filename) continue;
    try {
      const uploaded = await doUploadFile(deps, realm, sender, singleFile(attachment.filename, attachment.contentType, attachment.content));
      links.push(attachmentLink(uploaded.filename, uploaded.url));
    } catch (error) {
      if (error instanceof JsonableError && error.message === 'You must specify a file to upload') continue; // no usable file name
      if (error instanceof JsonableError) throw new GatewayRefusal(552, `5.3.4 ${error.message}`);
      throw error;
    }
  }
  let content: string;
  try {
    content = constructContent({ text: mail.text, html: mail.html, subject: mail.subject, from: mail.from }, options, links, MAX_MESSAGE_LENGTH);
  } catch (error) {
    if (error instanceof GatewayMailError) throw new GatewayRefusal(550, `5.6.0 ${error.message}`);
    throw error;
  }
  const topic = topicFromSubject(mail.subject ?? '');
  const request = { type: 'stream' as const, to: JSON.stringify(channel.id), topic, content, queueId: undefined, localId: undefined, readBySender: undefined, client: 'Internal' };
  let checked;
  try {
    checked = await checkMessage(deps.db, realm, sender, request, { emailGateway: true });
  } catch (error) {
    if (error instanceof JsonableError) throw new GatewayRefusal(550, `5.7.1 ${error.message}`);
    throw error;
  }
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockAddressDeliveries(tx, address.id);
    const raced = await deliveredMessageId(tx, address.id, mailKey);
    if (raced !== null) return { messageId: raced, duplicate: true };
    const row = await storeCheckedMessage(tx, afterCommit, deps, realm, sender, checked, { client: 'Internal' });
    await recordDelivery(tx, address.id, mailKey, row.id);
    return { messageId: row.id, duplicate: false };
  });
}
