// Gogs (/api/v1/external/gogs), as Zulip's zerver/webhooks/gogs/view.py, and the handling Gitea
// shares with it (Gitea is a fork of Gogs; Zulip's gitea view calls the gogs one with its own
// header and pull-request formatter). Forgejo, a fork of Gitea, sends the same payloads with an
// X-Gitea-Event header (besides X-Forgejo-Event), so it is pointed at the gitea URL; Zulip has no
// separate Forgejo integration.
// Events (the X-Gogs-Event / X-Gitea-Event header): push, create, pull_request, issues,
// issue_comment, release; any other (delete, fork, …) is unsupported.
// Topics: "<repo> / <branch>" (push, create), "<repo> / PR #<pull_request.id> <title>" (Zulip uses
// the PR's global id here, not its number), "<repo> / issue #<number> <title>" (issues and their
// comments, also comments on PRs), "<repo> / <tag> <release name>" (release). A topic in the URL
// replaces the topic and puts the PR/issue title into the link. URL option: `branches`.
import type { Integration, WebhookOutcome, WebhookRequest } from './types.ts';
import { MissingEventHeaderError } from './types.ts';
import {
  createBranchMessage,
  isBranchNotifiable,
  issueMessage,
  pullRequestMessage,
  pushCommitsMessage,
  releaseMessage,
  topicWithBranch,
  topicWithPrOrIssue,
  topicWithRelease,
  type CommitData,
} from './common.ts';
import { Wild } from './wild-value.ts';

export type PullRequestFormatter = (payload: Wild, includeTitle: boolean) => string;

export const GOGS_EVENT_TYPES = ['issue_comment', 'issues', 'create', 'pull_request', 'push', 'release'] as const;

const issueUrl = (payload: Wild, number: number) => `${payload.at('repository').at('html_url').string()}/issues/${number}`;

function pushBody(payload: Wild): string {
  const commits: CommitData[] = payload
    .at('commits')
    .list()
    .map((commit) => {
      const author = commit.at('author');
      const username = author.at('username').string();
      return {
        // The author's username, else the first word of their name.
        name: username || (author.at('name').string().trim().split(/\s+/)[0] ?? ''),
        sha: commit.at('id').string(),
        url: commit.at('url').string(),
        message: commit.at('message').string(),
      };
    });
  return pushCommitsMessage({
    userName: payload.at('sender').at('username').string(),
    compareUrl: payload.at('compare_url').string(),
    branch: payload.at('ref').string().replaceAll('refs/heads/', ''),
    commits,
  });
}

function newBranchBody(payload: Wild): string {
  const branch = payload.at('ref').string();
  const url = `${payload.at('repository').at('html_url').string()}/src/${branch}`;
  return createBranchMessage(payload.at('sender').at('username').string(), url, branch);
}

/** Gogs' pull requests: the opener (or the merger) acts; branches are head_branch/base_branch. */
export const gogsPullRequestBody: PullRequestFormatter = (payload, includeTitle) => {
  const pr = payload.at('pull_request');
  const merged = pr.at('merged').truthy;
  const userName = merged ? pr.at('merged_by').at('username').string() : pr.at('user').at('username').string();
  const action = merged ? 'merged' : payload.at('action').string();
  const withBranches = action !== 'edited';
  const assignee = pr.at('assignee');
  return pullRequestMessage({
    userName,
    action,
    url: pr.at('html_url').string(),
    number: pr.at('number').number(),
    targetBranch: withBranches ? pr.at('head_branch').string() : null,
    baseBranch: withBranches ? pr.at('base_branch').string() : null,
    title: includeTitle ? pr.at('title').string() : null,
    assigneeUpdated: payload.at('action').truthy && assignee.truthy ? assignee.at('login').string() : null,
  });
};

function issuesBody(payload: Wild, includeTitle: boolean): string {
  const issue = payload.at('issue');
  const number = issue.at('number').number();
  const assignee = issue.at('assignee');
  const assigneeLogin = assignee.truthy ? assignee.at('login').string() : null;
  const action = payload.at('action').string();
  return issueMessage({
    userName: payload.at('sender').at('login').string(),
    action,
    url: issueUrl(payload, number),
    number,
    message: issue.at('body').string(),
    assignee: assigneeLogin,
    title: includeTitle ? issue.at('title').string() : null,
    assigneeUpdated: action === 'assigned' ? assigneeLogin : null,
  });
}

function issueCommentBody(payload: Wild, includeTitle: boolean): string {
  const action = payload.at('action').string();
  const comment = payload.at('comment');
  const issue = payload.at('issue');
  const number = issue.at('number').number();
  const verb = action === 'created' ? '[commented]' : `${action} a [comment]`;
  return issueMessage({
    userName: payload.at('sender').at('login').string(),
    action: `${verb}(${comment.at('html_url').string()}) on`,
    url: issueUrl(payload, number),
    number,
    message: comment.at('body').string(),
    title: includeTitle ? issue.at('title').string() : null,
  });
}

function releaseBody(payload: Wild): string {
  const release = payload.at('release');
  return releaseMessage(
    release.at('author').at('username').string(),
    payload.at('action').string(),
    release.at('tag_name').string(),
    release.at('name').string(),
    payload.at('repository').at('html_url').string(),
  );
}

/** Zulip's gogs_webhook_main, shared by Gogs and Gitea. */
export function gogsWebhookMain(request: WebhookRequest, header: string, pullRequestBody: PullRequestFormatter): WebhookOutcome {
  const payload = Wild.body(request);
  const repo = payload.at('repository').at('name').string();
  const event = request.headers[header.toLowerCase()];
  if (event === undefined) throw new MissingEventHeaderError(header);
  const includeTitle = request.userTopic !== undefined;
  let topic: string;
  let content: string;
  switch (event) {
    case 'push': {
      const branch = payload.at('ref').string().replaceAll('refs/heads/', '');
      if (!isBranchNotifiable(branch, request.query.branches)) return { kind: 'ignored', eventType: event };
      content = pushBody(payload);
      topic = topicWithBranch(repo, branch);
      break;
    }
    case 'create':
      content = newBranchBody(payload);
      topic = topicWithBranch(repo, payload.at('ref').string());
      break;
    case 'pull_request': {
      content = pullRequestBody(payload, includeTitle);
      const pr = payload.at('pull_request');
      topic = topicWithPrOrIssue(repo, 'PR', pr.at('id').number(), pr.at('title').string());
      break;
    }
    case 'issues': {
      content = issuesBody(payload, includeTitle);
      const issue = payload.at('issue');
      topic = topicWithPrOrIssue(repo, 'issue', issue.at('number').number(), issue.at('title').string());
      break;
    }
    case 'issue_comment': {
      content = issueCommentBody(payload, includeTitle);
      const issue = payload.at('issue');
      topic = topicWithPrOrIssue(repo, 'issue', issue.at('number').number(), issue.at('title').string());
      break;
    }
    case 'release': {
      content = releaseBody(payload);
      const release = payload.at('release');
      topic = topicWithRelease(repo, release.at('tag_name').string(), release.at('name').string());
      break;
    }
    default:
      return { kind: 'unsupported', eventType: event };
  }
  return { kind: 'messages', eventType: event, messages: [{ topic, content }] };
}

export const gogs: Integration = {
  name: 'gogs',
  displayName: 'Gogs',
  eventTypes: GOGS_EVENT_TYPES,
  handle: (request) => gogsWebhookMain(request, 'X-Gogs-Event', gogsPullRequestBody),
};
