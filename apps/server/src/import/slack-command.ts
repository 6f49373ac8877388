// `pnpm manage import-slack --file <slack-export.zip>`: a Slack workspace export imported as a new
// organization, with progress on the terminal and, at the end, what was converted and the accounts.
// Imported accounts have no password and new API keys, as for `pnpm manage import` (README, "Moving
// from Slack"): the operator hands each person their key with `pnpm manage api-key`.
import type { ImportDeps } from './zulip-import.ts';
import { importSlackExport, type SlackImportOptions } from './slack.ts';

const ROLE_NAMES: Record<number, string> = { 100: 'owner', 200: 'administrator', 300: 'moderator', 400: 'member', 600: 'guest' };

export async function runSlackImportCommand(
  deps: ImportDeps,
  file: string,
  options: Pick<SlackImportOptions, 'url' | 'name' | 'convertThreads'>,
  out: (line: string) => void = console.log,
): Promise<void> {
  const { result, summary } = await importSlackExport(deps, file, {
    ...options,
    onProgress(step, done, total) {
      out(total === undefined ? `${step}: ${done}` : `${step}: ${done}/${total}`);
    },
  });
  out(`imported Slack workspace as organization ${result.realmId} "${result.name}" at ${result.url}`);
  out(`  users ${summary.users}, channels ${summary.channels}, group DMs ${summary.directMessageGroups}, messages ${summary.messages}, reactions ${summary.reactions}, files ${summary.uploads}`);
  if (summary.filesLeftAsLinks > 0) out(`  ${summary.filesLeftAsLinks} files hosted by Slack were not in the archive: their messages link to Slack instead`);
  out(`accounts (${result.users.length}; no passwords, new API keys: pnpm manage api-key --email <address> --realm ${result.realmId}):`);
  for (const u of result.users) out(['  ' + u.email, u.id, ROLE_NAMES[u.role] ?? u.role, u.isBot ? 'bot' : 'person', u.isActive ? 'active' : 'deactivated'].join('\t'));
}
