// The GitLab integration (/api/v1/external/gitlab) fed GitLab's payloads (Zulip's fixtures, some
// with unread blocks trimmed; variants made by changing one field, e.g. the MR action) with the
// X-Gitlab-Event header, as GitLab posts them: pushes (many commits, several committers, branch
// creation and deletion, `branches`), tags, merge requests, issues, notes, pipelines, jobs, wiki
// pages, the System Hook form, a topic in the URL, events it does not handle and unreadable payloads.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const fixture = (name: string) => JSON.parse(webhookFixture('gitlab', name)) as Record<string, any>;

/** Posts a payload with its event header and returns its single message. */
async function single(event: string, payload: Record<string, any> | string, query: Record<string, string> = {}) {
  const body = typeof payload === 'string' ? webhookFixture('gitlab', payload) : JSON.stringify(payload);
  const messages = await postedBy(env, hook, 'gitlab', { body, headers: { 'X-Gitlab-Event': event }, query });
  expect(messages).toHaveLength(1);
  expect(messages[0]!.senderId).toBe(hook.bot.id);
  return messages[0]!;
}

const PROJECT = 'https://gitlab.com/tomaszkolek0/my-awesome-project';
const COMPARE = `${PROJECT}/-/compare/5fcdd5551fc3085df79bece2c32b1400802ac407...eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9`;
const commitLine = (message: string, sha: string) => `* ${message} ([${sha.slice(0, 11)}](${PROJECT}/commit/${sha}))`;
const SHA_B = '66abd2da28809ffa128ed0447965cf11d7f863a7';
const SHA_C = 'eb6ae1e591e0819dc5bf187c6bfe18ec065a80e9';
const MR_URL = `${PROJECT}/merge_requests/3`;
const ISSUE_URL = `${PROJECT}/issues/1`;

