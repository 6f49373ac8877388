// `pnpm manage <command>`: administration from the shell, against the same database the server uses
// (DATABASE_URL, or the embedded PostgreSQL under $PARLEY_DATA_DIR; stop the server first when it
// uses the embedded one, since only one process may run the embedded cluster).
import { parseArgs } from 'node:util';
// Each command loads only its own modules (dynamic imports below): the server's whole module set is
// about 200 MB of memory under tsx, which an import or export does not need (src/import/commands.ts).
import { loadConfig, validateOrganizationUrl } from './config.ts';
import { ALL_ROLES } from './access/roles.ts';
import { JsonableError } from './errors.ts';
import { writeFileSync } from 'node:fs';

const USAGE = `usage: pnpm manage <command> [options]
  create-realm --name <name> --url <url>
  create-user --email <e> --full-name <n> [--role owner|admin|moderator|member|guest] [--password <p>] [--realm <id>]
  api-key --email <e> [--rotate] [--realm <id>]
  set-role --email <e> --role <role> [--realm <id>]
  list-users [--realm <id>]
  create-bot --owner <e> --full-name <n> --short-name <s> [--type generic|incoming|outgoing] [--payload-url <url>] [--output <zuliprc>] [--realm <id>]
              a bot of the owner's, and its zuliprc (printed, or written to --output)
  list-realms
  import --file <export.tar.gz> [--url <url>] [--name <name>] [--send-password-resets]   a new organization from a Zulip-format export (Zulip's or Parley's); e-mails its people a link to choose a password (by default when SMTP is configured)
  export --file <out.tar.gz> [--type public|full] [--realm <id>]   the organization in Zulip's export format (full: with members' consent)
  import-slack --file <slack-export.zip> [--url <url>] [--name <name>] [--no-threads]   a new organization from a Slack export
  backup --file <out.tar.gz>   the whole server (database, local uploads, secret) in one consistent archive (README, "Backups")
  restore --file <backup.tar.gz>   a backup into an empty database and data directory
  outbox [--id <n>]   e-mails of the outbox (newest 50), or one e-mail in full
  pushes [--email <e>] [--status <status>] [--limit <n>] [--realm <id>]   push notifications of the push outbox, newest first`;

const BOT_TYPE_NAMES: Record<string, number> = { generic: 1, incoming: 2, 'incoming-webhook': 2, outgoing: 3, 'outgoing-webhook': 3 };

const ROLE_NAMES: Record<string, number> = { owner: 100, admin: 200, administrator: 200, moderator: 300, member: 400, guest: 600 };

function parseRole(value: string | undefined): number {
  if (value === undefined) return 400;
  const role = ROLE_NAMES[value] ?? Number(value);
  if (!ALL_ROLES.includes(role)) throw new Error(`unknown role ${value} (owner, admin, moderator, member, guest)`);
  return role;
}

const [command, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    name: { type: 'string' },
    url: { type: 'string' },
    email: { type: 'string' },
    'full-name': { type: 'string' },
    role: { type: 'string' },
    password: { type: 'string' },
    realm: { type: 'string' },
    rotate: { type: 'boolean' },
    id: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
    owner: { type: 'string' },
    'short-name': { type: 'string' },
    type: { type: 'string' },
    'payload-url': { type: 'string' },
    output: { type: 'string' },
    file: { type: 'string' },
    'send-password-resets': { type: 'boolean' },
    'no-threads': { type: 'boolean' },
  },
  allowPositionals: false,
});
if (!command || command === 'help' || command === '--help') {
  console.log(USAGE);
  process.exit(command ? 0 : 2);
}

