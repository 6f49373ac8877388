// The GitHub integration (Zulip's zerver/webhooks/github/view.py) fed Zulip's fixture payloads
// (trimmed of the API URLs the formatter never reads), with expectations written from Zulip's view
// code and tests: pushes (many commits, force push, deleted branch), pull requests opened, closed and
// merged, issues and comments, ping; the event header; events Zulip ignores or does not support;
// only_events/exclude_events, `branches`, `ignore_private_repositories`; payload text kept as
// Markdown (the renderer escapes HTML).
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const setup = useIncomingWebhookBot(env);
const fixture = (name: string) => webhookFixture('github', name);
const event = (name: string) => ({ 'X-GitHub-Event': name });

/** Posts a fixture with its event header and returns the one message it made, as [topic, content]. */
async function post(name: string, header: string, query: Record<string, string> = {}): Promise<[string, string]> {
  const posted = await postedBy(env, setup, 'github', { body: fixture(name), headers: event(header), query });
  expect(posted).toHaveLength(1);
  return [posted[0]!.topic, posted[0]!.content];
}

/** Posts and expects a plain success that posted nothing. */
async function postsNothing(body: string, header: string, query: Record<string, string> = {}) {
  const before = await newestMessageId(env, setup);
  const res = await callWebhook(env, setup, 'github', { body, headers: event(header), query });
  expect(res).toEqual({ status: 200, body: { result: 'success', msg: '' } });
  expect(await messagesSince(env, setup, before)).toEqual([]);
}

const README_COMMIT = '* Update README.md ([0d1a26e67d8](https://github.com/baxterthehacker/public-repo/commit/0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c))\n';
const PR_URL = 'https://github.com/baxterthehacker/public-repo/pull/1';
const ISSUE_URL = 'https://github.com/baxterthehacker/public-repo/issues/2';

