// GitHub (/api/v1/external/github), as Zulip's zerver/webhooks/github/view.py: the X-GitHub-Event
// header names the event (missing: MISSING_HTTP_EVENT_HEADER), refined by the payload into Zulip's
// event names (push_commits, push_tags, opened_pull_request …: the names only_events/exclude_events
// match); Zulip's `branches` (comma-separated branch names for push events) and
// `ignore_private_repositories` URL options; events Zulip knowingly skips (IGNORED_EVENTS, some pull
// request and team actions, merge-queue pushes, comments edited without a change, in-progress check
// runs, empty review edits) post nothing; others it does not know are UNSUPPORTED_WEBHOOK_EVENT_TYPE
// ("<event>:<action>"). Topics: "<repo> / <branch>" for pushes, "<repo> / PR #<n> <title>" and
// "<repo> / issue #<n> <title>" for pull requests and issues, else the repository's name. With a topic
// in the URL, messages name the PR or issue's title themselves.
//
// Zulip shows the sender as a silent mention when exactly one of its users has that GitHub account in
// an "external account" profile field; Parley has no such field yet, so the GitHub login is shown.
import type { Integration, WebhookOutcome, WebhookRequest } from './types.ts';
import { MissingEventHeaderError, WebhookPayloadError } from './types.ts';
import { Wild } from './wild-value.ts';
import {
  branchFromRef,
  commitCommentMessage,
  issueMessage,
  isBranchNotifiable,
  pullRequestMessage,
  pushCommitsMessage,
  pushTagMessage,
  releaseMessage,
  setupWebhookMessage,
  shortSha,
  tagFromRef,
  topicWithBranch,
  topicWithPrOrIssue,
  type CommitData,
} from './common.ts';

interface Helper {
  payload: Wild;
  includeTitle: boolean;
}

const sender = (p: Wild) => p.at('sender').at('login').string();
const senderUrl = (p: Wild) => p.at('sender').at('html_url').string();
const repoName = (p: Wild) => p.at('repository').at('name').string();
const repoFullName = (p: Wild) => p.at('repository').at('full_name').string();
const repoUrl = (p: Wild) => p.at('repository').at('html_url').string();
const int = (w: Wild) => {
  const n = w.number();
  if (!Number.isInteger(n)) throw new WebhookPayloadError(`${w.path} is not an integer`);
  return n;
};

function commentAction(p: Wild): string {
  const action = p.at('action').string();
  const verb = action === 'created' ? '[commented]' : `${action} a [comment]`;
  return `${verb}(${p.at('comment').at('html_url').string()}) on`;
}

const isPullRequestComment = (p: Wild) => p.at('issue').has('pull_request');

