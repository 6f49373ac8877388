// `pnpm manage import`: an organization from an export in Zulip's layout, read back through the API as
// its imported users; and every refusal (hostile archives, malformed JSON, ids that point nowhere),
// each naming the entry at fault and leaving nothing behind.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { useTestServer } from '../helpers/test-server.ts';
import { TEST_SECRET } from '../helpers/fixtures.ts';
import { basicAuth } from '../helpers/auth.ts';
import { download } from '../helpers/uploads.ts';
import { exportEntries, removeTestExports, writeTarGz, zulipFixture } from '../helpers/zulip-export.ts';
import { importRealmFromArchive, type ImportResult } from '../../src/import/zulip-import.ts';
import { runImportCommand } from '../../src/import/import-command.ts';
import { doFetchApiKey } from '../../src/actions/authentication.ts';
import type { ArchiveLimits } from '../../src/import/archive.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const env = useTestServer();
afterAll(removeTestExports);
const deps = () => env.running.deps;
const freshUrl = () => `http://import-${randomBytes(4).toString('hex')}.parley.test`;

async function realmsAt(url: string): Promise<number> {
  return deps().db.realm.count({ where: { url } });
}

describe('manage import: a Zulip export', () => {
  let result: ImportResult;
  const as: Record<string, ParleyClient> = {};
  const idOf = (email: string) => result.users.find((u) => u.email === email)!.id;

  beforeAll(async () => {
    const archive = await writeTarGz(exportEntries(await zulipFixture()));
    const steps: string[] = [];
    result = await importRealmFromArchive(deps(), archive, { url: freshUrl(), onProgress: (step) => steps.push(step) });
    expect(steps).toContain('users');
    expect(steps.at(-1)).toBe('done');
    for (const u of result.users) as[u.email.split('@')[0]!] = createParleyClient({ site: env.url, email: u.email, apiKey: u.apiKey });
  });

  it('creates the organization with its users, roles, bots and deactivated accounts', async () => {
    expect(result.realmId).not.toBe(env.realmId);
    const users = (await as.iago!.GET('/users')).data!.members;
    const byEmail = new Map(users.map((u) => [u.email, u]));
    expect(byEmail.get('iago@zulip.example')).toMatchObject({ full_name: 'Iago', role: 100, is_active: true, timezone: 'Europe/Copenhagen' });
    expect(byEmail.get('polonius@zulip.example')).toMatchObject({ role: 600 });
    expect(byEmail.get('helper-bot@zulip.example')).toMatchObject({ is_bot: true, bot_type: 1, bot_owner_id: idOf('hamlet@zulip.example') });
    expect(byEmail.get('ghost@zulip.example')).toMatchObject({ is_active: false });
    // Personal settings came along; passwords did not.
    const settings = (await as.hamlet!.POST('/register', { body: { fetch_event_types: ['user_settings'] } })).data as { user_settings: Record<string, unknown> };
    expect(settings.user_settings).toMatchObject({ twenty_four_hour_time: true, color_scheme: 2, emojiset: 'text', enter_sends: true });
    const hash = await deps().db.user.findFirst({ where: { realmId: result.realmId, passwordHash: { not: null } } });
    expect(hash).toBeNull();
  });

  it('keeps channels, subscriptions and group permissions', async () => {
    const subs = (await as.hamlet!.GET('/users/me/subscriptions')).data!.subscriptions;
    const denmark = subs.find((s) => s.name === 'Denmark')!;
    const secret = subs.find((s) => s.name === 'secret')!;
    expect(denmark).toMatchObject({ color: '#ff0000', pin_to_top: true, desktop_notifications: true, invite_only: false, description: 'About Denmark' });
    expect(secret).toMatchObject({ invite_only: true, is_muted: true });
    const groups = (await as.hamlet!.GET('/user_groups')).data!.user_groups;
    const characters = groups.find((g) => g.name === 'hamletcharacters')!;
    expect([...characters.members].sort()).toEqual([idOf('hamlet@zulip.example'), idOf('polonius@zulip.example')].sort());
    expect(secret.can_send_message_group).toBe(characters.id);
    expect(secret.can_administer_channel_group).toEqual({ direct_members: [idOf('iago@zulip.example')], direct_subgroups: [characters.id] });
    const defaults = (await as.iago!.POST('/register', { body: { fetch_event_types: ['default_streams'] } })).data as unknown as { realm_default_streams: number[] };
    expect(defaults.realm_default_streams).toEqual([denmark.stream_id]);
  });

  it('keeps messages with their rendering, topics, flags, reactions, edit history and files', async () => {
    const res = await as.hamlet!.GET('/messages', { params: { query: { anchor: 'oldest', num_before: 0, num_after: 20, apply_markdown: true } } });
    const messages = res.data!.messages;
    const [hello, dm, group, secret, withFile] = [
      messages.find((m) => m.content.includes('Hello'))!,
      messages.find((m) => m.content.includes('privately'))!,
      messages.find((m) => m.content.includes('group message'))!,
      messages.find((m) => m.subject === 'soliloquy')!,
      messages.find((m) => m.content.includes('notes.txt'))!,
    ];
    expect(hello).toMatchObject({ subject: 'Greetings', display_recipient: 'Denmark', sender_id: idOf('hamlet@zulip.example'), timestamp: 1_700_001_000, client: 'website' });
    expect(hello.content).toContain(`data-user-id="${idOf('iago@zulip.example')}"`);
    expect([...(hello.flags ?? [])].sort()).toEqual(['read', 'starred']);
    expect(hello.reactions.map((r) => [r.emoji_name, r.reaction_type, r.user_id]).sort()).toEqual(
      [['+1', 'unicode_emoji', idOf('iago@zulip.example')], ['partyparrot', 'realm_emoji', idOf('hamlet@zulip.example')]].sort(),
    );
    const emoji = (await as.hamlet!.GET('/realm/emoji')).data!.emoji;
    const parrot = Object.values(emoji).find((e) => e.name === 'partyparrot')!;
    expect(hello.reactions.find((r) => r.emoji_name === 'partyparrot')!.emoji_code).toBe(parrot.id);
    expect((await download(env.url, parrot.source_url)).status).toBe(200);
    expect(dm.type).toBe('private');
    expect(dm.flags).toEqual([]);
    expect((dm.display_recipient as Array<{ id: number }>).map((r) => r.id).sort()).toEqual([idOf('iago@zulip.example'), idOf('hamlet@zulip.example')].sort());
    expect((group.display_recipient as unknown[]).length).toBe(3);
    expect(group.flags).toEqual(['starred']);
    expect(secret.edit_history?.length ?? 0).toBeGreaterThan(0);
    const history = (await as.hamlet!.GET('/messages/{message_id}/history', { params: { path: { message_id: secret.id } } })).data!.message_history;
    expect(history.map((h) => h.content)).toEqual(['To be', 'To be, or not to be']);
    // Rendered here (the export had none), with the file's link moved to the new organization.
    expect(withFile.content).toContain('<em>this</em>');
    const link = `/user_uploads/${result.realmId}/ab/xyz123/notes.txt`;
    expect(withFile.content).toContain(link);
    const file = await download(env.url, link, { auth: basicAuth('hamlet@zulip.example', result.users.find((u) => u.email === 'hamlet@zulip.example')!.apiKey) });
    expect(file.text).toBe('Act 1, scene 2');
    // The notification bot of the new organization sent Zulip's cross-realm bot's message.
    const iagos = (await as.iago!.GET('/messages', { params: { query: { anchor: 'oldest', num_before: 0, num_after: 20 } } })).data!.messages;
    const welcome = iagos.find((m) => m.content.includes('Welcome to Zulip Fixture'))!;
    expect(welcome.sender_email).toMatch(/^notification-bot@/);
  });

  it("keeps users' topics, muted users, alert words, linkifiers, profile fields and avatars", async () => {
    const state = (await as.hamlet!.POST('/register', { body: { fetch_event_types: ['user_topic', 'muted_users', 'alert_words', 'realm_linkifiers', 'custom_profile_fields'], client_capabilities: { linkifier_url_template: true } } })).data as Record<string, any>;
    expect(state.user_topics).toMatchObject([{ topic_name: 'Greetings', visibility_policy: 3 }]);
    expect(state.muted_users.map((m: { id: number }) => m.id)).toEqual([idOf('polonius@zulip.example')]);
    expect(state.alert_words).toEqual(['Elsinore']);
    expect(state.realm_linkifiers).toMatchObject([{ pattern: '#(?P<id>[0-9]+)', url_template: 'https://tracker.example/{id}' }]);
    expect(state.custom_profile_fields.map((f: { name: string }) => f.name)).toEqual(['Pronouns']);
    const me = (await as.hamlet!.GET('/users/me')).data!;
    expect(me.avatar_url).toMatch(new RegExp(`^/user_avatars/${result.realmId}/`));
  });

  it('refuses a second import into the same organization, idempotently, from the command line', async () => {
    const archive = await writeTarGz(exportEntries(await zulipFixture()));
    const run = () =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(here, '../../src/manage.ts'), 'import', '--file', archive, '--url', result.url], {
        cwd: path.join(here, '../..'),
        env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: os.tmpdir(), PARLEY_URL: env.url, PARLEY_LOG_LEVEL: 'silent' },
      });
    const failure = await run().then(() => null, (error: { stderr: string; code: number }) => error);
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toContain(`An organization already exists at ${result.url} (id ${result.realmId}); nothing was imported.`);
    expect(await realmsAt(result.url)).toBe(1);
  });
});