describe('POST /external/{integration_name}: github', () => {
  it('formats a force push of one commit', async () => {
    expect(await post('push__force_1_commit', 'push')).toEqual([
      'zulip / temp',
      'sbansal1999 [force pushed](https://github.com/sbansal1999/zulip/compare/b6de8891fc10...971d76ca3094) 1 commit to branch temp.\n\n' +
        '* log: Add important.txt which is useful for logging errors. ([971d76ca309](https://github.com/sbansal1999/zulip/commit/971d76ca309446a9c20381f6271cea8a59b4e40a))',
    ]);
  });

  it('lists 20 commits of a push of 50, then "and 30 more"', async () => {
    expect(await post('push__50_commits', 'push')).toEqual([
      'public-repo / changes',
      `baxterthehacker [pushed](https://github.com/baxterthehacker/public-repo/compare/9049f1265b7d...0d1a26e67d8f) 50 commits to branch changes.\n\n${README_COMMIT.repeat(20)}[and 30 more commit(s)]`,
    ]);
  });

  it('formats a deleted branch and a created tag', async () => {
    expect(await post('push__delete_branch', 'push')).toEqual([
      'public-repo / feature',
      'eeshangarg [deleted](https://github.com/eeshangarg/public-repo/compare/2e8cf535fb38...000000000000) the branch feature.',
    ]);
    expect(await post('create', 'create')).toEqual(['public-repo', 'baxterthehacker created tag 0.0.1.']);
  });

  it('formats pull requests opened, closed and merged', async () => {
    // The topic is cut at 60 characters, ending in "...", as Zulip truncates topics.
    expect(await post('pull_request__opened', 'pull_request')).toEqual([
      'public-repo / PR #1 This is a very long Pull request titl...',
      `baxterthehacker opened [PR #1](${PR_URL}) from \`baxterthehacker:changes\` to \`baxterthehacker:master\`:\n\n~~~ quote\nThis is a pretty simple change that we need to pull into master.\n~~~`,
    ]);
    expect(await post('pull_request__closed', 'pull_request')).toEqual(['public-repo / PR #1 Update the README with new information', `baxterthehacker closed without merge [PR #1](${PR_URL}).`]);
    expect(await post('pull_request__merged', 'pull_request')).toEqual(['public-repo / PR #1 Update the README with new information', `baxterthehacker merged [PR #1](${PR_URL}).`]);
  });

  it('formats issues and comments; with a topic in the URL the title goes into the message', async () => {
    expect(await post('issues', 'issues')).toEqual([
      'public-repo / issue #2 Spelling error in the README file',
      `baxterthehacker opened [issue #2](${ISSUE_URL}):\n\n~~~ quote\nIt looks like you accidentally spelled 'commit' with two 't's.\n~~~`,
    ]);
    expect(await post('issue_comment', 'issue_comment', { topic: 'notifications' })).toEqual([
      'notifications',
      `baxterthehacker [commented](${ISSUE_URL}#issuecomment-99262140) on [issue #2 Spelling error in the README file](${ISSUE_URL}):\n\n~~~ quote\nYou are totally right! I'll get this fixed right away.\n~~~`,
    ]);
  });

  it('formats a label added to an issue (from the issues fixture, relabelled)', async () => {
    const payload = JSON.parse(fixture('issues')) as Record<string, unknown>;
    Object.assign(payload, { action: 'labeled', label: { name: 'bug', color: 'fc2929' } });
    const posted = await postedBy(env, setup, 'github', { body: JSON.stringify(payload), headers: event('issues') });
    expect(posted.map((m) => [m.topic, m.content])).toEqual([
      ['public-repo / issue #2 Spelling error in the README file', `[baxterthehacker](https://github.com/baxterthehacker) added the bug label to [Issue #2](${ISSUE_URL}).`],
    ]);
  });

  it('answers the ping of an organization hook', async () => {
    expect(await post('ping__organization', 'ping')).toEqual(['zulip-test-org', 'GitHub webhook has been successfully configured by eeshangarg.']);
  });

  it('answers an event it does not format with UNSUPPORTED_WEBHOOK_EVENT_TYPE, a success, posting nothing', async () => {
    const before = await newestMessageId(env, setup);
    const res = await callWebhook(env, setup, 'github', { body: JSON.stringify({ action: 'created', sender: { login: 'octocat' } }), headers: event('installation') });
    expect(res).toEqual({
      status: 200,
      body: {
        result: 'success',
        msg: "The 'installation:created' event isn't currently supported by the GitHub webhook; ignoring",
        code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
        webhook_name: 'GitHub',
        event_type: 'installation:created',
      },
    });
    expect(await messagesSince(env, setup, before)).toEqual([]);
  });

  it('posts nothing for events Zulip ignores (label, in-progress merge queue pushes)', async () => {
    await postsNothing(JSON.stringify({ action: 'created', sender: { login: 'octocat' } }), 'label');
    const queued = JSON.parse(fixture('push__force_1_commit')) as { ref: string };
    queued.ref = 'refs/heads/gh-readonly-queue/main/pr-1';
    await postsNothing(JSON.stringify(queued), 'push');
  });

  it('refuses a request without X-GitHub-Event, and a payload missing what the event needs', async () => {
    const res = await callWebhook(env, setup, 'github', { body: fixture('issues') });
    expectJsonError(res, 400, "Missing the HTTP event header 'X-GitHub-Event'", 'MISSING_HTTP_EVENT_HEADER');
    expect(res.body.header).toBe('X-GitHub-Event');
    expectJsonError(await callWebhook(env, setup, 'github', { body: JSON.stringify({ action: 'opened', sender: { login: 'x' } }), headers: event('issues') }), 400, 'payload["issue"] is missing');
    expectJsonError(await callWebhook(env, setup, 'github', { body: 'not json', headers: event('push') }), 400, 'Malformed JSON');
  });

  it('filters by only_events and exclude_events (Zulip event names, shell wildcards)', async () => {
    const push = fixture('push__delete_branch');
    expect(await post('push__delete_branch', 'push', { only_events: JSON.stringify(['push_*']) })).toHaveLength(2);
    expect(await post('push__delete_branch', 'push', { only_events: JSON.stringify(['pus?_commit[st]']) })).toHaveLength(2);
    await postsNothing(push, 'push', { only_events: JSON.stringify(['opened_pull_request']) });
    await postsNothing(push, 'push', { exclude_events: JSON.stringify(['push_commits']) });
    await postsNothing(push, 'push', { only_events: JSON.stringify(['push_*']), exclude_events: JSON.stringify(['*commits']) });
    expectJsonError(await callWebhook(env, setup, 'github', { body: push, headers: event('push'), query: { only_events: '[push' } }), 400, 'only_events is not valid JSON');
  });

  it('posts pushes only to the listed `branches`', async () => {
    await postsNothing(fixture('push__50_commits'), 'push', { branches: 'master,feature' });
    expect((await post('push__50_commits', 'push', { branches: 'master,changes' }))[0]).toBe('public-repo / changes');
  });

  it('with ignore_private_repositories, posts nothing about private repositories', async () => {
    const payload = JSON.parse(fixture('push__force_1_commit')) as { repository: { private: boolean } };
    payload.repository.private = true;
    await postsNothing(JSON.stringify(payload), 'push', { ignore_private_repositories: 'true' });
    const posted = await postedBy(env, setup, 'github', { body: JSON.stringify(payload), headers: event('push') });
    expect(posted).toHaveLength(1);
  });

  it('keeps HTML and Markdown of payload fields as Markdown: the renderer escapes the HTML', async () => {
    const payload = JSON.parse(fixture('issues')) as { issue: { body: string } };
    payload.issue.body = '<script>alert(1)</script> and **bold**';
    const posted = await postedBy(env, setup, 'github', { body: JSON.stringify(payload), headers: event('issues') });
    expect(posted[0]!.content).toBe(`baxterthehacker opened [issue #2](${ISSUE_URL}):\n\n~~~ quote\n<script>alert(1)</script> and **bold**\n~~~`);
    const { data } = await env.client(setup.owner).GET('/messages/{message_id}', { params: { path: { message_id: posted[0]!.id } } });
    const html = data!.message.content;
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<strong>bold</strong>');
  });
});
