// The Sentry integration (/api/v1/external/sentry) fed Sentry's payloads (from Zulip's fixtures,
// trimmed to what matters) with the headers Sentry sends: alert-rule events (exceptions with the
// blamed frame's lines, captured messages), issue webhooks (created, assigned, resolved, ignored),
// the legacy WebHooks plugin's formats; the Raven SDK and metric alerts (unsupported), and payloads it
// cannot read.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

/** Posts a fixture with the resource header Sentry sends it with; its single message. */
async function single(name: string, resource: string) {
  const messages = await postedBy(env, hook, 'sentry', { body: webhookFixture('sentry', name), headers: { 'Sentry-Hook-Resource': resource, 'Request-ID': `${name}-1` } });
  expect(messages).toHaveLength(1);
  expect(messages[0]!.senderId).toBe(hook.bot.id);
  return messages[0]!;
}

const lines = (...l: string[]) => l.join('\n');

describe('POST /external/{integration_name} (sentry)', () => {
  it('an exception event: title as topic, level, global time, filename and the blamed frame with its context', async () => {
    const message = await single('event_for_exception_python', 'event_alert');
    expect(message.topic).toBe('Exception: Custom exception!');
    expect(message.content).toBe(
      lines(
        '**New exception:** [Exception: Custom exception!](https://sentry.io/organizations/hypro999-personal-organization/issues/1635244907/events/599349254a1447a99774b5310711c1a8/)',
        '```quote',
        '**level:** error',
        '**timestamp:** <time:2020-04-28T13:56:05+00:00>',
        '**filename:** trigger-exception.py',
        '```',
        '',
        'Traceback:',
        '```python3',
        '',
        '',
        '     if __name__ == "__main__":',
        '         sentry_sdk.init(dsn=SECRET_DSN)',
        '         try:',
        '--->         raise Exception("Custom exception!")',
        '         except Exception as e:',
        '             sentry_sdk.capture_exception(e)',
        '',
        '```',
      ),
    );
  });

  it("the last frame of the blamed file is the one shown; a node platform's block is javascript", async () => {
    const message = await single('event_for_exception_node', 'event_alert');
    expect(message.topic).toBe('Error: Sample error from node.');
    expect(message.content.split('\n```\n\nTraceback:\n')[1]).toBe(
      lines(
        '```javascript',
        "       dsn: 'https://redacted.ingest.sentry.io/5216640',",
        '     });',
        '',
        '     Sentry.withScope(function(scope) {',
        '       scope.addEventProcessor(function(event, hint) {',
        '         return event;',
        '       });',
        "--->   Sentry.captureException(new Error('Sample error from node.'));",
        '     });',
        '',
        '',
        '```',
      ),
    );
  });

  it('an exception whose frame has no source line: no traceback; a long title is cut in the topic', async () => {
    const message = await single('event_for_exception_vue', 'event_alert');
    expect(message.topic).toBe("TypeError: Cannot read properties of null (reading 'inser...");
    expect(message.content).toBe(
      lines(
        "**New exception:** [TypeError: Cannot read properties of null (reading 'insertBefore')](https://sentry.io/organizations/nitk-46/issues/4214010673/events/292f78454e774e62999506f759ad791d/)",
        '```quote',
        '**level:** error',
        '**timestamp:** <time:2023-05-29T11:08:30+00:00>',
        '**filename:** /node_modules/.vite/deps/chunk-G4DFXOZZ.js',
        '```',
      ),
    );
  });

  it('a captured message event', async () => {
    const message = await single('event_for_message_python', 'event_alert');
    expect(message.topic).toBe('A simple message-based issue.');
    expect(message.content).toBe(
      lines(
        '**New message event:** [A simple message-based issue.](https://sentry.io/organizations/hypro999-personal-organization/issues/1635261062/events/8da63b42375e4d3b803c377fefb062f8/)',
        '```quote',
        '**level:** info',
        '**timestamp:** <time:2020-04-28T14:05:04+00:00>',
        '```',
      ),
    );
  });

  it('issue webhooks: created, assigned to a person or a team, resolved, ignored', async () => {
    const created = await single('issue_created_for_exception', 'issue');
    expect(created.topic).toBe('Exception: Custom exception!');
    expect(created.content).toBe(
      lines('**New issue created:** Exception: Custom exception!', '```quote', '**level:** error', '**timestamp:** <time:2020-04-28T13:56:05+00:00>', '**assignee:** No one', '```'),
    );

    const person = await single('issue_assigned_to_individual', 'issue');
    expect(person.topic).toBe('A test message event from golang.');
    expect(person.content).toBe('Issue **A test message event from golang.** has now been assigned to **Hemanth V. Alluri** by **Hemanth V. Alluri**.');

    const team = await single('issue_assigned_to_team', 'issue');
    expect(team.topic).toBe('Exception: program has entered an invalid state.');
    expect(team.content).toBe('Issue **Exception: program has entered an invalid state.** has now been assigned to **team lone-wolf** by **Hemanth V. Alluri**.');

    const resolved = await single('issue_resolved', 'issue');
    expect(resolved.content).toBe('Issue **Exception: program has entered an invalid state.** was marked as resolved by **Hemanth V. Alluri**.');

    const ignored = await single('issue_ignored', 'issue');
    expect(ignored.content).toBe('Issue **Exception: program has entered an invalid state.** was ignored by **Hemanth V. Alluri**.');
  });

  it("the legacy WebHooks plugin: its event read with a link under the issue's url; its oldest format quoted", async () => {
    const [plugin] = await postedBy(env, hook, 'sentry', { body: webhookFixture('sentry', 'webhook_event_for_exception_python') });
    expect(plugin!.topic).toBe('ValueError: new sentry error.');
    expect(plugin!.content).toBe(
      lines(
        '**New exception:** [ValueError: new sentry error.](https://sentry.io/organizations/bar-foundation/issues/1972208801/events/c916dccfd58e41dcabaebef0091f0736/)',
        '```quote',
        '**level:** error',
        '**timestamp:** <time:2020-10-21T23:25:11+00:00>',
        '**filename:** trigger-exception.py',
        '```',
        '',
        'Traceback:',
        '```python3',
        '',
        '',
        '     if __name__ == "__main__":',
        '         sentry_sdk.init(dsn=DSN_SECRET)',
        '         try:',
        '--->         raise ValueError("new sentry error.")',
        '         except Exception as e:',
        '             sentry_sdk.capture_exception(e)',
        '```',
      ),
    );

    const [deprecated] = await postedBy(env, hook, 'sentry', { body: webhookFixture('sentry', 'deprecated_exception_message') });
    expect(deprecated!.topic).toBe('zulip');
    expect(deprecated!.content).toBe('New [issue](https://sentry.io/zulip/zulip/issues/156699934/) (level: ERROR):\n\n``` quote\nThis is an example python exception\n```');
  });

  it('the Raven SDK, metric alerts, other issue actions and other resources are UNSUPPORTED_WEBHOOK_EVENT_TYPE', async () => {
    const before = await newestMessageId(env, hook);
    const raven = await callWebhook(env, hook, 'sentry', { body: webhookFixture('sentry', 'raven_sdk_python_event'), headers: { 'Sentry-Hook-Resource': 'event_alert' } });
    expect(raven.status).toBe(200);
    expect(raven.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE' });
    expect(raven.body.msg).toContain('Raven SDK');

    const metric = await callWebhook(env, hook, 'sentry', { body: webhookFixture('sentry', 'metric_alert_critical'), headers: { 'Sentry-Hook-Resource': 'metric_alert' } });
    expect(metric.status).toBe(200);
    expect(metric.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE' });
    expect(metric.body.msg).toContain("['metric_alert', 'description_text', 'description_title', 'web_url']");

    const archived = JSON.parse(webhookFixture('sentry', 'issue_ignored')) as { action: string };
    archived.action = 'archived';
    const archivedRes = await callWebhook(env, hook, 'sentry', { body: JSON.stringify(archived), headers: { 'Sentry-Hook-Resource': 'issue' } });
    expect(archivedRes.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE' });
    expect(archivedRes.body.msg).toContain('archived action');

    const installation = await callWebhook(env, hook, 'sentry', {
      body: JSON.stringify({ action: 'created', data: { installation: { uuid: 'u', status: 'installed' } }, actor: { type: 'user', id: 1, name: 'A' } }),
      headers: { 'Sentry-Hook-Resource': 'installation' },
    });
    expect(installation.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE' });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('payloads it cannot read are a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    const event = JSON.parse(webhookFixture('sentry', 'event_for_message_python')) as { data: { event: Record<string, unknown> } };
    delete event.data.event.web_url;
    const noLink = await callWebhook(env, hook, 'sentry', { body: JSON.stringify(event) });
    expect(noLink.status).toBe(400);
    expect(noLink.body.result).toBe('error');

    // An issue webhook without its actor, a bad timestamp, the oldest format without a level, not JSON.
    const issue = JSON.parse(webhookFixture('sentry', 'issue_resolved')) as Record<string, unknown>;
    delete issue.actor;
    expect((await callWebhook(env, hook, 'sentry', { body: JSON.stringify(issue) })).status).toBe(400);
    const badTime = JSON.parse(webhookFixture('sentry', 'issue_created_for_exception')) as { data: { issue: Record<string, unknown> } };
    badTime.data.issue.lastSeen = 'yesterday';
    expect((await callWebhook(env, hook, 'sentry', { body: JSON.stringify(badTime) })).status).toBe(400);
    expect((await callWebhook(env, hook, 'sentry', { body: JSON.stringify({ project_name: 'p', message: 'm' }) })).status).toBe(400);
    expect((await callWebhook(env, hook, 'sentry', { body: 'not json' })).status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
