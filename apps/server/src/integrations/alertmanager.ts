// Prometheus Alertmanager's webhook receiver (Zulip's `alertmanager` integration). Alerts are grouped
// by a label or annotation chosen with the `name` query parameter (default `instance`), which becomes
// the topic; each alert is described by the one chosen with `desc` (default `alertname`) and links
// to its source graph. One message per topic and status: firing alerts first, then resolved ones, a
// single alert inline, several as a bulleted list.
import { Wild } from './wild-value.ts';
import { type Integration, type WebhookMessage, type WebhookRequest, type WebhookOutcome } from './types.ts';

const STATUSES = ['firing', 'resolved'] as const;
type Status = (typeof STATUSES)[number];

const HEADINGS: Record<Status, string> = {
  firing: ':alert: **FIRING**',
  resolved: ':squared_ok: **Resolved**',
};

/** A label of the alert, else its annotation of that name, else `fallback`. */
function labelOrAnnotation(alert: Wild, field: string, fallback: string): string {
  const label = alert.get('labels').get(field);
  if (!label.isMissing) return label.string();
  const annotation = alert.get('annotations').get(field);
  return annotation.isMissing ? fallback : annotation.string();
}

function handle(request: WebhookRequest): WebhookOutcome {
  const payload = Wild.body(request);
  const nameField = request.query.name ?? 'instance';
  const descField = request.query.desc ?? 'alertname';

  // Topic → status → one line per alert, in the order topics first appear.
  const topics = new Map<string, Record<Status, string[]>>();
  for (const alert of payload.at('alerts').list()) {
    const name = labelOrAnnotation(alert, nameField, '(unknown)');
    const desc = labelOrAnnotation(alert, descField, `<missing field: ${descField}>`);
    // Prometheus links its graph's console tab (tab=1); Zulip links the graph itself (tab=0).
    const url = alert.at('generatorURL').string().replaceAll('tab=1', 'tab=0');
    const status = alert.at('status').oneOf(STATUSES);
    let group = topics.get(name);
    if (!group) topics.set(name, (group = { firing: [], resolved: [] }));
    group[status].push(`${desc} ([source](${url}))`);
  }

  const messages: WebhookMessage[] = [];
  for (const [topic, group] of topics) {
    for (const status of STATUSES) {
      const lines = group[status];
      if (lines.length === 0) continue;
      const content = lines.length === 1 ? `${HEADINGS[status]} ${lines[0]}` : `${HEADINGS[status]}\n${lines.map((l) => `* ${l}`).join('\n')}`;
      messages.push({ topic, content });
    }
  }
  // An empty group posts nothing and answers success, as Zulip does.
  if (messages.length === 0) return { kind: 'ignored' };
  return { kind: 'messages', messages };
}

export const alertmanager: Integration = {
  name: 'alertmanager',
  displayName: 'Alertmanager',
  handle,
};
