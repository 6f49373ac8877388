// Sentry (Zulip's `sentry` integration). What Zulip reads, in order:
// - `data.event` (an internal integration's alert rule action, `event_alert`, or an `error`-style event
//   body): an exception, with the stack frame of the file Sentry blames and its surrounding lines, or
//   a captured message; events of the retired Python "Raven" SDK (version < 7) are not supported;
// - `data.issue` (an internal integration's `issue` webhooks): created, resolved, assigned, ignored;
// - a body without `data` whose `event` has an `event_id`: Sentry's legacy WebHooks plugin, read as
//   an event (its link made from the issue's `url`, its time from the event's timestamp);
// - otherwise the plugin's oldest format (project_name, level, url, message).
// Zulip decides by the body, not by the Sentry-Hook-Resource header; any other `data` (metric alerts,
// installations, comments) is an unsupported event. The topic is the event's or issue's title.
import { Wild, globalTime } from './wild-value.ts';
import { WebhookPayloadError, type Integration, type WebhookOutcome, type WebhookRequest } from './types.ts';

/** Sentry's platform → the code block's language. */
const SYNTAX: Record<string, string> = {
  go: 'go',
  java: 'java',
  javascript: 'javascript',
  node: 'javascript',
  python: 'python3',
  ruby: 'ruby',
};

/** Sentry's sample event still says it comes from an old SDK; it is accepted anyway. */
const isSampleEvent = (event: Wild) => event.get('title').value === 'This is an example Python exception';

class Unsupported {
  constructor(readonly eventType: string) {}
}

/** Context lines of a frame, indented for the traceback block (blank lines kept blank). */
function tracebackLines(lines: Wild): string {
  if (lines.isNull) return '';
  return lines
    .list()
    .map((line) => {
      const text = line.string();
      return text === '' ? '\n' : `     ${text}\n`;
    })
    .join('');
}

function eventMessage(event: Wild): { topic: string; content: string } {
  const title = event.at('title').string();
  const platform = event.at('platform').string();
  const syntax = SYNTAX[platform] ?? '';
  if (platform === 'python' && !isSampleEvent(event)) {
    const version = Number.parseInt(event.at('version').pyStr(), 10);
    if (Number.isNaN(version)) throw new WebhookPayloadError('payload["event"]["version"] is not a number');
    if (version < 7) throw new Unsupported('Raven SDK');
  }
  const level = event.at('level').string();
  const webLink = event.at('web_url').string();
  const time = globalTime(event.at('datetime').string(), 'datetime');
  const head = (kind: string) => `**${kind}:** [${title}](${webLink})\n\`\`\`quote\n**level:** ${level}\n**timestamp:** ${time}\n`;

  if (event.has('exception')) {
    const filenameField = event.at('metadata').get('filename');
    const filename = filenameField.isNull ? null : filenameField.string();
    let stacktrace: Wild | null = null;
    for (const value of [...event.at('exception').at('values').list()].reverse()) {
      if (value.has('stacktrace')) {
        stacktrace = value.at('stacktrace');
        break;
      }
    }
    const exceptionHead = `${head('New exception')}**filename:** ${filename ?? 'None'}\n\`\`\`\n`;
    if (stacktrace?.truthy && filename) {
      const frame = [...stacktrace.at('frames').list()].reverse().find((f) => f.get('filename').value === filename);
      if (frame && !frame.get('context_line').isNull) {
        const pre = tracebackLines(frame.get('pre_context'));
        const line = `${frame.at('context_line').string()}\n`;
        const post = tracebackLines(frame.get('post_context'));
        return { topic: title, content: `${exceptionHead}\nTraceback:\n\`\`\`${syntax}\n${pre}---> ${line}${post}\`\`\`\n` };
      }
    }
    return { topic: title, content: exceptionHead };
  }
  if (event.has('logentry')) return { topic: title, content: `${head('New message event')}\`\`\`\n` };
  throw new Unsupported('unknown-event type');
}

