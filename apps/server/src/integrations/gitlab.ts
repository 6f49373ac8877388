// GitLab (/api/v1/external/gitlab), as Zulip's zerver/webhooks/gitlab/view.py.
// The event is the X-Gitlab-Event header ("Push Hook", "Merge Request Hook", …; a "System Hook"
// names its event in `event_name`/`object_kind`). Issue, merge-request and wiki events add the
// payload's `object_attributes.action` ("Merge Request Hook merge"), notes add the noteable type
// ("Note Hook MergeRequest"); that full name is the event type only_events/exclude_events match and
// the one an unsupported event is reported with.
// Topics: "<project> / <branch>" for pushes, jobs and pipelines; "<project> / MR #<iid> <title>"
// (title left out with use_merge_request_title=false), "<project> / issue #<iid> <title>",
// "<project> / snippet #<id> <title>", "<project> / design <file>", "<project> / <environment>"
// for deployments; the project's name otherwise. With a topic in the URL, the message starts with
// "[[<project>](<project url>)] " and links carry the MR/issue title instead.
// URL options: `branches` (push events of other branches post nothing), `use_merge_request_title`.
import type { Integration, WebhookOutcome, WebhookRequest } from './types.ts';
import { MissingEventHeaderError, WebhookPayloadError } from './types.ts';
import {
  EMPTY_SHA,
  commitCommentMessage,
  isBranchNotifiable,
  issueMessage,
  pullRequestMessage,
  pushCommitsMessage,
  pushTagMessage,
  quote,
  removeBranchMessage,
  topicWithPrOrIssue,
  type CommitData,
} from './common.ts';
import { Wild } from './wild-value.ts';

type BodyFunction = (payload: Wild, includeTitle: boolean) => string;

const repoName = (payload: Wild) => (payload.has('project') ? payload.at('project').at('name').string() : payload.at('repository').at('name').string());
const projectHomepage = (payload: Wild) =>
  payload.has('project') ? payload.at('project').at('web_url').string() : payload.at('repository').at('homepage').string();
const userName = (payload: Wild) => payload.at('user_name').string();
const issueUserName = (payload: Wild) => payload.at('user').at('name').string();
const branchName = (payload: Wild) => payload.at('ref').string().replaceAll('refs/heads/', '');
const tagName = (payload: Wild) => payload.at('ref').string().replaceAll('refs/tags/', '');
const attributes = (payload: Wild) => payload.at('object_attributes');
const titleIf = (include: boolean, holder: Wild) => (include ? holder.at('title').string() : null);

/** `assignees` when non-empty, else the single `assignee`; GitLab's full names are shown. */
function assigneeNames(payload: Wild): string[] {
  const many = payload.get('assignees');
  if (many.truthy) return many.list().map((assignee) => assignee.at('name').string());
  const one = payload.get('assignee');
  return one.truthy ? [one.at('name').string()] : [];
}

function pushBody(payload: Wild): string {
  const after = payload.get('after');
  if (after.truthy && after.string() === EMPTY_SHA) return removeBranchMessage(userName(payload), branchName(payload));
  const compareUrl = `${projectHomepage(payload)}/-/compare/${payload.at('before').string()}...${payload.at('after').string()}`;
  const commits: CommitData[] = payload
    .at('commits')
    .list()
    .map((commit) => ({
      name: commit.at('author').at('name').string(),
      sha: commit.at('id').string(),
      message: commit.at('message').string(),
      url: commit.at('url').string(),
    }));
  return pushCommitsMessage({ userName: userName(payload), compareUrl, branch: branchName(payload), commits });
}

const tagPushBody: BodyFunction = (payload) =>
  pushTagMessage(userName(payload), tagName(payload), null, payload.get('checkout_sha').truthy ? 'pushed' : 'removed');