const BODIES: Readonly<Record<string, (h: Helper) => string>> = {
  ping: ({ payload }) => setupWebhookMessage('GitHub', sender(payload)),
  push_commits: ({ payload }) => {
    const commits: CommitData[] = payload
      .at('commits')
      .list()
      .map((commit) => {
        const author = commit.at('author');
        return {
          name: author.get('username').truthy ? author.at('username').string() : author.at('name').string(),
          sha: commit.at('id').string(),
          url: commit.at('url').string(),
          message: commit.at('message').string(),
        };
      });
    return pushCommitsMessage({
      userName: sender(payload),
      compareUrl: payload.at('compare').string(),
      branch: branchFromRef(payload.at('ref').string()),
      commits,
      deleted: payload.at('deleted').truthy,
      forcePush: payload.at('forced').truthy,
    });
  },
  push_tags: ({ payload }) => pushTagMessage(sender(payload), tagFromRef(payload.at('ref').string()), null, payload.at('created').truthy ? 'pushed' : 'removed'),
  create: ({ payload }) => createOrDelete('created', payload),
  delete: ({ payload }) => createOrDelete('deleted', payload),
  opened_pull_request: openedOrUpdatedPullRequest,
  updated_pull_request: openedOrUpdatedPullRequest,
  assigned_or_unassigned_pull_request: ({ payload, includeTitle }) => {
    const pr = payload.at('pull_request');
    return pullRequestMessage({
      userName: sender(payload),
      action: payload.at('action').string(),
      url: pr.at('html_url').string(),
      number: int(pr.at('number')),
      title: includeTitle ? pr.at('title').string() : null,
      assigneeUpdated: payload.at('assignee').at('login').string(),
    });
  },
  closed_pull_request: ({ payload, includeTitle }) => {
    const pr = payload.at('pull_request');
    return pullRequestMessage({
      userName: sender(payload),
      action: pr.at('merged').truthy ? 'merged' : 'closed without merge',
      url: pr.at('html_url').string(),
      number: int(pr.at('number')),
      title: includeTitle ? pr.at('title').string() : null,
    });
  },
  pull_request_review_requested: ({ payload, includeTitle }) => {
    const pr = payload.at('pull_request');
    const reviewers = payload.has('requested_reviewer')
      ? `[${payload.at('requested_reviewer').at('login').string()}](${payload.at('requested_reviewer').at('html_url').string()})`
      : `[${payload.at('requested_team').at('name').string()}](${payload.at('requested_team').at('html_url').string()})`;
    const title = includeTitle ? ` ${pr.at('title').string()}` : '';
    return `**${sender(payload)}** requested ${reviewers} for a review on [PR #${int(pr.at('number'))}${title}](${pr.at('html_url').string()}).`;
  },
  pull_request_ready_for_review: ({ payload }) => {
    const pr = payload.at('pull_request');
    return `**${sender(payload)}** has marked [PR #${int(pr.at('number'))}](${pr.at('html_url').string()}) as ready for review.`;
  },
  locked_or_unlocked_pull_request: ({ payload }) => {
    const pr = payload.at('pull_request');
    const link = `[PR #${int(pr.at('number'))}](${pr.at('html_url').string()})`;
    if (payload.at('action').string() === 'unlocked') return `${sender(payload)} has unlocked ${link}.`;
    const reason = pr.get('active_lock_reason').truthy ? pr.at('active_lock_reason').string() : 'None';
    return `${sender(payload)} has locked ${link} as ${reason} and limited conversation to collaborators.`;
  },
  pull_request_auto_merge: ({ payload }) => {
    const pr = payload.at('pull_request');
    const state = payload.at('action').string() === 'auto_merge_disabled' ? 'disabled' : 'enabled';
    return `${sender(payload)} has ${state} auto merge for [PR #${int(pr.at('number'))}](${pr.at('html_url').string()}).`;
  },
  pull_request_review: ({ payload, includeTitle }) => {
    const pr = payload.at('pull_request');
    return pullRequestMessage({
      userName: sender(payload),
      action: 'submitted',
      url: payload.at('review').at('html_url').string(),
      type: 'PR review',
      title: includeTitle ? `for #${int(pr.at('number'))} ${pr.at('title').string()}` : null,
      message: payload.at('review').at('body').nullableString(),
    });
  },
  pull_request_review_comment: ({ payload, includeTitle }) => {
    const pr = payload.at('pull_request');
    const action = payload.at('action').string();
    return pullRequestMessage({
      userName: sender(payload),
      action,
      url: payload.at('comment').at('html_url').string(),
      message: action === 'created' ? payload.at('comment').at('body').string() : null,
      type: 'PR review comment',
      title: includeTitle ? `on #${int(pr.at('number'))} ${pr.at('title').string()}` : null,
    });
  },
  issues: ({ payload, includeTitle }) => {
    const action = payload.at('action').string();
    const issue = payload.at('issue');
    return issueMessage({
      userName: sender(payload),
      action,
      url: issue.at('html_url').string(),
      number: int(issue.at('number')),
      message: action === 'assigned' || action === 'unassigned' ? null : issue.at('body').nullableString(),
      title: includeTitle ? issue.at('title').string() : null,
      assigneeUpdated: payload.has('assignee') ? payload.at('assignee').at('login').string() : null,
    });
  },
  issue_labeled_or_unlabeled: ({ payload, includeTitle }) => {
    const issue = payload.at('issue');
    const added = payload.at('action').string() === 'labeled';
    const title = includeTitle ? ` ${issue.at('title').string()}` : '';
    return `[${sender(payload)}](${senderUrl(payload)}) ${added ? 'added' : 'removed'} the ${payload.at('label').at('name').string()} label ${added ? 'to' : 'from'} [Issue #${int(issue.at('number'))}${title}](${issue.at('html_url').string()}).`;
  },
  issue_milestoned_or_demilestoned: ({ payload, includeTitle }) => {
    const issue = payload.at('issue');
    const milestone = payload.at('milestone');
    const added = payload.at('action').string() === 'milestoned';
    const title = includeTitle ? ` ${issue.at('title').string()}` : '';
    return `[${sender(payload)}](${senderUrl(payload)}) ${added ? 'added' : 'removed'} milestone [${milestone.at('title').string()}](${milestone.at('html_url').string()}) ${added ? 'to' : 'from'} [issue #${int(issue.at('number'))}${title}](${issue.at('html_url').string()}).`;
  },
  issues_transferred: ({ payload }) => {
    const issue = payload.at('issue');
    const changes = payload.at('changes');
    return `${sender(payload)} transferred [issue #${int(issue.at('number'))} ${issue.at('title').string()}](${issue.at('html_url').string()}) to [${changes.at('new_repository').at('full_name').string()}/#${int(changes.at('new_issue').at('number'))}](${changes.at('new_issue').at('html_url').string()}).`;
  },
  issues_opened_via_transfer: ({ payload }) => {
    const issue = payload.at('issue');
    const changes = payload.at('changes');
    return `[Issue #${int(issue.at('number'))} ${issue.at('title').string()}](${issue.at('html_url').string()}) was transferred from [${changes.at('old_repository').at('full_name').string()}#${int(changes.at('old_issue').at('number'))}](${changes.at('old_issue').at('html_url').string()}).`;
  },
  issue_comment: ({ payload, includeTitle }) => {
    const issue = payload.at('issue');
    return pullRequestMessage({
      userName: sender(payload),
      action: commentAction(payload),
      url: issue.at('html_url').string(),
      number: int(issue.at('number')),
      message: payload.at('comment').at('body').string(),
      title: includeTitle ? issue.at('title').string() : null,
      type: isPullRequestComment(payload) ? 'PR' : 'issue',
    });
  },
  commit_comment: ({ payload }) => {
    const comment = payload.at('comment');
    const commentUrl = comment.at('html_url').string();
    return commitCommentMessage(sender(payload), `[commented](${commentUrl})`, commentUrl.split('#')[0]!, comment.at('commit_id').string(), comment.at('body').string());
  },
  fork: ({ payload }) => `${sender(payload)} forked [${payload.at('forkee').at('name').string()}](${payload.at('forkee').at('html_url').string()}).`,
  watch: ({ payload }) => `${sender(payload)} starred the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  star: ({ payload }) =>
    `[${sender(payload)}](${senderUrl(payload)}) ${payload.at('action').string() === 'created' ? 'starred' : 'unstarred'} the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  public: ({ payload }) => `${sender(payload)} made the repository [${repoFullName(payload)}](${repoUrl(payload)}) public.`,
  repository: ({ payload }) => `${sender(payload)} ${payload.at('action').string()} the repository [${repoFullName(payload)}](${repoUrl(payload)}).`,
  member: ({ payload }) =>
    `${sender(payload)} ${payload.at('action').string()} [${payload.at('member').at('login').string()}](${payload.at('member').at('html_url').string()}) to [${repoName(payload)}](${repoUrl(payload)}).`,
  team_add: ({ payload }) => `The repository [${repoFullName(payload)}](${repoUrl(payload)}) was added to team ${payload.at('team').at('name').string()}.`,
  release: ({ payload }) => {
    const release = payload.at('release');
    const tag = release.at('tag_name').string();
    const name = release.get('name').truthy ? release.at('name').string() : tag;
    return releaseMessage(sender(payload), payload.at('action').string(), tag, name, release.at('html_url').string());
  },
  deployment: ({ payload }) => `${sender(payload)} created new deployment.`,
  deployment_status: ({ payload }) => `Deployment changed status to ${payload.at('deployment_status').at('state').string()}.`,
  status: ({ payload }) => {
    const state = payload.at('state').string();
    const status = payload.get('target_url').truthy ? `[${state}](${payload.at('target_url').string()})` : state;
    return `[${shortSha(payload.at('sha').string())}](${payload.at('commit').at('html_url').string()}) changed its status to ${status}.`;
  },
  check_run: ({ payload }) => {
    const run = payload.at('check_run');
    const sha = run.at('head_sha').string();
    return `Check [${run.at('name').string()}](${run.at('html_url').string()}) ${run.at('status').string()} (${run.at('conclusion').string()}). ([${shortSha(sha)}](${repoUrl(payload)}/commit/${sha}))`;
  },
  team: ({ payload }) => {
    const changes = payload.at('changes');
    const team = payload.at('team');
    if (changes.has('description')) return `**${sender(payload)}** changed the team description to:\n\n~~~ quote\n${team.at('description').string()}\n~~~`;
    if (changes.has('name')) return `Team \`${changes.at('name').at('from').string()}\` was renamed to \`${team.at('name').string()}\`.`;
    if (changes.has('privacy')) return `Team visibility changed to \`${team.at('privacy').string()}\``;
    return `Team has changes to \`${changes
      .entries()
      .map(([key]) => key)
      .sort()
      .join('/')}\` data.`;
  },
  membership: ({ payload }) => {
    const action = payload.at('action').string();
    const member = payload.at('member');
    return `${sender(payload)} ${action} [${member.at('login').string()}](${member.at('html_url').string()}) ${action === 'removed' ? 'from' : 'to'} the ${payload.at('team').at('name').string()} team.`;
  },
  gollum: ({ payload }) => {
    const pages = payload
      .at('pages')
      .list()
      .map((page) => `* ${page.at('action').string()} [${page.at('title').string()}](${page.at('html_url').string()})`);
    return `${sender(payload)}:\n${pages.join('\n')}`;
  },
};

