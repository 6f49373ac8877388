// The CircleCI integration (/api/v1/external/circleci) fed CircleCI's webhook payloads (Zulip's
// fixtures) as CircleCI posts them: no event header, the event is the payload's `type`. Workflow and
// job completions of GitHub, Bitbucket and GitLab projects, manual and tag pipelines, the test ping,
// and payloads Zulip refuses (an unknown type, a missing field, an unsupported provider).
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const fixture = (name: string) => JSON.parse(webhookFixture('circleci', name)) as Record<string, any>;

/** Posts a body and returns its single message. */
async function single(body: string, query: Record<string, string> = {}) {
  const messages = await postedBy(env, hook, 'circleci', { body, query });
  expect(messages).toHaveLength(1);
  expect(messages[0]!.senderId).toBe(hook.bot.id);
  return messages[0]!;
}

describe('POST /external/{integration_name} (circleci)', () => {
  it('workflow completed (GitHub): the project is the topic; the workflow, its outcome and the commit (11-char sha) that triggered it', async () => {
    const message = await single(webhookFixture('circleci', 'github_workflow_completed'));
    expect(message.topic).toBe('circleci-webhook-test');
    const workflowUrl = 'https://app.circleci.com/pipelines/github/zulip-testing/circleci-webhook-test/4/workflows/7381218b-d04c-4aa3-b8b8-8c00a9319d1f';
    const commitUrl = 'https://github.com/zulip-testing/circleci-webhook-test/commit/a5e30a908224e46626a796d058289475f6d387b5';
    expect(message.content).toBe(
      `Workflow [\`sample\`](${workflowUrl}) within Pipeline #4 has succeeded.\n\n` +
        `Triggered on [\`a5e30a90822: .circleci: Update Webhook URL.\`](${commitUrl}) on branch \`main\` by Hari Prashant Bhimaraju.`,
    );

    // Other outcomes read as Zulip words them.
    const failed = fixture('github_workflow_completed');
    failed.workflow.status = 'failed';
    expect((await single(JSON.stringify(failed))).content).toMatch(/^Workflow \[`sample`\]\(\S+\) within Pipeline #4 has failed\.\n\n/);
    failed.workflow.status = 'canceled';
    expect((await single(JSON.stringify(failed))).content).toMatch(/ within Pipeline #4 was canceled\.\n\n/);
  });

  it('job completed (GitLab project): the commit comes from trigger_parameters and links to GitLab', async () => {
    const message = await single(webhookFixture('circleci', 'gitlab_job_completed'));
    expect(message.topic).toBe('circleci-webhook-test');
    expect(message.content).toBe(
      'Job `build-and-test` within Pipeline #3 has succeeded.\n\n' +
        'Triggered on [`c31f86994c5: app: Enhance message within hello().`](https://gitlab.com/zulip-testing/circleci-webhook-test/-/commit/c31f86994c54672f97b5bd5e544315b7bd40e4c1) on branch `main` by Hari Prashant Bhimaraju.',
    );
  });

  it("pipelines without a commit subject: a manual run names the branch's HEAD (Bitbucket link), a tag run the latest tag", async () => {
    const manual = await single(webhookFixture('circleci', 'bitbucket_manual_workflow_completed'));
    expect(manual.topic).toBe('circleci-webhook-testing');
    expect(manual.content).toBe(
      'Workflow [`sample`](https://app.circleci.com/pipelines/bitbucket/hariprashant1/circleci-webhook-testing/2/workflows/baa45986-84db-47a0-bc6c-89e9fe751bc9) within Pipeline #2 has succeeded.\n\n' +
        "Triggered on `master`'s HEAD on [cab5eacb4cc](https://bitbucket.org/hariprashant1/circleci-webhook-testing/commits/cab5eacb4ccee2710529894425341fa20a48fe6a).",
    );

    const tag = await single(webhookFixture('circleci', 'github_tag_workflow_completed'));
    expect(tag.content).toBe(
      'Workflow [`sample`](https://app.circleci.com/pipelines/github/prah23/circleci-webhook-test/20/workflows/045c6271-78e2-4802-8a62-f4fa6d25d0c9) within Pipeline #20 has succeeded.\n\n' +
        'Triggered on the latest tag on [0e6e66c14e6](https://github.com/prah23/circleci-webhook-test/commit/0e6e66c14e61fbcd95db716b0f30d67dbcce7814).',
    );
  });

  it('the ping CircleCI sends when a webhook is tested; only_events filters on the payload type', async () => {
    const ping = await single(webhookFixture('circleci', 'ping'));
    expect(ping.topic).toBe('Test event');
    expect(ping.content).toBe("Webhook 'Testing' test event successful.");

    expect(await postedBy(env, hook, 'circleci', { body: webhookFixture('circleci', 'gitlab_job_completed'), query: { only_events: '["workflow-completed"]' } })).toEqual([]);
    expect(await postedBy(env, hook, 'circleci', { body: webhookFixture('circleci', 'github_workflow_completed'), query: { only_events: '["workflow-*"]' } })).toHaveLength(1);
  });

  it('payloads Zulip refuses are a 400, never a 5xx, and post nothing: an unknown type, a missing field, another provider', async () => {
    const before = await newestMessageId(env, hook);
    // CircleCI has no event header: an unknown `type` is a bad payload for Zulip, not an unsupported event.
    const unknown = fixture('github_workflow_completed');
    unknown.type = 'pipeline-created';
    const unknownRes = await callWebhook(env, hook, 'circleci', { body: JSON.stringify(unknown) });
    expect(unknownRes.status).toBe(400);
    expect(unknownRes.body).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
    expect(unknownRes.body.msg).toMatch(/^Invalid payload\[.type.\]$/);

    const noProject = fixture('github_workflow_completed');
    delete noProject.project;
    const missing = await callWebhook(env, hook, 'circleci', { body: JSON.stringify(noProject) });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^payload\[.project.\] is missing$/);

    const badNumber = fixture('github_workflow_completed');
    badNumber.pipeline.number = '4';
    expect((await callWebhook(env, hook, 'circleci', { body: JSON.stringify(badNumber) })).status).toBe(400);

    const otherProvider = fixture('gitlab_job_completed');
    otherProvider.pipeline.trigger.type = 'github_app';
    const refused = await callWebhook(env, hook, 'circleci', { body: JSON.stringify(otherProvider) });
    expect(refused.status).toBe(400);
    expect(refused.body.msg).toBe("Projects using this version control system provider aren't supported");

    const notJson = await callWebhook(env, hook, 'circleci', { body: '{"type": ' });
    expect(notJson.status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
