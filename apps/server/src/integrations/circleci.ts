// CircleCI (/api/v1/external/circleci): CircleCI's current webhooks (the "v2" format, no event
// header; the event is the payload's `type`): `workflow-completed`, `job-completed` and the `ping`
// CircleCI sends when a webhook is tested. Topic: the project's name ("Test event" for a ping).
// Content, as Zulip writes it:
//   Workflow [`<name>`](<workflow url>) within Pipeline #<n> has succeeded.
//
//   Triggered on [`<11-char sha>: <commit subject>`](<commit link>) on branch `<branch>` by <author>.
// or "Job `<name>` within Pipeline #<n> …" for a job. Pipelines started by hand (no commit subject)
// say "Triggered on `<branch>`'s HEAD on [<sha>](<link>)." and tag pipelines (no branch either)
// "Triggered on the latest tag on [<sha>](<link>).". GitHub commit links are
// <repo>/commit/<sha>, Bitbucket ones <repo>/commits/<sha>, GitLab ones (read from
// `trigger_parameters.gitlab`, as GitLab pipelines carry no `vcs`) <web_url>/-/commit/<sha>.
// Like Zulip, any other `type` is a bad payload (400 "Invalid payload['type']"), and a pipeline
// with `trigger_parameters` from a provider other than GitLab is refused.
import type { Integration, WebhookOutcome, WebhookRequest } from './types.ts';
import { WebhookPayloadError } from './types.ts';
import { Wild } from './wild-value.ts';

const EVENT_TYPES = ['ping', 'job-completed', 'workflow-completed'] as const;

const STATUS_TEXT: Readonly<Record<string, string>> = {
  success: 'has succeeded',
  failed: 'has failed',
  canceled: 'was canceled',
  unauthorized: 'was unauthorized',
  error: 'had an error',
};

/** Zulip renders an unknown status through str(None). */
const statusText = (status: string) => STATUS_TEXT[status] ?? 'None';

const shortSha = (sha: string) => sha.slice(0, 11);

function commitDetails(pipeline: Wild): string {
  if (pipeline.has('vcs')) {
    // GitHub and Bitbucket projects.
    const vcs = pipeline.at('vcs');
    const revision = vcs.at('revision').string();
    const repositoryUrl = vcs.at('target_repository_url').string();
    const link =
      vcs.at('provider_name').string() === 'github' ? `${repositoryUrl}/commit/${revision}` : `${repositoryUrl}/commits/${revision}`;
    const branch = vcs.at('branch').nullableString();
    const commit = vcs.at('commit');
    const subject = commit.at('subject').nullableString();
    if (!subject) {
      // A pipeline started by hand (or by a tag) has no commit subject.
      if (!branch) return `Triggered on the latest tag on [${shortSha(revision)}](${link}).`;
      return `Triggered on \`${branch}\`'s HEAD on [${shortSha(revision)}](${link}).`;
    }
    const author = commit.at('author').at('name').string();
    return `Triggered on [\`${shortSha(revision)}: ${subject}\`](${link}) on branch \`${branch ?? 'None'}\` by ${author}.`;
  }
  // GitLab projects.
  const gitlab = pipeline.at('trigger_parameters').at('gitlab');
  const title = gitlab.at('commit_title').string();
  const sha = gitlab.at('checkout_sha').string();
  const author = gitlab.at('commit_author_name').string();
  const link = `${gitlab.at('web_url').string()}/-/commit/${sha}`;
  const branch = gitlab.at('branch').string();
  return `Triggered on [\`${shortSha(sha)}: ${title}\`](${link}) on branch \`${branch}\` by ${author}.`;
}

function body(payload: Wild): string {
  const pipeline = payload.at('pipeline');
  const number = pipeline.at('number').number();
  const details = commitDetails(pipeline);
  const type = payload.at('type').oneOf(['job-completed', 'workflow-completed']);
  if (type === 'job-completed') {
    const job = payload.at('job');
    const name = job.at('name').string();
    return `Job \`${name}\` within Pipeline #${number} ${statusText(job.at('status').string())}.\n\n${details}`;
  }
  const workflow = payload.at('workflow');
  const name = workflow.at('name').string();
  const url = workflow.at('url').string();
  return `Workflow [\`${name}\`](${url}) within Pipeline #${number} ${statusText(workflow.at('status').string())}.\n\n${details}`;
}

export const circleci: Integration = {
  name: 'circleci',
  displayName: 'CircleCI',
  eventTypes: EVENT_TYPES,
  handle(request: WebhookRequest): WebhookOutcome {
    const payload = Wild.body(request);
    const type = payload.at('type').string();
    if (type === 'ping') {
      const name = payload.at('webhook').at('name').string();
      return { kind: 'messages', eventType: type, messages: [{ topic: 'Test event', content: `Webhook '${name}' test event successful.` }] };
    }
    const topic = payload.at('project').at('name').string();
    const content = body(payload);
    const pipeline = payload.at('pipeline');
    if (pipeline.has('trigger_parameters') && pipeline.at('trigger').at('type').string() !== 'gitlab') {
      throw new WebhookPayloadError("Projects using this version control system provider aren't supported");
    }
    return { kind: 'messages', eventType: type, messages: [{ topic, content }] };
  },
};
