import { JsonableError } from '../errors.ts';

/** Zulip's full-name rules (check_full_name). Returns the stripped name. */
export function validateFullName(raw: string): string {
  const name = raw.trim();
  if (name.length > 100) throw new JsonableError('Name too long!');
  if (name.length < 2) throw new JsonableError('Name too short!');
  if (/[*`\\>"@]/.test(name)) throw new JsonableError('Invalid characters in name!');
  if (/\|\d+$/.test(name)) throw new JsonableError('Invalid format!');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) throw new JsonableError('Invalid characters in name!');
  return name;
}

/** A plausible e-mail address: one @, a dotted domain, no spaces or separators. */
export function isPlausibleEmail(raw: string): boolean {
  const email = raw.trim();
  return email.length <= 254 && /^[^\s@<>,;"]+@[^\s@<>,;"]+\.[^\s@<>,;"]+$/.test(email);
}

/** Returns the address stripped; throws Zulip's error for an implausible one. */
export function validateEmailAddress(raw: string): string {
  const email = raw.trim();
  if (!isPlausibleEmail(email)) throw new JsonableError(`Invalid email '${email}'`);
  return email;
}

/** Zulip's minimum: 6 characters, and not a single repeated character. */
export function checkPasswordStrength(password: string): void {
  if (password.length < 6 || new Set(password).size < 2) throw new JsonableError('The password is too weak.');
}
