import { createRequire } from 'node:module';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';
import type * as ZxcvbnCore from '@zxcvbn-ts/core';
import type * as ZxcvbnCommon from '@zxcvbn-ts/language-common';
import type * as ZxcvbnEnglish from '@zxcvbn-ts/language-en';
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

/** Zulip's defaults (PASSWORD_MIN_LENGTH, PASSWORD_MIN_GUESSES): at least 6 characters, and 10,000 guesses. */
export const PASSWORD_MIN_LENGTH = 6;
export const PASSWORD_MIN_GUESSES = 10_000;

/**
 * zxcvbn's estimator with the common and English dictionaries (built on first use: about 0.2 s). It
 * runs on the event loop, so its work is bounded: only the first 64 characters are judged (a password
 * whose first 64 characters are strong is strong), with at most 20 l33t substitutions tried; crafted
 * inputs then cost at most a few hundred milliseconds instead of seconds.
 */
let estimator: ZxcvbnFactory | null = null;

/**
 * Zulip's check_password_strength: long enough, and estimated by zxcvbn to need at least
 * PASSWORD_MIN_GUESSES guesses (common passwords, names, words, keyboard walks and dates are cheap).
 */
export function isPasswordStrongEnough(password: string): boolean {
  if ([...password].length < PASSWORD_MIN_LENGTH) return false;
  estimator ??= newEstimator();
  return estimator.check(password).guesses >= PASSWORD_MIN_GUESSES;
}

/**
 * zxcvbn and its dictionaries are loaded here, on first use, not with this module: they take about
 * 35 MB of memory, which processes that never judge a password (`manage import`) should not hold.
 */
function newEstimator(): ZxcvbnFactory {
  const load = createRequire(import.meta.url);
  const { ZxcvbnFactory: Factory } = load('@zxcvbn-ts/core') as typeof ZxcvbnCore;
  const zxcvbnCommon = load('@zxcvbn-ts/language-common') as typeof ZxcvbnCommon;
  const zxcvbnEnglish = load('@zxcvbn-ts/language-en') as typeof ZxcvbnEnglish;
  return new Factory({
    maxLength: 64,
    l33tMaxSubstitutions: 20,
    dictionary: { ...zxcvbnCommon.dictionary, ...zxcvbnEnglish.dictionary },
    graphs: zxcvbnCommon.adjacencyGraphs,
    translations: zxcvbnEnglish.translations,
  });
}

/** Throws `message` (Zulip's text of the caller: account creation by default) for a weak password. */
export function checkPasswordStrength(password: string, message = 'The password is too weak.'): void {
  if (!isPasswordStrongEnough(password)) throw new JsonableError(message);
}
