// The Jira integration (/api/v1/external/jira) fed Jira's payloads (taken from Zulip's fixtures,
// trimmed to what matters) as Jira posts them: issues created, updated (comments, field changes,
// assignee, status transitions), deleted; the newer comment events; events Zulip ignores on purpose,
// events it does not handle, and payloads it cannot read.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { callWebhook, messagesSince, newestMessageId, postedBy, useIncomingWebhookBot, webhookFixture } from '../../helpers/incoming-webhooks.ts';

const env = useTestServer();
const hook = useIncomingWebhookBot(env);

const post = async (name: string, query: Record<string, string> = {}) => postedBy(env, hook, 'jira', { body: webhookFixture('jira', name), query });

/** Posts one fixture and returns its single message. */
async function single(name: string) {
  const messages = await post(name);
  expect(messages).toHaveLength(1);
  expect(messages[0]!.senderId).toBe(hook.bot.id);
  return messages[0]!;
}

describe('POST /external/{integration_name} (jira)', () => {
  it('issue created: the "<key>: <summary>" topic, a link to the issue page, priority and assignee', async () => {
    const created = await single('created_v2');
    expect(created.topic).toBe('BUG-15: New bug with hook');
    expect(created.content).toBe('Leo Franchi created [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15):\n\n* **Priority**: Major\n* **Assignee**: no one');

    const assigned = await single('created_assignee_v2');
    expect(assigned.topic).toBe('TEST-4: Test Created Assignee');
    expect(assigned.content).toBe(
      'Leonardo Franchi [Administrator] created [TEST-4: Test Created Assignee](https://zulipp.atlassian.net/browse/TEST-4):\n\n* **Priority**: Major\n* **Assignee**: Leonardo Franchi [Administrator]',
    );
  });

  it('issue updated with a comment: quoted, with the assignee (shown by address when nobody here has it)', async () => {
    const message = await single('commented_v2');
    expect(message.topic).toBe('BUG-15: New bug with hook');
    expect(message.content).toBe(
      'Leo Franchi commented on [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15) (assigned to **othello@zulip.com**):\n\n``` quote\nAdding a comment. Oh, what a comment it is!\n```',
    );
  });

  it("a comment's Jira markup becomes Markdown (bold, monospace, noformat/code/quote blocks, links)", async () => {
    const message = await single('commented_markup_v1');
    expect(message.topic).toBe('TEST-7: Testing of rich text');
    const comment = [
      'This is a comment that likes to **exercise** a lot of _different_ `conventions` that `jira uses`.\r\n\r\n',
      '~~~\n\r\nthis code is not highlighted, but monospaced\r\n\n~~~\r\n\r\n',
      '~~~\n\r\ndef python():\r\n    print "likes to be formatted"\r\n\n~~~\r\n\r\n',
      '[http://www.google.com](http://www.google.com) is a bare link, and [Google](http://www.google.com) is given a title.\r\n\r\n',
      'Thanks!\r\n\r\n',
      '~~~ quote\n\r\nSomeone said somewhere\r\n\n~~~',
    ].join('');
    expect(message.content).toBe(`Leonardo Franchi [Administrator] commented on [TEST-7: Testing of rich text](https://zulipp.atlassian.net/browse/TEST-7):\n\n\`\`\` quote\n${comment}\n\`\`\``);
  });

  it('a [~user] mention in a comment becomes the name in bold', async () => {
    const payload = JSON.parse(webhookFixture('jira', 'commented_v2')) as { comment: { body: string } };
    payload.comment.body = 'Over to you, [~nobody.here]: see [the runbook|https://example.com/runbook].';
    const messages = await postedBy(env, hook, 'jira', { body: JSON.stringify(payload) });
    expect(messages.map((m) => m.content)).toEqual([
      'Leo Franchi commented on [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15) (assigned to **othello@zulip.com**):\n\n``` quote\nOver to you, **nobody.here**: see [the runbook](https://example.com/runbook).\n```',
    ]);
  });

  it('an edited comment', async () => {
    const message = await single('comment_edited_v2');
    expect(message.topic).toBe('BUG-15: New bug with hook');
    expect(message.content).toBe(
      'Leo Franchi edited a comment on [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15) (assigned to **othello@zulip.com**):\n\n``` quote\nAdding a comment. Oh, what a comment it is!\n```',
    );
  });

  it('a deleted comment (no body) is one sentence', async () => {
    const message = await single('comment_deleted_v2');
    expect(message.topic).toBe('TOM-1: New Issue');
    expect(message.content).toBe('Tomasz Kolek deleted a comment from [TOM-1: New Issue](https://zuliptomek.atlassian.net/browse/TOM-1) (assigned to **kolaszek@go2.pl**).');
  });

  it('field changes from the changelog, the assignee change, and a workflow transition without webhookEvent', async () => {
    const priority = await single('updated_priority_v2');
    expect(priority.topic).toBe('TEST-1: Fix That');
    expect(priority.content).toBe('Leonardo Franchi [Administrator] updated [TEST-1: Fix That](https://zulipp.atlassian.net/browse/TEST-1) (assigned to **leo@zulip.com**):\n\n* Changed priority from **Critical** to **Major**');

    const reassigned = await single('reassigned_v2');
    expect(reassigned.content).toBe(
      'Leo Franchi updated [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15) (assigned to **othello@zulip.com**):\n\n* Changed assignee to **othello@zulip.com**',
    );

    const transition = await single('change_status_v1');
    expect(transition.topic).toBe('TEST-1: Fix That');
    expect(transition.content).toBe('Leonardo Franchi [Administrator] updated [TEST-1: Fix That](https://zulipp.atlassian.net/browse/TEST-1):\n\n* Changed status from **To Do** to **In Progress**');
  });

  it('issue deleted: a period unless the summary ends in punctuation', async () => {
    const message = await single('deleted_v2');
    expect(message.topic).toBe('BUG-15: New bug with hook');
    expect(message.content).toBe('Leo Franchi deleted [BUG-15: New bug with hook](http://lfranchi.com:8080/browse/BUG-15).');

    const payload = JSON.parse(webhookFixture('jira', 'deleted_v2')) as { issue: { fields: { summary: string } } };
    payload.issue.fields.summary = 'Why is this broken?';
    const [asked] = await postedBy(env, hook, 'jira', { body: JSON.stringify(payload) });
    expect(asked!.content).toBe('Leo Franchi deleted [BUG-15: Why is this broken?](http://lfranchi.com:8080/browse/BUG-15)');
  });

  it('the newer comment events: created, deleted (struck through), and without issue details', async () => {
    const created = await single('comment_created');
    expect(created.topic).toBe('SP-1: Add support for newer format Jira issue comment events');
    expect(created.content).toBe(
      'Hemanth V. Alluri commented on [SP-1: Add support for newer format Jira issue comment events](https://f20171170.atlassian.net/browse/SP-1)\n``` quote\nSounds like it’s pretty important. I’ll get this fixed ASAP!\n```',
    );

    const updated = await single('comment_updated');
    expect(updated.content).toBe(
      'Hemanth V. Alluri updated their comment on [SP-1: Add support for newer format Jira issue comment events](https://f20171170.atlassian.net/browse/SP-1)\n``` quote\nThis is a very important issue! I’m on it!\n```',
    );

    const deleted = await single('comment_deleted');
    expect(deleted.content).toBe(
      'Hemanth V. Alluri deleted their comment on [SP-1: Add support for newer format Jira issue comment events](https://f20171170.atlassian.net/browse/SP-1)\n``` quote\n~~This is a very important issue! I’m on it!~~\n```',
    );

    const bare = await single('comment_created_no_issue_details');
    expect(bare.topic).toBe('10000: Upgrade Jira to get the issue title here.');
    expect(bare.content).toBe('Hemanth V. Alluri commented on 10000: Upgrade Jira to get the issue title here.\n``` quote\nSounds like it’s pretty important. I’ll get this fixed ASAP!\n```');
  });

  it('only_events filters on the Jira event', async () => {
    expect(await post('created_v2', { only_events: '["jira:issue_updated"]' })).toEqual([]);
    expect(await post('commented_v2', { only_events: '["jira:issue_updated"]' })).toHaveLength(1);
  });

  it('ignored events post nothing and answer success; unknown ones are UNSUPPORTED_WEBHOOK_EVENT_TYPE', async () => {
    const before = await newestMessageId(env, hook);
    const ignored = await callWebhook(env, hook, 'jira', { body: webhookFixture('jira', 'worklog_created') });
    expect(ignored.status).toBe(200);
    expect(ignored.body).toMatchObject({ result: 'success' });
    expect(ignored.body.code).toBeUndefined();
    for (const event of ['sprint_started', 'issuelink_created', 'jira:version_released']) {
      expect((await callWebhook(env, hook, 'jira', { body: JSON.stringify({ webhookEvent: event }) })).status).toBe(200);
    }

    const unknown = await callWebhook(env, hook, 'jira', { body: webhookFixture('jira', 'unknown_v2') });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ result: 'success', code: 'UNSUPPORTED_WEBHOOK_EVENT_TYPE' });
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });

  it('payloads it cannot read are a 400, never a 5xx', async () => {
    const before = await newestMessageId(env, hook);
    // No webhookEvent and no transition: Zulip's "anomalous payload".
    const anomalous = await callWebhook(env, hook, 'jira', { body: JSON.stringify({ timestamp: 1, user: { displayName: 'x' } }) });
    expect(anomalous.status).toBe(400);
    expect(anomalous.body).toMatchObject({ result: 'error', msg: 'Unable to parse request: Did Jira generate this event?' });

    // A comment event without its comment, a summary of the wrong type, a body that is not JSON.
    const noComment = await callWebhook(env, hook, 'jira', { body: JSON.stringify({ webhookEvent: 'comment_created', issue: { key: 'A-1', fields: { summary: 's' } } }) });
    expect(noComment.status).toBe(400);
    expect(noComment.body.result).toBe('error');
    const badSummary = await callWebhook(env, hook, 'jira', { body: JSON.stringify({ webhookEvent: 'jira:issue_deleted', issue: { key: 'A-1', fields: { summary: 42 } } }) });
    expect(badSummary.status).toBe(400);
    const notJson = await callWebhook(env, hook, 'jira', { body: '{"webhookEvent": ' });
    expect(notJson.status).toBe(400);
    expect(await messagesSince(env, hook, before)).toEqual([]);
  });
});
