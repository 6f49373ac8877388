// `pnpm manage import-slack`: a Slack export zip, built here in Slack's documented export format
// (users.json, channels.json, groups.json, dms.json, mpims.json, one folder of daily message files per
// conversation), is imported as a new organization and read back through the API with the generated
// client; then the archives the importer must refuse, with nothing imported.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { useTestServer } from '../helpers/test-server.ts';
import { basicAuth } from '../helpers/auth.ts';
import { download } from '../helpers/uploads.ts';
import { importSlackExport, SlackImportError } from '../../src/import/slack.ts';
import { convertSlackMarkup } from '../../src/import/slack-markup.ts';
import type { ImportResult } from '../../src/import/zulip-import.ts';

const env = useTestServer();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'slack-import-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// A 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const DAY = '2024-05-22';
const T0 = 1716370000; // 2024-05-22 09:26:40 UTC

const users = [
  { id: 'U01', team_id: 'T1', name: 'alice', real_name: 'Alice Owner', deleted: false, is_admin: true, is_owner: true, is_primary_owner: true, is_bot: false, tz: 'Europe/Paris', profile: { email: 'alice@acme.test', real_name: 'Alice Owner' } },
  { id: 'U02', team_id: 'T1', name: 'bob', real_name: 'Bob Member', deleted: false, is_admin: false, is_owner: false, is_bot: false, tz: 'America/Chicago', profile: { email: 'bob@acme.test', real_name: 'Bob Member' } },
  { id: 'U03', team_id: 'T1', name: 'carol', real_name: 'Carol Guest', deleted: false, is_restricted: true, is_bot: false, tz: 'Asia/Tokyo', profile: { email: 'carol@acme.test' } },
  { id: 'U04', team_id: 'T1', name: 'dave', real_name: 'Dave Gone', deleted: true, is_bot: false, profile: { email: 'dave@acme.test' } },
  { id: 'U05', team_id: 'T1', name: 'deploybot', real_name: 'Deploy Bot', deleted: false, is_bot: true, profile: { bot_id: 'B05', real_name_normalized: 'Deploy Bot', first_name: 'Deploy Bot' } },
];
const channels = [{ id: 'C01', name: 'general', created: T0 - 86400, creator: 'U01', is_archived: false, is_general: true, members: ['U01', 'U02', 'U03', 'U05'], purpose: { value: 'Company-wide news', creator: 'U01', last_set: T0 }, topic: { value: '', creator: '', last_set: 0 } }];
const groups = [{ id: 'G01', name: 'secret-plans', created: T0 - 86400, creator: 'U01', is_archived: false, members: ['U01', 'U02'], purpose: { value: 'Plans', creator: 'U01', last_set: T0 }, topic: { value: '', creator: '', last_set: 0 } }];
const dms = [{ id: 'D01', created: T0 - 86400, members: ['U01', 'U02'] }];
const mpims = [{ id: 'G02', name: 'mpdm-alice--bob--carol-1', created: T0 - 86400, creator: 'U01', is_archived: false, members: ['U01', 'U02', 'U03'], purpose: { value: '', creator: '', last_set: 0 } }];

const ts = (seconds: number) => `${T0 + seconds}.000100`;
const generalDay = [
  {
    type: 'message', user: 'U01', ts: ts(0),
    text: 'Hi <!here> *bold* _italic_ ~strike~ `code *stays*` <https://example.com/a_b_c|Example> <https://example.org> <#C01|general> <@U02> &lt;b&gt; &amp; co\n```let x = 1 *2*;```',
    reactions: [{ name: 'smile', users: ['U02'], count: 1 }, { name: 'clap::skin-tone-3', users: ['U03'], count: 1 }, { name: 'clap::skin-tone-5', users: ['U03'], count: 1 }],
  },
  { type: 'message', subtype: 'channel_join', user: 'U03', ts: ts(5), text: '<@U03> has joined the channel' },
  { type: 'message', user: 'U02', ts: ts(10), thread_ts: ts(10), reply_count: 1, reply_users: ['U01'], replies: [{ user: 'U01', ts: ts(20) }], text: 'Shall we ship the release today?' },
  { type: 'message', user: 'U01', ts: ts(20), thread_ts: ts(10), parent_user_id: 'U02', text: 'Yes, ship it' },
  {
    type: 'message', user: 'U02', ts: ts(30), text: 'our logo and the plan',
    files: [
      { id: 'F01', created: T0 + 30, timestamp: T0 + 30, name: 'logo.png', title: 'Our logo', mimetype: 'image/png', filetype: 'png', user: 'U02', size: PNG.length, mode: 'hosted', url_private: 'https://files.slack.com/files-pri/T1-F01/logo.png' },
      { id: 'F02', created: T0 + 30, timestamp: T0 + 30, name: 'plan.pdf', title: 'The plan', mimetype: 'application/pdf', filetype: 'pdf', user: 'U02', size: 1234, mode: 'hosted', url_private: 'https://files.slack.com/files-pri/T1-F02/plan.pdf' },
      { id: 'F03', mode: 'tombstone' },
    ],
  },
  { type: 'message', subtype: 'bot_message', user: 'U05', bot_id: 'B05', ts: ts(40), text: 'Deployed v1.2' },
  // An integration's message: no user, a bot_id users.json lacks, its words in an attachment.
  {
    type: 'message', subtype: 'bot_message', bot_id: 'B99', username: 'ci', bot_profile: { id: 'B99', name: 'CI Robot', deleted: false }, ts: ts(45), text: '',
    attachments: [{ title: 'Build 42', title_link: 'https://ci.test/42', text: '*passed*', fields: [{ title: 'Branch', value: 'main' }] }],
  },
];

