// The Gitea integration (/api/v1/external/gitea) fed Gitea's payloads (Zulip's fixtures, the
// repository blocks trimmed; variants made by changing one field) with the X-Gitea-Event header, as
// Gitea (and Forgejo, which sends the same header) posts them: push, branch creation, pull requests
// (opened, merged, edited), issues, issue comments, `branches`, a topic in the URL, an event it does
// not handle and unreadable payloads; and Gogs (/external/gogs, X-Gogs-Event), whose handling Gitea's
// is built on, with a release.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const fixture = (name: string) => JSON.parse(webhookFixture('gitea', name)) as Record<string, any>;

/** Posts a payload with its event header and returns its single message. */
async function single(event: string, payload: Record<string, any> | string, query: Record<string, string> = {}) {
  const body = typeof payload === 'string' ? webhookFixture('gitea', payload) : JSON.stringify(payload);
  const messages = await postedBy(env, hook, 'gitea', { body, headers: { 'X-Gitea-Event': event }, query });
  expect(messages).toHaveLength(1);
  expect(messages[0]!.senderId).toBe(hook.bot.id);
  return messages[0]!;
}

const REPO = 'https://try.gitea.io/kostekIV/test';
const PR_URL = `${REPO}/pulls/4`;

describe('POST /external/{integration_name} (gitea)', () => {
  it('push: "<repo> / <branch>", the compare link and the commits; `branches` leaves other branches out', async () => {
    const message = await single('push', 'push__5_commits');
    expect(message.topic).toBe('test / d');
    const shas = [
      '2ec0c971d04723523aa20f2b378f8b419b47d4ec',
      '6cb1701c8b0114ad716f4cd49153076e7109cb85',
      '6773eabc0778a3e38997c06a13f5f0c48b67e5dc',
      '337402cf675ce7082ddcd23d06a116c85241825a',
      '0a38cad3fac3a13bb78b738d13f15ce9cc3343fa',
    ];
    const lines = shas.map((sha) => `* commit ([${sha.slice(0, 11)}](${REPO}/commit/${sha}))`).join('\n');
    expect(message.content).toBe(`kostekIV [pushed](${REPO}/compare/21138d2ca0ce18f8e037696fdbe1b3f0c211f630...2ec0c971d04723523aa20f2b378f8b419b47d4ec) 5 commits to branch d.\n\n${lines}`);

    // Forgejo sends Gitea's header (and its own) with the same payloads.
    const forgejo = await postedBy(env, hook, 'gitea', { body: webhookFixture('gitea', 'push__5_commits'), headers: { 'X-Forgejo-Event': 'push', 'X-Gitea-Event': 'push' } });
    expect(forgejo.map((m) => m.content)).toEqual([message.content]);

    const filtered = await callWebhook(env, hook, 'gitea', { body: webhookFixture('gitea', 'push__5_commits'), headers: { 'X-Gitea-Event': 'push' }, query: { branches: 'master,changes' } });
    expect(filtered.status).toBe(200);
    expect(filtered.body.code).toBeUndefined();

    // A committer other than the pusher (the author's username, else the first word of their name) is named.
    const mixed = fixture('push__5_commits');
    mixed.commits[0].author = { name: 'Benjamin Franklin', email: 'ben@example.com', username: '' };
    expect((await single('push', mixed)).content).toMatch(/ 5 commits to branch d\. Commits by kostekIV \(4\) and Benjamin \(1\)\.\n\n/);
  });

  it('branch created', async () => {
    const message = await single('create', 'create__branch');
    expect(message.topic).toBe('test / test-branch');
    expect(message.content).toBe(`kostekIV created [test-branch](${REPO}/src/test-branch) branch.`);
  });

  it("pull requests: the topic carries the PR's id (Zulip's choice), the link its number; opened, merged, edited, a URL topic", async () => {
    const opened = await single('pull_request', 'pull_request__opened');
    expect(opened.topic).toBe('test / PR #1905 New pr');
    expect(opened.content).toBe(`kostekIV opened [PR #4](${PR_URL}) from \`test-branch\` to \`master\`.`);

    const merged = fixture('pull_request__opened');
    merged.action = 'closed';
    merged.pull_request.merged = true;
    merged.pull_request.merged_by = { ...merged.sender, login: 'merger', username: 'merger' };
    expect((await single('pull_request', merged)).content).toBe(`merger merged [PR #4](${PR_URL}) from \`test-branch\` to \`master\`.`);

    const edited = fixture('pull_request__opened');
    edited.action = 'edited';
    expect((await single('pull_request', edited)).content).toBe(`kostekIV edited [PR #4](${PR_URL}).`);

    const custom = await single('pull_request', 'pull_request__opened', { topic: 'notifications' });
    expect(custom.topic).toBe('notifications');
    expect(custom.content).toBe(`kostekIV opened [PR #4 New pr](${PR_URL}) from \`test-branch\` to \`master\`.`);
  });

  it('issues and comments: "<repo> / issue #<n> <title>", the assignee, the body quoted', async () => {
    const assigned = await single('issues', 'issues__assigned');
    expect(assigned.topic).toBe('test / issue #3 Test issue');
    expect(assigned.content).toBe(`kostekIV assigned kostekIV to [issue #3](${REPO}/issues/3) (assigned to kostekIV):\n\n~~~ quote\nTest body\n~~~`);

    const closed = fixture('issues__assigned');
    closed.action = 'closed';
    closed.issue.assignee = null;
    closed.issue.body = '';
    expect((await single('issues', closed)).content).toBe(`kostekIV closed [issue #3](${REPO}/issues/3).`);

    const comment = await single('issue_comment', 'issue_comment__new');
    expect(comment.topic).toBe('test / issue #3 Test issue');
    expect(comment.content).toBe(`kostekIV [commented](${REPO}/issues/3#issuecomment-24400) on [issue #3](${REPO}/issues/3):\n\n~~~ quote\ntest comment\n~~~`);

    const edited = fixture('issue_comment__new');
    edited.action = 'edited';
    expect((await single('issue_comment', edited)).content).toBe(
      `kostekIV edited a [comment](${REPO}/issues/3#issuecomment-24400) on [issue #3](${REPO}/issues/3):\n\n~~~ quote\ntest comment\n~~~`,
    );
  });

  it('Gogs: the same handling under X-Gogs-Event, with a release', async () => {
    const messages = await postedBy(env, hook, 'gogs', { body: webhookFixture('gogs', 'release__published'), headers: { 'X-Gogs-Event': 'release' } });
    expect(messages.map((m) => [m.topic, m.content])).toEqual([['zulip_test / v1.4 Title', 'cestrell published release [Title](https://try.gogs.io/cestrell/zulip_test) for tag v1.4.']]);
    const noHeader = await callWebhook(env, hook, 'gogs', { body: webhookFixture('gogs', 'release__published'), headers: { 'X-Gitea-Event': 'release' } });
    expect(noHeader.status).toBe(400);
    expect(noHeader.body).toMatchObject({ code: 'MISSING_HTTP_EVENT_HEADER', msg: "Missing the HTTP event header 'X-Gogs-Event'" });
  });

  it('an event it does not handle (delete) answers success with UNSUPPORTED_WEBHOOK_EVENT_TYPE and posts nothing', async () => {
    const before = await newestMessageId(env, hook);
    const res = await callWebhook(env, hook, 'gitea', { body: webhookFixture('gitea', 'create__branch'), headers: { 'X-Gitea-Event': 'delete' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      result: 'success',
      code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE',
      webhook_name: 'Gitea',
      event_type: 'delete',
      msg: "The 'delete' event isn't currently supported by the Gitea webhook; ignoring",
    });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('no event header, missing fields, wrong types: a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    const noHeader = await callWebhook(env, hook, 'gitea', { body: webhookFixture('gitea', 'push__5_commits') });
    expect(noHeader.status).toBe(400);
    expect(noHeader.body).toMatchObject({ result: 'error', code: 'MISSING_HTTP_EVENT_HEADER', msg: "Missing the HTTP event header 'X-Gitea-Event'" });

    const noCommits = fixture('push__5_commits');
    delete noCommits.commits;
    const missing = await callWebhook(env, hook, 'gitea', { body: JSON.stringify(noCommits), headers: { 'X-Gitea-Event': 'push' } });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^payload\[.commits.\] is missing$/);

    const noPr = fixture('pull_request__opened');
    delete noPr.pull_request;
    expect((await callWebhook(env, hook, 'gitea', { body: JSON.stringify(noPr), headers: { 'X-Gitea-Event': 'pull_request' } })).status).toBe(400);
    const badNumber = fixture('issues__assigned');
    badNumber.issue.number = '3';
    expect((await callWebhook(env, hook, 'gitea', { body: JSON.stringify(badNumber), headers: { 'X-Gitea-Event': 'issues' } })).status).toBe(400);
    expect((await callWebhook(env, hook, 'gitea', { body: 'null', headers: { 'X-Gitea-Event': 'push' } })).status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