const issueCreatedBody: BodyFunction = (payload, includeTitle) => {
  const description = attributes(payload).get('description');
  // Hidden (HTML comment) parts of the description are left out.
  const message = description.truthy
    ? description
        .string()
        .replace(/<!--[\s\S]*?-->/g, '')
        .trimEnd()
    : null;
  return issueMessage({
    userName: issueUserName(payload),
    action: 'created',
    url: attributes(payload).at('url').string(),
    number: attributes(payload).at('iid').number(),
    message,
    assignees: assigneeNames(payload),
    title: titleIf(includeTitle, attributes(payload)),
  });
};

const issueBody =
  (action: string): BodyFunction =>
  (payload, includeTitle) =>
    issueMessage({
      userName: issueUserName(payload),
      action,
      url: attributes(payload).at('url').string(),
      number: attributes(payload).at('iid').number(),
      title: titleIf(includeTitle, attributes(payload)),
    });

const mergeRequestBody =
  (action: string): BodyFunction =>
  (payload, includeTitle) => {
    const mr = attributes(payload);
    const merged = action === 'merged';
    return pullRequestMessage({
      userName: issueUserName(payload),
      action,
      url: mr.at('url').string(),
      number: mr.at('iid').number(),
      targetBranch: merged ? mr.at('source_branch').string() : null,
      baseBranch: merged ? mr.at('target_branch').string() : null,
      type: 'MR',
      title: titleIf(includeTitle, mr),
    });
  };

const mergeRequestOpenOrUpdatedBody =
  (action: string): BodyFunction =>
  (payload, includeTitle) => {
    const mr = attributes(payload);
    const created = action === 'created';
    return pullRequestMessage({
      userName: issueUserName(payload),
      action,
      url: mr.at('url').string(),
      number: mr.at('iid').number(),
      targetBranch: created ? mr.at('source_branch').string() : null,
      baseBranch: created ? mr.at('target_branch').string() : null,
      message: mr.at('description').nullableString(),
      assignees: assigneeNames(payload),
      type: 'MR',
      title: titleIf(includeTitle, mr),
    });
  };

const mergeRequestUpdatedBody: BodyFunction = (payload, includeTitle) =>
  attributes(payload).get('oldrev').truthy
    ? mergeRequestBody('added commit(s) to')(payload, includeTitle)
    : mergeRequestOpenOrUpdatedBody('updated')(payload, includeTitle);

const commentedAction = (payload: Wild, suffix: string) => `[commented](${attributes(payload).at('url').string()})${suffix}`;

const commitNoteBody: BodyFunction = (payload) =>
  commitCommentMessage(
    issueUserName(payload),
    commentedAction(payload, ''),
    payload.at('commit').at('url').string(),
    payload.at('commit').at('id').string(),
    attributes(payload).at('note').string(),
  );

const noteOnBody =
  (key: 'merge_request' | 'issue', type: string): BodyFunction =>
  (payload, includeTitle) => {
    const target = payload.at(key);
    return pullRequestMessage({
      userName: issueUserName(payload),
      action: commentedAction(payload, ' on'),
      url: target.at('url').string(),
      number: target.at('iid').number(),
      message: attributes(payload).at('note').string(),
      type,
      title: titleIf(includeTitle, target),
    });
  };

const snippetNoteBody: BodyFunction = (payload, includeTitle) => {
  const snippet = payload.at('snippet');
  // Snippet URLs are only in payloads of GitLab 16.1 and later.
  const url = snippet.has('url')
    ? snippet.at('url').string()
    : `${payload.at('project').at('web_url').string()}/-/snippets/${snippet.at('id').number()}`;
  return pullRequestMessage({
    userName: issueUserName(payload),
    action: commentedAction(payload, ' on'),
    url,
    number: snippet.at('id').number(),
    message: attributes(payload).at('note').string(),
    type: 'snippet',
    title: titleIf(includeTitle, snippet),
  });
};

