// `pnpm manage import --file <export.tar.gz>`: the import with its progress on the terminal (rows per
// table as each is written, message files as they go) and, at the end, the accounts and how their
// owners get in. Imported accounts have no password (Zulip's exports carry none; Parley has no
// password-reset flow yet) and new API keys: the command lists every account, and the administrator
// hands each person their key with `pnpm manage api-key --email <address> --realm <id>` (or a
// zuliprc). API keys are never printed in bulk (README, "Moving from Zulip").
import type { ImportDeps, ImportOptions, ImportResult } from './zulip-import.ts';
import { importRealmFromArchive } from './zulip-import.ts';

const ROLE_NAMES: Record<number, string> = { 100: 'owner', 200: 'administrator', 300: 'moderator', 400: 'member', 600: 'guest' };

export async function runImportCommand(deps: ImportDeps, file: string, options: Pick<ImportOptions, 'url' | 'name'>, out: (line: string) => void = console.log): Promise<ImportResult> {
  const interactive = process.stdout.isTTY === true;
  const result = await importRealmFromArchive(deps, file, {
    ...options,
    onProgress(step, done, total) {
      const line = total === undefined ? `${step}: ${done}` : `${step}: ${done}/${total}`;
      if (interactive && step.startsWith('messages (')) process.stdout.write(`\r${line}   `);
      else out(interactive ? `\r${line}` : line);
    },
  });
  out(`imported organization ${result.realmId} "${result.name}" at ${result.url}`);
  for (const [table, n] of Object.entries(result.counts)) out(`  ${table}: ${n}`);
  out(`accounts (${result.users.length}; no passwords, new API keys: pnpm manage api-key --email <address> --realm ${result.realmId}):`);
  for (const u of result.users) {
    out(['  ' + u.email, u.id, ROLE_NAMES[u.role] ?? u.role, u.isBot ? 'bot' : 'person', u.isActive ? 'active' : 'deactivated'].join('\t'));
  }
  return result;
}
