// Every incoming-webhook integration, by URL segment. One module per integration in this folder;
// add yours to the list below.
import type { Integration } from './types.ts';
import { circleci } from './circleci.ts';
import { gitea } from './gitea.ts';
import { gitlab } from './gitlab.ts';
import { gogs } from './gogs.ts';
import { alertmanager } from './alertmanager.ts';
import { grafana } from './grafana.ts';
import { jira } from './jira.ts';
import { sentry } from './sentry.ts';
import { github } from './github.ts';
import { json } from './json.ts';
import { slackIncoming } from './slack-incoming.ts';

const INTEGRATIONS: readonly Integration[] = [
  circleci,
  gitea,
  gitlab,
  gogs,
  alertmanager,
  grafana,
  jira,
  sentry,
  github,
  json,
  slackIncoming,
];

const BY_NAME = new Map(INTEGRATIONS.map((integration) => [integration.name, integration]));

export function integrationNamed(name: string): Integration | undefined {
  return BY_NAME.get(name);
}

export function allIntegrations(): readonly Integration[] {
  return INTEGRATIONS;
}
