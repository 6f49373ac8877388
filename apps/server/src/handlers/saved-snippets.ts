// Saved snippets: thin handlers mapping parameters to the read model or to an action. None of these
// changes touches a table the per-process caches follow.
import type { Handler } from '../http/handler.ts';
import { savedSnippetsOf } from '../queries/saved-snippets.ts';
import { doCreateSavedSnippet, doDeleteSavedSnippet, doEditSavedSnippet } from '../actions/saved-snippets.ts';

export const getSavedSnippets: Handler<'get-saved-snippets'> = async ({ user, deps }) => ({
  saved_snippets: await savedSnippetsOf(deps.db, user),
});

export const createSavedSnippet: Handler<'create-saved-snippet'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  const id = await doCreateSavedSnippet(deps, realm, user, { title: params.title, content: params.content });
  cachedTableWrites.none();
  return { saved_snippet_id: id };
};

export const editSavedSnippet: Handler<'edit-saved-snippet'> = async ({ params, path, realm, user, deps, cachedTableWrites }) => {
  await doEditSavedSnippet(deps, realm, user, path.saved_snippet_id, {
    ...(params.title !== undefined ? { title: params.title } : {}),
    ...(params.content !== undefined ? { content: params.content } : {}),
  });
  cachedTableWrites.none();
  return {};
};

export const deleteSavedSnippet: Handler<'delete-saved-snippet'> = async ({ path, realm, user, deps, cachedTableWrites }) => {
  await doDeleteSavedSnippet(deps, realm, user, path.saved_snippet_id);
  cachedTableWrites.none();
  return {};
};
