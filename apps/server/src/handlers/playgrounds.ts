// Code playgrounds: thin handlers over the actions (actions/playgrounds.ts).
import type { Handler } from '../http/handler.ts';
import { doAddPlayground, doRemovePlayground } from '../actions/playgrounds.ts';

export const addCodePlayground: Handler<'add-code-playground'> = async ({ params, realm, user, deps }) => ({
  id: await doAddPlayground(deps, realm, user, params),
});

export const removeCodePlayground: Handler<'remove-code-playground'> = async ({ path, realm, user, deps }) => {
  await doRemovePlayground(deps, realm, user, path.playground_id);
  return {};
};
