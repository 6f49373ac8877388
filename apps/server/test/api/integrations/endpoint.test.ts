// The incoming-webhook endpoint itself (/api/v1/external/{integration_name}, Zulip's webhook_view and
// check_send_webhook_message), driven through the generic JSON integration and the Slack-compatible
// one: the key in the query string, a form field or HTTP Basic; who may call it; `stream` by name or
// ID, a missing channel, no `stream` (the bot's owner); unknown integrations; bodies that are not JSON
// or too large; no deduplication; and GET.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture, type WebhookSetup } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const setup = useIncomingWebhookBot(env);
const PING = () => webhookFixture('json', 'json_pingdom_http_up_to_down');

async function makeBot(owner: 'hamlet' | 'iago', botType: number): Promise<{ id: number; apiKey: string; email: string }> {
  const shortName = `b${Math.random().toString(36).slice(2, 8)}`;
  const res = await env.raw('/bots', { method: 'POST', as: owner, body: new URLSearchParams({ full_name: `Bot ${shortName}`, short_name: shortName, bot_type: String(botType) }) });
  expect(res.status).toBe(200);
  const row = await env.running.deps.db.user.findUniqueOrThrow({ where: { id: res.body.user_id as number } });
  return { id: row.id, apiKey: res.body.api_key as string, email: row.deliveryEmail };
}

/** The direct messages between `person` and the bot, newest last, as `person` reads them. */
async function directMessagesWith(person: 'hamlet', botId: number) {
  const { data } = await env.client(person).GET('/messages', {
    params: { query: { anchor: 'newest', num_before: 5, num_after: 0, apply_markdown: false, narrow: [{ operator: 'dm', operand: [botId] }] } },
    querySerializer: (q: Record<string, unknown>) => new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString(),
  });
  return data!.messages.map((m) => ({ id: m.id, content: m.content, senderId: m.sender_id }));
}

