// Domain actions on users. Each runs in one transaction and emits its events after commit; callers
// (handlers) have already authorized the request through access/.
import type { AppDeps } from '../deps.ts';
import { inTransaction, isUniqueViolation, type Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import {
  countActiveHumanOwners,
  countActiveUsers,
  createUser,
  findApiKey,
  findUserByDeliveryEmail,
  findUsersByIds,
  lockUser,
  lockRealm,
  updateUser,
  upsertApiKey,
} from '../data/users.repo.ts';
import { syncSystemGroupMembership, systemGroupEvents } from '../data/system-groups.repo.ts';
import { deleteProfileValue, findProfileFieldsByIds, upsertProfileValue } from '../data/profile-fields.repo.ts';
import { activeUsersWithRole, deactivateBotsOwnedBy, emailVisibilityOf } from '../data/users-admin.repo.ts';
import { JsonableError } from '../errors.ts';
import { generateApiKey } from '../security/secrets.ts';
import { hashPassword } from '../security/passwords.ts';
import { normalizeProfileValue } from '../lib/profile-fields.ts';
import { checkCanChangeRole, checkCanDeactivateUser, Role } from '../access/roles.ts';
import { canSeeDeliveryEmail } from '../lib/user-format.ts';
import { subscribeToDefaultChannels } from './subscriptions.ts';
import { validateEmailAddress, validateFullName } from '../lib/validation.ts';

export interface NewUser {
  email: string;
  fullName: string;
  password: string | null;
  role: number;
}

export async function doCreateUser(deps: AppDeps, realm: Realm, input: NewUser): Promise<{ user: User; apiKey: string }> {
  const prepared = await prepareNewUser(input);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const created = await insertUser(tx, deps, realm, prepared);
    afterCommit(() => deps.events.announce(realm.id));
    return created;
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError(`Email '${prepared.email}' already in use`);
    throw error;
  });
}

export interface PreparedUser {
  email: string;
  fullName: string;
  passwordHash: string | null;
  role: number;
}

/** Validation and password hashing, done before any transaction opens. */
export async function prepareNewUser(input: NewUser): Promise<PreparedUser> {
  return {
    email: validateEmailAddress(input.email),
    fullName: validateFullName(input.fullName),
    passwordHash: input.password ? await hashPassword(input.password) : null,
    role: input.role,
  };
}

/** Creates the user, its settings, system-group membership and API key inside `tx`. */
export async function insertUser(tx: Db, deps: Pick<AppDeps, 'cipher' | 'events'>, realm: Realm, input: PreparedUser): Promise<{ user: User; apiKey: string }> {
  const { email, fullName, passwordHash, role } = input;
  if (await findUserByDeliveryEmail(tx, realm.id, email)) throw new JsonableError(`Email '${email}' already in use`);
  const user = await createUser(tx, { realmId: realm.id, email, deliveryEmail: email, fullName, role, passwordHash });
  const membership = await syncSystemGroupMembership(tx, realm.id, user.id, user.role);
  const apiKey = generateApiKey();
  await upsertApiKey(tx, user.id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey));
  await deps.events.enqueue(tx, realm.id, [
    // New users start with email_address_visibility 1 (everyone), so the real address is public.
    { realmWide: true, payload: { type: 'realm_user', op: 'add', person: { user_id: user.id, full_name: fullName, email, role } } },
    ...systemGroupEvents(user.id, membership).map((payload) => ({ realmWide: true as const, payload })),
    ...(await subscribeToDefaultChannels(tx, realm, user)),
  ]);
  return { user, apiKey };
}

/** The user's API key (shared by all their devices, as in Zulip); created on first use. */
export async function getOrCreateApiKey(deps: AppDeps, user: User): Promise<string> {
  const row = await findApiKey(deps.db, user.id);
  if (row) return deps.cipher.decrypt(row.ciphertext);
  return doRotateApiKey(deps, user);
}

export async function doRotateApiKey(deps: AppDeps, user: User): Promise<string> {
  const apiKey = generateApiKey();
  await upsertApiKey(deps.db, user.id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey));
  return apiKey;
}

export interface UserUpdate {
  fullName?: string;
  role?: number;
  profileData?: Array<{ id: number; value?: unknown }>;
  newEmail?: string;
}

/**
 * `actor` is the administrator making the change (null for the management CLI). Changes that touch the
 * organization's owners are serialised on the realm row, and the target is re-read under lock, so the
 * rules ("the only owner keeps the role", "only owners change owners") hold under concurrency.
 */
