// Outgoing webhooks (Zulip's outgoing_webhooks worker), against a real local HTTP server: what
// triggers a bot (a mention in a channel, a direct message; never a bot's message), the payload of each
// interface, the bot's reply in the same conversation, retries of timeouts, connection failures and
// 5xx answers with the reply posted once, the failure notices to the conversation and to the bot's
// owner, the refusal of non-public addresses unless allowed, and that a message the bot may not read
// never leaves the server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { waitFor } from '../../helpers/wait.ts';
import { doDeliverOutgoingWebhook } from '../../../src/actions/outgoing-webhooks.ts';

const env = useTestServer({
  // The local target below is on loopback; retries wait only for the queue's polling.
  config: { outgoingWebhooks: { allowPrivate: true, timeoutMs: 400, retryDelayMs: 0 } },
});
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
const privateChannel = useChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);
const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

// ---------------------------------------------------------------------------------------------
// The target: records every request; each path answers with the answers queued for it, in turn
// (the last one repeats), or holds the request unanswered ('hang').

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Answer = { status: number; body: string; contentType?: string } | 'hang';

const received: Received[] = [];
const answers = new Map<string, Answer[]>();
const held: http.ServerResponse[] = [];
let target: http.Server;
let targetUrl = '';

beforeAll(async () => {
  target = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const queue = answers.get(path) ?? [];
      const answer = queue.length > 1 ? queue.shift()! : (queue[0] ?? { status: 200, body: '{}' });
      if (answer === 'hang') {
        held.push(res);
        return;
      }
      res.writeHead(answer.status, { 'Content-Type': answer.contentType ?? 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const res of held) res.destroy();
  await new Promise<void>((resolve) => target.close(() => resolve()));
});

const json = (value: unknown, status = 200): Answer => ({ status, body: JSON.stringify(value) });
const requestsTo = (path: string) => received.filter((r) => r.path === path);

// ---------------------------------------------------------------------------------------------
// Bots, messages

interface Bot {
  id: number;
  fullName: string;
  email: string;
  token: string;
  path: string;
}

let counter = 0;
/** An outgoing-webhook bot of hamlet's posting to `path` of the target (or to `url`). */
async function createOutgoingBot(options: { path?: string; url?: string; interfaceType?: number } = {}): Promise<Bot> {
  counter++;
  const short = `hook${counter}${Date.now().toString(36)}`;
  const path = options.path ?? `/${short}`;
  const fullName = `Hook Bot ${counter}`;
  const fields: Record<string, string> = {
    full_name: fullName,
    short_name: short,
    bot_type: '3',
    payload_url: JSON.stringify(options.url ?? `${targetUrl}${path}`),
    interface_type: String(options.interfaceType ?? 1),
  };
  const res = await env.raw('/bots', { method: 'POST', as: 'hamlet', body: new URLSearchParams(fields) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.body.user_id as number;
  const service = await db().botService.findFirstOrThrow({ where: { botId: id } });
  const user = await db().user.findUniqueOrThrow({ where: { id } });
  return { id, fullName, email: user.deliveryEmail, token: service.token, path };
}

async function send(as: Person, fields: Record<string, string>): Promise<number> {
  const res = await env.raw('/messages', { method: 'POST', as, body: new URLSearchParams(fields) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id as number;
}
const mention = (as: Person, bot: Bot, topic: string, text = 'hello', channelName = channel.name) =>
  send(as, { type: 'stream', to: channelName, topic, content: `@**${bot.fullName}** ${text}` });
const directMessage = (as: Person, to: number[], content: string) => send(as, { type: 'private', to: JSON.stringify(to), content });

const delivery = (messageId: number, botId: number) =>
  db().$queryRaw<Array<{ attempt: number; finished: boolean; trigger: string }>>`
    SELECT attempt, finished_at IS NOT NULL AS finished, trigger FROM outgoing_webhook_delivery WHERE message_id = ${messageId}::int AND bot_id = ${botId}::int`.then((r) => r[0] ?? null);
const finished = (messageId: number, botId: number) => waitFor(async () => (await delivery(messageId, botId))?.finished, { what: `delivery of ${messageId} to ${botId} finished` });
const messagesFrom = (botId: number, after: number) => db().message.findMany({ where: { senderId: botId, id: { gt: after } }, orderBy: { id: 'asc' } });
/** The payload a request carried for `messageId`. */
const payloadFor = (path: string, messageId: number) => requestsTo(path).map((r) => JSON.parse(r.body)).filter((p) => p.message?.id === messageId);

const realmUrl = async () => (await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url;
/** Zulip's near link of a channel message (spaces of the channel's name become dashes; the names here need no other escaping). */
const channelLink = async (topic: string, messageId: number) => `${await realmUrl()}/#narrow/channel/${channel.id}-${channel.name.replace(/ /g, '-')}/topic/${topic}/near/${messageId}`;
const noticeHead = (link: string, bot: Bot) => `[A message](${link}) to your bot @_**${bot.fullName}** triggered an outgoing webhook.`;
/** The direct messages the bot sent its owner (hamlet) after `after`. */
const ownerNotices = async (bot: Bot, after: number) => (await messagesFrom(bot.id, after)).filter((m) => m.channelId === null && m.directUserIds.length === 2 && m.directUserIds.includes(uid('hamlet')));

describe('Outgoing webhooks', () => {
  it('a mention in a channel posts Zulip\'s payload, and the answer\'s content is posted as the bot in the same topic', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [json({ content: 'pong from **the bot**' })]);
    const id = await mention('iago', bot, 'ping topic', 'ping');
    await finished(id, bot.id);

    const [payload, ...others] = payloadFor(bot.path, id);
    expect(others).toEqual([]);
    expect(payload).toMatchObject({ data: `@**${bot.fullName}** ping`, bot_email: bot.email, bot_full_name: bot.fullName, token: bot.token, trigger: 'mention' });
    expect(Object.keys(payload).sort()).toEqual(['bot_email', 'bot_full_name', 'data', 'message', 'token', 'trigger']);
    expect(payload.message).toMatchObject({
      id,
      type: 'stream',
      stream_id: channel.id,
      display_recipient: channel.name,
      subject: 'ping topic',
      sender_id: uid('iago'),
      sender_full_name: 'Iago',
      content: `@**${bot.fullName}** ping`,
      content_type: 'text/x-markdown',
    });
    expect(payload.message.rendered_content).toContain(`data-user-id="${bot.id}"`);
    expect(typeof payload.message.avatar_url).toBe('string'); // client_gravatar off
    const request = requestsTo(bot.path).at(-1)!;
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toMatch(/^ZulipOutgoingWebhook\//);

    const replies = await messagesFrom(bot.id, id);
    expect(replies.map((m) => ({ channelId: m.channelId, topic: m.topic, content: m.content, client: m.sendingClient }))).toEqual([
      { channelId: channel.id, topic: 'ping topic', content: 'pong from **the bot**', client: 'OutgoingWebhookResponse' },
    ]);
    // A job that runs again (a retry, a duplicate) finds the delivery finished: nothing is posted twice.
    const before = requestsTo(bot.path).length;
    await doDeliverOutgoingWebhook(env.running.deps, { realmId: env.realmId, messageId: id, botId: bot.id, attempt: 0 });
    expect(requestsTo(bot.path).length).toBe(before);
    expect(await messagesFrom(bot.id, id)).toHaveLength(1);
  });

  it('only what Zulip counts triggers a bot: no silent mention, no mention in code, no bot\'s message, no channel message without a mention', async () => {
    const bot = await createOutgoingBot();
    const silent = await send('iago', { type: 'stream', to: channel.name, topic: 'quiet', content: `@_**${bot.fullName}** hi` });
    const code = await send('iago', { type: 'stream', to: channel.name, topic: 'quiet', content: `\`@**${bot.fullName}**\`` });
    const plain = await send('iago', { type: 'stream', to: channel.name, topic: 'quiet', content: 'nothing for bots' });
    // Another bot's message, mentioning it or writing to it directly.
    const other = await createOutgoingBot();
    const otherKey = (await env.raw(`/bots/${other.id}/api_key/regenerate`, { method: 'POST', as: 'hamlet' })).body.api_key as string;
    const asOther = { Authorization: `Basic ${Buffer.from(`${other.email}:${otherKey}`).toString('base64')}` };
    const fromBot = await env.raw('/messages', { method: 'POST', headers: asOther, body: new URLSearchParams({ type: 'private', to: JSON.stringify([bot.id]), content: 'bot to bot' }) });
    expect(fromBot.status).toBe(200);
    // Deliveries are recorded in the transaction of the message: their absence is final.
    for (const id of [silent, code, plain, fromBot.body.id as number]) expect(await delivery(id, bot.id)).toBeNull();
  });

  it('a direct message triggers the bot (trigger direct_message), and the answer goes back to the same conversation', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [json({ content: 'one to one' }), json({ response_string: 'to the group' })]);
    const dm = await directMessage('othello', [bot.id], 'are you there?');
    await finished(dm, bot.id);
    const [payload] = payloadFor(bot.path, dm);
    expect(payload).toMatchObject({ trigger: 'direct_message', data: 'are you there?' });
    expect(payload.message.type).toBe('private');
    expect(payload.message.display_recipient.map((p: { id: number }) => p.id).sort()).toEqual([bot.id, uid('othello')].sort());

    const group = await directMessage('othello', [bot.id, uid('iago')], 'all of us');
    expect((await delivery(group, bot.id))?.trigger).toBe('direct_message');
    await finished(group, bot.id);
    const replies = await messagesFrom(bot.id, dm);
    expect(replies.map((m) => ({ to: m.directUserIds, content: m.content }))).toEqual([
      { to: [bot.id, uid('othello')].sort((a, b) => a - b), content: 'one to one' },
      { to: [bot.id, uid('iago'), uid('othello')].sort((a, b) => a - b), content: 'to the group' },
    ]);
  });

  it('response_not_required, an empty JSON string or blank content post nothing', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [json({ response_not_required: true, content: 'ignored' }), json(''), json({ content: '   ' })]);
    const ids = [await mention('iago', bot, 'silence', 'one'), await mention('iago', bot, 'silence', 'two'), await mention('iago', bot, 'silence', 'three')];
    for (const id of ids) await finished(id, bot.id);
    expect(requestsTo(bot.path)).toHaveLength(3);
    expect(await messagesFrom(bot.id, ids[0]! - 1)).toEqual([]);
  });

  it('a 5xx answer is retried, and the reply of the attempt that succeeds is posted once', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [{ status: 500, body: 'oops' }, { status: 503, body: '' }, json({ content: 'third time lucky' })]);
    const id = await mention('iago', bot, 'retries');
    await finished(id, bot.id);
    expect(payloadFor(bot.path, id)).toHaveLength(3);
    expect((await delivery(id, bot.id))?.attempt).toBe(2);
    const replies = await messagesFrom(bot.id, id);
    expect(replies.map((m) => m.content)).toEqual(['third time lucky']);
  });

  it('connection refused on every attempt: retried MAX_REQUEST_RETRIES times, then "Bot is unavailable" and the owner is told', async () => {
    // A port nothing listens on.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const bot = await createOutgoingBot({ url: `http://127.0.0.1:${port}/nobody` });
    const id = await mention('iago', bot, 'down');
    await finished(id, bot.id);
    expect((await delivery(id, bot.id))?.attempt).toBe(3);
    const posted = await messagesFrom(bot.id, id);
    expect(posted.filter((m) => m.channelId === channel.id).map((m) => [m.topic, m.content])).toEqual([['down', 'Failure! Bot is unavailable']]);
    expect((await ownerNotices(bot, id)).map((m) => m.content)).toEqual([`${noticeHead(await channelLink('down', id), bot)}\nA connection error occurred. Is my bot server down?`]);
  });

  it('a request that times out is retried, then reported with the timeout', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, ['hang']);
    const id = await mention('iago', bot, 'slow');
    await finished(id, bot.id);
    expect(payloadFor(bot.path, id)).toHaveLength(4);
    expect((await ownerNotices(bot, id)).map((m) => m.content)).toEqual([`${noticeHead(await channelLink('slow', id), bot)}\nRequest timed out after 0.4 seconds.`]);
  });

  it('a 4xx answer is not retried: the conversation gets the status, the owner the status and the body', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [{ status: 404, body: "it's gone", contentType: 'text/plain' }]);
    const id = await mention('iago', bot, 'missing');
    await finished(id, bot.id);
    expect(payloadFor(bot.path, id)).toHaveLength(1);
    const posted = await messagesFrom(bot.id, id);
    expect(posted.filter((m) => m.channelId !== null).map((m) => m.content)).toEqual(['Failure! Third party responded with 404']);
    expect((await ownerNotices(bot, id)).map((m) => m.content)).toEqual([
      `${noticeHead(await channelLink('missing', id), bot)}\nThe webhook got a response with status code *404*.\nThe response contains the following payload:\n\`\`\`\nb"it's gone"\n\`\`\``,
    ]);
  });

  it('an answer that is not JSON is reported as Zulip reports it', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [{ status: 200, body: 'plain text', contentType: 'text/plain' }]);
    const id = await mention('iago', bot, 'garbled');
    await finished(id, bot.id);
    const posted = await messagesFrom(bot.id, id);
    expect(posted.filter((m) => m.channelId !== null).map((m) => m.content)).toEqual(['Failure! Invalid JSON in response']);
    expect((await ownerNotices(bot, id)).map((m) => m.content)).toEqual([
      `${noticeHead(await channelLink('garbled', id), bot)}\nThe outgoing webhook server attempted to send a message in Zulip, but that request resulted in the following error:\n> Invalid JSON in response\nThe response contains the following payload:\n\`\`\`\n'plain text'\n\`\`\``,
    ]);
  });

  it('the Slack-compatible interface posts Slack\'s form fields and reads `text`; it refuses direct messages', async () => {
    const bot = await createOutgoingBot({ interfaceType: 2 });
    answers.set(bot.path, [json({ text: 'slack says hi' })]);
    const id = await mention('iago', bot, 'slack');
    await finished(id, bot.id);
    const request = requestsTo(bot.path).at(-1)!;
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    const fields = Object.fromEntries(new URLSearchParams(request.body));
    const sent = await db().message.findUniqueOrThrow({ where: { id } });
    expect(fields).toEqual({
      token: bot.token,
      team_id: `T${env.realmId}`,
      team_domain: new URL(await realmUrl()).host,
      channel_id: `C${channel.id}`,
      channel_name: channel.name,
      thread_ts: String(Math.floor(sent.dateSent.getTime() / 1000)),
      timestamp: String(Math.floor(sent.dateSent.getTime() / 1000)),
      user_id: `U${uid('iago')}`,
      user_name: 'Iago',
      text: `@**${bot.fullName}** hello`,
      trigger_word: 'mention',
      service_id: String(bot.id),
    });
    expect((await messagesFrom(bot.id, id)).map((m) => m.content)).toEqual(['slack says hi']);

    const before = requestsTo(bot.path).length;
    const dm = await directMessage('othello', [bot.id], 'private');
    await finished(dm, bot.id);
    expect(requestsTo(bot.path)).toHaveLength(before);
    expect((await messagesFrom(bot.id, dm)).map((m) => m.content)).toEqual(["Failure! Slack outgoing webhooks don't support direct messages."]);
  });

  it('a message the bot may not read is never sent to its URL (a mention in a private channel it is not in)', async () => {
    const bot = await createOutgoingBot();
    const secret = await mention('iago', bot, 'secret', 'the launch codes are 1234', privateChannel.name);
    // The mention counts (Zulip queues it), but the job finds the bot cannot read the message.
    await finished(secret, bot.id);
    expect(requestsTo(bot.path)).toEqual([]);
    expect(await messagesFrom(bot.id, secret)).toEqual([]);
  });

  it('with PARLEY_OUTGOING_WEBHOOK_ALLOW_PRIVATE off, a loopback URL is refused and the owner is told, as for Zulip\'s proxy (407)', async () => {
    const config = env.running.deps.config.outgoingWebhooks;
    const bot = await createOutgoingBot();
    config.allowPrivate = false;
    try {
      const id = await mention('iago', bot, 'probe');
      await finished(id, bot.id);
      expect(requestsTo(bot.path)).toEqual([]);
      const posted = await messagesFrom(bot.id, id);
      expect(posted.filter((m) => m.channelId !== null).map((m) => m.content)).toEqual(['Failure! Third party responded with 407']);
      expect((await ownerNotices(bot, id)).map((m) => m.content)).toEqual([
        `${noticeHead(await channelLink('probe', id), bot)}\nThe URL configured for the webhook is for a private or disallowed network.`,
      ]);
      // A host name is resolved when the request is made, and refused when it resolves to a non-public address.
      const named = await createOutgoingBot({ url: `${targetUrl.replace('127.0.0.1', 'localhost')}/by-name` });
      const byName = await mention('iago', named, 'probe by name');
      await finished(byName, named.id);
      expect(requestsTo('/by-name')).toEqual([]);
      expect((await messagesFrom(named.id, byName)).filter((m) => m.channelId !== null).map((m) => m.content)).toEqual(['Failure! Third party responded with 407']);
    } finally {
      config.allowPrivate = true;
    }
  });

  it('a generic bot mentioned in a public channel it is not subscribed to receives the message (as in Zulip), not in a private one', async () => {
    const res = await env.raw('/bots', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ full_name: 'Listening Bot', short_name: `listen${Date.now().toString(36)}`, bot_type: '1' }) });
    expect(res.status).toBe(200);
    const botId = res.body.user_id as number;
    const rowOf = async (messageId: number) => (await db().userMessage.findFirst({ where: { messageId, userId: botId } }))?.flags;
    const open = await send('iago', { type: 'stream', to: channel.name, topic: 'listen', content: '@**Listening Bot** hello' });
    expect(Number(await rowOf(open)) & 8).toBe(8); // mentioned
    const closed = await send('iago', { type: 'stream', to: privateChannel.name, topic: 'listen', content: '@**Listening Bot** hello' });
    expect(await rowOf(closed)).toBeUndefined();
  });

  it('two runs of the same attempt at once post the reply once', async () => {
    const bot = await createOutgoingBot();
    answers.set(bot.path, [json({ content: 'exactly once' })]);
    const id = await mention('iago', bot, 'race');
    await Promise.all([
      doDeliverOutgoingWebhook(env.running.deps, { realmId: env.realmId, messageId: id, botId: bot.id, attempt: 0 }),
      doDeliverOutgoingWebhook(env.running.deps, { realmId: env.realmId, messageId: id, botId: bot.id, attempt: 0 }),
    ]);
    await finished(id, bot.id);
    expect((await messagesFrom(bot.id, id)).map((m) => m.content)).toEqual(['exactly once']);
  });
});
