// Read models of invitations: GET /invites, and what a sign-up link stands for (the pages under
// /accounts read it before showing a form; the sign-up action checks it again under lock).
import type { SuccessData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findInvitationById, findInvitationByKeyHash, InvitationStatus, listPendingInvitations, type InvitationRow } from '../data/invitations.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { findUserById } from '../data/users.repo.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { seesEveryInvitation } from '../access/invitations.ts';

type Invite = SuccessData<'get-invites'>['invites'][number];

/** Path of a single-use sign-up link (e-mail invitation, or confirmation of an address given on a reusable link's page). */
export const invitationPath = (key: string) => `/accounts/do_confirm/${key}`;
/** Path of a reusable invitation link. */
export const reusableLinkPath = (key: string) => `/accounts/join/${key}`;

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * GET /invites: the pending, unexpired invitations the caller can manage (all of the organization's for
 * administrators, their own for others), e-mail invitations and reusable links, by id.
 */
export async function listInvitesForUser(deps: Pick<AppDeps, 'db' | 'cipher'>, realm: Realm, user: User): Promise<Invite[]> {
  requireMemberOrAdmin(user);
  const rows = await listPendingInvitations(deps.db, realm.id, seesEveryInvitation(user) ? undefined : user.id);
  return rows.map((row): Invite => {
    const common = {
      id: row.id,
      invited_by_user_id: row.referredById,
      invited: seconds(row.invitedAt),
      expiry_date: row.expiresAt ? seconds(row.expiresAt) : null,
      invited_as: row.invitedAs as Invite['invited_as'],
    };
    if (row.isMultiuse) {
      return { ...common, is_multiuse: true, link_url: `${realm.url}${reusableLinkPath(deps.cipher.decrypt(row.keyCiphertext!))}` };
    }
    return { ...common, email: row.email!, notify_referrer_on_join: row.notifyReferrerOnJoin, is_multiuse: false };
  });
}

/** Why a sign-up link cannot be used (each has a page of its own). */
export type LinkProblem = 'invalid' | 'expired' | 'revoked' | 'used' | 'realm-deactivated';

export type LinkState =
  | { ok: false; problem: LinkProblem; realm: Realm | null }
  | { ok: true; invitation: InvitationRow; realm: Realm; referrer: User };

/**
 * What the invitation behind a link stands for now. `kind` is the kind of link followed: a single-use
 * link never opens a reusable invitation, nor the reverse.
 */
export async function invitationLinkState(db: Db, invitation: InvitationRow | null, kind: 'single' | 'reusable', now = new Date()): Promise<LinkState> {
  if (!invitation || invitation.isMultiuse !== (kind === 'reusable')) return { ok: false, problem: 'invalid', realm: null };
  const realm = await findRealmById(db, invitation.realmId);
  if (!realm) return { ok: false, problem: 'invalid', realm: null };
  if (realm.deactivated) return { ok: false, problem: 'realm-deactivated', realm };
  if (invitation.status === InvitationStatus.USED) return { ok: false, problem: 'used', realm };
  if (invitation.status === InvitationStatus.REVOKED) return { ok: false, problem: 'revoked', realm };
  // A deactivated user's invitations no longer count (Zulip expires them on deactivation).
  const referrer = await findUserById(db, realm.id, invitation.referredById);
  if (!referrer || !referrer.isActive) return { ok: false, problem: 'revoked', realm };
  // A confirmation made from a reusable link dies with the link.
  if (invitation.multiuseId !== null) {
    const link = await findInvitationById(db, invitation.multiuseId);
    if (!link || link.status === InvitationStatus.REVOKED) return { ok: false, problem: 'revoked', realm };
  }
  if (invitation.expiresAt && invitation.expiresAt <= now) return { ok: false, problem: 'expired', realm };
  return { ok: true, invitation, realm, referrer };
}

/** The state of the invitation whose link carries `key`. */
export async function invitationLinkStateByKey(deps: Pick<AppDeps, 'db' | 'cipher'>, key: string, kind: 'single' | 'reusable'): Promise<LinkState> {
  if (!isWellFormedInvitationKey(key)) return { ok: false, problem: 'invalid', realm: null };
  return invitationLinkState(deps.db, await findInvitationByKeyHash(deps.db, deps.cipher.lookupHash(key)), kind);
}

/** Keys are 40 lowercase hex digits (160 random bits). */
export const isWellFormedInvitationKey = (key: string) => /^[0-9a-f]{40}$/.test(key);