/** The webhook URL of an integration, with its query string. */
const hookUrl = (integration: string, query: Record<string, string>) => env.url + `/api/v1/external/${integration}?${new URLSearchParams(query)}`;
const raw = (integration: string, query: Record<string, string>, init: RequestInit = {}) =>
  fetch(hookUrl(integration, query), { method: 'POST', ...init }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

describe('POST /external/{integration_name}', () => {
  it('posts what the integration makes, as the bot, with the key in the query string', async () => {
    const posted = await postedBy(env, setup, 'json', { body: PING() });
    expect(posted).toHaveLength(1);
    expect(posted[0]!.topic).toBe('JSON');
    expect(posted[0]!.senderId).toBe(setup.bot.id);
    expect(posted[0]!.content.startsWith('```json\n{\n  "check_id": 2048467,\n  "check_name": "Test check",')).toBe(true);
  });

  it('takes HTTP Basic credentials instead of api_key, and the channel by ID', async () => {
    const bot = await makeBot('hamlet', 2);
    const before = await newestMessageId(env, setup);
    const res = await raw('json', { stream: String(setup.channel.id), topic: 'basic' }, { headers: { Authorization: basicAuth(bot.email, bot.apiKey), 'Content-Type': 'application/json' }, body: '{"a": 1}' });
    expect(res).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    const posted = await messagesSince(env, setup, before);
    expect(posted.map((m) => [m.topic, m.content, m.senderId])).toEqual([['basic', '```json\n{\n  "a": 1\n}\n```', bot.id]]);
  });

  it('takes api_key, stream and topic as form fields of a form-encoded body', async () => {
    const before = await newestMessageId(env, setup);
    const body = new URLSearchParams({ api_key: setup.bot.apiKey, stream: setup.channel.name, topic: 'from a form', payload: JSON.stringify({ text: 'Hello from a form' }) });
    const res = await fetch(`${env.url}/api/v1/external/slack_incoming`, { method: 'POST', body });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'success', msg: '', ok: true });
    const posted = await messagesSince(env, setup, before);
    expect(posted.map((m) => [m.topic, m.content])).toEqual([['from a form', 'Hello from a form']]);
  });

  it('answers a request sent twice twice: nothing is deduplicated, as in Zulip', async () => {
    const before = await newestMessageId(env, setup);
    await callWebhook(env, setup, 'json', { body: '{"id": "same"}', query: { topic: 'twice' } });
    await callWebhook(env, setup, 'json', { body: '{"id": "same"}', query: { topic: 'twice' } });
    expect((await messagesSince(env, setup, before)).map((m) => m.topic)).toEqual(['twice', 'twice']);
  });

  it('without `stream`, sends a direct message to the bot owner', async () => {
    const res = await callWebhook(env, setup, 'json', { body: '{"to": "owner"}', noStream: true });
    expect(res.status).toBe(200);
    const dms = await directMessagesWith('hamlet', setup.bot.id);
    expect(dms.at(-1)).toMatchObject({ content: '```json\n{\n  "to": "owner"\n}\n```', senderId: setup.bot.id });
  });

  it('to a channel that does not exist: posts nothing, answers success, and tells the owner', async () => {
    const before = await newestMessageId(env, setup);
    const res = await callWebhook(env, setup, 'json', { body: '{}', query: { stream: 'no such channel' } });
    expect(res).toEqual({ status: 200, body: { result: 'success', msg: '' } });
    expect(await messagesSince(env, setup, before)).toEqual([]);
    const { data } = await env.client('hamlet').GET('/messages', {
      params: { query: { anchor: 'newest', num_before: 1, num_after: 0, apply_markdown: false } },
      querySerializer: (q: Record<string, unknown>) => new URLSearchParams(Object.entries(q).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString(),
    });
    const notice = data!.messages.at(-1)!;
    expect(notice.sender_full_name).toBe('Notification Bot');
    expect(notice.content).toContain('tried to send a message to channel #**no such channel**, but that channel does not exist.');
  });

  it('answers an unknown integration with 404 Not Found', async () => {
    const res = await raw('no_such_integration', { api_key: setup.bot.apiKey, stream: setup.channel.name }, { body: '{}' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' });
  });

  it('refuses requests without a valid key, and keys of deactivated bots', async () => {
    expectJsonError(await raw('json', { stream: setup.channel.name }, { body: '{}' }), 400, "Missing 'api_key' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await raw('json', { api_key: 'x'.repeat(32), stream: setup.channel.name }, { body: '{}' }), 401, 'Invalid API key');
    expectJsonError(await raw('json', { api_key: 'short', stream: setup.channel.name }, { body: '{}' }), 401, 'Malformed API key');
    const bot = await makeBot('hamlet', 2);
    expect((await env.raw(`/bots/${bot.id}`, { method: 'DELETE', as: 'hamlet' })).status).toBe(200);
    const before = await newestMessageId(env, setup);
    expectJsonError(await raw('json', { api_key: bot.apiKey, stream: setup.channel.name }, { body: '{}' }), 401, 'Account is deactivated');
    expect(await messagesSince(env, setup, before)).toEqual([]);
  });

  it("accepts any active account's key, as Zulip's webhook_view does; a person must name a channel", async () => {
    const before = await newestMessageId(env, setup);
    const person = env.users.hamlet;
    expect((await raw('json', { api_key: person.apiKey, stream: setup.channel.name, topic: 'by hand' }, { body: '{}' })).status).toBe(200);
    expect((await messagesSince(env, setup, before)).map((m) => m.senderId)).toEqual([person.id]);
    expectJsonError(await raw('json', { api_key: person.apiKey }, { body: '{}' }), 400, "Missing 'stream' argument", 'REQUEST_VARIABLE_MISSING');
  });

  it('refuses a body that is not JSON, and an empty one, with Malformed JSON', async () => {
    const before = await newestMessageId(env, setup);
    expectJsonError(await callWebhook(env, setup, 'json', { body: '{"not": json' }), 400, 'Malformed JSON');
    expectJsonError(await callWebhook(env, setup, 'json', {}), 400, 'Malformed JSON');
    expectJsonError(await callWebhook(env, setup, 'json', { body: '[1, 2]' }), 400, 'payload is not a dict');
    expect(await messagesSince(env, setup, before)).toEqual([]);
  });

  it('refuses a body over 5 MiB with 413', async () => {
    const huge = `{"x": "${'a'.repeat(5 * 1024 * 1024)}"}`;
    expectJsonError(await callWebhook(env, setup, 'json', { body: huge }), 413, 'Request body too large');
  });

  it('refuses posting where the bot may not post (a private channel it is not in)', async () => {
    const created = await env.raw('/users/me/subscriptions', {
      method: 'POST',
      as: 'iago',
      body: new URLSearchParams({ subscriptions: JSON.stringify([{ name: 'iago private hooks' }]), invite_only: 'true' }),
    });
    expect(created.status).toBe(200);
    const res = await callWebhook(env, setup, 'json', { body: '{}', query: { stream: 'iago private hooks' } });
    expect(res.status).toBe(400);
    expect(res.body.result).toBe('error');
  });

  it('is not available on other endpoints to incoming webhook bots', async () => {
    const res = await fetch(`${env.url}/api/v1/users/me`, { headers: { Authorization: basicAuth((await env.running.deps.db.user.findUniqueOrThrow({ where: { id: setup.bot.id } })).deliveryEmail, setup.bot.apiKey) } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { msg: string }).msg).toBe('This API is not available to incoming webhook bots.');
  });
});

describe('GET /external/{integration_name}', () => {
  it('reads everything from the query string (a Slack-compatible payload)', async () => {
    const before = await newestMessageId(env, setup);
    const query = { api_key: setup.bot.apiKey, stream: setup.channel.name, payload: JSON.stringify({ channel: '#deploys', text: 'Deployed *v2*' }) };
    const res = await fetch(hookUrl('slack_incoming', query), { method: 'GET' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ result: 'success', msg: '', ok: true });
    expect((await messagesSince(env, setup, before)).map((m) => [m.topic, m.content])).toEqual([['deploys', 'Deployed **v2**']]);
  });
});

export type { WebhookSetup };
