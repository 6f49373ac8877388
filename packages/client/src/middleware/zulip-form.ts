import type { Middleware } from 'openapi-fetch';
import { encodeParams, findOperation } from '@parley/wire';

/**
 * Re-encodes every request in Zulip's wire format, reading the wire plan generated from the spec:
 * GET parameters in the query string, other methods as an `application/x-www-form-urlencoded` body;
 * strings raw, everything else JSON text (as the Python `zulip` client sends them).
 */
export const zulipForm: Middleware = {
  async onRequest({ request, schemaPath, params }) {
    const operation = findOperation(request.method, schemaPath);
    const url = new URL(request.url);
    url.search = '';
    const query = encodeParams(operation, (params.query ?? {}) as Record<string, unknown>);
    if (request.method === 'GET' || request.method === 'HEAD') {
      url.search = query.toString();
      return new Request(url, { method: request.method, headers: request.headers });
    }
    const text = request.body ? await request.text() : '';
    const bodyValues = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    const body = encodeParams(operation, bodyValues);
    for (const [name, value] of query) body.append(name, value);
    const headers = new Headers(request.headers);
    headers.set('Content-Type', 'application/x-www-form-urlencoded');
    return new Request(url, { method: request.method, headers, body: body.toString() });
  },
};