function issueMessage(action: string, issue: Wild, actor: Wild): { topic: string; content: string } {
  const title = issue.at('title').string();
  const time = globalTime(issue.at('lastSeen').string(), 'lastSeen');
  const assignedTo = issue.at('assignedTo');
  let assignee = 'No one';
  if (assignedTo.truthy) {
    const name = assignedTo.at('name').string();
    assignee = assignedTo.at('type').value === 'team' ? `team ${name}` : name;
  }
  switch (action) {
    case 'created':
      return {
        topic: title,
        content: `**New issue created:** ${title}\n\`\`\`quote\n**level:** ${issue.at('level').string()}\n**timestamp:** ${time}\n**assignee:** ${assignee}\n\`\`\``,
      };
    case 'resolved':
      return { topic: title, content: `Issue **${title}** was marked as resolved by **${actor.at('name').string()}**.` };
    case 'assigned':
      return { topic: title, content: `Issue **${title}** has now been assigned to **${assignee}** by **${actor.at('name').string()}**.` };
    case 'ignored':
      return { topic: title, content: `Issue **${title}** was ignored by **${actor.at('name').string()}**.` };
    default:
      throw new Unsupported(`${action} action`);
  }
}

/** The plugin's oldest format. */
function deprecatedMessage(payload: Wild): { topic: string; content: string } {
  const level = payload.at('level').string().toUpperCase();
  return {
    topic: payload.get('project_name').pyStr(),
    content: `New [issue](${payload.get('url').pyStr()}) (level: ${level}):\n\n\`\`\` quote\n${payload.get('message').pyStr()}\n\`\`\``,
  };
}

/**
 * The legacy WebHooks plugin's body as an event: its link is `events/<event_id>/` under the issue's
 * url, its time the event's `timestamp` (or `received`). Null for bodies without an event id.
 */
function pluginEvent(payload: Wild): Wild | null {
  const event = payload.get('event');
  const eventId = event.get('event_id');
  if (!eventId.truthy) return null;
  const base = payload.at('url').string();
  if (!URL.canParse(base)) throw new WebhookPayloadError('payload["url"] is not a URL');
  const webUrl = new URL(`events/${eventId.pyStr()}/`, base).toString();
  // Zulip reads `received` even when `timestamp` is there (and uses `timestamp` then).
  const received = event.at('received');
  const seconds = (event.has('timestamp') ? event.at('timestamp') : received).number();
  const date = new Date(Math.floor(seconds * 1000));
  if (Number.isNaN(date.getTime())) throw new WebhookPayloadError('payload["event"]["timestamp"] is out of range');
  const datetime = date.toISOString();
  return new Wild({ ...(event.value as Record<string, unknown>), web_url: webUrl, datetime }, event.path);
}

/** Python's repr of a list of strings, naming the unsupported `data` (e.g. "['metric_alert']"). */
const pyList = (keys: string[]) => `[${keys.map((k) => (k.includes("'") && !k.includes('"') ? `"${k}"` : `'${k.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`)).join(', ')}]`;

function handle(request: WebhookRequest): WebhookOutcome {
  const payload = Wild.body(request);
  try {
    let data = payload.get('data');
    let message: { topic: string; content: string };
    if (data.isNull) {
      const event = pluginEvent(payload);
      if (event) data = new Wild({ event: event.value }, payload.path);
    }
    if (data.truthy) {
      if (data.has('event')) message = eventMessage(data.at('event'));
      else if (data.has('issue')) message = issueMessage(payload.at('action').string(), data.at('issue'), payload.at('actor'));
      else throw new Unsupported(pyList(data.entries().map(([k]) => k)));
    } else {
      message = deprecatedMessage(payload);
    }
    return { kind: 'messages', messages: [message] };
  } catch (e) {
    if (e instanceof Unsupported) return { kind: 'unsupported', eventType: e.eventType };
    throw e;
  }
}

export const sentry: Integration = {
  name: 'sentry',
  displayName: 'Sentry',
  handle,
};
