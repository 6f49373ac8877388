// Gitea (/api/v1/external/gitea), as Zulip's zerver/webhooks/gitea/view.py: Gogs' handling (see
// gogs.ts: events, topics, `branches`) with the X-Gitea-Event header and Gitea's pull-request
// payload: the sender acts (the merger for a merge), branches come from head.ref/base.ref, and the
// PR's assignee is shown ("(assigned to <login>)", and "assigned <login> to" for an assignment).
// Forgejo sends Gitea's payloads and the X-Gitea-Event header, so Forgejo hooks use this URL too.
import type { Integration } from './types.ts';
import { pullRequestMessage } from './common.ts';
import { GOGS_EVENT_TYPES, gogsWebhookMain, type PullRequestFormatter } from './gogs.ts';

const giteaPullRequestBody: PullRequestFormatter = (payload, includeTitle) => {
  const pr = payload.at('pull_request');
  const assignee = pr.at('assignee');
  const merged = pr.at('merged').truthy;
  const userName = merged ? pr.at('merged_by').at('username').string() : payload.at('sender').at('username').string();
  const action = merged ? 'merged' : payload.at('action').string();
  const withBranches = action !== 'edited';
  const assigneeLogin = assignee.truthy ? assignee.at('login').string() : null;
  return pullRequestMessage({
    userName,
    action,
    url: pr.at('html_url').string(),
    number: pr.at('number').number(),
    targetBranch: withBranches && pr.has('head') ? pr.at('head').at('ref').string() : null,
    baseBranch: withBranches && pr.has('base') ? pr.at('base').at('ref').string() : null,
    title: includeTitle ? pr.at('title').string() : null,
    assignee: assigneeLogin,
    assigneeUpdated: action === 'assigned' ? assigneeLogin : null,
  });
};

export const gitea: Integration = {
  name: 'gitea',
  displayName: 'Gitea',
  eventTypes: GOGS_EVENT_TYPES,
  handle: (request) => gogsWebhookMain(request, 'X-Gitea-Event', giteaPullRequestBody),
};