function createOrDelete(action: string, payload: Wild): string {
  return `${sender(payload)} ${action} ${payload.at('ref_type').string()} ${payload.at('ref').string()}.`.trimEnd();
}

function openedOrUpdatedPullRequest({ payload, includeTitle }: Helper): string {
  const pr = payload.at('pull_request');
  let action = payload.at('action').string();
  if (action === 'synchronize') action = 'updated';
  const changes = payload.get('changes');
  const description = changes.has('body') || action === 'opened' ? pr.at('body').nullableString() : null;
  const withBranches = action === 'opened' || action === 'merged';
  return pullRequestMessage({
    userName: sender(payload),
    action,
    url: pr.at('html_url').string(),
    targetBranch: withBranches ? pr.at('head').at('label').string() : null,
    baseBranch: withBranches ? pr.at('base').at('label').string() : null,
    message: description,
    assignee: pr.get('assignee').truthy ? pr.at('assignee').at('login').string() : null,
    number: int(pr.at('number')),
    title: includeTitle ? pr.at('title').string() : null,
  });
}

const IGNORED_EVENTS = new Set(['check_suite', 'label', 'meta', 'milestone', 'organization', 'project_card', 'push__merge_queue', 'repository_vulnerability_alert']);
const IGNORED_PULL_REQUEST_ACTIONS = new Set(['approved', 'converted_to_draft', 'labeled', 'review_request_removed', 'unlabeled']);
const IGNORED_TEAM_ACTIONS = new Set(['added_to_repository', 'created', 'deleted', 'removed_from_repository']);