function slackExport(overrides: Record<string, string | Buffer | null> = {}): Record<string, string | Buffer> {
  const entries: Record<string, string | Buffer | null> = {
    'users.json': JSON.stringify(users),
    'channels.json': JSON.stringify(channels),
    'groups.json': JSON.stringify(groups),
    'dms.json': JSON.stringify(dms),
    'mpims.json': JSON.stringify(mpims),
    [`general/${DAY}.json`]: JSON.stringify(generalDay),
    [`secret-plans/${DAY}.json`]: JSON.stringify([{ type: 'message', user: 'U01', ts: ts(50), text: 'Top _secret_' }]),
    [`D01/${DAY}.json`]: JSON.stringify([{ type: 'message', user: 'U02', ts: ts(60), text: 'Hello <@U01>' }]),
    [`mpdm-alice--bob--carol-1/${DAY}.json`]: JSON.stringify([{ type: 'message', user: 'U03', ts: ts(70), text: 'Group ~hello~' }]),
    '__uploads/F01/logo.png': PNG,
    ...overrides,
  };
  return Object.fromEntries(Object.entries(entries).filter((e): e is [string, string | Buffer] => e[1] !== null));
}

let zipCount = 0;
/** Writes a zip of `entries`; `mode` sets an entry's Unix mode (a symbolic link's, for one test). */
async function writeZip(entries: Record<string, string | Buffer>, modes: Record<string, number> = {}): Promise<string> {
  const file = path.join(tmp, `export-${++zipCount}.zip`);
  const zip = new yazl.ZipFile();
  for (const [name, data] of Object.entries(entries)) zip.addBuffer(Buffer.isBuffer(data) ? data : Buffer.from(data), name, modes[name] !== undefined ? { mode: modes[name] } : {});
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream) chunks.push(chunk as Buffer);
  writeFileSync(file, Buffer.concat(chunks));
  return file;
}

const deps = () => env.running.deps;

let result: ImportResult;
const as: Record<string, ParleyClient> = {};

beforeAll(async () => {
  const file = await writeZip(slackExport());
  ({ result } = await importSlackExport(deps(), file, { url: 'http://acme.parley.test', name: 'Acme' }));
  for (const u of result.users) as[u.email.split('@')[0]!] = createParleyClient({ site: env.url, email: u.email, apiKey: u.apiKey });
});

interface Message {
  id: number;
  subject: string;
  content: string;
  sender_email: string;
  sender_full_name: string;
  flags: string[];
  display_recipient: string | Array<{ email: string }>;
  reactions: Array<{ emoji_name: string; emoji_code: string; user_id: number }>;
}

/** GET /messages as an imported user (raw HTTP: the generated client cannot serialize a JSON narrow). */
async function messagesOf(who: string, narrow: Array<{ operator: string; operand: string }>, applyMarkdown = true): Promise<Message[]> {
  const user = result.users.find((u) => u.email.startsWith(`${who}@`))!;
  const query = new URLSearchParams({ anchor: 'oldest', num_before: '0', num_after: '100', narrow: JSON.stringify(narrow), apply_markdown: String(applyMarkdown) });
  const res = await env.raw(`/messages?${query}`, { headers: { Authorization: basicAuth(user.email, user.apiKey) } });
  expect(res.status).toBe(200);
  return res.body.messages as Message[];
}

