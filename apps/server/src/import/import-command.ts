// `pnpm manage import --file <export.tar.gz> [--send-password-resets]`: the import with its progress on
// the terminal (rows per table as each is written, message files as they go) and, at the end, the
// accounts and how their owners get in. Imported accounts have no password (Zulip's exports carry none)
// and new API keys. The command says how many people must choose a password, and, with
// --send-password-resets (the default when an SMTP server is configured), queues each active person a
// password-reset e-mail through the outbox (actions/password-reset.ts: a link to choose one, valid 3
// days, once). Without it, the administrator hands out API keys with `pnpm manage api-key --email
// <address> --realm <id>` (or a zuliprc); the reset e-mails cannot be sent later yet. API keys are never printed
// in bulk (README, "Moving from Zulip").
// Diagnostics of a slow import, on stderr: PARLEY_IMPORT_TRACE=1 prints each message file's wall time and
// its waits on PostgreSQL; PARLEY_IMPORT_EXPLAIN_MS=<ms> adds the plans of statements slower than that
// (PostgreSQL's auto_explain, the triggers' statements included).
import type { ImportDeps, ImportOptions, ImportResult } from './zulip-import.ts';
import { importRealmFromArchive } from './zulip-import.ts';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { queuePasswordResetEmails } from '../actions/password-reset.ts';

const ROLE_NAMES: Record<number, string> = { 100: 'owner', 200: 'administrator', 300: 'moderator', 400: 'member', 600: 'guest' };

/** ImportOptions' diagnostics from the environment (see above). */
export function importDiagnostics(env: NodeJS.ProcessEnv): Pick<ImportOptions, 'trace' | 'explainMinMs'> {
  const explain = env.PARLEY_IMPORT_EXPLAIN_MS ? Number(env.PARLEY_IMPORT_EXPLAIN_MS) : NaN;
  const explaining = Number.isFinite(explain) && explain >= 0;
  if (env.PARLEY_IMPORT_TRACE !== '1' && !explaining) return {};
  return { trace: (line) => process.stderr.write(`${line}\n`), ...(explaining ? { explainMinMs: explain } : {}) };
}

export async function runImportCommand(
  deps: ImportDeps & Pick<AppDeps, 'jobs'>,
  file: string,
  options: Pick<ImportOptions, 'url' | 'name'> & { sendPasswordResets?: boolean },
  out: (line: string) => void = console.log,
): Promise<ImportResult & { passwordResetsQueued: number }> {
  const interactive = process.stdout.isTTY === true;
  const result = await importRealmFromArchive(deps, file, {
    url: options.url,
    name: options.name,
    ...importDiagnostics(process.env),
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
  const people = result.users.filter((u) => u.isActive && !u.isBot);
  let passwordResetsQueued = 0;
  const send = options.sendPasswordResets ?? deps.config.smtpUrl !== null;
  if (send && people.length) {
    const realm = await findRealmById(deps.db, result.realmId);
    passwordResetsQueued = await inTransaction(deps.db, (tx) =>
      queuePasswordResetEmails(tx, deps, realm!, people.map((u) => ({ id: u.id, deliveryEmail: u.email, passwordHash: null, deactivationCount: 0, isActive: u.isActive, isBot: u.isBot })), 'import'),
    );
    out(`${people.length} people must choose a password: ${passwordResetsQueued} password-reset e-mails queued (pnpm manage outbox shows them)`);
  } else {
    out(`${people.length} people have no password and cannot log in with one: hand out their API keys (--send-password-resets, given to the import, e-mails each a link to choose a password)`);
  }
  return { ...result, passwordResetsQueued };
}
