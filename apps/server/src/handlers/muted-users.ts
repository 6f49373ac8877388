// Muted users: thin handlers over actions/muted-users.ts (which checks the target and writes).
import type { Handler } from '../http/handler.ts';
import { doMuteUser, doUnmuteUser } from '../actions/muted-users.ts';

export const muteUser: Handler<'mute-user'> = async ({ path, realm, user, deps, cachedTableWrites }) => {
  await doMuteUser(deps, realm, user, path.muted_user_id, cachedTableWrites);
  return {};
};

export const unmuteUser: Handler<'unmute-user'> = async ({ path, realm, user, deps, cachedTableWrites }) => {
  await doUnmuteUser(deps, realm, user, path.muted_user_id, cachedTableWrites);
  return {};
};