describe('pnpm manage import-slack', () => {
  it('imports users with roles, bots, deactivated accounts and time zones', async () => {
    const { data } = await as.alice!.GET('/users', { params: { query: {} } });
    const byEmail = new Map(data!.members.map((m) => [m.email, m]));
    expect(byEmail.get('alice@acme.test')).toMatchObject({ full_name: 'Alice Owner', role: 100, is_active: true, is_bot: false, timezone: 'Europe/Paris' });
    expect(byEmail.get('bob@acme.test')).toMatchObject({ full_name: 'Bob Member', role: 400, timezone: 'America/Chicago' });
    expect(byEmail.get('carol@acme.test')).toMatchObject({ role: 600 });
    // Deactivated Slack accounts keep their handle as name, as Zulip's importer does.
    expect(byEmail.get('dave@acme.test')).toMatchObject({ full_name: 'dave', is_active: false });
    expect(byEmail.get('deploy-bot@acme.parley.test')).toMatchObject({ full_name: 'Deploy Bot', is_bot: true });
  });

  it('imports public and private channels with their members', async () => {
    const { data } = await as.alice!.GET('/users/me/subscriptions', { params: { query: { include_subscribers: 'true' } } });
    const subs = new Map(data!.subscriptions.map((s) => [s.name, s]));
    expect(subs.get('general')).toMatchObject({ invite_only: false, description: 'Company-wide news' });
    expect(subs.get('secret-plans')).toMatchObject({ invite_only: true, history_public_to_subscribers: false });
    const ids = new Map(result.users.map((u) => [u.email, u.id]));
    expect([...(subs.get('secret-plans')!.subscribers as number[])].sort()).toEqual([ids.get('alice@acme.test'), ids.get('bob@acme.test')].sort());
    // The guest is not in the private channel and cannot see it.
    const guest = await as.carol!.GET('/users/me/subscriptions', { params: { query: {} } });
    expect(guest.data!.subscriptions.map((s) => s.name)).toEqual(['general']);
  });

  it('converts markup, threads to topics, reactions and files', async () => {
    const general = await messagesOf('alice', [{ operator: 'channel', operand: 'general' }]);
    // The channel_join notice is skipped.
    const thread = '2024-05-22 Shall we ship the release today?';
    expect(general.map((m) => m.subject)).toEqual(['imported from Slack', thread, thread, 'imported from Slack', 'imported from Slack', 'imported from Slack']);
    const [first, , , files, bot, integration] = general;
    const html = first!.content;
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<em>italic</em>');
    expect(html).toContain('<del>strike</del>');
    expect(html).toContain('<code>code *stays*</code>');
    expect(html).toContain('href="https://example.com/a_b_c"');
    expect(html).toContain('&lt;b&gt; &amp; co');
    expect(html).toContain('let x = 1 *2*;');
    const rawMessages = await messagesOf('alice', [{ operator: 'channel', operand: 'general' }], false);
    const raw = rawMessages[0]!.content;
    expect(rawMessages[5]!.content).toBe('## [Build 42](https://ci.test/42)\n\n**passed**\n\n**Branch**: main');
    expect(integration).toMatchObject({ sender_full_name: 'CI Robot', sender_email: 'cirobot-bot@acme.parley.test' });
    expect(raw).toBe('Hi @**all** **bold** *italic* ~~strike~~ `code *stays*` [Example](https://example.com/a_b_c) https://example.org #**general** @**Bob Member** <b> & co\n\n```\nlet x = 1 *2*;\n```');
    // Reactions by Zulip's names: Slack's smile is 😄 (Zulip's big_smile); skin tones merged into one clap.
    expect(first!.reactions.map((r) => [r.emoji_name, r.emoji_code, r.user_id]).sort()).toEqual(
      [['big_smile', '1f604', result.users.find((u) => u.email === 'bob@acme.test')!.id], ['clap', '1f44f', result.users.find((u) => u.email === 'carol@acme.test')!.id]].sort(),
    );
    // Bob was mentioned.
    const bobs = await messagesOf('bob', [{ operator: 'channel', operand: 'general' }]);
    expect(bobs[0]!.flags).toContain('mentioned');
    // A file the archive carries is an upload of the new organization; one it lacks links to Slack.
    expect(files!.content).toMatch(new RegExp(`href="/user_uploads/${result.realmId}/[^"]+/logo.png"`));
    expect(files!.content).toContain('href="https://files.slack.com/files-pri/T1-F02/plan.pdf"');
    const link = /href="\/user_uploads\/([^"]+)"/.exec(files!.content)![1]!;
    const alice = result.users.find((u) => u.email === 'alice@acme.test')!;
    const got = await download(env.url, `/user_uploads/${link}`, { auth: basicAuth(alice.email, alice.apiKey) });
    expect(got.status).toBe(200);
    expect(got.body.equals(PNG)).toBe(true);
    expect(bot).toMatchObject({ sender_email: 'deploy-bot@acme.parley.test', content: '<p>Deployed v1.2</p>' });
  });

  it('imports the private channel, direct messages and group direct messages', async () => {
    const secret = await messagesOf('bob', [{ operator: 'channel', operand: 'secret-plans' }]);
    expect(secret.map((m) => m.content)).toEqual(['<p>Top <em>secret</em></p>']);
    const dmsOfAlice = await messagesOf('alice', [{ operator: 'is', operand: 'dm' }]);
    expect(dmsOfAlice.map((m) => [m.sender_email, m.subject, (m.display_recipient as Array<{ email: string }>).map((r) => r.email).sort()])).toEqual([
      ['bob@acme.test', '', ['alice@acme.test', 'bob@acme.test']],
      ['carol@acme.test', '', ['alice@acme.test', 'bob@acme.test', 'carol@acme.test']],
    ]);
    expect(dmsOfAlice[1]!.content).toBe('<p>Group <del>hello</del></p>');
    // The guest sees the group DM only.
    expect((await messagesOf('carol', [{ operator: 'is', operand: 'dm' }])).map((m) => m.sender_email)).toEqual(['carol@acme.test']);
  });
});

