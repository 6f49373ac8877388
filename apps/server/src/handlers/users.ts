// User operations: thin handlers mapping decoded parameters to a read model (queries/users.ts) or to
// an action, which checks permissions on the rows it locks.
import type { SuccessData } from '@parley/api-types';
import type { Handler } from '../http/handler.ts';
import { listUsersForViewer, ownUser, userByAddress, userById, userIdByAddress } from '../queries/users.ts';
import { checkCreateUser, doDeactivateOwnUser, doDeactivateUser, doReactivateUser, doUpdateUser } from '../actions/users.ts';

export const getUsers: Handler<'get-users'> = async ({ params, realm, viewer, deps }) => ({
  // Either formatted users or the serialised directory (spliced into the envelope as text).
  members: (await listUsersForViewer(deps, realm, viewer, params.user_ids, {
    clientGravatar: params.client_gravatar ?? true,
    includeProfile: params.include_custom_profile_fields ?? false,
  })) as SuccessData<'get-users'>['members'],
});

export const getUser: Handler<'get-user'> = async ({ params, path, realm, user, deps }) => {
  const options = { clientGravatar: params.client_gravatar ?? true, includeProfile: params.include_custom_profile_fields ?? false };
  // An id, or an address (Zulip's GET /users/{email}).
  return {
    user: typeof path.user_id === 'number'
      ? await userById(deps.db, realm, user, path.user_id, options)
      : await userByAddress(deps.db, realm, user, path.user_id, options),
  };
};

export const getOwnUser: Handler<'get-own-user'> = async ({ realm, user, deps }) => ownUser(deps, realm, user);

export const createUser: Handler<'create-user'> = async ({ params, realm, user, deps }) => {
  const created = await checkCreateUser(deps, realm, user, { email: params.email, fullName: params.full_name, password: params.password });
  return { user_id: created.id };
};

export const updateUser: Handler<'update-user'> = async ({ params, path, realm, user, deps }) => {
  // An id, or an address (Zulip's PATCH /users/{email}).
  const userId = typeof path.user_id === 'number' ? path.user_id : await userIdByAddress(deps.db, realm, user, path.user_id);
  await doUpdateUser(deps, realm, user, userId, {
    ...(params.full_name !== undefined ? { fullName: params.full_name } : {}),
    ...(params.role !== undefined ? { role: params.role } : {}),
    ...(params.profile_data !== undefined ? { profileData: params.profile_data } : {}),
    ...(params.new_email !== undefined ? { newEmail: params.new_email } : {}),
  });
  return {};
};

export const deactivateUser: Handler<'deactivate-user'> = async ({ params, path, realm, user, deps }) => {
  const notificationComment = params.deactivation_notification_comment;
  await doDeactivateUser(deps, realm, user, path.user_id, notificationComment === undefined ? {} : { notificationComment });
  return {};
};

export const reactivateUser: Handler<'reactivate-user'> = async ({ path, realm, user, deps }) => {
  await doReactivateUser(deps, realm, user, path.user_id);
  return {};
};

export const deactivateOwnUser: Handler<'deactivate-own-user'> = async ({ realm, user, deps }) => {
  await doDeactivateOwnUser(deps, realm, user);
  return {};
};
