// Invitation operations: thin handlers mapping decoded parameters to the actions of
// actions/invitations.ts (which check permissions in their transaction) or to the read model.
import type { RequestParams } from '@parley/api-types';
import type { Handler } from '../http/handler.ts';
import {
  DEFAULT_INVITE_EXPIRY_MINUTES,
  doCreateReusableInviteLink,
  doResendInvite,
  doRevokeInvite,
  doRevokeReusableInviteLink,
  doSendInvites,
  type InvitationGrant,
} from '../actions/invitations.ts';
import { listInvitesForUser } from '../queries/invitations.ts';

/** The parameters POST /invites and POST /invites/multiuse share, with Zulip's defaults. */
function grantOf(params: RequestParams<'send-invites'> | RequestParams<'create-invite-link'>): InvitationGrant {
  return {
    inviteAs: params.invite_as ?? 400,
    // Absent: the server default; null: never expires.
    expiresInMinutes: params.invite_expires_in_minutes === undefined ? DEFAULT_INVITE_EXPIRY_MINUTES : params.invite_expires_in_minutes,
    channelIds: params.stream_ids ?? [],
    groupIds: params.group_ids ?? [],
    includeRealmDefaultSubscriptions: params.include_realm_default_subscriptions ?? false,
    welcomeMessageCustomText: params.welcome_message_custom_text,
  };
}

export const getInvites: Handler<'get-invites'> = async ({ realm, user, deps }) => ({ invites: await listInvitesForUser(deps, realm, user) });

export const sendInvites: Handler<'send-invites'> = async ({ params, realm, user, deps }) => {
  await doSendInvites(deps, realm, user, { ...grantOf(params), inviteeEmails: params.invitee_emails, notifyReferrerOnJoin: params.notify_referrer_on_join ?? true });
  return {};
};

export const createInviteLink: Handler<'create-invite-link'> = async ({ params, realm, user, deps }) => ({
  invite_link: await doCreateReusableInviteLink(deps, realm, user, grantOf(params)),
});

export const revokeEmailInvite: Handler<'revoke-email-invite'> = async ({ path, realm, user, deps }) => {
  await doRevokeInvite(deps, realm, user, path.invite_id);
  return {};
};

export const resendEmailInvite: Handler<'resend-email-invite'> = async ({ path, realm, user, deps }) => {
  await doResendInvite(deps, realm, user, path.invite_id);
  return {};
};

export const revokeInviteLink: Handler<'revoke-invite-link'> = async ({ path, realm, user, deps }) => {
  await doRevokeReusableInviteLink(deps, realm, user, path.invite_id);
  return {};
};
