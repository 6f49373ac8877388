// The incoming e-mail gateway's rows: a channel's address tokens (channel_email_address, Zulip's
// ChannelEmailAddress) and the mails already posted (email_gateway_delivery), see migration
// 20261127210000_email_gateway.
import { randomBytes } from 'node:crypto';
import type { Db } from './db.ts';

/** Serialises the deliveries to one address (pg_advisory_xact_lock(EMAIL_GATEWAY_DELIVERY_LOCK, address id)). */
const EMAIL_GATEWAY_DELIVERY_LOCK = 7265031;

/** A new address token: 32 hex characters (Zulip's generate_email_token_for_stream, 128 random bits). */
const newEmailToken = () => randomBytes(16).toString('hex');

export interface ChannelEmailAddressRow {
  id: number;
  realmId: number;
  channelId: number;
  creatorId: number;
  senderId: number;
  emailToken: string;
  deactivated: boolean;
}

/**
 * The token of (channel, creator, sender), created on first use (Zulip's get_or_create): concurrent
 * first uses agree on one row.
 */
export async function channelEmailToken(db: Db, key: { realmId: number; channelId: number; creatorId: number; senderId: number }): Promise<string> {
  const existing = await db.channelEmailAddress.findUnique({
    where: { channelId_creatorId_senderId: { channelId: key.channelId, creatorId: key.creatorId, senderId: key.senderId } },
    select: { emailToken: true },
  });
  if (existing) return existing.emailToken;
  const rows = await db.$queryRaw<{ email_token: string }[]>`
    INSERT INTO channel_email_address (realm_id, channel_id, creator_id, sender_id, email_token)
    VALUES (${key.realmId}, ${key.channelId}, ${key.creatorId}, ${key.senderId}, ${newEmailToken()})
    ON CONFLICT (channel_id, creator_id, sender_id) DO UPDATE SET email_token = channel_email_address.email_token
    RETURNING email_token`;
  return rows[0]!.email_token;
}

/** The address a token names (tokens are unique across the server), or null. */
export const findChannelEmailAddressByToken = (db: Db, token: string): Promise<ChannelEmailAddressRow | null> =>
  db.channelEmailAddress.findUnique({
    where: { emailToken: token },
    select: { id: true, realmId: true, channelId: true, creatorId: true, senderId: true, emailToken: true, deactivated: true },
  });

/** Inside the delivery's transaction: waits for other deliveries to the same address to commit. */
export async function lockAddressDeliveries(db: Db, addressId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(${EMAIL_GATEWAY_DELIVERY_LOCK}::int, ${addressId}::int)`;
}

/** The message a mail (by its key) already became at this address, or null. */
export async function deliveredMessageId(db: Db, addressId: number, mailKey: string): Promise<number | null> {
  const row = await db.emailGatewayDelivery.findUnique({ where: { addressId_mailKey: { addressId, mailKey } }, select: { messageId: true } });
  return row?.messageId ?? null;
}

export async function recordDelivery(db: Db, addressId: number, mailKey: string, messageId: number): Promise<void> {
  await db.emailGatewayDelivery.create({ data: { addressId, mailKey, messageId } });
}