type Refined = { kind: 'event'; event: string } | { kind: 'ignored' } | { kind: 'unsupported'; eventType: string };

/** Zulip's get_zulip_event_name: the header's event refined by the payload. */
function zulipEventName(header: string, payload: Wild, branches: string | undefined): Refined {
  const event = (name: string): Refined => ({ kind: 'event', event: name });
  const ignored: Refined = { kind: 'ignored' };
  if (header === 'pull_request') {
    const action = payload.at('action').string();
    if (action === 'opened' || action === 'reopened') return event('opened_pull_request');
    if (action === 'synchronize' || action === 'edited') return event('updated_pull_request');
    if (action === 'assigned' || action === 'unassigned') return event('assigned_or_unassigned_pull_request');
    if (action === 'closed') return event('closed_pull_request');
    if (action === 'review_requested') return event('pull_request_review_requested');
    if (action === 'ready_for_review') return event('pull_request_ready_for_review');
    if (action === 'locked' || action === 'unlocked') return event('locked_or_unlocked_pull_request');
    if (action === 'auto_merge_enabled' || action === 'auto_merge_disabled') return event('pull_request_auto_merge');
    if (IGNORED_PULL_REQUEST_ACTIONS.has(action)) return ignored;
  } else if (header === 'pull_request_review') {
    // GitHub sends an empty "edited" duplicate of a submitted review.
    if (payload.at('action').string() === 'edited' && payload.get('changes').entries().length === 0) return ignored;
    return event('pull_request_review');
  } else if (header === 'push') {
    const ref = payload.at('ref').string();
    if (ref.startsWith('refs/heads/gh-readonly-queue/')) return ignored;
    if (ref.startsWith('refs/heads/')) {
      if (branches !== undefined && !isBranchNotifiable(branchFromRef(ref), branches)) return ignored;
      return event('push_commits');
    }
    return event('push_tags');
  } else if (header === 'check_run') {
    if (payload.at('check_run').at('status').string() !== 'completed') return ignored;
    return event('check_run');
  } else if (header === 'team') {
    const action = payload.at('action').string();
    if (IGNORED_TEAM_ACTIONS.has(action)) return ignored;
    if (action === 'edited') return event('team');
    return { kind: 'unsupported', eventType: `unsupported team action ${action}` };
  } else if (header === 'issues') {
    const action = payload.at('action').string();
    if (action === 'labeled' || action === 'unlabeled') return event('issue_labeled_or_unlabeled');
    if (action === 'milestoned' || action === 'demilestoned') return event('issue_milestoned_or_demilestoned');
    if (action === 'transferred') return event('issues_transferred');
    if (action === 'opened' && payload.get('changes').get('old_issue').truthy) return event('issues_opened_via_transfer');
    return event('issues');
  } else if (Object.hasOwn(BODIES, header)) {
    return event(header);
  } else if (IGNORED_EVENTS.has(header)) {
    return ignored;
  }
  const action = payload.get('action');
  return { kind: 'unsupported', eventType: `${header}:${action.isMissing ? '???' : action.string()}` };
}