// Backup and restore open the database themselves: a restore needs it untouched (no migrations applied yet).
if (command === 'backup' || command === 'restore') {
  const file = values.file;
  if (!file) {
    console.error(`--file is required\n${USAGE}`);
    process.exit(2);
  }
  try {
    const { runBackupCommand, runRestoreCommand } = await import('./backup/command.ts');
    await (command === 'backup' ? runBackupCommand : runRestoreCommand)(loadConfig(), file);
    process.exit(0);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}

// Import, import-slack and export run on the dependencies they use, without the HTTP app.
const { isDataCommand, runDataCommand } = await import('./import/commands.ts');
if (isDataCommand(command)) process.exit(await runDataCommand(command, values, USAGE));

const { createDeps, openDatabase } = await import('./server.ts');
const { doCreateRealm } = await import('./actions/realm.ts');
const { doCreateUser, doRotateApiKey, doUpdateUser, getOrCreateApiKey } = await import('./actions/users.ts');
const { findRealmById, listRealms } = await import('./data/realms.repo.ts');
const { findUserByDeliveryEmail, listUsers } = await import('./data/users.repo.ts');
const { listPushes } = await import('./data/push-outbox.repo.ts');
const { listOutbox, outboxEmail, outboxStatus } = await import('./mail/outbox.ts');
const { doCreateBot } = await import('./actions/bots.ts');
const config = loadConfig();
const database = await openDatabase(config);
const deps = await createDeps(config, database.url, { poolSize: 2 });

async function realmFromArgs() {
  const realms = await listRealms(deps.db);
  const realm = values.realm ? await findRealmById(deps.db, Number(values.realm)) : realms[0];
  if (!realm) throw new Error('no organization: start the server once or run create-realm');
  return realm;
}

function need(name: keyof typeof values): string {
  const v = values[name];
  if (typeof v !== 'string' || !v) throw new Error(`--${name} is required\n${USAGE}`);
  return v;
}

let exitCode = 0;
try {
  switch (command) {
    case 'create-realm': {
      const realm = await doCreateRealm(deps.db, { name: need('name'), url: validateOrganizationUrl(need('url')) });
      console.log(`created organization ${realm.id} "${realm.name}" at ${realm.url}`);
      break;
    }
    case 'create-user': {
      const realm = await realmFromArgs();
      const { user, apiKey } = await doCreateUser(deps, realm, {
        email: need('email'),
        fullName: need('full-name'),
        password: values.password ?? null,
        role: parseRole(values.role),
      });
      console.log(`created user ${user.id} ${user.deliveryEmail} (role ${user.role})\napi key: ${apiKey}`);
      break;
    }
    case 'api-key': {
      const realm = await realmFromArgs();
      const user = await findUserByDeliveryEmail(deps.db, realm.id, need('email'));
      if (!user) throw new Error(`no user ${values.email} in ${realm.name}`);
      console.log(values.rotate ? await doRotateApiKey(deps, user) : await getOrCreateApiKey(deps, user));
      break;
    }
    case 'set-role': {
      const realm = await realmFromArgs();
      const user = await findUserByDeliveryEmail(deps.db, realm.id, need('email'));
      if (!user) throw new Error(`no user ${values.email} in ${realm.name}`);
      await doUpdateUser(deps, realm, null, user.id, { role: parseRole(need('role')) });
      console.log(`${user.deliveryEmail}: role ${parseRole(values.role)}`);
      break;
    }
    case 'create-bot': {
      const realm = await realmFromArgs();
      const owner = await findUserByDeliveryEmail(deps.db, realm.id, need('owner'));
      if (!owner) throw new Error(`no user ${values.owner} in ${realm.name}`);
      const botType = BOT_TYPE_NAMES[values.type ?? 'generic'] ?? Number(values.type);
      const { bot, apiKey } = await doCreateBot(
        deps,
        realm,
        owner,
        {
          fullName: need('full-name'),
          shortName: need('short-name'),
          botType,
          ...(values['payload-url'] !== undefined ? { payloadUrl: values['payload-url'] } : {}),
        },
        { byOperator: true },
      );
      // Zulip's zuliprc: what the Python `zulip` package, zulip-send, zulip-run-bot and zulip-js read.
      const zuliprc = `[api]\nemail=${bot.email}\nkey=${apiKey}\nsite=${config.publicUrl}\n`;
      if (values.output) {
        writeFileSync(values.output, zuliprc, { mode: 0o600 });
        console.log(`created bot ${bot.id} ${bot.email} (owner ${owner.deliveryEmail}); zuliprc written to ${values.output}`);
      } else console.log(zuliprc.trimEnd());
      break;
    }
    case 'list-users': {
      const realm = await realmFromArgs();
      for (const u of await listUsers(deps.db, realm.id)) {
        console.log([u.id, u.deliveryEmail, u.fullName, u.role, u.isActive ? 'active' : 'deactivated', u.isBot ? 'bot' : ''].join('\t').trimEnd());
      }
      break;
    }
    case 'pushes': {
      const realm = await realmFromArgs();
      const user = values.email ? await findUserByDeliveryEmail(deps.db, realm.id, values.email) : null;
      if (values.email && !user) throw new Error(`no user ${values.email} in ${realm.name}`);
      for (const p of await listPushes(deps.db, { realmId: realm.id, limit: Number(values.limit ?? 20) || 20, ...(user ? { userId: user.id } : {}), ...(values.status ? { status: values.status } : {}) })) {
        const head = [p.id, p.createdAt.toISOString(), p.status, p.event, `user ${p.userId}`, `${p.kind}:${p.token.slice(0, 12)}${p.token.length > 12 ? '…' : ''}`, p.appId ?? '', `attempts ${p.attempts}`, p.lastError ?? ''];
        console.log(`${head.join('\t').trimEnd()}\n  ${JSON.stringify(p.payload)}`);
      }
      break;
    }
    case 'outbox': {
      if (values.id !== undefined) {
        const id = Number(values.id);
        if (!Number.isInteger(id) || id < 1 || id > 2_147_483_647) throw new Error('--id must be an e-mail number');
        const email = await outboxEmail(deps.db, id);
        if (!email) throw new Error(`no e-mail ${values.id} in the outbox`);
        console.log(`To: ${email.to}\nSubject: ${email.subject}\nCreated: ${email.createdAt.toISOString()}\nStatus: ${outboxStatus(email)}\n\n${email.text}`);
      } else {
        for (const e of await listOutbox(deps.db)) console.log([e.id, e.createdAt.toISOString(), e.to, outboxStatus(e), e.subject].join('\t'));
      }
      break;
    }
    case 'list-realms':
      for (const r of await listRealms(deps.db)) console.log(`${r.id}\t${r.name}\t${r.url}`);
      break;
    default:
      console.error(`unknown command ${command}\n${USAGE}`);
      exitCode = 2;
  }
} catch (error) {
  console.error(error instanceof JsonableError || error instanceof Error ? error.message : error);
  exitCode = 1;
} finally {
  await deps.db.$disconnect();
  await database.stop();
}
process.exit(exitCode);