describe('manage import: the command line', () => {
  it('imports, printing progress per table and the accounts', async () => {
    const archive = await writeTarGz(exportEntries(await zulipFixture()));
    const url = freshUrl();
    // With the diagnostics on (stderr): each message file's time, and the plans of the statements (triggers' included).
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(here, '../../src/manage.ts'), 'import', '--file', archive, '--url', url], {
      cwd: path.join(here, '../..'),
      env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: os.tmpdir(), PARLEY_URL: env.url, PARLEY_LOG_LEVEL: 'silent', PARLEY_IMPORT_TRACE: '1', PARLEY_IMPORT_EXPLAIN_MS: '0' },
    });
    expect(stderr).toMatch(/^import: messages-000001\.json \d+ ms \(waiting on PostgreSQL: .*message end \d+ ms/m);
    expect(stderr).toContain('Insert on message_search');
    expect(stdout).toContain('users: 5/5');
    expect(stdout).toMatch(new RegExp(`imported organization \\d+ "Zulip Fixture" at ${url.replace(/[.]/g, '\\.')}`));
    expect(stdout).toContain('  message: 6');
    expect(stdout).toMatch(/hamlet@zulip\.example\t\d+\tmember\tperson\tactive/);
    expect(stdout).not.toMatch(/[A-Za-z0-9]{32}/); // no API key printed
    // No SMTP server and no --send-password-resets: the command says what to do, and sends nothing.
    expect(stdout).toContain('people have no password and cannot log in with one: hand out their API keys (--send-password-resets');
    expect(await deps().db.emailOutbox.count({ where: { text: { contains: `${url}/accounts/password/reset/` } } })).toBe(0);
  });
});

