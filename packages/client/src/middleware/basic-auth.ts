import type { Middleware } from 'openapi-fetch';

/** HTTP Basic `email:api_key`, as every Zulip client authenticates. */
export function basicAuth(email: string, apiKey: string): Middleware {
  const header = `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;
  return {
    onRequest({ request }) {
      request.headers.set('Authorization', header);
      return request;
    },
  };
}
