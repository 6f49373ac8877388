// Invitations (table invitation): e-mail invitations, reusable links (is_multiuse) and the sign-up
// confirmations made from reusable links (multiuse_id). Keys are only stored as keyed hashes; a
// reusable link's key is also kept encrypted so that its link can be listed again.
import type { Invitation } from '@parley/db';
import type { Db } from './db.ts';

export type InvitationRow = Invitation;

export const InvitationStatus = { PENDING: 0, USED: 1, REVOKED: 2 } as const;

export interface NewInvitation {
  realmId: number;
  email: string | null;
  referredById: number;
  invitedAs: number;
  expiresAt: Date | null;
  channelIds: number[];
  groupIds: number[];
  includeRealmDefaultSubscriptions: boolean;
  notifyReferrerOnJoin: boolean;
  welcomeMessageCustomText: string | null;
  confirmationKeyHash: string;
  isMultiuse?: boolean;
  multiuseId?: number | null;
  keyCiphertext?: string | null;
}

export const createInvitation = (db: Db, data: NewInvitation): Promise<InvitationRow> => db.invitation.create({ data });

/** Locks an invitation of the organization (for the rest of the transaction) and reads it as committed. */
export async function lockInvitation(db: Db, realmId: number, id: number): Promise<InvitationRow | null> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM invitation WHERE id = ${id} AND realm_id = ${realmId} FOR UPDATE`;
  return rows.length ? db.invitation.findUnique({ where: { id } }) : null;
}

/** The same, found by the keyed hash of the key in its link. */
export async function lockInvitationByKeyHash(db: Db, keyHash: string): Promise<InvitationRow | null> {
  const rows = await db.$queryRaw<Array<{ id: number }>>`SELECT id FROM invitation WHERE confirmation_key_hash = ${keyHash} FOR UPDATE`;
  return rows.length ? db.invitation.findUnique({ where: { id: rows[0]!.id } }) : null;
}

export const findInvitationByKeyHash = (db: Db, keyHash: string): Promise<InvitationRow | null> =>
  db.invitation.findUnique({ where: { confirmationKeyHash: keyHash } });

export const findInvitationById = (db: Db, id: number): Promise<InvitationRow | null> => db.invitation.findUnique({ where: { id } });

export const updateInvitation = (
  db: Db,
  id: number,
  data: Partial<Pick<InvitationRow, 'status' | 'confirmationKeyHash' | 'createdUserId'>>,
): Promise<InvitationRow> => db.invitation.update({ where: { id }, data });

/** Other pending invitations of the address in the organization become revoked (its account exists now). */
export async function revokePendingInvitationsOfEmail(db: Db, realmId: number, email: string, exceptId: number): Promise<number> {
  // lower() = lower(), never Prisma's case-insensitive `equals` (an ILIKE: `_` and `%` would match other addresses).
  return db.$executeRaw`
    UPDATE invitation SET status = ${InvitationStatus.REVOKED}::int
    WHERE realm_id = ${realmId}::int AND lower(email) = lower(${email}) AND status = ${InvitationStatus.PENDING}::int AND id <> ${exceptId}::int`;
}

/**
 * Pending, unexpired invitations of the organization (e-mail invitations and reusable links, not the
 * confirmations made from links) whose inviter is still active, by id; only `referredById`'s when given.
 */
export const listPendingInvitations = (db: Db, realmId: number, referredById?: number): Promise<InvitationRow[]> =>
  db.invitation.findMany({
    where: {
      realmId,
      status: InvitationStatus.PENDING,
      multiuseId: null,
      OR: [{ expiresAt: null }, { expiresAt: { gt: new Date() } }],
      referredBy: { isActive: true },
      ...(referredById !== undefined ? { referredById } : {}),
    },
    orderBy: { id: 'asc' },
  });

/** Users of the organization whose real address is one of `emails` (case-insensitively). */
export async function usersWithDeliveryEmails(db: Db, realmId: number, emails: string[]): Promise<Array<{ deliveryEmail: string; isActive: boolean }>> {
  if (emails.length === 0) return [];
  return db.$queryRaw`
    SELECT delivery_email AS "deliveryEmail", is_active AS "isActive" FROM "user"
    WHERE realm_id = ${realmId} AND lower(delivery_email) = ANY(${emails.map((e) => e.toLowerCase())}::text[])`;
}

// ---------------------------------------------------------------------------------------------
// The daily limit on invitation e-mails

const INVITE_COUNTER_LOCK = 7265011;

/** Serialises the organization's invitation sending (the daily limit holds under concurrency). */
export async function lockInviteCounter(db: Db, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(${INVITE_COUNTER_LOCK}::int, ${realmId}::int)`;
}

/** Invitation e-mails the organization sent in the last 24 hours. */
export async function invitationEmailsSentToday(db: Db, realmId: number): Promise<number> {
  const [row] = await db.$queryRaw<Array<{ n: bigint | null }>>`
    SELECT sum(count) AS n FROM invitation_send_log WHERE realm_id = ${realmId} AND sent_at > now() - interval '24 hours'`;
  return Number(row?.n ?? 0);
}

/** Records `count` invitation e-mails sent now (and forgets records older than two days). */
export async function logInvitationEmails(db: Db, realmId: number, count: number): Promise<void> {
  if (count <= 0) return;
  await db.invitationSendLog.create({ data: { realmId, count } });
  await db.invitationSendLog.deleteMany({ where: { realmId, sentAt: { lt: new Date(Date.now() - 2 * 86_400_000) } } });
}
