// The e-mail that lets a person choose a password (actions/password-reset.ts): after an import, their
// account exists without one.
import { escapeHtml } from '../lib/html.ts';
import { oneLine } from './outbox.ts';
import type { EmailContent } from './templates.ts';

export function passwordResetEmail(input: { realmName: string; realmUrl: string; email: string; link: string; reason: 'import'; validDays: number }): EmailContent {
  const why = `Your organization ${input.realmName} has moved to ${input.realmUrl}, with its history. Your account (${input.email}) is there, but it has no password yet.`;
  const validity = `The link works once, for ${input.validDays} days. If it has expired, ask an administrator of the organization for a new one.`;
  return {
    subject: oneLine(`Choose your password for ${input.realmName}`),
    text: ['Hello,', '', why, '', 'To choose your password, open this link:', input.link, '', validity, ''].join('\n'),
    html: [
      '<!DOCTYPE html>',
      '<html><body style="font-family: sans-serif; line-height: 1.5; max-width: 40em">',
      `<p>Hello,</p>`,
      `<p>${escapeHtml(why)}</p>`,
      `<p><a href="${escapeHtml(input.link)}">Choose your password</a></p>`,
      `<p>Or copy this link into your browser: ${escapeHtml(input.link)}</p>`,
      `<p>${escapeHtml(validity)}</p>`,
      '</body></html>',
    ].join('\n'),
  };
}