/** Design notes carry no issue: its number comes from the path "designs/issue-<n>/<file>". */
const designNoteBody: BodyFunction = (payload) => {
  const comment = attributes(payload);
  const repositoryUrl = payload.at('repository').at('homepage').string();
  const designPath = comment.at('position').at('new_path').string();
  const parts = designPath.split('/');
  if (parts.length !== 3) throw new WebhookPayloadError(`${comment.path}['position']['new_path'] is not a design path`);
  const [, issuePart = '', designName = ''] = parts;
  const issueNumber = issuePart.split('-').at(-1) ?? '';
  const designUrl = `${repositoryUrl}/-/issues/${issueNumber}/designs/${designName}`;
  const commentUrl = `${designUrl}#note_${comment.at('id').number()}`;
  return `${issueUserName(payload)} [commented](${commentUrl}) on design [${designName}](${designUrl}):\n${quote(comment.at('note').string())}`;
};

const wikiPageBody =
  (action: string): BodyFunction =>
  (payload) =>
    `${issueUserName(payload)} ${action} [wiki page "${attributes(payload).at('title').string()}"](${attributes(payload).at('url').string()}).`;

const statusAction = (status: string, createdStatus: string) =>
  status === createdStatus ? 'was created' : status === 'running' ? 'started' : `changed status to ${status}`;

const buildBody: BodyFunction = (payload) =>
  `Build ${payload.at('build_name').string()} from ${payload.at('build_stage').string()} stage ${statusAction(payload.at('build_status').string(), 'created')}.`;

const testBody: BodyFunction = (payload) => `Webhook for **${repoName(payload)}** has been configured successfully! :tada:`;

const pipelineBody: BodyFunction = (payload) => {
  const pipeline = attributes(payload);
  const action = statusAction(pipeline.at('status').string(), 'pending');
  const homepage = projectHomepage(payload);
  const id = pipeline.at('id').number();
  let builds = '';
  for (const build of payload.at('builds').list()) {
    const buildUrl = `${homepage}/-/jobs/${build.at('id').number()}`;
    const artifacts = build.get('artifacts_file');
    const filename = artifacts.truthy ? artifacts.get('filename') : null;
    const artifact =
      filename?.truthy === true
        ? `  * built artifact: *${filename.string()}* [[Browse](${buildUrl}/artifacts/browse)|[Download](${buildUrl}/artifacts/download)]\n`
        : '';
    builds += `* [${build.at('name').string()}](${buildUrl}) - ${build.at('status').string()}\n${artifact}`;
  }
  return `[Pipeline (${id})](${homepage}/-/pipelines/${id}) ${action} with build(s):\n${builds.slice(0, -1)}.`;
};

const releaseBody: BodyFunction = (payload) => {
  const action = `${payload.at('action').string()}d`;
  const name = payload.at('name').string();
  const tag = payload.at('tag').string();
  if (action === 'deleted') return `Release ${name} for tag ${tag} was ${action}.`;
  let body = `Release [${name}](${payload.at('url').string()}) for tag ${tag} was ${action}.`;
  if (payload.has('description')) body += quote(payload.at('description').string());
  return body;
};

const featureFlagBody: BodyFunction = (payload) => {
  const flag = attributes(payload);
  const action = flag.at('active').truthy ? 'activated' : 'deactivated';
  const url = `${payload.at('project').at('web_url').string()}/-/feature_flags`;
  return `${payload.at('user').at('username').string()} ${action} the feature flag [${flag.at('name').string()}](${url}).`;
};

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

const accessTokenBody: BodyFunction = (payload) => {
  const token = attributes(payload);
  const expires = token.at('expires_at');
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(expires.string());
  const month = match ? MONTHS[Number(match[2]) - 1] : undefined;
  if (!match || month === undefined) throw new WebhookPayloadError(`${expires.path} is not a date`);
  const url = payload.has('group')
    ? `https://gitlab.com/groups/${payload.at('group').at('group_path').string()}/-/settings/access_tokens`
    : `${payload.at('project').at('web_url').string()}/-/settings/access_tokens`;
  return `The access token [${token.at('name').string()}](${url}) will expire on ${month} ${match[3]}, ${match[1]}.`;
};

