import type { Handler } from '../http/handler.ts';
import type { Realm, User } from '../data/models.ts';
import type { Db } from '../data/db.ts';
import { listUsers } from '../data/users.repo.ts';
import { emailVisibilityOf } from '../data/users-admin.repo.ts';
import { profileValuesOfUsers } from '../data/profile-fields.repo.ts';
import { formatUser } from '../lib/user-format.ts';
import { accessUserById, accessUserForAdministration, checkSpectatorAccess } from '../access/users.ts';
import { checkCanChangeRole, checkCanChangeUserEmail, checkCanDeactivateUser, requireAdmin, requireHuman } from '../access/roles.ts';
import { doCreateUser, doDeactivateUser, doReactivateUser, doUpdateUser } from '../actions/users.ts';
import { JsonableError } from '../errors.ts';
import { checkPasswordStrength, isPlausibleEmail } from '../lib/validation.ts';

async function formatUsers(db: Db, realm: Realm, viewer: User | null, users: User[], options: { clientGravatar: boolean; includeProfile: boolean }) {
  const ids = users.map((u) => u.id);
  const visibility = await emailVisibilityOf(db, ids);
  const valuesByUser = new Map<number, Awaited<ReturnType<typeof profileValuesOfUsers>>>();
  if (options.includeProfile) {
    for (const value of await profileValuesOfUsers(db, ids)) {
      const list = valuesByUser.get(value.userId) ?? [];
      list.push(value);
      valuesByUser.set(value.userId, list);
    }
  }
  return users.map((user) =>
    formatUser(user, {
      realm,
      viewer,
      clientGravatar: options.clientGravatar,
      emailVisibility: visibility.get(user.id) ?? 1,
      ...(options.includeProfile ? { profileValues: valuesByUser.get(user.id) ?? [] } : {}),
    }),
  );
}

export const getUsers: Handler<'get-users'> = async ({ params, realm, viewer, deps }) => {
  if (!viewer) checkSpectatorAccess(realm);
  const users = await listUsers(deps.db, realm.id, params.user_ids);
  const members = await formatUsers(deps.db, realm, viewer, users, {
    clientGravatar: params.client_gravatar ?? true,
    includeProfile: params.include_custom_profile_fields ?? false,
  });
  return { members };
};

export const getUser: Handler<'get-user'> = async ({ params, path, realm, user, deps }) => {
  const target = await accessUserById(deps.db, realm, path.user_id, { allowDeactivated: true });
  const [formatted] = await formatUsers(deps.db, realm, user, [target], {
    clientGravatar: params.client_gravatar ?? true,
    includeProfile: params.include_custom_profile_fields ?? false,
  });
  return { user: formatted! };
};

export const getOwnUser: Handler<'get-own-user'> = async ({ realm, user, deps }) => {
  const [formatted] = await formatUsers(deps.db, realm, user, [user], { clientGravatar: false, includeProfile: true });
  return formatted!;
};

export const createUser: Handler<'create-user'> = async ({ params, realm, user, deps }) => {
  requireAdmin(user);
  if (!isPlausibleEmail(params.email)) throw new JsonableError('Bad name or username');
  checkPasswordStrength(params.password);
  const { user: created } = await doCreateUser(deps, realm, {
    email: params.email,
    fullName: params.full_name,
    password: params.password,
    role: 400,
  });
  return { user_id: created.id };
};

export const updateUser: Handler<'update-user'> = async ({ params, path, realm, user, deps }) => {
  const target = await accessUserForAdministration(deps.db, realm, user, path.user_id);
  if (params.role !== undefined && params.role !== target.role) checkCanChangeRole(user, target, params.role);
  if (params.new_email !== undefined) checkCanChangeUserEmail(user);
  await doUpdateUser(deps, realm, user, target.id, {
    ...(params.full_name !== undefined ? { fullName: params.full_name } : {}),
    ...(params.role !== undefined ? { role: params.role } : {}),
    ...(params.profile_data !== undefined ? { profileData: params.profile_data } : {}),
    ...(params.new_email !== undefined ? { newEmail: params.new_email } : {}),
  });
  return {};
};

export const deactivateUser: Handler<'deactivate-user'> = async ({ path, realm, user, deps }) => {
  const target = await accessUserForAdministration(deps.db, realm, user, path.user_id);
  if (target.isBot) throw new JsonableError('No such user'); // bots are deactivated through the bot API
  requireAdmin(user);
  checkCanDeactivateUser(user, target);
  await doDeactivateUser(deps, realm, user, target.id, { self: false });
  return {};
};

export const reactivateUser: Handler<'reactivate-user'> = async ({ path, realm, user, deps }) => {
  const target = await accessUserForAdministration(deps.db, realm, user, path.user_id);
  await doReactivateUser(deps, realm, target);
  return {};
};

export const deactivateOwnUser: Handler<'deactivate-own-user'> = async ({ realm, user, deps }) => {
  requireHuman(user);
  await doDeactivateUser(deps, realm, user, user.id, { self: true });
  return {};
};
