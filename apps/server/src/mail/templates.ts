// The e-mails Parley sends, as plain text and HTML. Every value from users (names, the organization's
// name) is escaped in the HTML and flattened to one line in the subject.
import { escapeHtml } from '../lib/html.ts';
import { oneLine } from './outbox.ts';

export interface EmailContent {
  subject: string;
  text: string;
  html: string;
}

const ROLE_NAMES: Record<number, string> = { 100: 'an organization owner', 200: 'an organization administrator', 300: 'a moderator', 400: 'a member', 600: 'a guest' };

function expiryText(expiresAt: Date | null): string {
  if (!expiresAt) return 'The link does not expire.';
  return `The link expires on ${expiresAt.toUTCString()}.`;
}

function page(paragraphs: string[]): string {
  return [
    '<!DOCTYPE html>',
    '<html><body style="font-family: sans-serif; line-height: 1.5; max-width: 40em">',
    ...paragraphs.map((p) => `<p>${p}</p>`),
    '</body></html>',
  ].join('\n');
}

const button = (url: string, label: string) =>
  `<a href="${escapeHtml(url)}" style="display: inline-block; padding: 0.5em 1em; background: #2a6ebb; color: #fff; text-decoration: none; border-radius: 4px">${escapeHtml(label)}</a>`;

export function invitationEmail(input: {
  realmName: string;
  realmUrl: string;
  inviterName: string;
  inviterEmail: string;
  invitedAs: number;
  link: string;
  expiresAt: Date | null;
}): EmailContent {
  const role = ROLE_NAMES[input.invitedAs] ?? 'a member';
  return {
    subject: oneLine(`${input.inviterName} invited you to join ${input.realmName}`),
    text: [
      'Hi,',
      '',
      `${input.inviterName} (${input.inviterEmail}) has invited you to join ${input.realmName} (${input.realmUrl}) as ${role}.`,
      '',
      'To accept, open this link and choose your name and password:',
      input.link,
      '',
      expiryText(input.expiresAt),
      '',
      'If you were not expecting this invitation, you can ignore this e-mail.',
      '',
    ].join('\n'),
    html: page([
      'Hi,',
      `${escapeHtml(input.inviterName)} (${escapeHtml(input.inviterEmail)}) has invited you to join <strong>${escapeHtml(input.realmName)}</strong> (${escapeHtml(input.realmUrl)}) as ${role}.`,
      button(input.link, 'Accept the invitation'),
      `Or copy this link into your browser: ${escapeHtml(input.link)}`,
      escapeHtml(expiryText(input.expiresAt)),
      'If you were not expecting this invitation, you can ignore this e-mail.',
    ]),
  };
}

/** Sent to an address given on the page of a reusable invitation link, to confirm it before sign-up. */
export function signupConfirmationEmail(input: { realmName: string; realmUrl: string; link: string; expiresAt: Date | null }): EmailContent {
  return {
    subject: oneLine(`Confirm your e-mail address for ${input.realmName}`),
    text: [
      'Hi,',
      '',
      `Someone (hopefully you) asked to join ${input.realmName} (${input.realmUrl}) with this e-mail address.`,
      '',
      'To continue, open this link and choose your name and password:',
      input.link,
      '',
      expiryText(input.expiresAt),
      '',
      'If it was not you, you can ignore this e-mail.',
      '',
    ].join('\n'),
    html: page([
      'Hi,',
      `Someone (hopefully you) asked to join <strong>${escapeHtml(input.realmName)}</strong> (${escapeHtml(input.realmUrl)}) with this e-mail address.`,
      button(input.link, 'Continue the sign-up'),
      `Or copy this link into your browser: ${escapeHtml(input.link)}`,
      escapeHtml(expiryText(input.expiresAt)),
      'If it was not you, you can ignore this e-mail.',
    ]),
  };
}

/** Sent to the new address of an e-mail change: the address changes only once its link is opened. */
export function confirmNewEmailEmail(input: { realmName: string; realmUrl: string; oldEmail: string; newEmail: string; link: string }): EmailContent {
  const request = `Someone asked to change the e-mail address of the account ${input.oldEmail} in ${input.realmName} (${input.realmUrl}) to this address, ${input.newEmail}.`;
  const validity = 'The link works for 24 hours. If you did not ask for this change, ignore this e-mail: nothing changes until the link is opened.';
  return {
    subject: oneLine(`Verify your new e-mail address for ${new URL(input.realmUrl).host}`),
    text: ['Hello,', '', request, 'To confirm the change, open this link:', '', input.link, '', validity].join('\n'),
    html: page(['Hello,', escapeHtml(request), button(input.link, 'Confirm the e-mail change'), `Or copy this link into your browser: ${escapeHtml(input.link)}`, escapeHtml(validity)]),
  };
}

/** Sent to the old address once an e-mail change is confirmed. */
export function emailChangedEmail(input: { realmName: string; realmUrl: string; oldEmail: string; newEmail: string }): EmailContent {
  const change = `The e-mail address of your account in ${input.realmName} (${input.realmUrl}) was changed from ${input.oldEmail} to ${input.newEmail}.`;
  const warning = 'If you did not make this change, contact the administrators of your organization at once.';
  return {
    subject: oneLine(`Your e-mail address for ${input.realmName} was changed`),
    text: ['Hello,', '', change, '', warning].join('\n'),
    html: page(['Hello,', escapeHtml(change), escapeHtml(warning)]),
  };
}

/**
 * Sent to a user an administrator deactivated with a `deactivation_notification_comment` (Zulip sends
 * it whenever the parameter is given, even empty; the comment is quoted only when it is not empty).
 */
export function deactivationNoticeEmail(input: { realmName: string; realmUrl: string; comment: string }): EmailContent {
  const notice = `Your account in ${input.realmName} (${input.realmUrl}) has been deactivated: you can no longer log in.`;
  const intro = 'The administrators added this comment:';
  return {
    subject: oneLine(`Your account in ${input.realmName} has been deactivated`),
    text: ['Hello,', '', notice, ...(input.comment ? ['', intro, '', input.comment] : []), ''].join('\n'),
    html: page([
      'Hello,',
      escapeHtml(notice),
      ...(input.comment ? [escapeHtml(intro), `<span style="display: block; white-space: pre-wrap; border-left: 3px solid #ccc; padding-left: 0.75em">${escapeHtml(input.comment)}</span>`] : []),
    ]),
  };
}
