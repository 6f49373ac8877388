// The Alertmanager integration (/api/v1/external/alertmanager) fed Alertmanager's webhook payloads
// (two from Zulip's fixtures, one of our own mixing instances and statuses): the `name`/`desc` query
// parameters choosing the topic and the description, firing and resolved alerts grouped per topic
// into one message each, the links to the source graph, and payloads it cannot read.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const post = (name: string, query: Record<string, string> = {}) => postedBy(env, hook, 'alertmanager', { body: webhookFixture('alertmanager', name), query });

const SOURCE = 'http://cobalt:9090/graph?g0.expr=avg+by%28host%29+%28sensors_temp_input%7Bfeature%3D~%22core_%5B0-9%5D%2B%22%7D%29+%3E+15&g0.tab=0';

describe('POST /external/{integration_name} (alertmanager)', () => {
  it('several firing alerts of one topic: one message, a bulleted list linking each source graph (tab=0)', async () => {
    const messages = await post('alert', { name: 'topic', desc: 'description' });
    expect(messages).toHaveLength(1);
    expect(messages[0]!.topic).toBe('andromeda');
    expect(messages[0]!.content).toBe(`:alert: **FIRING**\n* CPU core temperature is 34.75C ([source](${SOURCE}))\n* CPU core temperature is 17.625C ([source](${SOURCE}))`);
  });

  it('a single resolved alert: one line', async () => {
    const messages = await post('single_alert', { name: 'topic', desc: 'description' });
    expect(messages.map((m) => [m.topic, m.content])).toEqual([['andromeda', `:squared_ok: **Resolved** CPU core temperature is 34.75C ([source](${SOURCE}))`]]);
  });

  it('by default the topic is the instance label and the description the alertname; one message per topic and status', async () => {
    const messages = await post('mixed_instances');
    const graph = 'http://prometheus:9090/graph?g0.expr=up+%3D%3D+0&g0.tab=0';
    expect(messages.map((m) => [m.topic, m.content])).toEqual([
      ['web-1:9100', `:alert: **FIRING** InstanceDown ([source](${graph}))`],
      ['web-1:9100', `:squared_ok: **Resolved** InstanceDown ([source](${graph}))`],
      ['db-1:9100', `:alert: **FIRING** InstanceDown ([source](${graph}))`],
      // Neither label nor annotation: "(unknown)" and a note naming the missing field.
      ['(unknown)', ':alert: **FIRING** <missing field: alertname> ([source](http://prometheus:9090/graph?g0.expr=up&g0.tab=0))'],
    ]);

    // Annotations stand in for labels; `topic` in the URL overrides the topic.
    const bySummary = await post('mixed_instances', { name: 'job', desc: 'summary', topic: 'Prometheus' });
    expect(bySummary.map((m) => [m.topic, m.content.split('\n')[0]])).toEqual([
      ['Prometheus', ':alert: **FIRING**'],
      ['Prometheus', `:squared_ok: **Resolved** web-1 was down ([source](${graph}))`],
    ]);
    expect(bySummary[0]!.content.split('\n').slice(1)).toEqual([
      `* web-1 is down ([source](${graph}))`,
      `* db-1 is down ([source](${graph}))`,
      '* <missing field: summary> ([source](http://prometheus:9090/graph?g0.expr=up&g0.tab=0))',
    ]);
  });

  it('an empty group posts nothing and answers success', async () => {
    const before = await newestMessageId(env, hook);
    const res = await callWebhook(env, hook, 'alertmanager', { body: JSON.stringify({ receiver: 'x', status: 'resolved', alerts: [] }) });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ result: 'success' });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('payloads it cannot read are a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    const payload = JSON.parse(webhookFixture('alertmanager', 'single_alert')) as { alerts: Array<Record<string, unknown>> };
    delete payload.alerts[0]!.generatorURL;
    const noUrl = await callWebhook(env, hook, 'alertmanager', { body: JSON.stringify(payload) });
    expect(noUrl.status).toBe(400);
    expect(noUrl.body.result).toBe('error');

    const badStatus = JSON.parse(webhookFixture('alertmanager', 'single_alert')) as { alerts: Array<Record<string, unknown>> };
    badStatus.alerts[0]!.status = 'pending';
    expect((await callWebhook(env, hook, 'alertmanager', { body: JSON.stringify(badStatus) })).status).toBe(400);
    expect((await callWebhook(env, hook, 'alertmanager', { body: JSON.stringify({ receiver: 'x' }) })).status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