const deploymentBody: BodyFunction = (payload) => {
  const user = `[${payload.at('user').at('name').string()}](${payload.at('user_url').string()})`;
  const status = payload.at('status');
  const deployableUrl = payload.get('deployable_url').nullableString() ?? '';
  const deployment = deployableUrl ? `[deployment](${deployableUrl})` : 'deployment';
  const commitTitle = payload.at('commit_title').string();
  const commitUrl = payload.at('commit_url').string();
  const sha = (commitUrl.split('/').at(-1) ?? '').slice(0, 7);
  switch (status.string()) {
    case 'running':
      return `${user} started a new ${deployment}:\n> [${sha}](${commitUrl}) ${commitTitle}`;
    case 'success':
      return `The ${deployment} was successful.`;
    case 'failed':
      return `The ${deployment} failed.`;
    case 'canceled':
      return `The ${deployment} was canceled.`;
    default:
      throw new WebhookPayloadError(`Invalid ${status.path}`);
  }
};

const EVENT_FUNCTIONS: Readonly<Record<string, BodyFunction>> = {
  'Push Hook': pushBody,
  'Tag Push Hook': tagPushBody,
  'Test Hook': testBody,
  'Issue Hook open': issueCreatedBody,
  'Issue Hook close': issueBody('closed'),
  'Issue Hook reopen': issueBody('reopened'),
  'Issue Hook update': issueBody('updated'),
  'Confidential Issue Hook open': issueCreatedBody,
  'Confidential Issue Hook close': issueBody('closed'),
  'Confidential Issue Hook reopen': issueBody('reopened'),
  'Confidential Issue Hook update': issueBody('updated'),
  'Note Hook Commit': commitNoteBody,
  'Note Hook MergeRequest': noteOnBody('merge_request', 'MR'),
  'Note Hook Issue': noteOnBody('issue', 'issue'),
  'Confidential Note Hook Issue': noteOnBody('issue', 'issue'),
  'Note Hook DesignManagement::Design': designNoteBody,
  'Confidential Note Hook DesignManagement::Design': designNoteBody,
  'Note Hook Snippet': snippetNoteBody,
  'Merge Request Hook approved': mergeRequestBody('approved'),
  'Merge Request Hook unapproved': mergeRequestBody('unapproved'),
  // Sent (instead of approved/unapproved) when more than one approval is required.
  'Merge Request Hook approval': mergeRequestBody('approval'),
  'Merge Request Hook unapproval': mergeRequestBody('unapproval'),
  'Merge Request Hook open': mergeRequestOpenOrUpdatedBody('created'),
  'Merge Request Hook update': mergeRequestUpdatedBody,
  'Merge Request Hook merge': mergeRequestBody('merged'),
  'Merge Request Hook close': mergeRequestBody('closed'),
  'Merge Request Hook reopen': mergeRequestBody('reopened'),
  'Wiki Page Hook create': wikiPageBody('created'),
  'Wiki Page Hook update': wikiPageBody('updated'),
  'Job Hook': buildBody,
  'Build Hook': buildBody,
  'Pipeline Hook': pipelineBody,
  'Release Hook': releaseBody,
  'Feature Flag Hook': featureFlagBody,
  'Resource Access Token Hook': accessTokenBody,
  'Deployment Hook': deploymentBody,
};

