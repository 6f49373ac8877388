// Linkifiers: thin handlers over the read model (queries/linkifiers.ts) and the actions
// (actions/linkifiers.ts).
import type { Handler } from '../http/handler.ts';
import { linkifiersList } from '../queries/linkifiers.ts';
import { doAddLinkifier, doRemoveLinkifier, doReorderLinkifiers, doUpdateLinkifier } from '../actions/linkifiers.ts';

export const getLinkifiers: Handler<'get-linkifiers'> = async ({ realm, deps }) => ({ linkifiers: await linkifiersList(deps.db, realm.id) });

export const addLinkifier: Handler<'add-linkifier'> = async ({ params, realm, user, deps }) => ({
  id: await doAddLinkifier(deps, realm, user, params),
});

export const updateLinkifier: Handler<'update-linkifier'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateLinkifier(deps, realm, user, path.filter_id, params);
  return {};
};

export const removeLinkifier: Handler<'remove-linkifier'> = async ({ path, realm, user, deps }) => {
  await doRemoveLinkifier(deps, realm, user, path.filter_id);
  return {};
};

export const reorderLinkifiers: Handler<'reorder-linkifiers'> = async ({ params, realm, user, deps }) => {
  await doReorderLinkifiers(deps, realm, user, params.ordered_linkifier_ids);
  return {};
};