describe('manage import: imported people choose a password', () => {
  it('queues a reset e-mail to each active person with --send-password-resets; no password works until the link sets one, once', async () => {
    // The per-user rows before the messages in the message file (read in a second pass).
    const fixture = await zulipFixture();
    const { zerver_message, zerver_usermessage } = fixture['messages-000001.json'] as { zerver_message: unknown[]; zerver_usermessage: unknown[] };
    fixture['messages-000001.json'] = { zerver_usermessage, zerver_message };
    const archive = await writeTarGz(exportEntries(fixture));
    const url = freshUrl();
    const lines: string[] = [];
    const result = await runImportCommand(deps(), archive, { url, sendPasswordResets: true }, (line) => lines.push(line));
    expect(result.counts.user_message).toBe(zerver_usermessage.length);
    const people = result.users.filter((u) => u.isActive && !u.isBot);
    expect(people.length).toBeGreaterThan(0);
    expect(result.passwordResetsQueued).toBe(people.length);
    expect(lines).toContain(`${people.length} people must choose a password: ${people.length} password-reset e-mails queued (pnpm manage outbox shows them)`);
    const mails = await deps().db.emailOutbox.findMany({ where: { text: { contains: `${url}/accounts/password/reset/` } } });
    expect(mails.map((m) => m.to).sort()).toEqual(people.map((u) => u.email).sort());

    const hamlet = people.find((u) => u.email === 'hamlet@zulip.example')!;
    const realm = (await deps().db.realm.findUniqueOrThrow({ where: { id: result.realmId } }));
    const login = (password: string) => doFetchApiKey(env.running.deps, realm, { username: hamlet.email, password }).then((r) => r.user_id, (e: Error) => e.message);
    const password = 'Imported-and-reset 4 Parley!';
    expect(await login(password)).toBe('Your username or password is incorrect');
    expect(await login('')).toBe('Your username or password is incorrect');

    const mail = mails.find((m) => m.to === hamlet.email)!;
    const link = new RegExp(`${url.replace(/[.]/g, '\\.')}(/accounts/password/reset/[0-9a-f.]+)`).exec(mail.text)![1]!;
    const page = await fetch(`${env.url}${link}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('hamlet@zulip.example');
    const weak = await fetch(`${env.url}${link}`, { method: 'POST', body: new URLSearchParams({ new_password: 'abc' }) });
    expect(weak.status).toBe(400);
    expect(await weak.text()).toContain('The password is too weak.');
    const set = await fetch(`${env.url}${link}`, { method: 'POST', body: new URLSearchParams({ new_password: password }) });
    expect(set.status).toBe(200);
    await set.arrayBuffer();
    expect(await login(password)).toBe(hamlet.id);
    // Used: the link (and any other issued before) no longer works; a forged one never did.
    const again = await fetch(`${env.url}${link}`, { method: 'POST', body: new URLSearchParams({ new_password: 'Another-one 5 Parley?' }) });
    expect(again.status).toBe(404);
    expect(await again.text()).toContain('has expired or has already been used');
    expect(await login(password)).toBe(hamlet.id);
    const forged = await fetch(`${env.url}${link.replace(/\.[0-9a-f]{40}$/, `.${'0'.repeat(40)}`)}`);
    expect(forged.status).toBe(404);
    await forged.arrayBuffer();
  });
});

describe('manage import: refusals', () => {
  async function refused(entries: Parameters<typeof writeTarGz>[0], message: string | RegExp, limits?: Partial<ArchiveLimits>) {
    const url = freshUrl();
    const before = await deps().db.realm.count();
    const keysBefore: string[] = [];
    for await (const o of deps().storage.list('')) keysBefore.push(o.key);
    const archive = await writeTarGz(entries);
    const error = await importRealmFromArchive(deps(), archive, { url, ...(limits ? { limits } : {}) }).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    if (typeof message === 'string') expect((error as Error).message).toContain(message);
    else expect((error as Error).message).toMatch(message);
    expect(await realmsAt(url)).toBe(0);
    expect(await deps().db.realm.count()).toBe(before);
    const keysAfter: string[] = [];
    for await (const o of deps().storage.list('')) keysAfter.push(o.key);
    expect(keysAfter.sort()).toEqual(keysBefore.sort());
  }

  it('refuses path traversal, absolute paths, links and devices, naming the entry', async () => {
    await refused([{ name: '../x', body: 'x' }], 'archive entry "../x": ".." in a path is refused');
    await refused([{ name: 'zulip-export-test/../../x', body: 'x' }], 'archive entry "zulip-export-test/../../x"');
    await refused([{ name: '/etc/evil', body: 'x' }], 'archive entry "/etc/evil": absolute paths are refused');
    await refused([{ name: 'zulip-export-test/realm.json', type: 'symlink', linkname: '/etc/passwd' }], 'archive entry "zulip-export-test/realm.json": symlink entries are refused');
    await refused([{ name: 'zulip-export-test/a', body: 'a' }, { name: 'zulip-export-test/b', type: 'link', linkname: 'zulip-export-test/a' }], 'archive entry "zulip-export-test/b": link entries are refused');
  });

  it('refuses huge entries and compression bombs while inflating', async () => {
    await refused([{ name: 'zulip-export-test/big.json', body: Buffer.alloc(5000, 32) }], 'archive entry "zulip-export-test/big.json": larger than 1000 bytes', { maxEntryBytes: 1000 });
    // 4 MB of zeros, a few kilobytes compressed.
    await refused(
      [{ name: 'zulip-export-test/realm.json', body: '{}' }, { name: 'zulip-export-test/bomb', body: Buffer.alloc(4 * 1024 * 1024) }],
      'archive entry "zulip-export-test/bomb": the archive holds more than 1048576 bytes uncompressed',
      { maxTotalBytes: 1024 * 1024 },
    );
  });

  it('refuses malformed JSON and ids that point nowhere, importing nothing (files included)', async () => {
    await refused(exportEntries({ ...(await zulipFixture()), 'realm.json': '{"zerver_realm": [' }), /^realm\.json: malformed JSON/);
    await refused(exportEntries({ ...(await zulipFixture()), 'messages-000001.json': '{"zerver_message": [{"id": 1001, "sender": 10' }), /^messages-000001\.json: malformed JSON/);
    await refused(exportEntries({ ...(await zulipFixture()), 'messages-000001.json': '{"zerver_message": [17]}' }), 'messages-000001.json: zerver_message: every row must be an object');
    const fixture = await zulipFixture();
    const messages = fixture['messages-000001.json'] as { zerver_message: Array<Record<string, unknown>> };
    messages.zerver_message[2]!.sender = 999;
    await refused(exportEntries(fixture), 'messages-000001.json: zerver_message id 1002: "sender" points at user 999, which is not in the export');
    const noFile = await zulipFixture();
    delete noFile['uploads/2/ab/xyz123/notes.txt'];
    await refused(exportEntries(noFile), 'attachment.json: zerver_attachment id 1: file uploads/2/ab/xyz123/notes.txt is missing from the export');
    const badSub = await zulipFixture();
    (badSub['realm.json'] as { zerver_subscription: Array<Record<string, unknown>> }).zerver_subscription.push({ id: 99, user_profile: 10, recipient: 777, active: true });
    await refused(exportEntries(badSub), 'realm.json: zerver_subscription id 99: "recipient" points at recipient 777');
  });
});
