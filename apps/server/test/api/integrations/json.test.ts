// Zulip's generic JSON formatter (zerver/webhooks/json/view.py): the payload pretty-printed as
// Python's json.dumps(payload, indent=2) prints it, in a ```json block, in the topic "JSON".
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const setup = useIncomingWebhookBot(env);

async function post(body: string, query: Record<string, string> = {}): Promise<Array<[string, string]>> {
  return (await postedBy(env, setup, 'json', { body, query })).map((m) => [m.topic, m.content]);
}

describe('POST /external/{integration_name}: json', () => {
  it("prints Zulip's Pingdom fixture as Python does (two-space indent, empty lists as [])", async () => {
    expect(await post(webhookFixture('json', 'json_pingdom_http_up_to_down'))).toEqual([
      [
        'JSON',
        [
          '```json',
          '{',
          '  "check_id": 2048467,',
          '  "check_name": "Test check",',
          '  "check_type": "HTTP",',
          '  "check_params": {',
          '    "basic_auth": false,',
          '    "encryption": false,',
          '    "full_url": "http://someurl.com/",',
          '    "header": "User-Agent:Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)",',
          '    "hostname": "someurl.com",',
          '    "ipv6": false,',
          '    "port": 80,',
          '    "url": "/"',
          '  },',
          '  "tags": [],',
          '  "previous_state": "UP",',
          '  "current_state": "DOWN",',
          '  "state_changed_timestamp": 1457939434,',
          '  "state_changed_utc_time": "2016-03-14T07:10:34",',
          '  "long_description": "Non-recoverable failure in name resolution",',
          '  "description": "DNS error",',
          '  "first_probe": {',
          '    "ip": "85.17.156.99",',
          '    "ipv6": "2001:1af8:4100:a09b::454",',
          '    "location": "Amsterdam 5, Netherlands"',
          '  },',
          '  "second_probe": {',
          '    "ip": "64.141.100.136",',
          '    "ipv6": "",',
          '    "location": "Calgary, Canada"',
          '  }',
          '}',
          '```',
        ].join('\n'),
      ],
    ]);
  });

  it("prints Zulip's GitHub push fixture, nested lists and nulls included", async () => {
    const [[topic, content]] = (await post(webhookFixture('github', 'push__delete_branch'))) as [[string, string]];
    expect(topic).toBe('JSON');
    expect(content).toContain('\n  "commits": [],\n  "head_commit": null,\n');
    expect(content).toContain('\n    "owner": {\n      "name": "eeshangarg",\n');
    expect(content.endsWith('\n  }\n}\n```')).toBe(true);
  });

  it('escapes non-ASCII and control characters as Python does, and keeps the URL topic', async () => {
    expect(await post(JSON.stringify({ name: 'Zoë ✓ 😀', html: '<b>"x"</b>\n', n: 1.5, big: 1e21, small: 0.00001 }), { topic: 'custom' })).toEqual([
      ['custom', '```json\n{\n  "name": "Zo\\u00eb \\u2713 \\ud83d\\ude00",\n  "html": "<b>\\"x\\"</b>\\n",\n  "n": 1.5,\n  "big": 1e+21,\n  "small": 1e-05\n}\n```'],
    ]);
  });

  it('refuses a body that is not a JSON object', async () => {
    expectJsonError(await callWebhook(env, setup, 'json', { body: '"text"' }), 400, 'payload is not a dict');
    expectJsonError(await callWebhook(env, setup, 'json', { body: 'text' }), 400, 'Malformed JSON');
  });
});
