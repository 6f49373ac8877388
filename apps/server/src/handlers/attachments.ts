// Attachments: the user's uploaded files (queries/attachments.ts) and deleting one (actions/attachments.ts).
import type { Handler } from '../http/handler.ts';
import { listAttachments } from '../queries/attachments.ts';
import { doRemoveAttachment } from '../actions/attachments.ts';

export const getAttachments: Handler<'get-attachments'> = async ({ user, deps }) => listAttachments(deps.db, user);

export const removeAttachment: Handler<'remove-attachment'> = async ({ path, realm, user, deps, cachedTableWrites }) => {
  cachedTableWrites.none();
  await doRemoveAttachment(deps, realm, user, path.attachment_id);
  return {};
};
