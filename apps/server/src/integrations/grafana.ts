// Grafana's webhook contact point (Zulip's `grafana` integration), in both of Grafana's formats:
// - unified alerting (Grafana 8 and later; a body with `alerts`): one message per alert, in the topic
//   "[<alertname>]" (or "[<fingerprint>]" without one), with its state, start and end times in
//   Zulip's global time syntax, labels, values, annotations and the generator/silence/image links;
// - legacy alerting (Grafana 7 and earlier): one message in the topic of the alert's title, with the
//   state, the rule's link, the message, the evaluation matches and the panel's image.
// The event type is the alert's state (only_events/exclude_events filter on it).
import { Wild, globalTime } from './wild-value.ts';
import type { Integration, WebhookMessage, WebhookOutcome, WebhookRequest } from './types.ts';

const LEGACY_STATES = ['no_data', 'paused', 'alerting', 'ok', 'pending', 'unknown'] as const;
const UNIFIED_STATUSES = ['firing', 'resolved'] as const;
/** Grafana's "not resolved yet" end time. */
const NO_END = '0001-01-01T00:00:00Z';

const statusLine = (icon: string, state: string) => `${icon} **${state.toUpperCase()}**\n\n`;

function unifiedAlert(alert: Wild): { status: string; message: WebhookMessage } {
  const status = alert.at('status').oneOf(UNIFIED_STATUSES);
  let body = statusLine(status === 'firing' ? ':alert:' : ':checkbox:', status);

  const labels = alert.at('labels');
  let topic: string;
  const alertname = labels.get('alertname');
  if (alertname.truthy) {
    const name = alertname.string();
    topic = `[${name}]`;
    body += `**${name}**\n\n`;
  } else {
    topic = `[${alert.at('fingerprint').string()}]`;
  }

  body += `This alert was fired at ${globalTime(alert.at('startsAt').string(), 'startsAt')}.`;
  const endsAt = alert.at('endsAt').string();
  if (endsAt !== NO_END) body += `\n\nThis alert was resolved at ${globalTime(endsAt, 'endsAt')}.`;

  if (labels.truthy) {
    const lines = labels.entries().map(([key, value]) => `- ${key}: ${value.string()}\n`).join('');
    body += `\n\nLabels:\n${lines}\n`;
  }

  const values = alert.get('values');
  const valueString = alert.get('valueString');
  if (values.truthy) {
    const lines = values.entries().map(([key, value]) => `- ${key}: ${value.pyStr()}\n`).join('');
    body += `Values:\n${lines}\n`;
  } else if (valueString.truthy) {
    body += `Values:\n${valueString.string()}\n\n`;
  }

  const annotations = alert.get('annotations');
  if (annotations.truthy) {
    const lines = annotations.entries().map(([key, value]) => `- ${key}: ${value.string()}\n`).join('');
    body += `Annotations:\n${lines}`;
  }

  const links: Array<[string, string]> = [
    ['generatorURL', 'Generator'],
    ['silenceURL', 'Silence'],
    ['imageURL', 'Image'],
  ];
  for (const [field, label] of links) {
    const url = alert.get(field);
    if (url.truthy) body += `\n[${label}](${url.string()})`;
  }
  body += '\n';
  return { status, message: { topic, content: body } };
}

function legacyAlert(payload: Wild): WebhookOutcome {
  const topic = payload.at('title').string();

  let evalMatches = '';
  const matches = payload.get('evalMatches');
  if (!matches.isNull) {
    for (const match of matches.list()) {
      const value = match.at('value');
      if (!value.isNull) value.number();
      evalMatches += `**${match.at('metric').string()}:** ${value.pyStr()}\n`;
    }
  }

  const message = payload.has('message') ? `${payload.at('message').string()}\n\n` : '';
  const state = payload.at('state').oneOf(LEGACY_STATES);
  const icon = state === 'alerting' ? ':alert:' : state === 'ok' ? ':squared_ok:' : ':info:';

  let body = `${statusLine(icon, state)}[${payload.at('ruleName').string()}](${payload.at('ruleUrl').string()})\n\n${message}${evalMatches}`;
  if (payload.has('imageUrl')) body += `\n[Click to view visualization](${payload.at('imageUrl').string()})`;
  return { kind: 'messages', eventType: state, messages: [{ topic, content: body.trim() }] };
}

function handle(request: WebhookRequest): WebhookOutcome {
  const payload = Wild.body(request);
  if (!payload.has('alerts')) return legacyAlert(payload);

  const alerts = payload.at('alerts').list().map(unifiedAlert);
  if (alerts.length === 0) return { kind: 'ignored' };
  // Firing and resolved alerts may come in one notification: each message is filtered on its own state.
  return { kind: 'messages', messages: alerts.map((a) => ({ ...a.message, eventType: a.status })) };
}

export const grafana: Integration = {
  name: 'grafana',
  displayName: 'Grafana',
  eventTypes: ['ok', 'pending', 'alerting', 'paused', 'firing', 'resolved'],
  handle,
};