export async function doUpdateUser(deps: AppDeps, realm: Realm, actor: User | null, targetId: number, update: UserUpdate): Promise<void> {
  const fullName = update.fullName !== undefined && update.fullName.trim() !== '' ? validateFullName(update.fullName) : undefined;
  const newEmail = update.newEmail !== undefined ? validateEmailAddress(update.newEmail) : undefined;
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if (update.role !== undefined) await lockRealm(tx, realm.id);
    const target = await lockUser(tx, realm.id, targetId);
    if (!target) throw new JsonableError('No such user');
    const events: Array<Record<string, unknown>> = [];
    if (update.role !== undefined && update.role !== target.role) {
      if (actor) checkCanChangeRole(actor, target, update.role);
      if (target.role === Role.OWNER && target.isActive && !target.isBot && (await countActiveHumanOwners(tx, realm.id)) <= 1) {
        throw new JsonableError('The owner permission cannot be removed from the only organization owner.');
      }
      await updateUser(tx, target.id, { role: update.role });
      const membership = await syncSystemGroupMembership(tx, realm.id, target.id, update.role);
      events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, role: update.role } });
      events.push(...systemGroupEvents(target.id, membership));
    }
    if (fullName !== undefined && fullName !== target.fullName) {
      await updateUser(tx, target.id, { fullName });
      events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, full_name: fullName } });
    }
    const privateEvents: Array<{ userIds: number[]; payload: Record<string, unknown> }> = [];
    if (newEmail !== undefined && newEmail.toLowerCase() !== target.deliveryEmail.toLowerCase()) {
      const holder = await findUserByDeliveryEmail(tx, realm.id, newEmail);
      if (holder && holder.id !== target.id) throw new JsonableError(`Email '${newEmail}' already in use`);
      await updateUser(tx, target.id, { email: newEmail, deliveryEmail: newEmail });
      // The real address goes only to those allowed to see it (the target's email_address_visibility).
      const visibility = (await emailVisibilityOf(tx, [target.id])).get(target.id) ?? 1;
      const viewers = await activeUsersWithRole(tx, realm.id);
      privateEvents.push({
        userIds: viewers.filter((v) => canSeeDeliveryEmail(v, target, visibility)).map((v) => v.id),
        payload: { type: 'realm_user', op: 'update', person: { user_id: target.id, delivery_email: newEmail } },
      });
      if (visibility === 1) events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, email: newEmail } });
    }
    if (update.profileData && update.profileData.length > 0) {
      const fields = await findProfileFieldsByIds(tx, realm.id, update.profileData.map((d) => d.id));
      const referencedUserIds = update.profileData.flatMap((d) => (Array.isArray(d.value) ? (d.value as number[]) : []));
      const existingUsers = new Set((await findUsersByIds(tx, realm.id, referencedUserIds)).filter((u) => u.isActive).map((u) => u.id));
      for (const entry of update.profileData) {
        const field = fields.find((f) => f.id === entry.id);
        if (!field) throw new JsonableError(`Field id ${entry.id} not found.`);
        const empty = entry.value === null || entry.value === undefined || entry.value === '' || (Array.isArray(entry.value) && entry.value.length === 0);
        if (empty) {
          await deleteProfileValue(tx, target.id, field.id);
          events.push({ type: 'realm_user', op: 'update', person: { user_id: target.id, custom_profile_field: { id: field.id, value: null } } });
          continue;
        }
        const normalized = normalizeProfileValue(field, entry.value, (ids) => ids.every((id) => existingUsers.has(id)));
        await upsertProfileValue(tx, target.id, field.id, normalized.value, normalized.renderedValue);
        events.push({
          type: 'realm_user',
          op: 'update',
          person: {
            user_id: target.id,
            custom_profile_field: { id: field.id, value: normalized.value, ...(normalized.renderedValue !== null ? { rendered_value: normalized.renderedValue } : {}) },
          },
        });
      }
    }
    if (events.length > 0 || privateEvents.length > 0) {
      await deps.events.enqueue(tx, realm.id, [...events.map((payload) => ({ realmWide: true as const, payload })), ...privateEvents]);
      afterCommit(() => deps.events.announce(realm.id));
    }
  }).catch((error) => {
    if (isUniqueViolation(error)) throw new JsonableError(`Email '${newEmail}' already in use`);
    throw error;
  });
}

/**
 * Deactivation, by an administrator (`actor`, DELETE /users/{id}) or by the user themself (`self`). Bots the
 * user owns are deactivated too. Serialised on the realm row with role changes, so the organization
 * can never lose its last owner or user.
 */
export async function doDeactivateUser(deps: AppDeps, realm: Realm, actor: User, targetId: number, options: { self: boolean }): Promise<void> {
  const { self } = options;
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    const target = await lockUser(tx, realm.id, targetId);
    if (!target) throw new JsonableError('No such user');
    if (self && (await countActiveUsers(tx, realm.id)) <= 1) {
      throw new JsonableError('Cannot deactivate the only user.', {
        code: 'CANNOT_DEACTIVATE_LAST_USER',
        data: { is_last_owner: false, entity: 'user' },
      });
    }
    if (!target.isActive) throw new JsonableError('User is deactivated');
    if (!self) checkCanDeactivateUser(actor, target);
    if (target.role === Role.OWNER && !target.isBot && (await countActiveHumanOwners(tx, realm.id)) <= 1) {
      // Own deactivation has its own error code (seed op 20); an administrator's attempt is a plain error.
      throw self
        ? new JsonableError('Cannot deactivate the only organization owner.', {
            code: 'CANNOT_DEACTIVATE_LAST_USER',
            data: { is_last_owner: true, entity: 'organization owner' },
          })
        : new JsonableError('Cannot deactivate the only organization owner');
    }
    await updateUser(tx, target.id, { isActive: false });
    const bots = await deactivateBotsOwnedBy(tx, target.id);
    await deps.events.enqueue(
      tx,
      realm.id,
      [target.id, ...bots].map((userId) => ({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: userId, is_active: false } } })),
    );
    afterCommit(() => deps.events.announce(realm.id));
  });
}

export async function doReactivateUser(deps: AppDeps, realm: Realm, target: User): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const current = await findUsersByIds(tx, realm.id, [target.id]);
    if (current[0]?.isActive) return; // already active: nothing to do (Zulip has no error here)
    await updateUser(tx, target.id, { isActive: true });
    await deps.events.enqueue(tx, realm.id, [
      { realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: target.id, is_active: true } } },
    ]);
    afterCommit(() => deps.events.announce(realm.id));
  });
}
