// Incoming webhooks: POST (and GET) /external/{integration_name}. The body is taken raw (whatever the
// service sends); the caller is named by HTTP Basic credentials or by the `api_key` parameter (both
// checked by the pipeline, http/pipeline.ts, before the parameters), with Zulip's webhook rules
// (incoming webhook bots allowed). The integration (src/integrations/) turns the
// request into messages; actions/webhooks.ts filters and sends them.
import type { Handler, HandlerContext, RawRequest } from '../http/handler.ts';
import { JsonableError } from '../errors.ts';
import { integrationNamed } from '../integrations/index.ts';
import { WebhookPayloadError, type WebhookRequest } from '../integrations/types.ts';
import { doReceiveIncomingWebhook } from '../actions/webhooks.ts';

type WebhookOperation = 'call-incoming-webhook' | 'call-incoming-webhook-get';

const receive = async (ctx: HandlerContext<WebhookOperation>) => {
  const { params, deps } = ctx;
  const integration = integrationNamed(ctx.path.integration_name);
  // An unknown integration has no URL in Zulip: Django's 404, before any credential is looked at.
  if (!integration) throw new JsonableError('Not Found', { status: 404 });
  // The caller: by HTTP Basic or by the `api_key` parameter, both checked by the pipeline.
  const { user, realm } = ctx;
  const stream = params.stream;
  const topic = params.topic?.trim();
  const answer = await doReceiveIncomingWebhook(deps, realm, user, {
    integration,
    request: webhookRequest(ctx.raw, topic === '' ? undefined : topic),
    stream: stream === undefined || stream === '' ? undefined : stream,
    onlyEvents: params.only_events,
    excludeEvents: params.exclude_events,
  });
  return answer;
};

export const callIncomingWebhook: Handler<'call-incoming-webhook'> = receive;
export const callIncomingWebhookGet: Handler<'call-incoming-webhook-get'> = receive;

/**
 * What an integration sees. The body is parsed when first read: form fields for a form-encoded body,
 * JSON otherwise; a body that is not JSON (an empty one included) fails then with Zulip's
 * `Malformed JSON`, so that integrations that never read it (query-string ones) are not refused.
 */
export function webhookRequest(raw: RawRequest, userTopic: string | undefined): WebhookRequest {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(raw.headers)) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  const query: Record<string, string> = {};
  for (const [name, value] of raw.query) query[name] = value;
  const formEncoded = (headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
  let parsed: { value: unknown } | undefined;
  return {
    get body(): unknown {
      if (!parsed) {
        if (formEncoded) {
          const fields: Record<string, string> = Object.create(null);
          new URLSearchParams(raw.body.toString('utf8')).forEach((value, name) => {
            fields[name] = value;
          });
          parsed = { value: fields };
        } else {
          try {
            parsed = { value: JSON.parse(raw.body.toString('utf8')) as unknown };
          } catch {
            throw new WebhookPayloadError('Malformed JSON');
          }
        }
      }
      return parsed.value;
    },
    rawBody: raw.body,
    headers,
    query,
    userTopic,
  };
}
