// Uploads: POST /user_uploads streams the body's file into storage (actions/uploads.ts); GET
// /user_uploads/{realm_id_str}/{filename} answers a temporary URL of a file the user may read. The
// files themselves are served outside the API (http/user-uploads.ts).
import type { Handler } from '../http/handler.ts';
import { doUploadFile } from '../actions/uploads.ts';
import { temporaryFileUrl } from '../queries/uploads.ts';

export const uploadFile: Handler<'upload-file'> = async ({ realm, user, deps, multipart, cachedTableWrites }) => {
  cachedTableWrites.none();
  return doUploadFile(deps, realm, user, multipart);
};

export const getFileTemporaryUrl: Handler<'get-file-temporary-url'> = async ({ path, realm, user, deps }) => ({
  url: await temporaryFileUrl(deps, realm, user, `${path.realm_id_str}/${path.filename}`),
});