function topicFor(event: string, payload: Wild, useMergeRequestTitle: boolean): string {
  if (event === 'Push Hook') return `${repoName(payload)} / ${branchName(payload)}`;
  if (event === 'Job Hook' || event === 'Build Hook') return `${payload.at('repository').at('name').string()} / ${branchName(payload)}`;
  if (event === 'Pipeline Hook') return `${repoName(payload)} / ${attributes(payload).at('ref').string().replaceAll('refs/heads/', '')}`;
  if (event.startsWith('Merge Request Hook')) {
    const mr = attributes(payload);
    return topicWithPrOrIssue(repoName(payload), 'MR', mr.at('iid').number(), useMergeRequestTitle ? mr.at('title').string() : '');
  }
  if (event.startsWith('Issue Hook') || event.startsWith('Confidential Issue Hook')) {
    const issue = attributes(payload);
    return topicWithPrOrIssue(repoName(payload), 'issue', issue.at('iid').number(), issue.at('title').string());
  }
  if (event === 'Note Hook Issue' || event === 'Confidential Note Hook Issue') {
    const issue = payload.at('issue');
    return topicWithPrOrIssue(repoName(payload), 'issue', issue.at('iid').number(), issue.at('title').string());
  }
  if (event.endsWith('Note Hook DesignManagement::Design')) {
    const designName = attributes(payload).at('position').at('new_path').string().split('/').at(-1) ?? '';
    return `${repoName(payload)} / design ${designName}`;
  }
  if (event === 'Note Hook MergeRequest') {
    const mr = payload.at('merge_request');
    return topicWithPrOrIssue(repoName(payload), 'MR', mr.at('iid').number(), useMergeRequestTitle ? mr.at('title').string() : '');
  }
  if (event === 'Note Hook Snippet') {
    const snippet = payload.at('snippet');
    return topicWithPrOrIssue(repoName(payload), 'snippet', snippet.at('id').number(), snippet.at('title').string());
  }
  if (event === 'Resource Access Token Hook' && payload.get('group').truthy) return payload.at('group').at('group_name').string();
  if (event === 'Deployment Hook') return `${repoName(payload)} / ${payload.at('environment').string()}`;
  return repoName(payload);
}

/** Python's str.title() for the ASCII event names GitLab uses. */
const titleCase = (text: string) => text.toLowerCase().replace(/[a-z]+/g, (word) => word.charAt(0).toUpperCase() + word.slice(1));

/** The full event name, or null when a `branches` filter drops the push. */
function eventName(request: WebhookRequest, payload: Wild): string | null {
  let event = request.headers['x-gitlab-event'];
  if (event === undefined) throw new MissingEventHeaderError('X-GitLab-Event');
  if (event === 'System Hook') {
    const name = payload.has('event_name') ? payload.at('event_name').string() : payload.at('object_kind').string();
    event = `${titleCase((name.split('__')[0] ?? '').replaceAll('_', ' '))} Hook`;
  }
  if (['Confidential Issue Hook', 'Issue Hook', 'Merge Request Hook', 'Wiki Page Hook'].includes(event)) {
    const attrs = attributes(payload);
    const action = attrs.has('action') ? attrs.at('action').string() : 'open';
    event = `${event} ${action}`;
  } else if (event === 'Confidential Note Hook' || event === 'Note Hook') {
    event = `${event} ${attributes(payload).at('noteable_type').string()}`;
  } else if (event === 'Push Hook' && !isBranchNotifiable(branchName(payload), request.query.branches)) {
    return null;
  }
  return event;
}

function booleanOption(request: WebhookRequest, name: string, fallback: boolean): boolean {
  const raw = request.query[name];
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new WebhookPayloadError(`${name} is not a boolean`);
}

export const gitlab: Integration = {
  name: 'gitlab',
  displayName: 'GitLab',
  eventTypes: Object.keys(EVENT_FUNCTIONS),
  handle(request: WebhookRequest): WebhookOutcome {
    const payload = Wild.body(request);
    const event = eventName(request, payload);
    if (event === null) return { kind: 'ignored', eventType: 'Push Hook' };
    const bodyFor = EVENT_FUNCTIONS[event];
    if (bodyFor === undefined) return { kind: 'unsupported', eventType: event };
    const useMergeRequestTitle = booleanOption(request, 'use_merge_request_title', true);
    let content = bodyFor(payload, request.userTopic !== undefined);
    if (request.userTopic !== undefined) content = `[[${repoName(payload)}](${projectHomepage(payload)})] ${content}`;
    return { kind: 'messages', eventType: event, messages: [{ topic: topicFor(event, payload, useMergeRequestTitle), content }] };
  },
};
