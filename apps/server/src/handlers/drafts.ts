// Drafts: thin handlers mapping decoded parameters to the read model (queries/drafts.ts) or to an
// action (actions/drafts.ts), which checks the user's synchronization setting and the drafts' owner.
import type { Handler } from '../http/handler.ts';
import { listDrafts } from '../queries/drafts.ts';
import { doCreateDrafts, doDeleteDraft, doEditDraft } from '../actions/drafts.ts';

export const getDrafts: Handler<'get-drafts'> = async ({ user, deps }) => listDrafts(deps.db, user);

/** `drafts` is optional (the seed): without it, nothing is created, as with an empty list. */
export const createDrafts: Handler<'create-drafts'> = async ({ params, realm, user, deps }) => ({
  ids: await doCreateDrafts(deps, realm, user, params.drafts ?? []),
});

export const editDraft: Handler<'edit-draft'> = async ({ params, path, realm, user, deps }) => {
  await doEditDraft(deps, realm, user, path.draft_id, params.draft);
  return {};
};

export const deleteDraft: Handler<'delete-draft'> = async ({ path, realm, user, deps }) => {
  await doDeleteDraft(deps, realm, user, path.draft_id);
  return {};
};
