// Jira's webhooks (Zulip's `jira` integration): issues created, updated (field changes from the
// changelog, status transitions, assignee, comments added, edited and deleted) and deleted, and the
// newer comment_created/comment_updated/comment_deleted events. Every message goes to the topic
// "<issue key>: <summary>" and links the issue's /browse/ page, guessed from its REST address.
// Comments have Jira's wiki markup turned into Markdown, `[~user]` mentions into bold names. Events
// Zulip deliberately ignores (worklogs, sprints, attachments, issue links, releases) post nothing.
import { Wild } from './wild-value.ts';
import { WebhookPayloadError, type Integration, type WebhookOutcome, type WebhookRequest } from './types.ts';

const EVENT_TYPES = [
  'jira:issue_created',
  'jira:issue_deleted',
  'jira:issue_updated',
  'comment_created',
  'comment_updated',
  'comment_deleted',
] as const;
type JiraEvent = (typeof EVENT_TYPES)[number];

/** Events Zulip answers with success without posting. */
const IGNORED_EVENTS = new Set([
  'attachment_created',
  'issuelink_created',
  'issuelink_deleted',
  'jira:version_released',
  'jira:worklog_updated',
  'sprint_closed',
  'sprint_started',
  'worklog_created',
  'worklog_updated',
]);

/** Python's string.punctuation. */
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

/**
 * Jira's wiki markup as Markdown: *bold*, {{monospace}}, bq. quotes, {quote}, {noformat} and {code}
 * blocks, [links] and [titled|links], and [~user] mentions, which become the user's name in bold.
 */
export function convertJiraMarkup(content: string): string {
  let out = content.replace(/\*([^*]+)\*/g, '**$1**');
  out = out.replace(/\{\{([^*]+?)\}\}/g, '`$1`');
  out = out.replace(/bq\. (.*)/g, '> $1');
  out = out.replace(/\{quote\}([\s\S]*?)\{quote\}/g, '~~~ quote\n$1\n~~~');
  out = out.replace(/\{noformat\}([\s\S]*?)\{noformat\}/g, '~~~\n$1\n~~~');
  out = out.replace(/\{code[^\n]*\}([\s\S]*?)\{code\}/g, '~~~\n$1\n~~~');
  // Bare links first ([url], no "|"), then titled ones ([title|url]).
  out = out.replace(/\[([^|~]+?)\]/g, '[$1]($1)');
  out = out.replace(/\[(?:([^|~]+)\|)([^\]]*)\]/g, '[$1]($2)');
  // Zulip looks the name up among the organization's users (full name, or the start of an e-mail
  // address) and shows the match's full name; the integration contract has no user directory, so
  // the Jira name is shown, as Zulip shows a name that matches nobody.
  for (const m of [...out.matchAll(/\[~(.*?)\]/g)]) {
    out = out.replaceAll(`[~${m[1]}]`, `**${m[1]}**`);
  }
  return out;
}

/** The issue's key, or (for old comment events without an issue) its internal number. */
function issueId(payload: Wild): string {
  if (!payload.has('issue')) {
    const parts = payload.at('comment').at('self').string().split('/');
    if (parts.length < 3) throw new WebhookPayloadError('payload["comment"]["self"] is not an issue comment address');
    return parts[parts.length - 3]!;
  }
  return payload.dig('issue', 'key').stringOr('');
}

function issueTitle(payload: Wild): string {
  if (!payload.has('issue')) return 'Upgrade Jira to get the issue title here.';
  return payload.dig('issue', 'fields', 'summary').stringOr('');
}

/** "KEY: summary" (or "KEY"), linked to <base>/browse/KEY when the issue's REST address gives the base. */
function issueString(payload: Wild, withTitle: boolean, id = issueId(payload)): string {
  const text = withTitle ? `${id}: ${issueTitle(payload)}` : id;
  const self = payload.dig('issue', 'self').stringOr('');
  const base = /^(.*)\/rest\/api\/.*/.exec(self);
  return base ? `[${text}](${base[1]}/browse/${id})` : text;
}

const issueAuthor = (payload: Wild) => payload.dig('user', 'displayName').stringOr('');

/**
 * The assignee in bold: Zulip shows the full name of the organization's user with that address, and
 * the address itself when nobody has it; without a user directory in the contract, the address.
 */
function assigneeMention(payload: Wild): string {
  const email = payload.dig('issue', 'fields', 'assignee', 'emailAddress').stringOr('');
  return email === '' ? '' : `**${email}**`;
}

function updatedSubEvent(payload: Wild): string {
  const sub = payload.get('issue_event_type_name').stringOr('');
  if (sub === '') {
    if (payload.get('comment').truthy) return 'issue_commented';
    if (payload.get('transition').truthy) return 'issue_transited';
  }
  return sub;
}

