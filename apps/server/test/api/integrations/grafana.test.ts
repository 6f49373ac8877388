// The Grafana integration (/api/v1/external/grafana) fed Grafana's payloads (from Zulip's fixtures):
// legacy alerts (Grafana 7: state, rule link, message, evaluation matches, image) and unified
// alerting (Grafana 8+: one message per alert, global times, labels, values, annotations, links),
// the state as event type, and payloads it cannot read.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const post = (name: string, extra: { query?: Record<string, string>; headers?: Record<string, string> } = {}) =>
  postedBy(env, hook, 'grafana', { body: webhookFixture('grafana', name), ...extra });

describe('POST /external/{integration_name} (grafana)', () => {
  it('a legacy alert: the title as topic, the state, the rule, the message, the evaluation matches and the image', async () => {
    const [alerting] = await post('alert_v7');
    expect(alerting!.topic).toBe('[Alerting] Test notification');
    expect(alerting!.content).toBe(
      ':alert: **ALERTING**\n\n[Test rule](http://localhost:3000/)\n\nSomeone is testing the alert notification within grafana.\n\n**High value:** 100\n**Higher Value:** 200\n\n[Click to view visualization](https://grafana.com/assets/img/blog/mixed_styles.png)',
    );

    const [ok] = await post('alert_ok_v7');
    expect(ok!.topic).toBe('[Ok] Test notification');
    expect(ok!.content).toBe(
      ':squared_ok: **OK**\n\n[Test rule](http://localhost:3000/)\n\nSomeone is testing the alert notification within grafana.\n\n**High value:** 0\n\n[Click to view visualization](https://grafana.com/assets/img/blog/mixed_styles.png)',
    );

    // Other states get the info icon; without evaluation matches the blank lines stay as Zulip leaves them.
    const [paused] = await post('alert_paused_v7');
    expect(paused!.content).toBe(
      ':info: **PAUSED**\n\n[Test rule](http://localhost:3000/)\n\nSomeone is testing the alert notification within grafana.\n\n\n[Click to view visualization](https://grafana.com/assets/img/blog/mixed_styles.png)',
    );
  });

  it('a unified alert that resolved: both times in global time syntax, labels, the value string, annotations, the silence link', async () => {
    // Grafana's test notification says it is a form; Zulip reads the body as JSON anyway.
    const messages = await post('alert_v8', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
    expect(messages).toHaveLength(1);
    expect(messages[0]!.topic).toBe('[TestAlert]');
    expect(messages[0]!.content).toBe(
      [
        ':checkbox: **RESOLVED**',
        '',
        '**TestAlert**',
        '',
        'This alert was fired at <time:2022-08-31T05:54:04+00:00>.',
        '',
        'This alert was resolved at <time:2022-08-31T10:30:00+00:00>.',
        '',
        'Labels:',
        '- alertname: TestAlert',
        '- instance: Grafana',
        '',
        'Values:',
        "[ metric='foo' labels={instance=bar} value=10 ]",
        '',
        'Annotations:',
        '- summary: Notification test',
        '',
        '[Silence](https://zuliptestingwh2.grafana.net/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DTestAlert&matcher=instance%3DGrafana)',
      ].join('\n'),
    );
  });

  it('several unified alerts: one message each, in the topic of its alertname, times in their own offset', async () => {
    const messages = await post('alert_multiple_v8');
    expect(messages.map((m) => m.topic)).toEqual(['[High memory usage]', '[High CPU usage]']);
    expect(messages[0]!.content).toBe(
      [
        ':alert: **FIRING**',
        '',
        '**High memory usage**',
        '',
        'This alert was fired at <time:2021-10-12T09:51:03+02:00>.',
        '',
        'Labels:',
        '- alertname: High memory usage',
        '- team: blue',
        '- zone: us-1',
        '',
        'Values:',
        "[ metric='' labels={} value=14151.331895396988 ]",
        '',
        'Annotations:',
        '- description: The system has high memory usage',
        '- runbook_url: https://myrunbook.com/runbook/1234',
        '- summary: This alert was triggered for zone us-1',
        '',
        '[Generator](https://play.grafana.org/alerting/1afz29v7z/edit)',
        '[Silence](https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matchers=alertname%3DT2%2Cteam%3Dblue%2Czone%3Dus-1)',
      ].join('\n'),
    );
    expect(messages[1]!.content).toContain('This alert was fired at <time:2021-10-12T09:56:03+02:00>.');
    expect(messages[1]!.content).toContain('- zone: eu-1');
  });

  it('a unified alert without alertname: the fingerprint as topic, the values map, the image link', async () => {
    const [message] = await post('alert_no_alertname_v11');
    expect(message!.topic).toBe('[e6349a25f5ef0e9e]');
    expect(message!.content).toBe(
      [
        ':alert: **FIRING**',
        '',
        'This alert was fired at <time:2024-03-01T02:09:00+00:00>.',
        '',
        'Labels:',
        '- debug: true',
        '- grafana_folder: device',
        '',
        'Values:',
        '- A: 2473545728',
        '- B: 0',
        '- C: 1',
        '- minute: 9',
        '',
        'Annotations:',
        '- summary: High memory usage',
        '',
        '[Generator](https://play.grafana.org/alerting/grafana/dd2f0260-3cfc-4c65-a4c4-f3f632c551f4/view?orgId=1)',
        '[Silence](https://play.grafana.org/alerting/silence/new?alertmanager=grafana&matcher=alertname%3DMemory+%28copy%29&matcher=debug%3Dtrue&matcher=grafana_folder%3Ddevice&orgId=1)',
        '[Image](https://grafana.com/assets/img/blog/mixed_styles.png)',
      ].join('\n'),
    );
  });

  it('the state is the event type: only_events and exclude_events, per alert when firing and resolved are mixed', async () => {
    expect(await post('alert_v7', { query: { only_events: '["ok"]' } })).toEqual([]);
    expect(await post('alert_ok_v7', { query: { only_events: '["ok"]' } })).toHaveLength(1);
    expect(await post('alert_multiple_v8', { query: { exclude_events: '["firing"]' } })).toEqual([]);

    const mixed = JSON.parse(webhookFixture('grafana', 'alert_multiple_v8')) as { alerts: Array<{ status: string; endsAt: string }> };
    mixed.alerts[1]!.status = 'resolved';
    mixed.alerts[1]!.endsAt = '2021-10-12T10:01:03.157076+02:00';
    const resolvedOnly = await postedBy(env, hook, 'grafana', { body: JSON.stringify(mixed), query: { only_events: '["resolved"]' } });
    expect(resolvedOnly.map((m) => m.topic)).toEqual(['[High CPU usage]']);
    expect(resolvedOnly[0]!.content).toContain(':checkbox: **RESOLVED**');
    expect(resolvedOnly[0]!.content).toContain('This alert was resolved at <time:2021-10-12T10:01:03+02:00>.');
  });

  it('a notification without alerts posts nothing and answers success (Grafana has no event Zulip leaves unsupported)', async () => {
    const before = await newestMessageId(env, hook);
    const empty = await callWebhook(env, hook, 'grafana', { body: JSON.stringify({ receiver: 'x', status: 'firing', alerts: [] }) });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ result: 'success' });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('payloads it cannot read are a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    const legacy = JSON.parse(webhookFixture('grafana', 'alert_v7')) as Record<string, unknown>;
    delete legacy.ruleUrl;
    const noRuleUrl = await callWebhook(env, hook, 'grafana', { body: JSON.stringify(legacy) });
    expect(noRuleUrl.status).toBe(400);
    expect(noRuleUrl.body.result).toBe('error');

    // A state Grafana does not have, an alert without its start time, alerts that are not a list.
    const badState = await callWebhook(env, hook, 'grafana', { body: JSON.stringify({ ...legacy, ruleUrl: 'http://x/', state: 'exploded' }) });
    expect(badState.status).toBe(400);
    const unified = JSON.parse(webhookFixture('grafana', 'alert_v8')) as { alerts: Array<Record<string, unknown>> };
    delete unified.alerts[0]!.startsAt;
    expect((await callWebhook(env, hook, 'grafana', { body: JSON.stringify(unified) })).status).toBe(400);
    expect((await callWebhook(env, hook, 'grafana', { body: JSON.stringify({ alerts: 'none' }) })).status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
