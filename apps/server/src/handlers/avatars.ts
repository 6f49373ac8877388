// Avatars: POST /users/me/avatar (one image, resized and stored: actions/avatars.ts) and
// DELETE /users/me/avatar (back to the gravatar). The images are served by http/user-avatars.ts.
import type { Handler } from '../http/handler.ts';
import { doDeleteAvatar, doSetAvatar } from '../actions/avatars.ts';

export const setAvatar: Handler<'set-avatar'> = async ({ realm, user, deps, multipart }) => doSetAvatar(deps, realm, user, multipart);

export const deleteAvatar: Handler<'delete-avatar'> = async ({ realm, user, deps }) => doDeleteAvatar(deps, realm, user);
