// Incoming-webhook integrations as the third party calls them: an incoming webhook bot made through
// POST /bots, a channel to post to, the fixture body POSTed raw to /api/v1/external/<integration>
// with its headers, and the new messages of the channel read back with the generated client.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll } from 'vitest';
import type { Person } from './fixtures.ts';
import type { TestServer } from './test-server.ts';
import { createChannel } from './channels.ts';

const fixturesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../api/integrations/fixtures');

/** A fixture's bytes, as the service sends them. */
export const webhookFixture = (integration: string, name: string): string => readFileSync(path.join(fixturesDir, integration, `${name}.json`), 'utf8');

export interface WebhookSetup {
  /** The incoming webhook bot. */
  bot: { id: number; apiKey: string };
  /** The channel the tests post to (its owner reads it). */
  channel: { id: number; name: string };
  /** Who owns the bot and reads the channel. */
  owner: Person;
}

/** An incoming webhook bot of `owner` and a channel of theirs, made once for the file. */
export function useIncomingWebhookBot(env: TestServer, owner: Person = 'hamlet'): WebhookSetup {
  const setup: WebhookSetup = { bot: { id: 0, apiKey: '' }, channel: { id: 0, name: '' }, owner };
  beforeAll(async () => {
    setup.channel = await createChannel(env, owner, { name: 'alerts' });
    const shortName = `hook${Math.random().toString(36).slice(2, 8)}`;
    const res = await env.raw('/bots', {
      method: 'POST',
      as: owner,
      body: new URLSearchParams({ full_name: `Hook ${shortName}`, short_name: shortName, bot_type: '2' }),
    });
    if (res.status !== 200) throw new Error(`setup: POST /bots: ${JSON.stringify(res.body)}`);
    setup.bot = { id: res.body.user_id as number, apiKey: res.body.api_key as string };
  });
  return setup;
}

export interface WebhookCall {
  /** The body (a fixture's text); omitted: no body. */
  body?: string;
  headers?: Record<string, string>;
  /** More query parameters (name, desc, topic, only_events …). */
  query?: Record<string, string>;
  /** Leave out `stream` (the message then goes to the bot's owner). */
  noStream?: boolean;
}

/** POSTs to /api/v1/external/<integration> with the bot's key, as the service would. */
export async function callWebhook(env: TestServer, setup: WebhookSetup, integration: string, call: WebhookCall = {}): Promise<{ status: number; body: any }> {
  const query = new URLSearchParams({ api_key: setup.bot.apiKey, ...(call.noStream ? {} : { stream: setup.channel.name }), ...call.query });
  const response = await fetch(`${env.url}/api/v1/external/${integration}?${query}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...call.headers },
    ...(call.body === undefined ? {} : { body: call.body }),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: response.status, body };
}

export interface ReadMessage {
  id: number;
  topic: string;
  content: string;
  senderId: number;
}

/** The channel's newest message id (0 when empty), as its owner reads it. */
export async function newestMessageId(env: TestServer, setup: WebhookSetup): Promise<number> {
  const messages = await channelMessages(env, setup, 1);
  return messages.at(-1)?.id ?? 0;
}

/** The channel's messages after `sinceId`, oldest first, raw Markdown. */
export async function messagesSince(env: TestServer, setup: WebhookSetup, sinceId: number): Promise<ReadMessage[]> {
  return (await channelMessages(env, setup, 50)).filter((m) => m.id > sinceId);
}

/** Zulip's query encoding: strings as they are, everything else (the narrow) as JSON. */
const querySerializer = (query: Record<string, unknown>) =>
  new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();

async function channelMessages(env: TestServer, setup: WebhookSetup, count: number): Promise<ReadMessage[]> {
  const { data, error } = await env.client(setup.owner).GET('/messages', {
    params: {
      query: {
        anchor: 'newest',
        num_before: count,
        num_after: 0,
        apply_markdown: false,
        narrow: [{ operator: 'channel', operand: setup.channel.id }],
      },
    },
    querySerializer,
  });
  if (!data) throw new Error(`GET /messages: ${JSON.stringify(error)}`);
  return data.messages.map((m) => ({ id: m.id, topic: m.subject, content: m.content, senderId: m.sender_id }));
}

/**
 * Posts the call and returns what it posted to the channel (oldest first), after checking the answer
 * was a plain success.
 */
export async function postedBy(env: TestServer, setup: WebhookSetup, integration: string, call: WebhookCall): Promise<ReadMessage[]> {
  const before = await newestMessageId(env, setup);
  const res = await callWebhook(env, setup, integration, call);
  if (res.status !== 200 || res.body?.result !== 'success') throw new Error(`expected success, got ${res.status} ${JSON.stringify(res.body)}`);
  return messagesSince(env, setup, before);
}