describe('Slack markup conversion', () => {
  const ctx = { userById: (id: string) => (id === 'U1' ? { fullName: 'Ann', zulipId: 7 } : undefined), channelNameById: () => undefined };
  it('converts only what Slack formats, as Zulip does', () => {
    expect(convertSlackMarkup('~stri~ke mid_word_x 2*3*4', ctx).content).toBe('~stri~ke mid_word_x 2*3*4');
    expect(convertSlackMarkup('<mailto:a@b.test|a@b.test> <!subteam^S1|@devs> <@U9> <#C9|ops>', ctx).content).toBe('mailto:a@b.test @devs <@U9> #**ops**');
    expect(convertSlackMarkup('(*a*) "_b_" <@U1>: &amp;lt;', ctx)).toEqual({ content: '(**a**) "*b*" @**Ann**: &lt;', mentionedUserIds: [7], wildcardMention: false, hasLink: false });
  });
});

describe('pnpm manage import-slack: refused archives', () => {
  /** Imports `file`, expects a SlackImportError whose message matches, and that no organization was created. */
  async function refused(file: string, message: RegExp, options: Parameters<typeof importSlackExport>[2] = {}) {
    const before = await deps().db.realm.count();
    const error: unknown = await importSlackExport(deps(), file, { url: `http://refused-${zipCount}.parley.test`, ...options }).then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(SlackImportError);
    expect((error as Error).message).toMatch(message);
    expect(await deps().db.realm.count()).toBe(before);
  }

  it('refuses path traversal, absolute paths and symbolic links, naming the entry', async () => {
    // yazl refuses such names itself, so the name is patched in the written archive (same length).
    const patch = async (name: string, bad: string) => {
      const file = await writeZip(slackExport({ [name]: '[]' }));
      const bytes = readFileSync(file);
      let at = bytes.indexOf(name);
      while (at >= 0) {
        bytes.write(bad, at, 'latin1');
        at = bytes.indexOf(name, at + 1);
      }
      writeFileSync(file, bytes);
      return file;
    };
    await refused(await patch('xx/xx/escape.json', '../../escape.json'), /zip entry "\.\.\/\.\.\/escape\.json" has a "\.\." path segment/);
    await refused(await patch('xetc/passwd.json', '/etc/passwd.json'), /zip entry "\/etc\/passwd\.json" has an absolute path/);
    await refused(await writeZip(slackExport({ 'link.json': '/etc/passwd' }), { 'link.json': 0o120777 }), /zip entry "link\.json" is a symbolic link/);
  });

  it('refuses compression bombs and too many entries', async () => {
    const file = await writeZip(slackExport({ [`general/2024-05-23.json`]: `[${' '.repeat(200_000)}]` }));
    await refused(file, /uncompressed bytes/, { limits: { maxTotalBytes: 100_000 } });
    await refused(file, /entries; at most 5/, { limits: { maxEntries: 5 } });
  });

  it('refuses an export without users.json and malformed JSON, naming the entry', async () => {
    await refused(await writeZip(slackExport({ 'users.json': null })), /no users\.json/);
    await refused(await writeZip(slackExport({ [`general/${DAY}.json`]: '[{"ts": "1", ' })), /zip entry "general\/2024-05-22\.json" is not valid JSON/);
    await refused(await writeZip(slackExport({ 'channels.json': '{"not": "a list"}' })), /zip entry "channels\.json" is not a JSON list/);
  });
});