function changeLine(field: string | null, from: string | null, to: string): string {
  let line = `* Changed ${field ?? 'None'}`;
  if (from) line += ` from **${from}**`;
  if (to) line += ` to ${to}\n`;
  return line;
}

function issueUpdated(payload: Wild): string {
  const id = payload.dig('issue', 'key').stringOr('');
  const issue = issueString(payload, true, id);
  const mention = assigneeMention(payload);
  const assigneeBlurb = mention === '' ? '' : ` (assigned to ${mention})`;
  const sub = updatedSubEvent(payload);

  if (sub.includes('comment')) {
    const verb = sub === 'issue_commented' ? 'commented on' : sub === 'issue_comment_edited' ? 'edited a comment on' : 'deleted a comment from';
    const author = payload.get('webhookEvent').value === 'comment_created' ? payload.at('comment').at('author').at('displayName').string() : issueAuthor(payload);
    const content = `${author} ${verb} ${issue}${assigneeBlurb}`;
    const comment = payload.dig('comment', 'body').stringOr('');
    return comment ? `${content}:\n\n\`\`\` quote\n${convertJiraMarkup(comment)}\n\`\`\`` : `${content}.`;
  }

  let content = `${issueAuthor(payload)} updated ${issue}${assigneeBlurb}:\n\n`;
  const changelog = payload.get('changelog');
  if (changelog.truthy) {
    for (const item of changelog.at('items').list()) {
      const field = item.get('field').nullableString();
      const target = field === 'assignee' && mention !== '' ? mention : `**${item.get('toString').nullableString() ?? 'None'}**`;
      content += changeLine(field, item.get('fromString').nullableString(), target);
    }
  } else if (sub === 'issue_transited') {
    const from = payload.dig('transition', 'from_status').stringOr('');
    const to = `**${payload.dig('transition', 'to_status').stringOr('')}**`;
    content += changeLine('status', from, to);
  }
  return content;
}

function issueCreated(payload: Wild): string {
  const priority = payload.dig('issue', 'fields', 'priority', 'name').stringOr('');
  const assignee = payload.dig('issue', 'fields', 'assignee', 'displayName').stringOr('no one');
  return `${issueAuthor(payload)} created ${issueString(payload, true)}:\n\n* **Priority**: ${priority}\n* **Assignee**: ${assignee}`;
}

function issueDeleted(payload: Wild): string {
  const title = issueTitle(payload);
  const punctuation = title !== '' && PUNCTUATION.includes(title[title.length - 1]!) ? '' : '.';
  return `${issueAuthor(payload)} deleted ${issueString(payload, true)}${punctuation}`;
}

/** Jira escapes "!" in comment bodies of these events as "\!". */
const commentBody = (payload: Wild) => payload.at('comment').at('body').string().replaceAll('\\!', '!');
const commentAuthor = (payload: Wild) => payload.at('comment').at('author').at('displayName').string();

function commentEvent(payload: Wild, verb: string, strike: boolean): string {
  const author = commentAuthor(payload);
  const issue = issueString(payload, true);
  const body = commentBody(payload);
  return `${author} ${verb} ${issue}\n\`\`\` quote\n${strike ? `~~${body}~~` : body}\n\`\`\`\n`;
}

const CONTENT: Record<JiraEvent, (payload: Wild) => string> = {
  'jira:issue_created': issueCreated,
  'jira:issue_deleted': issueDeleted,
  'jira:issue_updated': issueUpdated,
  comment_created: (p) => commentEvent(p, 'commented on', false),
  comment_updated: (p) => commentEvent(p, 'updated their comment on', false),
  comment_deleted: (p) => commentEvent(p, 'deleted their comment on', true),
};

function handle(request: WebhookRequest): WebhookOutcome {
  const payload = Wild.body(request);
  let event = payload.get('webhookEvent').nullableString();
  // Jira's workflow post-functions send transitions without a webhookEvent.
  if (event === null && payload.get('transition').truthy) event = 'jira:issue_updated';
  if (event !== null && IGNORED_EVENTS.has(event)) return { kind: 'ignored', eventType: event };
  if (event === null) throw new WebhookPayloadError('Unable to parse request: Did Jira generate this event?');
  if (!(EVENT_TYPES as readonly string[]).includes(event)) return { kind: 'unsupported', eventType: event };

  const topic = `${issueId(payload)}: ${issueTitle(payload)}`;
  const content = CONTENT[event as JiraEvent](payload);
  return { kind: 'messages', eventType: event, messages: [{ topic, content }] };
}

export const jira: Integration = {
  name: 'jira',
  displayName: 'Jira',
  eventTypes: EVENT_TYPES,
  handle,
};