function topicFor(payload: Wild, event: string): string {
  if (event.includes('pull_request')) {
    const pr = payload.at('pull_request');
    return topicWithPrOrIssue(repoName(payload), 'PR', int(pr.at('number')), pr.at('title').string());
  }
  if (event.startsWith('issue')) {
    const issue = payload.at('issue');
    return topicWithPrOrIssue(repoName(payload), isPullRequestComment(payload) ? 'PR' : 'issue', int(issue.at('number')), issue.at('title').string());
  }
  if (event.startsWith('deployment')) return `${repoName(payload)} / Deployment on ${payload.at('deployment').at('environment').string()}`;
  if (event === 'push_commits') return topicWithBranch(repoName(payload), branchFromRef(payload.at('ref').string()));
  if (event === 'gollum') return topicWithBranch(repoName(payload), 'wiki pages');
  if (event === 'ping' && !payload.get('repository').truthy) return payload.at('organization').at('login').string();
  if (event === 'check_run') return `${repoName(payload)} / checks`;
  if (event === 'membership') return `${payload.at('organization').at('login').string()} organization`;
  if (event === 'team') return `team ${payload.at('team').at('name').string()}`;
  return repoName(payload);
}

/** Zulip's `ignore_private_repositories` (JSON true/false; anything else counts as false). */
function ignorePrivate(request: WebhookRequest): boolean {
  const value = request.query['ignore_private_repositories'];
  if (value === undefined) return false;
  try {
    return JSON.parse(value) === true;
  } catch {
    throw new WebhookPayloadError('ignore_private_repositories is not valid JSON');
  }
}

export const GITHUB_EVENT_TYPES = Object.keys(BODIES);

export const github: Integration = {
  name: 'github',
  displayName: 'GitHub',
  eventTypes: GITHUB_EVENT_TYPES,
  handle(request): WebhookOutcome {
    const payload = Wild.body(request);
    const header = request.headers['x-github-event'];
    if (header === undefined) throw new MissingEventHeaderError('X-GitHub-Event');
    sender(payload); // every GitHub payload names its sender
    const repository = payload.get('repository');
    if (repository.truthy && repository.at('private').truthy && ignorePrivate(request)) return { kind: 'ignored' };
    // A comment edited without a change to its body (discussion comments aside).
    if (header.includes('comment') && !header.includes('discussion') && payload.get('action').stringOr('') === 'edited') {
      if (payload.at('changes').at('body').at('from').string() === payload.at('comment').at('body').string()) return { kind: 'ignored' };
    }
    const refined = zulipEventName(header, payload, request.query['branches']);
    if (refined.kind !== 'event') return refined;
    const content = BODIES[refined.event]!({ payload, includeTitle: request.userTopic !== undefined });
    return { kind: 'messages', eventType: refined.event, messages: [{ topic: topicFor(payload, refined.event), content }] };
  },
};
