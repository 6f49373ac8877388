// The user object of GET /users, GET /users/{id} and GET /users/me (Schema<'User'>).
import { createHash } from 'node:crypto';
import type { Schema } from '@parley/api-types';
import type { CustomProfileFieldValue, Realm, User } from '../data/models.ts';
import { isoWithOffset } from './timestamps.ts';
import { roleFlagsOf } from '../access/roles.ts';
import { addressesSeenBy } from '../access/users.ts';
import { avatarUrl } from './avatar.ts';

export interface FormatOptions {
  realm: Realm;
  /** Who asks; null for spectators. */
  viewer: User | null;
  clientGravatar: boolean;
  /** Per-user email_address_visibility (1 everyone, 2 members, 3 admins, 4 nobody, 5 moderators). */
  emailVisibility: number;
  /** Present when custom profile fields were requested. */
  profileValues?: CustomProfileFieldValue[];
}

/** md5 of normalised addresses, kept for the addresses seen recently (a list of users formats thousands). */
const gravatarHashes = new Map<string, string>();
function gravatarHash(email: string): string {
  let hash = gravatarHashes.get(email);
  if (hash === undefined) {
    hash = createHash('md5').update(email.trim().toLowerCase()).digest('hex');
    if (gravatarHashes.size >= 100_000) gravatarHashes.delete(gravatarHashes.keys().next().value!);
    gravatarHashes.set(email, hash);
  }
  return hash;
}

export function gravatarUrl(email: string, version: number): string {
  return `https://secure.gravatar.com/avatar/${gravatarHash(email)}?d=identicon&version=${version}`;
}

/** Custom profile field values grouped by user (the `profileValues` formatUser takes, per user). */
export function profileValuesByUser(values: readonly CustomProfileFieldValue[]): Map<number, CustomProfileFieldValue[]> {
  const byUser = new Map<number, CustomProfileFieldValue[]>();
  for (const value of values) {
    const list = byUser.get(value.userId);
    if (list) list.push(value);
    else byUser.set(value.userId, [value]);
  }
  return byUser;
}

export function formatUser(user: User, options: FormatOptions): Schema<'User'> {
  const addresses = addressesSeenBy(options.realm, options.viewer, user, options.emailVisibility);
  const seesEmail = addresses.deliveryEmail !== null;
  const out: Schema<'User'> = {
    email: addresses.email,
    user_id: user.id,
    avatar_version: user.avatarVersion,
    ...roleFlagsOf(user),
    role: user.role as Schema<'User'>['role'],
    is_bot: user.isBot,
    full_name: user.fullName,
    timezone: user.timezone,
    is_active: user.isActive,
    date_joined: isoWithOffset(user.dateJoined),
    delivery_email: addresses.deliveryEmail,
    avatar_url: options.clientGravatar && seesEmail && user.avatarSource === 'G' ? null : avatarUrl(user),
  };
  if (!options.viewer) delete (out as Partial<typeof out>).timezone; // spectators do not see time zones
  if (user.isBot) {
    out.bot_type = user.botType ?? 1;
    out.bot_owner_id = user.botOwnerId ?? null;
  } else if (options.profileValues && options.viewer) {
    const profile: NonNullable<Schema<'User'>['profile_data']> = {};
    for (const v of options.profileValues) {
      profile[String(v.fieldId)] = v.renderedValue === null ? { value: v.value } : { value: v.value, rendered_value: v.renderedValue };
    }
    out.profile_data = profile;
  }
  return out;
}