describe('POST /external/{integration_name} (gitlab)', () => {
  it('push: "<project> / <branch>", a compare link, one line per commit (first line of the message, 11-char sha)', async () => {
    const message = await single('Push Hook', 'push_hook');
    expect(message.topic).toBe('my-awesome-project / tomek');
    expect(message.content).toBe(`Tomasz Kolek [pushed](${COMPARE}) 2 commits to branch tomek.\n\n${commitLine('b', SHA_B)}\n${commitLine('c', SHA_C)}`);

    // A topic in the URL: that topic, and the project linked at the start of the message.
    const custom = await single('Push Hook', 'push_hook', { topic: 'Specific topic' });
    expect(custom.topic).toBe('Specific topic');
    expect(custom.content).toBe(`[[my-awesome-project](${PROJECT})] ${message.content}`);

    // The System Hook form names the event in the payload.
    expect((await single('System Hook', 'push_hook')).content).toBe(message.content);
  });

  it('push of 50 commits by two people: committers counted (most first), 20 commits listed, then "[and 30 more commit(s)]"', async () => {
    const payload = fixture('push_hook');
    const [commit] = payload.commits as Record<string, any>[];
    payload.commits = Array.from({ length: 50 }, (_, i) => ({ ...commit, author: { ...commit!.author, name: i % 5 === 0 ? 'Ben' : 'Tomasz Kolek' } }));
    const message = await single('Push Hook', payload);
    const lines = Array.from({ length: 20 }, () => commitLine('b', SHA_B)).join('\n');
    expect(message.content).toBe(`Tomasz Kolek [pushed](${COMPARE}) 50 commits to branch tomek. Commits by Tomasz Kolek (40) and Ben (10).\n\n${lines}\n[and 30 more commit(s)]`);
  });

  it('branch created (no commits) and deleted (after = 0…0); `branches` leaves other branches out', async () => {
    const created = fixture('push_hook');
    created.before = '0000000000000000000000000000000000000000';
    created.commits = [];
    const createdMessage = await single('Push Hook', created);
    expect(createdMessage.topic).toBe('my-awesome-project / tomek');
    expect(createdMessage.content).toBe(`Tomasz Kolek [pushed](${PROJECT}/-/compare/0000000000000000000000000000000000000000...${SHA_C}) the branch tomek.`);

    const deleted = fixture('push_hook');
    deleted.after = '0000000000000000000000000000000000000000';
    deleted.commits = [];
    expect((await single('Push Hook', deleted)).content).toBe('Tomasz Kolek deleted branch tomek.');

    const filtered = await callWebhook(env, hook, 'gitlab', { body: webhookFixture('gitlab', 'push_hook'), headers: { 'X-Gitlab-Event': 'Push Hook' }, query: { branches: 'master,development' } });
    expect(filtered.status).toBe(200);
    expect(filtered.body.code).toBeUndefined();
    expect((await single('Push Hook', 'push_hook', { branches: 'master, tomek' })).topic).toBe('my-awesome-project / tomek');
  });

  it('tag push: pushed while checkout_sha is set, removed otherwise; the topic is the project', async () => {
    const pushed = await single('Tag Push Hook', 'tag_push_hook__add_tag');
    expect(pushed.topic).toBe('my-awesome-project');
    expect(pushed.content).toBe('Tomasz Kolek pushed tag xyz.');
    const removed = fixture('tag_push_hook__add_tag');
    removed.checkout_sha = null;
    expect((await single('Tag Push Hook', removed)).content).toBe('Tomasz Kolek removed tag xyz.');
  });

  it('merge requests: opened (branches, assignee, quoted description), updated, commits added, merged, closed, approved', async () => {
    const mr = (action: string, change: (p: Record<string, any>) => void = () => {}) => {
      const payload = fixture('merge_request_hook__merge_request_added_commit');
      payload.object_attributes.action = action;
      change(payload);
      return single('Merge Request Hook', payload);
    };
    const noOldrev = (p: Record<string, any>) => delete p.object_attributes.oldrev;

    const opened = await mr('open', noOldrev);
    expect(opened.topic).toBe('my-awesome-project / MR #3 New Merge Request');
    expect(opened.content).toBe(`Tomasz Kolek created [MR #3](${MR_URL}) from \`tomek\` to \`master\` (assigned to Tomasz Kolek):\n\n~~~ quote\nupdated desc\n~~~`);
    expect((await mr('update', noOldrev)).content).toBe(`Tomasz Kolek updated [MR #3](${MR_URL}) (assigned to Tomasz Kolek):\n\n~~~ quote\nupdated desc\n~~~`);
    expect((await single('Merge Request Hook', 'merge_request_hook__merge_request_added_commit')).content).toBe(`Tomasz Kolek added commit(s) to [MR #3](${MR_URL}).`);
    expect((await mr('merge')).content).toBe(`Tomasz Kolek merged [MR #3](${MR_URL}) from \`tomek\` to \`master\`.`);
    expect((await mr('close')).content).toBe(`Tomasz Kolek closed [MR #3](${MR_URL}).`);
    expect((await mr('approved')).content).toBe(`Tomasz Kolek approved [MR #3](${MR_URL}).`);
    // Sent instead when more than one approval is required.
    expect((await mr('approval')).content).toBe(`Tomasz Kolek added their approval for [MR #3](${MR_URL}).`);
  });

  it('merge requests: use_merge_request_title=false drops the title from the topic; a URL topic puts it in the link', async () => {
    const payload = fixture('merge_request_hook__merge_request_added_commit');
    payload.object_attributes.action = 'close';
    const untitled = await single('Merge Request Hook', payload, { use_merge_request_title: 'false' });
    expect(untitled.topic).toBe('my-awesome-project / MR #3');
    const custom = await single('Merge Request Hook', payload, { topic: 'notifications' });
    expect(custom.topic).toBe('notifications');
    expect(custom.content).toBe(`[[my-awesome-project](${PROJECT})] Tomasz Kolek closed [MR #3 New Merge Request](${MR_URL}).`);
  });

  it('issues: reopened, closed, created (assignee, description without its hidden comments), confidential ones alike', async () => {
    const reopened = await single('Issue Hook', 'issue_hook__issue_reopened');
    expect(reopened.topic).toBe('my-awesome-project / issue #1 Issue title_new');
    expect(reopened.content).toBe(`Tomasz Kolek reopened [issue #1](${ISSUE_URL}).`);

    const issue = fixture('issue_hook__issue_reopened');
    issue.object_attributes.action = 'close';
    expect((await single('Issue Hook', issue)).content).toBe(`Tomasz Kolek closed [issue #1](${ISSUE_URL}).`);

    issue.object_attributes.action = 'open';
    issue.object_attributes.description = 'Issue description<!-- not for\nZulip -->\n';
    const created = await single('Issue Hook', issue);
    expect(created.content).toBe(`Tomasz Kolek created [issue #1](${ISSUE_URL}) (assigned to Tomasz Kolek):\n\n~~~ quote\nIssue description\n~~~`);
    const confidential = await single('Confidential Issue Hook', issue);
    expect(confidential.topic).toBe('my-awesome-project / issue #1 Issue title_new');
    expect(confidential.content).toBe(created.content);
  });

  it('notes: on a commit (its short sha), on a merge request, on a snippet (URL built when GitLab sends none)', async () => {
    const base = 'https://gitlab.com/sbansal1999/testing-zulip-gitlab-integration';
    const onCommit = await single('Note Hook', 'note_hook__commit_note');
    expect(onCommit.topic).toBe('testing-zulip-gitlab-integration');
    expect(onCommit.content).toBe(
      `Satyam Bansal [commented](${base}/-/commit/82689ddf00fd7bdadb5c2afb3b94bd555edc9d01#note_1406241063) on [82689ddf00f](${base}/-/commit/82689ddf00fd7bdadb5c2afb3b94bd555edc9d01):\n~~~ quote\nWow what a beautiful commit.\n~~~`,
    );

    const onMr = await single('Note Hook', 'note_hook__merge_request_note');
    expect(onMr.topic).toBe('testing-zulip-gitlab-integration / MR #1 add new-feature');
    expect(onMr.content).toBe(
      `Satyam Bansal [commented](${base}/-/merge_requests/1#note_1406328457) on [MR #1](${base}/-/merge_requests/1):\n\n~~~ quote\nI am not sure if this new feature is even required or not.\n~~~`,
    );

    const snippet = fixture('note_hook__merge_request_note');
    snippet.object_attributes.noteable_type = 'Snippet';
    snippet.object_attributes.url = `${base}/snippets/2#note_14172058`;
    delete snippet.merge_request;
    snippet.snippet = { id: 2, title: 'test', content: 'puts "Hello"' };
    const onSnippet = await single('Note Hook', snippet);
    expect(onSnippet.topic).toBe('testing-zulip-gitlab-integration / snippet #2 test');
    expect(onSnippet.content).toBe(
      `Satyam Bansal [commented](${base}/snippets/2#note_14172058) on [snippet #2](${base}/-/snippets/2):\n\n~~~ quote\nI am not sure if this new feature is even required or not.\n~~~`,
    );
  });

  it('pipeline (one line per build, built artifacts linked), job ("Job Hook" and the older "Build Hook"), wiki page', async () => {
    const project = 'https://gitlab.com/TomaszKolek/my-awesome-project';
    const pipeline = fixture('pipeline_hook__pipeline_succeeded');
    pipeline.builds[0].artifacts_file.filename = 'artifacts.zip';
    const message = await single('Pipeline Hook', pipeline);
    expect(message.topic).toBe('my-awesome-project / master');
    expect(message.content).toBe(
      `[Pipeline (4414206)](${project}/-/pipelines/4414206) changed status to success with build(s):\n` +
        `* [job_name2](${project}/-/jobs/4541113) - success\n` +
        `  * built artifact: *artifacts.zip* [[Browse](${project}/-/jobs/4541113/artifacts/browse)|[Download](${project}/-/jobs/4541113/artifacts/download)]\n` +
        `* [job_name](${project}/-/jobs/4541112) - success.`,
    );

    const job = await single('Job Hook', 'job_hook__build_created');
    expect(job.topic).toBe('gitlab_test / gitlab-script-trigger');
    expect(job.content).toBe('Build test from test stage was created.');
    const running = fixture('job_hook__build_created');
    running.build_status = 'running';
    expect((await single('Build Hook', running)).content).toBe('Build test from test stage started.');
    // Job payloads have no `project`: the link before a URL topic's message uses the repository.
    expect((await single('Job Hook', 'job_hook__build_created', { topic: 'ci' })).content).toBe(
      '[[gitlab_test](http://192.168.64.1:3005/gitlab-org/gitlab-test)] Build test from test stage was created.',
    );

    const wiki = await single('Wiki Page Hook', 'wiki_page_hook__wiki_page_opened');
    expect(wiki.topic).toBe('my-awesome-project');
    expect(wiki.content).toBe(`Tomasz Kolek created [wiki page "how to"](${PROJECT}/wikis/how-to).`);
  });

  it('events it does not handle answer success with UNSUPPORTED_WEBHOOK_EVENT_TYPE (the full event name) and post nothing', async () => {
    const before = await newestMessageId(env, hook);
    const emoji = await callWebhook(env, hook, 'gitlab', { body: webhookFixture('gitlab', 'note_hook__commit_note'), headers: { 'X-Gitlab-Event': 'Emoji Hook' } });
    expect(emoji.status).toBe(200);
    expect(emoji.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE', event_type: 'Emoji Hook', webhook_name: 'GitLab' });

    const wiki = fixture('wiki_page_hook__wiki_page_opened');
    wiki.object_attributes.action = 'delete';
    const deleted = await callWebhook(env, hook, 'gitlab', { body: JSON.stringify(wiki), headers: { 'X-Gitlab-Event': 'Wiki Page Hook' } });
    expect(deleted.body).toMatchObject({ code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE', event_type: 'Wiki Page Hook delete' });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('only_events matches the full event name', async () => {
    const query = { only_events: '["Merge Request Hook merge"]' };
    const payload = fixture('merge_request_hook__merge_request_added_commit');
    expect(await postedBy(env, hook, 'gitlab', { body: JSON.stringify(payload), headers: { 'X-Gitlab-Event': 'Merge Request Hook' }, query })).toEqual([]);
    payload.object_attributes.action = 'merge';
    expect(await postedBy(env, hook, 'gitlab', { body: JSON.stringify(payload), headers: { 'X-Gitlab-Event': 'Merge Request Hook' }, query })).toHaveLength(1);
  });

  it('no event header, missing fields, wrong types, a body that is not JSON: a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    const noHeader = await callWebhook(env, hook, 'gitlab', { body: webhookFixture('gitlab', 'push_hook') });
    expect(noHeader.status).toBe(400);
    expect(noHeader.body).toMatchObject({ result: 'error', code: 'MISSING_HTTP_EVENT_HEADER', msg: "Missing the HTTP event header 'X-GitLab-Event'" });

    const noRef = fixture('push_hook');
    delete noRef.ref;
    const missing = await callWebhook(env, hook, 'gitlab', { body: JSON.stringify(noRef), headers: { 'X-Gitlab-Event': 'Push Hook' } });
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toMatch(/^payload\[.ref.\] is missing$/);

    const badIid = fixture('issue_hook__issue_reopened');
    badIid.object_attributes.iid = { value: 1 };
    expect((await callWebhook(env, hook, 'gitlab', { body: JSON.stringify(badIid), headers: { 'X-Gitlab-Event': 'Issue Hook' } })).status).toBe(400);
    const noNoteable = fixture('note_hook__commit_note');
    delete noNoteable.object_attributes.noteable_type;
    expect((await callWebhook(env, hook, 'gitlab', { body: JSON.stringify(noNoteable), headers: { 'X-Gitlab-Event': 'Note Hook' } })).status).toBe(400);
    expect((await callWebhook(env, hook, 'gitlab', { body: '[1, 2]', headers: { 'X-Gitlab-Event': 'Push Hook' } })).status).toBe(400);
    expect((await callWebhook(env, hook, 'gitlab', { body: 'ref=main', headers: { 'X-Gitlab-Event': 'Push Hook' } })).status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
