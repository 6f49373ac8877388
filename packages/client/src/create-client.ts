import createClient, { type Client } from 'openapi-fetch';
import type { paths } from '@parley/api-types';
import { basicAuth } from './middleware/basic-auth.ts';
import { zulipForm } from './middleware/zulip-form.ts';
import { readZuliprc } from './zuliprc.ts';

export type ParleyClient = Client<paths>;

export interface ClientOptions {
  /** Scheme, host and port, e.g. http://127.0.0.1:9991 (a zuliprc's `site`). */
  site: string;
  /** Omit both for unauthenticated calls (server settings, spectators). */
  email?: string;
  apiKey?: string;
  fetch?: typeof fetch;
}

/** A typed client for Parley (and any Zulip server): `client.GET('/users', { params: { query: {...} } })`. */
export function createParleyClient(options: ClientOptions): ParleyClient {
  const client = createClient<paths>({
    baseUrl: `${options.site.replace(/\/+$/, '')}/api/v1`,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use(zulipForm);
  if (options.email && options.apiKey) client.use(basicAuth(options.email, options.apiKey));
  return client;
}

export function createClientFromZuliprc(file: string, options: Omit<ClientOptions, 'site' | 'email' | 'apiKey'> = {}): ParleyClient {
  const rc = readZuliprc(file);
  return createParleyClient({ ...options, site: rc.site, email: rc.email, apiKey: rc.key });
}
