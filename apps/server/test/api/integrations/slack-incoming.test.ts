// Zulip's Slack-compatible incoming webhook (zerver/webhooks/slack_incoming/view.py) fed Zulip's
// fixtures, with expectations written from its view and tests: plain text, Block Kit blocks, legacy
// attachments (fields, title, image, timestamp), the form-encoded `payload` field, Slack's formatting
// converted to Zulip's, the topic from `channel`, and Slack's `ok`/`error` fields in the answers.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const setup = useIncomingWebhookBot(env);
const fixturesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/slack_incoming');

async function post(body: string, query: Record<string, string> = {}): Promise<Array<[string, string]>> {
  return (await postedBy(env, setup, 'slack_incoming', { body, query })).map((m) => [m.topic, m.content]);
}

/** The empty topic as GET /messages shows it to clients that do not ask for empty topic names. */
const EMPTY_TOPIC = 'general chat';

describe('POST /external/{integration_name}: slack_incoming', () => {
  it('posts `text` in the empty topic', async () => {
    expect(await post(webhookFixture('slack_incoming', 'text'))).toEqual([[EMPTY_TOPIC, 'Hello, world.']]);
  });

  it("converts Slack's *bold* and _italic_ to Zulip's, as Zulip's tests do", async () => {
    const cases: Array<[string, string]> = [
      ['some *foo* word', 'some **foo** word'],
      ['*foo*', '**foo**'],
      ['*foo* *bar*', '**foo** **bar**'],
      ['*foo*a*bar*', '*foo*a*bar*'],
      ['some _foo_ word', 'some *foo* word'],
    ];
    for (const [input, output] of cases) expect(await post(JSON.stringify({ text: input }), { topic: 'formatting' })).toEqual([['formatting', output]]);
  });

  it('renders blocks (sections, links, an image accessory, a field) and takes the topic from `channel`', async () => {
    expect(await post(webhookFixture('slack_incoming', 'actions'))).toEqual([
      [
        'C1H9RESGL',
        'Danny Torrence left the following *review* for your property:\n\n' +
          '[Overlook Hotel](https://google.com) \n :star: \n Doors had too many axe holes, guest in room 237 was far too rowdy, whole place felt stuck in the 1920s.\n\n' +
          '[Haunted hotel image](https://is5-ssl.mzstatic.com/image/thumb/Purple3/v4/d3/72/5c/d3725c8f-c642-5d69-1904-aa36e4297885/source/256x256bb.jpg)\n\n' +
          '**Average Rating**\n1.0',
      ],
    ]);
  });

  it("renders attachments' fields, titles, images and timestamps", async () => {
    expect(await post(webhookFixture('slack_incoming', 'attachment_fields'))).toEqual([
      [EMPTY_TOPIC, 'Build bla bla succeeded\n\n**Requested by**: Some user\n**Duration**: 00:02:03\n**Build pipeline**: ConsumerAddressModule\n**Title without value**\nValue without title'],
    ]);
    expect(await post(webhookFixture('slack_incoming', 'attachment_pieces'))).toEqual([
      [EMPTY_TOPIC, '## Test\n\n[](https://pbs.twimg.com/profile_images/625633822235693056/lNGUneLX_400x400.jpg)\n\n<time:2022-06-23T00:48:26+00:00>'],
    ]);
  });

  it('reads a form-encoded `payload`, with icon_emoji before the text', async () => {
    const body = readFileSync(path.join(fixturesDir, 'urlencoded_text.txt'), 'utf8');
    const posted = await postedBy(env, setup, 'slack_incoming', { body, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(posted.map((m) => [m.topic, m.content])).toEqual([['devops', ':zap: chris has started deploying project tag v0.0.2rc10 to staging']]);
  });

  it('posts nothing for an empty message, answering ok', async () => {
    const before = await newestMessageId(env, setup);
    const res = await fetch(`${env.url}/api/v1/external/slack_incoming?${new URLSearchParams({ api_key: setup.bot.apiKey, stream: setup.channel.name })}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ text: null }),
    });
    expect(await res.json()).toEqual({ result: 'success', msg: '', ok: true });
    expect(await messagesSince(env, setup, before)).toEqual([]);
  });

  it("answers failures with Slack's ok: false and error besides Zulip's fields", async () => {
    const res = await fetch(`${env.url}/api/v1/external/slack_incoming?${new URLSearchParams({ api_key: setup.bot.apiKey, stream: setup.channel.name })}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'text=no+payload+here',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ result: 'error', msg: "Missing 'payload' argument", code: 'BAD_REQUEST', ok: false, error: "Missing 'payload' argument" });
  });

  it('keeps HTML as text for the renderer to escape', async () => {
    const posted = await postedBy(env, setup, 'slack_incoming', { body: JSON.stringify({ text: '<b>hi</b> & <https://example.com|a link>' }), query: { topic: 'html' } });
    expect(posted[0]!.content).toBe('<b>hi</b> & [a link](https://example.com)');
    const { data } = await env.client(setup.owner).GET('/messages/{message_id}', { params: { path: { message_id: posted[0]!.id } } });
    expect(data!.message.content).toContain('&lt;b&gt;hi&lt;/b&gt; &amp; <a href="https://example.com"');
  });
});
