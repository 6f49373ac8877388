import type { Handler } from '../http/handler.ts';
import { doFetchApiKey } from '../actions/authentication.ts';

export const fetchApiKey: Handler<'fetch-api-key'> = async ({ params, realm, deps }) =>
  doFetchApiKey(deps, realm, { username: params.username, password: params.password });
